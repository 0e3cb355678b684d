// kvplan/sim/workload.h — where requests come from: open-loop arrival processes, closed-loop users
// holding multi-turn conversations, and (trace.h) recorded traces.
//
//   auto source = make_open_loop_source(OpenLoopSpec{.arrivals = ArrivalKind::kPoisson,
//       .rate_per_s = 4.0, .prompt = LengthDistribution::fixed(512),
//       .output = LengthDistribution::fixed(128), .num_requests = 1000, .seed = 1});
//   while (auto r = source->next()) { ... r->arrival_ns ... }
//
// Everything is seeded and uses kvplan's own Rng, so the same spec gives the same requests.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/core/length_distribution.h"
#include "kvplan/sim/request.h"

namespace kvplan::sim {

// An open-loop request stream in arrival order (arrival_ns nondecreasing, ids 0, 1, 2, ...).
// Sources stream: they hold O(1) requests, however long the workload.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  virtual std::optional<RequestSpec> next() = 0;
  virtual std::string describe() const = 0;
};

enum class ArrivalKind {
  kPoisson,   // exponential gaps
  kGamma,     // gamma gaps with coefficient of variation `cv` (cv > 1: bursty)
  kConstant,  // fixed gaps of 1 / rate
};
std::string_view arrival_kind_name(ArrivalKind kind);
ArrivalKind parse_arrival_kind(std::string_view text);  // poisson | gamma | constant

struct OpenLoopSpec {
  ArrivalKind arrivals = ArrivalKind::kPoisson;
  double rate_per_s = 1.0;   // > 0
  double cv = 1.0;           // gamma only
  LengthDistribution prompt = LengthDistribution::fixed(512);
  LengthDistribution output = LengthDistribution::fixed(128);
  int64_t num_requests = 1000;  // > 0
  uint64_t seed = 0;
};

// Throws ConfigError naming the field, value and rule for a bad spec.
std::unique_ptr<RequestSource> make_open_loop_source(const OpenLoopSpec& spec);

// Closed-loop users. Each user holds conversations of `turns` turns: turn t's prompt is the whole
// previous conversation (earlier prompts and answers) plus a new message, so context grows and the
// earlier turns are a reusable prefix (prefix_hashes stay equal for the shared blocks). After a
// reply, the user thinks for an exponential time of mean think_time_s, then sends the next turn;
// after the last turn, a new conversation starts (fresh hashes). With shared_prefix_tokens > 0,
// every first prompt starts with that many tokens of one system prompt, the same for every
// conversation of every user: its whole blocks have the same hashes everywhere, so a prefix cache
// can hold it once.
struct ConversationSpec {
  int32_t num_users = 1;           // > 0
  double think_time_s = 5.0;       // mean, >= 0
  int32_t turns = 1;               // turns per conversation, >= 1
  LengthDistribution first_prompt = LengthDistribution::fixed(512);   // first turn's prompt
  LengthDistribution followup = LengthDistribution::fixed(64);        // each later new message
  LengthDistribution output = LengthDistribution::fixed(128);
  int64_t max_context_tokens = 0;  // 0: no cap; otherwise a conversation restarts before its
                                   // prompt + output would exceed this
  int32_t hash_block_tokens = 16;  // granularity of prefix identity
  int64_t shared_prefix_tokens = 0;  // >= 0; added before each first prompt drawn from first_prompt
  int64_t requests_per_user = 0;   // 0: unlimited (the engine stops at its end time)
  uint64_t seed = 0;
};

class ClosedLoopUsers {
 public:
  explicit ClosedLoopUsers(const ConversationSpec& spec);  // throws ConfigError
  ~ClosedLoopUsers();
  ClosedLoopUsers(ClosedLoopUsers&&) noexcept;
  ClosedLoopUsers& operator=(ClosedLoopUsers&&) noexcept;

  int32_t num_users() const;
  // The user's first request; users start spread uniformly over one mean think time.
  RequestSpec first_request(int32_t user);
  // The user's next request after its previous one finished at `finish_ns`, or nullopt when the
  // user has sent requests_per_user requests. Ids are unique across users:
  // id = user * 2^32 + the user's request count (0, 1, 2, ...), whatever order an engine asks in.
  std::optional<RequestSpec> next_request(int32_t user, TimeNs finish_ns);
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvplan::sim
