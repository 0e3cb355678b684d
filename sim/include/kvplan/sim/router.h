// kvplan/sim/router.h — which replica a new request goes to.
//
//   Router router(RouterKind::kPrefixAware);
//   int32_t r = router.pick(replicas, 0, n, request);
//
// round-robin: in turn. least-outstanding: fewest queued + running requests (ties: lowest index).
// prefix-aware: the longest cached prefix for this request (SGLang router style), ties broken by
// fewest outstanding, then lowest index.
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/sim/replica.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::sim {

class Router {
 public:
  explicit Router(RouterKind kind) : kind_(kind) {}
  // A replica in [first, first + count).
  int32_t pick(const std::vector<Replica>& replicas, int32_t first, int32_t count, const RequestSpec& request);
  static int32_t pick_least_outstanding(const std::vector<Replica>& replicas, int32_t first, int32_t count);

 private:
  RouterKind kind_;
  int64_t next_ = 0;
};

}  // namespace kvplan::sim
