#include "kvplan/sim/router.h"

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

std::string_view router_kind_name(RouterKind kind) {
  switch (kind) {
    case RouterKind::kRoundRobin: return "round-robin";
    case RouterKind::kLeastOutstanding: return "least-outstanding";
    case RouterKind::kPrefixAware: return "prefix-aware";
  }
  return "?";
}

RouterKind parse_router_kind(std::string_view text) {
  if (text == "round-robin") return RouterKind::kRoundRobin;
  if (text == "least-outstanding") return RouterKind::kLeastOutstanding;
  if (text == "prefix-aware") return RouterKind::kPrefixAware;
  throw ConfigError(fmt::format("router: value '{}' must be one of round-robin, least-outstanding, prefix-aware", text));
}

int32_t Router::pick_least_outstanding(const std::vector<Replica>& replicas, int32_t first, int32_t count) {
  int32_t best = first;
  for (int32_t i = first + 1; i < first + count; ++i) {
    if (replicas[static_cast<size_t>(i)].outstanding() < replicas[static_cast<size_t>(best)].outstanding()) best = i;
  }
  return best;
}

int32_t Router::pick(const std::vector<Replica>& replicas, int32_t first, int32_t count, const RequestSpec& request) {
  if (count == 1) return first;
  switch (kind_) {
    case RouterKind::kRoundRobin: return first + static_cast<int32_t>(next_++ % count);
    case RouterKind::kLeastOutstanding: return pick_least_outstanding(replicas, first, count);
    case RouterKind::kPrefixAware: {
      int32_t best = first;
      int64_t best_hit = -1;
      for (int32_t i = first; i < first + count; ++i) {
        const Replica& r = replicas[static_cast<size_t>(i)];
        int64_t hit = r.match_prefix(request);
        if (hit > best_hit || (hit == best_hit && r.outstanding() < replicas[static_cast<size_t>(best)].outstanding())) {
          best = i;
          best_hit = hit;
        }
      }
      return best;
    }
  }
  return first;
}

}  // namespace kvplan::sim
