// kvplan/sim/bench_client.h — a benchmark client as `vllm bench serve --max-concurrency C
// --num-prompts N` (benchmark_serving.py), genai-perf and SGLang's bench_serving run one: C users
// with zero think time share a budget of N requests; when a request finishes its user sends the
// next one at once, until N have been sent. Its statistics are steady-state ones.
//
//   BenchClient client(BenchClientSpec{.max_concurrency = 16, .prompt = LengthDistribution::fixed(1024),
//       .output = LengthDistribution::fixed(128), .options = {.num_prompts = 160}});
//   RequestSpec first = client.first_request(u, window_ns);    // u in [0, 16)
//   std::optional<RequestSpec> next = client.next_request(u, finish_ns);
//
// Start times (the stagger rule). A real client sends its first C requests together, but after a
// while the users no longer finish together: chunked prefill completes prompts in different steps,
// and tokenisation, network and scheduling jitter shift each user's phase a little every request.
// The steady state real benchmarks report is the one whose phases are spread over a whole request
// cycle. With fixed lengths a simulation keeps whatever phases it starts with (every user's next
// request arrives when its previous one ends), so starting all users at t = 0 keeps them in lock
// step forever: every round one step prefills all C prompts and TTFT balloons. The bench client
// therefore starts user u at
//     t_u = floor(window · (u + jitter · U_u) / C)
// where window is one estimated request cycle (estimate_request_cycle_ns: the per-request
// overhead + C prompts' prefill + (output − 1) decode steps at batch C, each step with its
// overhead) and U_u is a uniform draw in [0, 1) from the user's own Rng stream. jitter = 1 puts
// one start uniformly in each of C equal slots of the cycle (stratified: no two users share a
// slot, so the phases cover the cycle evenly); jitter = 0 spaces them exactly window / C apart.
//
// Steady state (what the statistics cover). Requests are ranked by the order they finish (finish
// time; ties in the order the engine reports them). The first `warmup` finished requests (default
// C) are left out: they ran while the users were still starting. The last `cooldown` (default C)
// are left out: they are exactly the requests in flight when the client sent its last request, so
// they ran while the load was draining (no new prefills, a shrinking batch). Latency percentiles,
// SLO attainment and goodput use the remaining N − warmup − cooldown requests; throughput is their
// count (and tokens) over the time from the warmup-th finish to the last measured finish.
// MetricsCollector applies the rule; RunSummary reports both counts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/length_distribution.h"
#include "kvplan/sim/request.h"
#include "kvplan/sim/step_timer.h"

namespace kvplan::sim {

// The client's own settings; the concurrency and the lengths come with it in BenchClientSpec. In a
// simulation (WorkloadConfig, ClosedLoopClient::kBench) they are the closed loop's num_users,
// first_prompt and output, so whatever scales a closed loop's users (capacity search, the GUI's
// load sweep) scales the bench client too.
// How the users start. kStaggered (default): the stagger rule above. kBurst: every user's first
// request at t = 0, as the real client literally starts; with fixed lengths the simulated engine
// then keeps the users in whatever synchrony its batching creates (an engine that prefills every
// waiting prompt in one step, as SGLang does, keeps them in lock step: see
// docs/benchmarks.md, "Whole-model serving" for which measurements look like which).
enum class BenchStart { kStaggered, kBurst };
std::string_view bench_start_name(BenchStart start);
BenchStart parse_bench_start(std::string_view text);  // staggered | burst

// The start that reproduces an engine's published fixed-length benchmarks: staggered for vLLM and
// TensorRT-LLM (chosen by kvplan_validate_serving on the fit half, by sweep, of aiconfigurator's
// H100 runs), and for SGLang by release:
// - SGLang before 0.5.6: burst. Its published runs (H100, 0.5.1.post1, Qwen3-32B) are lock-stepped:
//   TTFT grows with concurrency at one wave's prefill rate (c 64 -> 128, 1,024-token prompts, TP 2:
//   +1.83 s for 32 more prompts in front on average, 57 ms per prompt, 58% of the bf16 peak).
// - SGLang 0.5.6 and later, and an SGLang run whose release is not given: staggered. Their
//   published runs (H200, 0.5.6.post2 to 0.5.9) cannot be lock-stepped: DeepSeek-R1 on 8 x H200,
//   1,024-token prompts, mean TTFT 338 ms at c 32 and 419 ms at c 64 would mean 5.1 ms per prompt
//   in a wave: 1.9 PFLOP/s per GPU, above the best fp8 GEMM rate published for Hopper (DeepGEMM's
//   README, 1,520 TFLOP/s). Llama-3.1-8B's TPOT at 160-512 users is that of decode steps
//   interleaved with single prefills, not of a lock-stepped decode batch. Whether the engine or
//   the harness changed is not recorded with the runs; the release is the label they carry
//   (docs/benchmarks.md, "SGLang's two regimes").
BenchStart default_bench_start(Engine engine, const EngineVersion& version);

struct BenchOptions {
  int64_t num_prompts = 1000;      // N: requests in total (> 0)
  BenchStart start = BenchStart::kStaggered;
  int64_t warmup_requests = -1;    // first finished requests left out; -1: C
  int64_t cooldown_requests = -1;  // last finished requests left out; -1: C
  double jitter = 1.0;             // stagger jitter in [0, 1] (see above)
  TimeNs window_ns = 0;            // stagger window; 0: estimate_request_cycle_ns at run start
};

struct BenchClientSpec {
  int32_t max_concurrency = 1;  // C: users, each with at most one request in flight (> 0)
  LengthDistribution prompt = LengthDistribution::fixed(1024);
  LengthDistribution output = LengthDistribution::fixed(128);
  BenchOptions options;
  uint64_t seed = 0;
};

// The warm-up and cool-down counts the spec resolves to (defaults: the concurrency).
int64_t bench_warmup(const BenchClientSpec& spec);
int64_t bench_cooldown(const BenchClientSpec& spec);

// Throws ConfigError naming the field, value and rule (e.g. num_prompts must exceed
// warmup + cooldown, so that some request is measured).
void validate(const BenchClientSpec& spec);

class BenchClient {
 public:
  explicit BenchClient(const BenchClientSpec& spec);  // throws ConfigError
  ~BenchClient();
  BenchClient(BenchClient&&) noexcept;
  BenchClient& operator=(BenchClient&&) noexcept;

  // Users that send at least one request: min(C, N).
  int32_t num_users() const;
  // User u's start time under the start rule (stagger: for a cycle of window_ns; burst: 0).
  TimeNs start_ns(int32_t user, TimeNs window_ns) const;
  // The user's first request, sent at start_ns(user, window_ns). Call once per user; ids and lengths
  // follow the order of the calls (a simulation calls users 0 .. C-1 in order, so first requests
  // are ids 0 .. C-1), and every later request takes the next id when it is sent.
  RequestSpec first_request(int32_t user, TimeNs window_ns);
  // The next request of a user whose request finished at finish_ns (sent then: zero think time),
  // or nullopt when all N have been sent.
  std::optional<RequestSpec> next_request(int32_t user, TimeNs finish_ns);
  int64_t sent() const;
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One request cycle of a bench user at full concurrency, for the stagger window:
//   request_overhead + C · prefill + (mean output − 1) · decode_step
// prefill: the mean prompt (rounded) prefilled alone in chunks of at most max_batched_tokens, one
// step per chunk — every user's prompt passes through the engine once per cycle, in its own step
// (SGLang) or mixed into a decode step at about that marginal cost (vLLM); decode_step: a
// decode-only step of min(C, max_num_seqs) sequences at context mean prompt + mean output / 2;
// decode steps scaled by step_factor and prefill steps by prefill_factor, plus step_overhead (engine_step_ns). An estimate: batching prompts together makes real cycles a little
// shorter, and the running load spreads the phases over the true cycle anyway.
TimeNs estimate_request_cycle_ns(StepTimer& timer, const BenchClientSpec& spec, int64_t max_batched_tokens,
                                 int32_t max_num_seqs, TimeNs request_overhead_ns, TimeNs step_overhead_ns,
                                 double step_factor = 1.0, double prefill_factor = 1.0);

}  // namespace kvplan::sim
