// Engine behaviours beyond the golden traces: swapping, routing, disaggregation, closed-loop users,
// determinism with the real cost model, and config errors.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/capacity.h"
#include "kvplan/sim/output_files.h"
#include "kvplan/sim/simulation.h"
#include "sim_test_support.h"

#include <nlohmann/json.hpp>

namespace kvplan::sim {
namespace {

using testing::FormulaTimer;
using testing::kBlockBytes;
RequestSpec req(int64_t id, TimeNs arrival, int32_t prompt, int32_t output) {
  return testing::request(id, arrival, prompt, output);
}

SimulationConfig base(int64_t blocks) { return testing::small_engine_config(blocks); }

std::map<int64_t, RequestRecord> records_of(const SimulationConfig& c, SimulationResult* result = nullptr) {
  std::map<int64_t, RequestRecord> out;
  RunHooks hooks;
  hooks.on_request = [&](const RequestRecord& r) { out[r.id] = r; };
  SimulationResult r = run_simulation(c, hooks);
  if (result) *result = std::move(r);
  return out;
}

TEST(Engine, SwapPreemptionKeepsTheKvAndSkipsRecompute) {
  SimulationConfig c = base(4);
  c.scheduler.preemption = PreemptionMode::kSwap;
  c.offload.host_bytes = 64 * kBlockBytes;
  c.offload.pcie_bytes_per_s = 50e9;
  auto timer = std::make_shared<FormulaTimer>();
  c.step_timer = timer;
  c.workload.requests = {req(0, 0, 30, 10), req(1, 0, 30, 10)};
  SimulationResult result;
  auto rec = records_of(c, &result);
  // The same contention as the recompute golden test, but B's 2 blocks go to host memory at
  // 4.0 ms (B has 3 tokens) and come back when A leaves at 11.7 ms: no 33-token re-prefill, so
  // B's first step back is a decode (1.1 ms), not a 1.33 ms prefill, and 7 decodes finish it.
  EXPECT_EQ(rec.at(1).preemptions, 1);
  EXPECT_EQ(timer->swap_out_bytes, 2 * kBlockBytes);
  EXPECT_EQ(timer->swap_in_bytes, 2 * kBlockBytes);
  EXPECT_EQ(rec.at(0).finish_ns, 11'700'000);
  EXPECT_EQ(rec.at(1).max_gap_ns, 11'700'000 + 1'100'000 - 4'000'000);
  EXPECT_EQ(rec.at(1).finish_ns, 11'700'000 + 7 * 1'100'000);
}

TEST(Engine, RoundRobinAlternatesReplicas) {
  SimulationConfig c = base(64);
  c.cluster.replicas = 3;
  for (int i = 0; i < 6; ++i) c.workload.requests.push_back(req(i, i * 10'000'000, 16, 2));
  auto rec = records_of(c);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(rec.at(i).replica, i % 3) << i;
}

TEST(Engine, LeastOutstandingAvoidsTheBusyReplica) {
  SimulationConfig c = base(64);
  c.cluster.replicas = 2;
  c.cluster.router = RouterKind::kLeastOutstanding;
  // Request 0 is long and keeps replica 0 busy; 1 goes to replica 1 (tie broken by index would
  // give 0), and so does 2, which arrives after 1 has finished.
  c.workload.requests = {req(0, 0, 16, 100), req(1, 1'000, 16, 2), req(2, 50'000'000, 16, 2)};
  auto rec = records_of(c);
  EXPECT_EQ(rec.at(0).replica, 0);
  EXPECT_EQ(rec.at(1).replica, 1);
  EXPECT_EQ(rec.at(2).replica, 1);
}

TEST(Engine, PrefixAwareRouterFollowsTheCache) {
  SimulationConfig c = base(64);
  c.scheduler.kind = SchedulerKind::kSglang;
  c.prefix_caching = true;
  c.cluster.replicas = 2;
  c.cluster.router = RouterKind::kPrefixAware;
  RequestSpec a = req(0, 0, 40, 1);
  a.hash_block_tokens = 16;
  a.prefix_hashes = {7, 8};
  // `other` arrives while replica 0 is busy with `a`: no cache hit anywhere, so the less loaded
  // replica 1 takes it. Later repeats go where their prefix is cached, in the order
  // (other, a) — round robin would send them to 0 and 1 instead.
  RequestSpec other = req(1, 500'000, 40, 1);
  other.hash_block_tokens = 16;
  other.prefix_hashes = {9, 10};
  RequestSpec other_again = other;
  other_again.id = 2;
  other_again.arrival_ns = 200'000'000;
  RequestSpec a_again = a;
  a_again.id = 3;
  a_again.arrival_ns = 300'000'000;
  c.workload.requests = {a, other, other_again, a_again};
  auto rec = records_of(c);
  EXPECT_EQ(rec.at(0).replica, 0);
  EXPECT_EQ(rec.at(1).replica, 1);
  EXPECT_EQ(rec.at(2).replica, 1);
  EXPECT_EQ(rec.at(3).replica, 0);
  EXPECT_EQ(rec.at(2).cached_tokens, 32);
  EXPECT_EQ(rec.at(3).cached_tokens, 32);
}

TEST(Engine, PromptBlocksAreSharedWhileTheirRequestStillRuns) {
  SimulationConfig c = base(64);
  c.scheduler.kind = SchedulerKind::kSglang;
  c.prefix_caching = true;
  RequestSpec a = req(0, 0, 40, 10);
  a.hash_block_tokens = 16;
  a.prefix_hashes = {5, 6};
  RequestSpec b = a;
  b.id = 1;
  b.arrival_ns = 2'000'000;  // A's prefill ended at 1.4 ms; A decodes until 12.4 ms
  c.workload.requests = {a, b};
  auto rec = records_of(c);
  EXPECT_LT(rec.at(1).scheduled_ns, rec.at(0).finish_ns);
  EXPECT_EQ(rec.at(1).cached_tokens, 32);
}

TEST(Engine, DisaggregatedPrefillTransfersKvOverTheLink) {
  SimulationConfig c = base(64);
  c.cluster.prefill_replicas = 1;
  c.cluster.decode_replicas = 1;
  c.cluster.kv_link_bytes_per_s = 1e9;
  c.workload.requests = {req(0, 0, 16, 2)};
  SimulationResult result;
  auto rec = records_of(c, &result);
  // Prefill 16 tokens on replica 0: 1.16 ms. One 2 MiB block over 1 GB/s: 2.097152 ms; the decode
  // replica streams the first token once the KV is there (sim/kv_transfer.h), so TTFT includes the
  // transfer: 1.16 + 2.097152 ms. Decode on replica 1: 1.1 ms.
  const RequestRecord& r = rec.at(0);
  EXPECT_EQ(r.first_token_ns, 1'160'000 + 2'097'152);
  EXPECT_EQ(r.finish_ns, 1'160'000 + 2'097'152 + 1'100'000);
  EXPECT_EQ(r.replica, 1);
  EXPECT_EQ(result.kv_link.kind, "set");
  EXPECT_EQ(result.kv_transfers, 1);
  EXPECT_EQ(result.kv_transfer_ns_total, 2'097'152);
}

TEST(Engine, DisaggregatedDefaultLinkIsRdmaAcrossNodesAndNvlinkWithinOne) {
  // Two engines of TP 8 (16 GPUs) do not fit one 8-GPU H100 board: RDMA, 400 Gb/s = 50 GB/s per GPU.
  SimulationConfig c = base(64);
  c.parallel.tensor_parallel = 8;
  c.cluster.prefill_replicas = 1;
  c.cluster.decode_replicas = 1;
  c.workload.requests = {req(0, 0, 16, 2)};
  SimulationResult result;
  auto rec = records_of(c, &result);
  EXPECT_EQ(result.kv_link.kind, "RDMA");
  EXPECT_DOUBLE_EQ(result.kv_link.bytes_per_s, 50e9);
  EXPECT_NE(result.kv_link.source.find("ConnectX-7"), std::string::npos);
  // Each GPU sends its own shard: at TP 8 a 16-token block holds 1 of Llama-3.1-8B's 8 KV heads per
  // GPU, 2 MiB / 8 = 262'144 bytes, over 50 GB/s: 5'242.88 ns -> 5'243 (ceil to the ns).
  EXPECT_EQ(result.kv_transfer_ns_total, 5'243);
  EXPECT_EQ(rec.at(0).first_token_ns, 1'160'000 + 5'243);
  // Two single-GPU engines share a board: NVLink at the H100 datasheet's 450 GB/s per direction.
  c.parallel.tensor_parallel = 1;
  records_of(c, &result);
  EXPECT_EQ(result.kv_link.kind, "NVLink");
  EXPECT_DOUBLE_EQ(result.kv_link.bytes_per_s, resolve_gpu("h100-sxm").interconnect_bytes_per_s);
}

TEST(Engine, PrefillPoolParallelismNeedsDisaggregation) {
  SimulationConfig c = base(64);
  c.cluster.prefill_parallel = Parallelism{.tensor_parallel = 2};
  c.workload.requests = {req(0, 0, 16, 2)};
  EXPECT_THROW(run_simulation(c), ConfigError);
}

TEST(Engine, ClosedLoopUsersSendTheirRequests) {
  SimulationConfig c = base(64);
  c.workload.kind = WorkloadKind::kClosedLoop;
  c.workload.closed.num_users = 3;
  c.workload.closed.think_time_s = 0.01;
  c.workload.closed.turns = 2;
  c.workload.closed.first_prompt = LengthDistribution::fixed(32);
  c.workload.closed.followup = LengthDistribution::fixed(16);
  c.workload.closed.output = LengthDistribution::fixed(4);
  c.workload.closed.requests_per_user = 4;
  SimulationResult result;
  auto rec = records_of(c, &result);
  EXPECT_EQ(result.summary.finished, 12);
  // Turn 2 of a conversation carries the whole first turn: 32 + 4 + 16 = 52 prompt tokens.
  int second_turns = 0;
  for (const auto& [id, r] : rec) {
    if (r.turn == 1) {
      EXPECT_EQ(r.prompt_tokens, 52);
      ++second_turns;
    }
  }
  EXPECT_EQ(second_turns, 6);
}

TEST(Engine, MultiTurnPrefixHitsAreExactlyThePreviousTurn) {
  // With memory to spare nothing is evicted, so turn t+1 finds exactly the whole 16-token blocks of
  // turn t's cached tokens: its prompt and its answer except the last token (whose KV is never
  // written: the request ends when it is sampled).
  SimulationConfig c = base(100000);
  c.scheduler.kind = SchedulerKind::kSglang;
  c.prefix_caching = true;
  c.scheduler.max_num_batched_tokens = 4096;
  c.scheduler.max_model_len = 4096;
  c.workload.kind = WorkloadKind::kClosedLoop;
  c.workload.closed.num_users = 5;
  c.workload.closed.think_time_s = 0.05;
  c.workload.closed.turns = 4;
  c.workload.closed.first_prompt = LengthDistribution::uniform(20, 500);
  c.workload.closed.followup = LengthDistribution::uniform(1, 80);
  c.workload.closed.output = LengthDistribution::uniform(1, 200);
  c.workload.closed.requests_per_user = 8;
  SimulationResult result;
  auto rec = records_of(c, &result);
  ASSERT_EQ(result.summary.finished, 40);
  std::map<std::pair<int32_t, int32_t>, int32_t> cached_of;  // (user, request index) -> KV tokens at the end
  int64_t hits = 0, prompts = 0, checked = 0;
  for (const auto& [id, r] : rec) {
    cached_of[{r.user, static_cast<int32_t>(id & 0xffffffff)}] = r.prompt_tokens + r.output_tokens - 1;
  }
  for (const auto& [id, r] : rec) {
    const int32_t index = static_cast<int32_t>(id & 0xffffffff);
    int64_t expected = 0;
    if (r.turn > 0) {
      expected = cached_of.at({r.user, index - 1}) / 16 * 16;
      ++checked;
    }
    EXPECT_EQ(r.cached_tokens, expected) << "user " << r.user << " request " << index << " turn " << r.turn;
    hits += r.cached_tokens;
    prompts += r.prompt_tokens;
  }
  EXPECT_EQ(checked, 30);
  EXPECT_DOUBLE_EQ(result.summary.prefix_hit_rate, static_cast<double>(hits) / static_cast<double>(prompts));
}

SimulationConfig real_cost_config() {
  SimulationConfig c = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  c.workload.kind = WorkloadKind::kOpenLoop;
  c.workload.open.arrivals = ArrivalKind::kGamma;
  c.workload.open.cv = 2.0;
  c.workload.open.rate_per_s = 30;
  c.workload.open.num_requests = 400;
  c.workload.open.prompt = LengthDistribution::lognormal(6.5, 1.0);
  c.workload.open.output = LengthDistribution::lognormal(5.0, 0.8);
  c.seed = 11;
  c.slo.ttft_ms = 1000;
  return c;
}

TEST(Engine, SameSeedSameSummaryWithTheCostModel) {
  SimulationConfig c = real_cost_config();
  SimulationResult a = run_simulation(c);
  SimulationResult b = run_simulation(c);
  EXPECT_EQ(summary_json(c, a).dump(), summary_json(c, b).dump());
  EXPECT_EQ(a.summary.finished, 400);
  EXPECT_GT(a.steps, 400);
  c.seed = 12;
  SimulationResult d = run_simulation(c);
  EXPECT_NE(summary_json(c, a)["summary"].dump(), summary_json(c, d)["summary"].dump());
}

TEST(Engine, MoreLoadNeverLowersLatencyMuchAndCapacityBracketsTheSlo) {
  SimulationConfig c = real_cost_config();
  c.workload.open.num_requests = 300;
  c.workload.open.arrivals = ArrivalKind::kPoisson;
  CapacityOptions o;
  o.relative_tolerance = 0.1;
  CapacitySearch s = find_max_rate(c, o);
  ASSERT_GT(s.best, 0);
  EXPECT_GT(s.first_failing, s.best);
  EXPECT_TRUE(s.at_best.meets_slo);
  EXPECT_LE(s.at_best.ttft_ms.p90, 1000);
  CapacitySearch again = find_max_rate(c, o);
  EXPECT_EQ(again.best, s.best);
  EXPECT_EQ(again.probes.size(), s.probes.size());
}

TEST(Engine, ConfigErrorsNameTheRule) {
  SimulationConfig c = base(64);
  c.workload.requests = {req(0, 0, 16, 2)};
  c.scheduler.kind = SchedulerKind::kStatic;
  c.scheduler.chunked_prefill = false;
  try {
    run_simulation(c);
    FAIL() << "static + paged must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("kv-policy=paged"), std::string::npos) << e.what();
  }
  c = base(64);
  c.workload.requests = {req(0, 0, 16, 2)};
  c.prefix_caching = true;
  c.kv_policy = KvPolicy::kReserveOracle;
  c.scheduler.kind = SchedulerKind::kOrca;
  c.scheduler.chunked_prefill = false;
  EXPECT_THROW(run_simulation(c), ConfigError);
  c = base(64);
  c.workload.requests = {req(1, 10, 16, 2), req(0, 0, 16, 2)};
  EXPECT_THROW(run_simulation(c), ConfigError);  // out of arrival order
}

}  // namespace
}  // namespace kvplan::sim

namespace kvplan::sim {
namespace {

// Whole simulations under memory pressure, with every KV manager invariant checked after every
// step: preemption (recompute and swap), prefix caching, chunked prefill, speculative rollback.
struct PressureCase {
  const char* name;
  SchedulerKind kind;
  KvPolicy policy;
  bool prefix;
  PreemptionMode preemption;
  int32_t draft_tokens;
};

class EnginePressure : public ::testing::TestWithParam<PressureCase> {};

TEST_P(EnginePressure, InvariantsHoldAfterEveryStep) {
  const PressureCase& p = GetParam();
  SimulationConfig c = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  c.kv_capacity_bytes = 300 * kBlockBytes;  // 4,800 tokens: a handful of requests at a time
  c.scheduler.kind = p.kind;
  c.kv_policy = p.policy;
  c.prefix_caching = p.prefix;
  c.scheduler.preemption = p.preemption;
  c.scheduler.spec.draft_tokens = p.draft_tokens;
  c.scheduler.max_model_len = 2048;
  c.scheduler.max_num_seqs = 64;
  const bool reserves = p.policy != KvPolicy::kPaged;
  c.scheduler.chunked_prefill = !reserves;
  c.scheduler.max_num_batched_tokens = reserves ? 2048 : 512;
  c.offload.host_bytes = 1000 * kBlockBytes;
  c.check_invariants = true;
  c.workload.kind = WorkloadKind::kClosedLoop;
  c.workload.closed.num_users = 24;
  c.workload.closed.think_time_s = 0.2;
  c.workload.closed.turns = 3;
  c.workload.closed.first_prompt = LengthDistribution::uniform(16, 600);
  c.workload.closed.followup = LengthDistribution::uniform(1, 100);
  c.workload.closed.output = LengthDistribution::uniform(1, 300);
  c.workload.closed.max_context_tokens = 2048;
  c.workload.closed.requests_per_user = 12;
  c.seed = 5;
  SimulationResult r;
  ASSERT_NO_THROW(r = run_simulation(c)) << p.name;
  EXPECT_EQ(r.summary.finished, 24 * 12) << p.name;
  if (!reserves && p.kind == SchedulerKind::kVllm) {
    EXPECT_GT(r.summary.preemptions, 0) << p.name;
  }
  if (p.prefix) {
    EXPECT_GT(r.summary.prefix_hit_rate, 0.0) << p.name;  // little survives this much pressure
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schedulers, EnginePressure,
    ::testing::Values(
        PressureCase{"vllm_recompute", SchedulerKind::kVllm, KvPolicy::kPaged, false, PreemptionMode::kRecompute, 0},
        PressureCase{"vllm_swap", SchedulerKind::kVllm, KvPolicy::kPaged, false, PreemptionMode::kSwap, 0},
        PressureCase{"vllm_prefix", SchedulerKind::kVllm, KvPolicy::kPaged, true, PreemptionMode::kRecompute, 0},
        PressureCase{"vllm_spec", SchedulerKind::kVllm, KvPolicy::kPaged, false, PreemptionMode::kRecompute, 4},
        PressureCase{"sglang", SchedulerKind::kSglang, KvPolicy::kPaged, true, PreemptionMode::kRecompute, 0},
        PressureCase{"orca_max", SchedulerKind::kOrca, KvPolicy::kReserveMaxLength, false, PreemptionMode::kRecompute, 0},
        PressureCase{"orca_pow2", SchedulerKind::kOrca, KvPolicy::kReservePowerOfTwo, false, PreemptionMode::kRecompute, 0},
        PressureCase{"orca_oracle_spec", SchedulerKind::kOrca, KvPolicy::kReserveOracle, false, PreemptionMode::kRecompute, 2},
        PressureCase{"static", SchedulerKind::kStatic, KvPolicy::kReserveMaxLength, false, PreemptionMode::kRecompute, 0}),
    [](const ::testing::TestParamInfo<PressureCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace kvplan::sim

namespace kvplan::sim {
namespace {

// RunHooks::should_stop (the GUI's Cancel) ends the run between events: fewer requests finish than
// without it, and the stop is seen exactly when it first says true.
TEST(Engine, ShouldStopEndsTheRunEarly) {
  SimulationConfig c = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  c.kv_capacity_bytes = 300 * kBlockBytes;
  c.step_timer = std::make_shared<FormulaTimer>();
  c.workload.kind = WorkloadKind::kList;
  for (int64_t i = 0; i < 40; ++i) c.workload.requests.push_back(testing::request(i, i * 1'000'000, 64, 16));
  SimulationResult full = run_simulation(c);
  ASSERT_EQ(full.summary.finished, 40);

  int64_t checks = 0;
  int64_t finished_at_stop = -1;
  int64_t finished = 0;
  RunHooks hooks;
  hooks.on_request = [&](const RequestRecord&) { ++finished; };
  hooks.should_stop = [&] {
    ++checks;
    if (finished >= 10 && finished_at_stop < 0) finished_at_stop = finished;
    return finished_at_stop >= 0;
  };
  SimulationResult cut = run_simulation(c, hooks);
  EXPECT_GT(checks, 0);
  EXPECT_EQ(cut.summary.finished, finished_at_stop);
  EXPECT_LT(cut.summary.finished, 40);
  EXPECT_LT(cut.events, full.events);
}

}  // namespace
}  // namespace kvplan::sim

namespace kvplan::sim {
namespace {

// Issue 16: memory grew with simulated time (one time-series row per simulated second, idle time
// included); a request 1e9 s after the previous one exhausted memory.
TEST(Engine, IdleTimeCostsNoRowsAndNoEvents) {
  SimulationConfig c = base(300);
  c.sample_interval_ns = kNsPerSecond;
  const TimeNs gap = 1'000'000'000LL * kNsPerSecond;  // 1e9 s
  c.workload.requests = {req(0, 0, 64, 4), req(1, gap, 64, 4), req(2, gap + kNsPerSecond / 2, 64, 4)};
  SimulationResult r;
  records_of(c, &r);
  EXPECT_EQ(r.summary.finished, 3);
  EXPECT_GE(r.end_ns, gap);
  // Each burst of work is a few ms: a row when work starts, none across the idle gap.
  EXPECT_LE(r.timeseries.size(), 6u);
  EXPECT_LE(r.events, 60);
  // The idle stretch is one row that holds until work resumes.
  bool gap_row = false;
  for (size_t i = 0; i + 1 < r.timeseries.size(); ++i) {
    if (r.timeseries[i + 1].time_ns - r.timeseries[i].time_ns >= gap / 2) {
      gap_row = true;
      EXPECT_EQ(r.timeseries[i].running, 0);
      EXPECT_EQ(r.timeseries[i].waiting, 0);
    }
  }
  EXPECT_TRUE(gap_row);
}

TEST(Engine, TimeSeriesIsCappedByDecimation) {
  // 1 ms sampling over a long busy run: the series halves and samples half as often at the cap.
  SimulationConfig c = base(300);
  c.sample_interval_ns = kNsPerMs / 1000;  // 1 us: far more samples than the cap
  for (int64_t i = 0; i < 400; ++i) c.workload.requests.push_back(req(i, i * 2'000'000, 64, 64));
  SimulationResult r;
  records_of(c, &r);
  EXPECT_EQ(r.summary.finished, 400);
  EXPECT_LT(r.timeseries.size(), kMaxTimeSeriesRows);
  EXPECT_GT(r.timeseries.size(), kMaxTimeSeriesRows / 4);
  for (size_t i = 1; i < r.timeseries.size(); ++i) EXPECT_GT(r.timeseries[i].time_ns, r.timeseries[i - 1].time_ns);
}

}  // namespace
}  // namespace kvplan::sim
