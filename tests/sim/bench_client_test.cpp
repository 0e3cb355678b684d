// The bench client (bench_client.h): its start rule, request budget and cycle estimate, a golden
// run whose first steps are worked out by hand, desynchronised steady state, the warm-up/cool-down
// rule, and determinism. Step time: FormulaTimer, 1 ms + 10 us per prefill token + 100 us per
// decode sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/bench_client.h"
#include "kvplan/sim/output_files.h"
#include "kvplan/sim/simulation.h"
#include "sim_test_support.h"

namespace kvplan::sim {
namespace {

using testing::FormulaTimer;
using testing::kBlockBytes;

BenchClientSpec spec(int32_t c, int64_t n) {
  BenchClientSpec s;
  s.max_concurrency = c;
  s.prompt = LengthDistribution::fixed(20);
  s.output = LengthDistribution::fixed(20);
  s.options.num_prompts = n;
  s.seed = 7;
  return s;
}

TEST(BenchClient, StartsOnePerSlotOfTheWindow) {
  BenchClient client(spec(8, 64));
  std::vector<TimeNs> starts;
  for (int32_t u = 0; u < 8; ++u) {
    const TimeNs t = client.start_ns(u, 8'000'000);
    // Slot u of 8 over 8 ms: [u ms, u + 1 ms).
    EXPECT_GE(t, u * 1'000'000) << u;
    EXPECT_LT(t, (u + 1) * 1'000'000) << u;
    starts.push_back(t);
  }
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(std::adjacent_find(starts.begin(), starts.end()), starts.end()) << "two users share a start time";

  BenchClientSpec even = spec(8, 64);
  even.options.jitter = 0;
  BenchClient evenly(even);
  for (int32_t u = 0; u < 8; ++u) EXPECT_EQ(evenly.start_ns(u, 8'000'000), u * 1'000'000);

  BenchClientSpec burst = spec(8, 64);
  burst.options.start = BenchStart::kBurst;
  BenchClient together(burst);
  for (int32_t u = 0; u < 8; ++u) EXPECT_EQ(together.start_ns(u, 8'000'000), 0);
}

TEST(BenchClient, SendsExactlyNumPromptsWithIdsInSendOrder) {
  BenchClientSpec s = spec(3, 7);
  s.options.warmup_requests = 1;
  s.options.cooldown_requests = 1;
  BenchClient client(s);
  EXPECT_EQ(client.num_users(), 3);
  for (int32_t u = 0; u < 3; ++u) EXPECT_EQ(client.first_request(u, 0).id, u);
  // Zero think time: the next request is sent when the previous one finished.
  auto r = client.next_request(1, 5'000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 3);
  EXPECT_EQ(r->arrival_ns, 5'000);
  EXPECT_EQ(r->user, 1);
  EXPECT_EQ(r->prompt_tokens, 20);
  EXPECT_EQ(r->output_tokens, 20);
  for (int64_t id = 4; id < 7; ++id) EXPECT_EQ(client.next_request(0, 9'000)->id, id);
  EXPECT_FALSE(client.next_request(2, 9'000));
  EXPECT_EQ(client.sent(), 7);
}

TEST(BenchClient, RefusesRunsWithoutASteadyState) {
  // Defaults: warm-up 8 + cool-down 8 = 16 finished requests left out; 16 prompts leave none.
  try {
    BenchClient client(spec(8, 16));
    FAIL() << "accepted 16 prompts at concurrency 8";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("num_prompts=16 must exceed warm-up 8 + cool-down 8"), std::string::npos)
        << e.what();
  }
  BenchClientSpec bad = spec(8, 64);
  bad.options.jitter = 1.5;
  EXPECT_THROW(BenchClient{bad}, ConfigError);
}

TEST(BenchClient, CycleEstimateByHand) {
  FormulaTimer timer;
  BenchClientSpec s = spec(4, 64);
  s.prompt = LengthDistribution::fixed(100);
  s.output = LengthDistribution::fixed(10);
  // Prefill of 100 tokens in chunks of 64: (1 + 0.64 + 0.5) + (1 + 0.36 + 0.5) = 4.0 ms, times C = 4:
  // 16 ms. Decode at batch 4: 1 + 0.4 + 0.5 = 1.9 ms, 9 of them: 17.1 ms. Request overhead 2 ms.
  EXPECT_EQ(estimate_request_cycle_ns(timer, s, 64, 256, 2'000'000, 500'000), 2'000'000 + 16'000'000 + 17'100'000);
  // max_num_seqs caps the decode batch: batch 2 -> 1.2 + 0.5 = 1.7 ms.
  EXPECT_EQ(estimate_request_cycle_ns(timer, s, 64, 2, 0, 500'000), 16'000'000 + 9 * 1'700'000);
}

TEST(BenchClient, DefaultStartPerEngineAndRelease) {
  // SGLang's published runs: lock-stepped on 0.5.1.post1, spread from 0.5.6 (bench_client.h).
  EXPECT_EQ(default_bench_start(Engine::kSglang, parse_engine_version("0.5.1.post1")), BenchStart::kBurst);
  EXPECT_EQ(default_bench_start(Engine::kSglang, parse_engine_version("0.5.5")), BenchStart::kBurst);
  EXPECT_EQ(default_bench_start(Engine::kSglang, parse_engine_version("0.4.9")), BenchStart::kBurst);
  EXPECT_EQ(default_bench_start(Engine::kSglang, parse_engine_version("0.5.6.post2")), BenchStart::kStaggered);
  EXPECT_EQ(default_bench_start(Engine::kSglang, parse_engine_version("0.5.9")), BenchStart::kStaggered);
  // No release given: EngineVersion's default (0.10), today's SGLang.
  EXPECT_EQ(default_bench_start(Engine::kSglang, EngineVersion{}), BenchStart::kStaggered);
  // vLLM and TensorRT-LLM: staggered whatever the release.
  EXPECT_EQ(default_bench_start(Engine::kVllm, parse_engine_version("0.5.1")), BenchStart::kStaggered);
  EXPECT_EQ(default_bench_start(Engine::kVllm, EngineVersion{}), BenchStart::kStaggered);
  EXPECT_EQ(default_bench_start(Engine::kTrtllm, parse_engine_version("0.5.1")), BenchStart::kStaggered);
  EXPECT_EQ(parse_bench_start("burst"), BenchStart::kBurst);
  EXPECT_THROW(parse_bench_start("later"), ConfigError);
}

// ---- whole runs ------------------------------------------------------------------------------

SimulationConfig bench_config(int32_t c, int64_t n, int64_t prompt = 20) {
  SimulationConfig cfg = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  cfg.kv_capacity_bytes = 256 * kBlockBytes;
  cfg.scheduler.kind = SchedulerKind::kVllm;
  cfg.scheduler.max_num_seqs = 16;
  cfg.scheduler.max_num_batched_tokens = 256;
  cfg.scheduler.max_model_len = 1024;
  cfg.step_timer = std::make_shared<FormulaTimer>();
  cfg.workload.kind = WorkloadKind::kClosedLoop;
  cfg.workload.client = ClosedLoopClient::kBench;
  cfg.workload.closed.num_users = c;
  cfg.workload.closed.first_prompt = LengthDistribution::fixed(prompt);
  cfg.workload.closed.output = LengthDistribution::fixed(20);
  cfg.workload.bench.num_prompts = n;
  cfg.seed = 3;
  return cfg;
}

struct BenchRun {
  SimulationResult result;
  std::vector<std::string> log;
  std::vector<int64_t> prefills_per_step;
  std::vector<TimeNs> step_start_ns;
  std::vector<RequestRecord> records;  // in finish order
};

BenchRun run(const SimulationConfig& cfg) {
  BenchRun out;
  RunHooks hooks;
  hooks.on_step = [&](const StepLog& s) {
    std::string line = fmt::format("{}->{}:", s.start_ns, s.end_ns);
    int64_t prefills = 0;
    for (const PlannedWork& w : s.work) {
      line += fmt::format(" {}:{}{}", w.request_id, w.decode ? "D" : "P", w.tokens);
      if (!w.decode) ++prefills;
    }
    out.log.push_back(line);
    out.prefills_per_step.push_back(prefills);
    out.step_start_ns.push_back(s.start_ns);
  };
  hooks.on_request = [&](const RequestRecord& r) { out.records.push_back(r); };
  out.result = run_simulation(cfg, hooks);
  return out;
}

TEST(BenchGolden, FirstStepsByHand) {
  SimulationConfig cfg = bench_config(4, 24);
  cfg.workload.bench.jitter = 0;  // evenly spaced starts, so every time below is exact
  BenchRun r = run(cfg);
  // Window (estimate_request_cycle_ns): prefill 20 tokens 1.2 ms, times C = 4: 4.8 ms; decode at
  // batch 4: 1.4 ms, 19 of them: 26.6 ms; window 31.4 ms. Users start at 0, 7.85, 15.7, 23.55 ms.
  EXPECT_EQ(r.result.bench_window_ns, 31'400'000);
  // t=0     request 0 (user 0) prefills alone: 1 + 0.2 = 1.2 ms; then decodes alone, 1.1 ms each:
  //         its k-th token at 1.2 + 1.1 (k - 1) ms (7th at 7.8 ms).
  // t=7.8   request 1 (user 1) arrives at 7.85, during request 0's decode 7.8 -> 8.9.
  // t=8.9   request 0 decodes and request 1 prefills: 1 + 0.2 + 0.1 = 1.3 ms -> 10.2 ms.
  ASSERT_GE(r.log.size(), 9u);
  EXPECT_EQ(r.log[0], "0->1200000: 0:P20");
  EXPECT_EQ(r.log[1], "1200000->2300000: 0:D1");
  EXPECT_EQ(r.log[6], "6700000->7800000: 0:D1");
  EXPECT_EQ(r.log[7], "7800000->8900000: 0:D1");
  EXPECT_EQ(r.log[8], "8900000->10200000: 0:D1 1:P20");
  auto rec1 = std::find_if(r.records.begin(), r.records.end(), [](const RequestRecord& x) { return x.id == 1; });
  ASSERT_NE(rec1, r.records.end());
  EXPECT_EQ(rec1->arrival_ns, 7'850'000);
  EXPECT_EQ(rec1->first_token_ns, 10'200'000);
  EXPECT_EQ(rec1->ttft_ns(), 2'350'000);
  EXPECT_EQ(r.result.summary.finished, 24);
}

// Steps that start between the warm-up-th finish and the last measured finish: the steady state.
std::vector<int64_t> steady_prefills(const BenchRun& r, int64_t warmup, int64_t cooldown) {
  std::vector<TimeNs> finish;
  for (const RequestRecord& x : r.records) finish.push_back(x.finish_ns);
  std::sort(finish.begin(), finish.end());
  const TimeNs from = finish[static_cast<size_t>(warmup - 1)];
  const TimeNs to = finish[finish.size() - static_cast<size_t>(cooldown) - 1];
  std::vector<int64_t> out;
  for (size_t i = 0; i < r.step_start_ns.size(); ++i) {
    if (r.step_start_ns[i] >= from && r.step_start_ns[i] < to) out.push_back(r.prefills_per_step[i]);
  }
  return out;
}

TEST(BenchGolden, SteadyStateNeverPrefillsAllUsersTogether) {
  // 8 users, 80 prompts of 200 tokens (2 ms of prefill each), budget 2048 tokens per step.
  SimulationConfig cfg = bench_config(8, 80, 200);
  cfg.scheduler.max_num_batched_tokens = 2048;
  const BenchRun staggered = run(cfg);
  const std::vector<int64_t> s = steady_prefills(staggered, 8, 8);
  ASSERT_GT(s.size(), 100u);
  EXPECT_LE(*std::max_element(s.begin(), s.end()), 2);  // at most 2 of the 8 prompts in one step
  // The same users all started at t = 0 stay in lock step: the engine plans its first step once
  // all 8 arrivals of t = 0 are queued, so the 8 prompts (1,600 tokens) share one step, finish
  // together and come back together, every round.
  SimulationConfig burst_cfg = cfg;
  burst_cfg.workload.bench.start = BenchStart::kBurst;
  const BenchRun burst = run(burst_cfg);
  const std::vector<int64_t> b = steady_prefills(burst, 8, 8);
  EXPECT_EQ(*std::max_element(b.begin(), b.end()), 8);
  // TTFT shows it: in lock step every prompt waits for 8 prefills (1 + 8 x 2 ms), the staggered
  // ones for the step in flight and their own.
  EXPECT_GT(burst.result.summary.ttft_ms.mean, 2 * staggered.result.summary.ttft_ms.mean);
}

TEST(BenchGolden, WarmupAndCooldownLeaveOutExactlyTheFirstAndLastFinished) {
  const BenchRun r = run(bench_config(4, 24));
  const RunSummary& s = r.result.summary;
  EXPECT_EQ(s.finished, 24);
  EXPECT_EQ(s.warmup_excluded, 4);
  EXPECT_EQ(s.cooldown_excluded, 4);
  EXPECT_EQ(s.measured, 16);
  // By hand from the records: rank by finish time, drop the first 4 and the last 4.
  std::vector<RequestRecord> by_finish = r.records;
  std::stable_sort(by_finish.begin(), by_finish.end(),
                   [](const RequestRecord& a, const RequestRecord& b) { return a.finish_ns < b.finish_ns; });
  std::vector<double> ttft, e2e;
  int64_t output = 0;
  for (size_t i = 4; i < 20; ++i) {
    ttft.push_back(ns_to_ms(by_finish[i].ttft_ns()));
    e2e.push_back(ns_to_ms(by_finish[i].e2e_ns()));
    output += by_finish[i].output_tokens;
  }
  std::sort(ttft.begin(), ttft.end());
  std::sort(e2e.begin(), e2e.end());
  double sum = 0;
  for (double v : ttft) sum += v;
  EXPECT_DOUBLE_EQ(s.ttft_ms.mean, sum / 16);
  EXPECT_DOUBLE_EQ(s.ttft_ms.max, ttft.back());
  EXPECT_DOUBLE_EQ(s.e2e_ms.p50, e2e[7]);  // nearest rank: ceil(0.5 * 16) = 8th value
  // Throughput window: from the 4th finish to the 20th.
  const double window_s = ns_to_seconds(by_finish[19].finish_ns - by_finish[3].finish_ns);
  EXPECT_DOUBLE_EQ(s.duration_s, window_s);
  EXPECT_DOUBLE_EQ(s.requests_per_s, 16 / window_s);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, static_cast<double>(output) / window_s);

  // Counts can be set; 0 and 0 measure every request.
  SimulationConfig all = bench_config(4, 24);
  all.workload.bench.warmup_requests = 0;
  all.workload.bench.cooldown_requests = 0;
  const RunSummary a = run(all).result.summary;
  EXPECT_EQ(a.measured, 24);
  EXPECT_EQ(a.warmup_excluded, 0);
  EXPECT_EQ(a.cooldown_excluded, 0);
}

TEST(BenchGolden, RequestAndStepOverheadsAreAddedWhereTheySay) {
  SimulationConfig cfg = bench_config(4, 24);
  cfg.workload = WorkloadConfig{};
  cfg.workload.kind = WorkloadKind::kList;
  cfg.workload.requests = {testing::request(0, 0, 20, 3)};
  cfg.overheads.request = OverheadTerm{5'000'000, "test"};
  cfg.overheads.step = OverheadTerm{500'000, "test"};
  BenchRun r = run(cfg);
  // The engine sees the request at 5 ms; prefill 1.2 + 0.5 = 1.7 ms -> first token at 6.7 ms;
  // two decodes of 1.1 + 0.5 = 1.6 ms -> 8.3 and 9.9 ms.
  EXPECT_EQ(r.log, (std::vector<std::string>{"5000000->6700000: 0:P20", "6700000->8300000: 0:D1",
                                             "8300000->9900000: 0:D1"}));
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].arrival_ns, 0);
  EXPECT_EQ(r.records[0].ttft_ns(), 6'700'000);
  EXPECT_EQ(r.records[0].e2e_ns(), 9'900'000);
  EXPECT_DOUBLE_EQ(r.records[0].tpot_ns(), 1'600'000.0);
}

// Two requests of 20 + 3 tokens sent together at t = 0, 5 ms per request and 0.5 ms per step: the
// per-in-flight tests below differ only in how request 1's delay grows with request 0 in flight.
SimulationConfig two_requests_sent_together() {
  SimulationConfig cfg = bench_config(4, 24);
  cfg.workload = WorkloadConfig{};
  cfg.workload.kind = WorkloadKind::kList;
  cfg.workload.requests = {testing::request(0, 0, 20, 3), testing::request(1, 0, 20, 3)};
  cfg.overheads.request = OverheadTerm{5'000'000, "test"};
  cfg.overheads.step = OverheadTerm{500'000, "test"};
  return cfg;
}

TEST(BenchGolden, RequestOverheadGrowsWithTheRequestsInFlight) {
  SimulationConfig cfg = two_requests_sent_together();
  cfg.overheads.request_per_in_flight = OverheadTerm{10'000'000, "test"};
  BenchRun r = run(cfg);
  // Request 0 is sent with nothing in flight: at the engine at 5 ms, then 1.7 + 1.6 + 1.6 ms as in
  // the test above. Request 1 is sent with request 0 in flight: 5 + 1 x 10 = 15 ms after t = 0;
  // the engine is idle again by then: 15 -> 16.7 -> 18.3 -> 19.9 ms.
  EXPECT_EQ(r.log, (std::vector<std::string>{"5000000->6700000: 0:P20", "6700000->8300000: 0:D1",
                                             "8300000->9900000: 0:D1", "15000000->16700000: 1:P20",
                                             "16700000->18300000: 1:D1", "18300000->19900000: 1:D1"}));
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].ttft_ns(), 6'700'000);
  EXPECT_EQ(r.records[1].arrival_ns, 0);
  EXPECT_EQ(r.records[1].ttft_ns(), 16'700'000);
}

TEST(BenchGolden, PrefillShapedOverheadGrowsWithTheRequestsInFlightAndThePrompt) {
  // As above, but the per-in-flight part is 0.5 x the formula's time for the prompt prefilled
  // alone: 1 ms + 20 x 10 us = 1.2 ms, so 0.6 ms per other request in flight.
  SimulationConfig cfg = two_requests_sent_together();
  cfg.overheads.request_per_in_flight_prefill_share = ShareTerm{0.5, "test"};
  BenchRun r = run(cfg);
  // Request 0: at the engine at 5 ms, first token at 6.7 ms. Request 1 is sent with request 0 in
  // flight: 5 + 1 x 0.6 = 5.6 ms after t = 0, while request 0 prefills; it waits for that step
  // (6.7 ms) and joins the batch: prefill 20 + one decode = 1 + 0.2 + 0.1 + 0.5 = 1.8 ms -> 8.5 ms.
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].ttft_ns(), 6'700'000);
  EXPECT_EQ(r.records[1].arrival_ns, 0);
  EXPECT_EQ(r.records[1].ttft_ns(), 8'500'000);
  EXPECT_EQ(r.log.at(1), "6700000->8500000: 0:D1 1:P20");
}

TEST(BenchGolden, PrefillPartOfAStepHasItsOwnFactor) {
  // As above with the plain per-in-flight term (request 1 sent 5 + 0.6 = 5.6 ms after t = 0) and
  // the prefill part of every step x 2. Step 1, request 0's prefill alone: all prefill part,
  // 2 x 1.2 + 0.5 = 2.9 ms -> 5 to 7.9 ms. Step 2, request 0's decode with request 1's prefill:
  // decodes alone 1 + 0.1 = 1.1 ms, prefill part 0.2 ms: 1.1 + 2 x 0.2 + 0.5 = 2.0 ms -> 9.9 ms.
  SimulationConfig cfg = two_requests_sent_together();
  cfg.overheads.request_per_in_flight = OverheadTerm{600'000, "test"};
  cfg.overheads.prefill_step_factor = StepFactor{2.0, "test"};
  BenchRun r = run(cfg);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.log.at(0), "5000000->7900000: 0:P20");
  EXPECT_EQ(r.log.at(1), "7900000->9900000: 0:D1 1:P20");
  EXPECT_EQ(r.records[0].ttft_ns(), 7'900'000);
  EXPECT_EQ(r.records[1].ttft_ns(), 9'900'000);
}

TEST(BenchGolden, OpenLoopDeliveriesKeepTheSendOrderWhenDelaysDiffer) {
  // Twenty requests sent at t = 0 with delays drawn from [0, 20] ms: a later one drawn shorter than
  // the one before waits for it (one open-loop request is pending at a time) instead of being
  // scheduled before the simulator's clock.
  SimulationConfig cfg = bench_config(4, 24);
  cfg.workload = WorkloadConfig{};
  cfg.workload.kind = WorkloadKind::kList;
  for (int64_t id = 0; id < 20; ++id) cfg.workload.requests.push_back(testing::request(id, 0, 20, 3));
  cfg.overheads.request = OverheadTerm{10'000'000, "test"};
  cfg.overheads.request_spread = OverheadTerm{10'000'000, "test"};
  cfg.seed = 3;
  int drawn_shorter = 0;
  for (int64_t id = 1; id < 20; ++id) {
    drawn_shorter += request_delay_ns(cfg.overheads, cfg.seed, id) < request_delay_ns(cfg.overheads, cfg.seed, id - 1);
  }
  ASSERT_GT(drawn_shorter, 0);  // the case this test is about happens
  BenchRun r = run(cfg);
  ASSERT_EQ(r.records.size(), 20u);
  for (const RequestRecord& rec : r.records) EXPECT_EQ(rec.arrival_ns, 0);
}

TEST(BenchDeterminism, SameSeedSameSummaryJsonByteForByte) {
  SimulationConfig cfg = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  cfg.workload.kind = WorkloadKind::kClosedLoop;
  cfg.workload.client = ClosedLoopClient::kBench;
  cfg.workload.closed.num_users = 16;
  cfg.workload.closed.first_prompt = LengthDistribution::uniform(200, 800);
  cfg.workload.closed.output = LengthDistribution::uniform(32, 96);
  cfg.workload.bench.num_prompts = 96;
  cfg.overheads = default_serving_overheads(Engine::kVllm, true);
  cfg.seed = 11;
  const std::string a = summary_json(cfg, run_simulation(cfg)).dump(2);
  const std::string b = summary_json(cfg, run_simulation(cfg)).dump(2);
  EXPECT_EQ(a, b);
  cfg.seed = 12;
  const std::string c = summary_json(cfg, run_simulation(cfg)).dump(2);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace kvplan::sim
