// One test per engine scheduling rule (sim/src/policy_*.cpp), each with its schedule worked out by
// hand in the comments. The step time is the golden tests' formula (sim_test_support.h): 1 ms per
// step + 10 us per prefill token + 100 us per decode sequence. A 16-token block of Llama-3.1-8B in
// bf16 is 2 MiB (kBlockBytes).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "internal/batch_policy.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/simulation.h"
#include "sim_test_support.h"

namespace kvplan::sim {
namespace {

using testing::FormulaTimer;
using testing::kBlockBytes;
RequestSpec req(int64_t id, TimeNs arrival, int32_t prompt, int32_t output) {
  return testing::request(id, arrival, prompt, output);
}

SimulationConfig base(SchedulerKind kind, int64_t blocks) {
  SimulationConfig c = testing::small_engine_config(blocks);
  c.scheduler.kind = kind;
  c.scheduler.chunked_prefill = true;
  c.scheduler.overlap = false;
  return c;
}

struct Trace {
  std::vector<std::string> log;
  std::map<int64_t, RequestRecord> records;
};

Trace run(const SimulationConfig& c) {
  Trace out;
  RunHooks hooks;
  hooks.on_step = [&](const StepLog& s) {
    std::string line = fmt::format("{}->{}:", s.start_ns, s.end_ns);
    for (const PlannedWork& w : s.work) line += fmt::format(" {}:{}{}", w.request_id, w.decode ? "D" : "P", w.tokens);
    out.log.push_back(line);
  };
  hooks.on_request = [&](const RequestRecord& r) { out.records[r.id] = r; };
  run_simulation(c, hooks);
  return out;
}

// vLLM (policy_vllm.cpp rule 2): the token budget cuts a prompt longer than it into chunks, one per
// step, and the first token comes with the last chunk.
TEST(PolicyVllm, TokenBudgetSplitsALongPromptIntoChunks) {
  SimulationConfig c = base(SchedulerKind::kVllm, 64);
  c.workload.requests = {req(0, 0, 150, 2)};
  Trace r = run(c);
  // t=0     64 of 150 prompt tokens (budget 64): 1 + 0.64 = 1.64 ms.
  // t=1.64  the next 64: 1.64 ms -> 3.28.
  // t=3.28  the last 22: 1 + 0.22 = 1.22 ms -> 4.50; first token.
  // t=4.50  one decode: 1.1 ms -> 5.60; second token, done.
  EXPECT_EQ(r.log, (std::vector<std::string>{"0->1640000: 0:P64", "1640000->3280000: 0:P64",
                                             "3280000->4500000: 0:P22", "4500000->5600000: 0:D1"}));
  EXPECT_EQ(r.records.at(0).first_token_ns, 4'500'000);
  EXPECT_EQ(r.records.at(0).finish_ns, 5'600'000);
}

// SGLang (policy_sglang.cpp rules 1-2): by default a prefill runs in a step of its own, the running
// decodes wait; with --enable-mixed-chunk they share the step.
TEST(PolicySglang, PrefillDoesNotJoinADecodeBatchByDefault) {
  SimulationConfig c = base(SchedulerKind::kSglang, 64);
  c.workload.requests = {req(0, 0, 20, 3), req(1, 1'500'000, 20, 2)};
  Trace r = run(c);
  // t=0     A's prompt: 1 + 0.2 = 1.2 ms; A's first token at 1.2.
  // t=1.2   B has not arrived (1.5): A decodes alone, 1.1 ms -> 2.3.
  // t=2.3   B is queued: a prefill step of B alone, A waits: 1.2 ms -> 3.5.
  // t=3.5   a decode step of both: 1.2 ms -> 4.7; A's 3rd token and B's 2nd: both done.
  EXPECT_EQ(r.log, (std::vector<std::string>{"0->1200000: 0:P20", "1200000->2300000: 0:D1",
                                             "2300000->3500000: 1:P20", "3500000->4700000: 0:D1 1:D1"}));
  EXPECT_EQ(r.records.at(0).max_gap_ns, 2'400'000);  // A's token at 2.3, the next at 4.7
  EXPECT_EQ(r.records.at(1).first_token_ns, 3'500'000);
}

TEST(PolicySglang, MixedChunkPutsTheRunningDecodesIntoThePrefillStep) {
  SimulationConfig c = base(SchedulerKind::kSglang, 64);
  c.scheduler.mixed_chunk = true;
  c.workload.requests = {req(0, 0, 20, 3), req(1, 1'500'000, 20, 2)};
  Trace r = run(c);
  // As above to t=2.3. Then B's prompt and A's decode in one step: 1 + 0.2 + 0.1 = 1.3 ms -> 3.6;
  // A's 3rd token (done) and B's first. t=3.6 B decodes alone: 1.1 ms -> 4.7.
  EXPECT_EQ(r.log, (std::vector<std::string>{"0->1200000: 0:P20", "1200000->2300000: 0:D1",
                                             "2300000->3600000: 1:P20 0:D1", "3600000->4700000: 1:D1"}));
  EXPECT_EQ(r.records.at(0).finish_ns, 3'600'000);
}

TEST(PolicySglang, MixedChunkBudgetLeavesOneTokenPerRunningDecode) {
  SimulationConfig c = base(SchedulerKind::kSglang, 64);
  c.scheduler.mixed_chunk = true;
  c.workload.requests = {req(0, 0, 20, 3), req(1, 0, 20, 3), req(2, 1'500'000, 100, 1)};
  Trace r = run(c);
  // t=0     A and B prefill together: 1 + 0.4 = 1.4 ms.
  // t=1.4   C (arrived 1.5) not yet queued: A and B decode, 1.2 ms -> 2.6.
  // t=2.6   C's prompt with the two decodes: chunk budget 64 - 2 running decodes = 62 tokens of C's
  //         100: 1 + 0.62 + 0.2 = 1.82 ms -> 4.42; A and B emit their 3rd token and leave.
  // t=4.42  C's last 38 tokens alone: 1.38 ms -> 5.80, its only token.
  EXPECT_EQ(r.log, (std::vector<std::string>{"0->1400000: 0:P20 1:P20", "1400000->2600000: 0:D1 1:D1",
                                             "2600000->4420000: 2:P62 0:D1 1:D1", "4420000->5800000: 2:P38"}));
}

// SGLang (rule 5): a decode step that cannot get KV for every running request retracts the most
// recently admitted one, and new_token_ratio becomes the survivors' estimate
// min(1, (tokens decoded + 20 x requests) / (sum of max_new_tokens + 1)); it decays from there.
TEST(PolicySglang, RetractionSetsTheNewTokenRatioToTheSurvivorsEstimate) {
  const KvLayout layout = build_kv_layout(resolve_model("llama-3.1-8b"), KvScheme{}, Parallelism{});
  ReplicaSetup setup;
  setup.scheduler.kind = SchedulerKind::kSglang;
  setup.scheduler.max_num_batched_tokens = 64;
  setup.scheduler.max_model_len = 1024;
  setup.layout = &layout;
  KvManagerConfig kc;
  kc.policy = KvPolicy::kPaged;
  kc.capacity_bytes = 5 * kBlockBytes;  // 80 tokens
  kc.layout = &layout;
  kc.max_model_len = 1024;
  FormulaTimer timer;
  internal::ReplicaCore core(setup, make_kv_manager(kc), &timer, nullptr);
  std::unique_ptr<internal::BatchPolicy> policy = internal::make_sglang_policy();
  core.traits = policy->traits();
  EXPECT_DOUBLE_EQ(internal::sglang_new_token_ratio(*policy), 0.7);
  // A and B: 16-token prompts, 40 output tokens, 17 emitted; 32 tokens of KV each in 2 blocks (4
  // of 5 blocks used).
  for (int64_t id : {0, 1}) {
    const int32_t slot = core.new_slot();
    internal::Seq& s = core.seqs[slot];
    s.spec = req(id, 0, 16, 40);
    s.record.id = id;
    s.prefill_target = 16;
    AdmitResult a = core.kv->admit(core.kv_request(s, false), 32);
    ASSERT_TRUE(a.ok);
    s.kv_tokens = 32;
    s.capacity = a.capacity_tokens;
    s.generated = 17;
    s.state = internal::SeqState::kRunning;
    core.running.push_back(slot);
  }
  // Step 1: nothing waits, so a decode step. A's 33rd token takes the last block; B's finds none:
  // B (admitted last) is retracted, its 2 blocks freed, and it waits to re-prefill 16 + 17 tokens.
  // The survivor A has decoded 17 of 40: ratio = (17 + 20 x 1) / (40 + 1) = 37/41.
  policy->plan_step(core, 0);
  ASSERT_EQ(core.plan.size(), 1u);
  EXPECT_EQ(core.plan[0].slot, 0);
  EXPECT_TRUE(core.plan[0].decode);
  ASSERT_EQ(core.waiting.size(), 1u);
  EXPECT_EQ(core.seqs[core.waiting.front()].prefill_target, 33);
  EXPECT_EQ(core.stats.preemptions, 1);
  EXPECT_DOUBLE_EQ(internal::sglang_new_token_ratio(*policy), 37.0 / 41.0);
  // Step 2 (A's token 18 written): B needs 33 tokens = 3 blocks, 2 are free: not admitted. A decodes
  // without retracting: the ratio decays by (0.7 - 0.1) / 600 = 0.001.
  core.plan.clear();
  core.seqs[0].kv_tokens = 33;
  core.seqs[0].generated = 18;
  policy->plan_step(core, 1'100'000);
  ASSERT_EQ(core.plan.size(), 1u);
  EXPECT_EQ(core.plan[0].slot, 0);
  EXPECT_TRUE(core.kv_blocked);
  EXPECT_NEAR(internal::sglang_new_token_ratio(*policy), 37.0 / 41.0 - 0.001, 1e-12);
}

// TensorRT-LLM (policy_trtllm.cpp rule 1): GUARANTEED_NO_EVICT starts a request only when the KV
// it needs to finish (prompt + max output) fits beside what the running ones still need.
TEST(PolicyTrtllm, GuaranteedNoEvictDoesNotStartWhatItCannotFinish) {
  SimulationConfig c = base(SchedulerKind::kTrtllm, 8);  // 128 tokens of KV
  c.workload.requests = {req(0, 0, 16, 80), req(1, 0, 16, 40)};
  Trace r = run(c);
  // t=0     A needs 16 + 80 = 96 tokens to finish: 128 free, started. B needs 56; 128 - 96 = 32
  //         are left: B waits. A's prompt: 1.16 ms.
  // A then decodes alone, 79 steps of 1.1 ms: done at 1.16 + 86.9 = 88.06 ms. B starts then:
  //         1.16 ms -> 89.22, its first token.
  EXPECT_EQ(r.log.at(0), "0->1160000: 0:P16");
  EXPECT_EQ(r.log.at(1), "1160000->2260000: 0:D1");
  EXPECT_EQ(r.records.at(0).finish_ns, 88'060'000);
  EXPECT_EQ(r.records.at(1).scheduled_ns, 88'060'000);
  EXPECT_EQ(r.records.at(1).first_token_ns, 89'220'000);
  EXPECT_EQ(r.records.at(1).preemptions, 0);
}

TEST(PolicyTrtllm, MaxUtilizationStartsWhatFitsNow) {
  SimulationConfig c = base(SchedulerKind::kTrtllm, 8);
  c.scheduler.capacity = CapacityPolicy::kMaxUtilization;
  c.workload.requests = {req(0, 0, 16, 80), req(1, 0, 16, 40)};
  Trace r = run(c);
  // Both prompts fit now (2 of 8 blocks): one step of both, 1 + 0.32 = 1.32 ms.
  EXPECT_EQ(r.log.at(0), "0->1320000: 0:P16 1:P16");
  EXPECT_EQ(r.records.at(1).scheduled_ns, 0);
}

// The overlap scheduler (TensorRT-LLM's _executor_loop_overlap, SGLang's event_loop_overlap, vLLM's
// async scheduling; replica.cpp): step n+1 is formed while step n runs, so it sees only the
// requests queued when step n started. A request that arrives during a step joins one step later
// than without overlap.
TEST(PolicyOverlap, AStepIsFormedWhileThePreviousOneRuns) {
  SimulationConfig c = base(SchedulerKind::kTrtllm, 64);
  c.workload.requests = {req(0, 0, 20, 3), req(1, 500'000, 20, 1)};
  // Without overlap: t=0 A's prompt, 1.2 ms. t=1.2: B (queued at 0.5) joins: A's decode and B's
  // prompt, 1 + 0.2 + 0.1 = 1.3 ms -> 2.5; B's only token. t=2.5: A decodes, 1.1 -> 3.6.
  Trace plain = run(c);
  EXPECT_EQ(plain.log, (std::vector<std::string>{"0->1200000: 0:P20", "1200000->2500000: 0:D1 1:P20",
                                                 "2500000->3600000: 0:D1"}));
  // With overlap: the idle engine forms step 1 at once (t=0). Step 2 was formed when step 1
  // started (t=0), before B arrived: A decodes alone, 1.1 ms -> 2.3. Step 3, formed at 1.2, sees B:
  // 1.3 ms -> 3.6, A's last token and B's only one.
  c.scheduler.overlap = true;
  Trace overlap = run(c);
  EXPECT_EQ(overlap.log, (std::vector<std::string>{"0->1200000: 0:P20", "1200000->2300000: 0:D1",
                                                   "2300000->3600000: 0:D1 1:P20"}));
  EXPECT_EQ(overlap.records.at(1).scheduled_ns, 2'300'000);
  EXPECT_EQ(plain.records.at(1).scheduled_ns, 1'200'000);
}

// With overlap the engine's CPU work per step runs while the GPU computes the step before: a step
// takes max(GPU, CPU) instead of GPU + CPU.
TEST(PolicyOverlap, TheStepOverheadHidesBehindTheGpu) {
  SimulationConfig c = base(SchedulerKind::kVllm, 64);
  c.overheads.step.ns = 1'150'000;
  c.workload.requests = {req(0, 0, 20, 3)};
  // Without overlap: 1.2 + 1.15, then 2 x (1.1 + 1.15): done at 2.35 + 4.5 = 6.85 ms.
  EXPECT_EQ(run(c).records.at(0).finish_ns, 6'850'000);
  // With overlap: max(1.2, 1.15) = 1.2, then 2 x max(1.1, 1.15) = 2.3: done at 3.5 ms.
  c.scheduler.overlap = true;
  EXPECT_EQ(run(c).records.at(0).finish_ns, 3'500'000);
}

// With overlap, a request that finished in step n releases its KV only after step n+1 is formed:
// a request waiting for that memory starts one step later.
TEST(PolicyOverlap, FinishedRequestsReleaseTheirKvAfterTheNextStepIsFormed) {
  SimulationConfig c = base(SchedulerKind::kVllm, 2);  // 2 blocks, 32 tokens of KV
  c.workload.requests = {req(0, 0, 15, 2), req(1, 0, 10, 5), req(2, 0, 15, 1)};
  // t=0     A (15) and D (10) take both blocks: 1 + 0.25 = 1.25 ms; C waits for a block.
  // t=1.25  A and D decode (both still inside their block): 1.2 ms -> 2.45; A is done.
  // Without overlap, A's block is free at once: t=2.45 D decodes and C's prompt starts,
  //         1 + 0.15 + 0.1 = 1.25 ms -> 3.70.
  Trace plain = run(c);
  EXPECT_EQ(plain.log.at(2), "2450000->3700000: 1:D1 2:P15");
  EXPECT_EQ(plain.records.at(2).scheduled_ns, 2'450'000);
  // With overlap the step from 2.45 is formed while A still holds its block: D decodes alone,
  // 1.1 ms -> 3.55; then C starts.
  c.scheduler.overlap = true;
  Trace overlap = run(c);
  EXPECT_EQ(overlap.log.at(2), "2450000->3550000: 1:D1");
  EXPECT_EQ(overlap.log.at(3), "3550000->4800000: 1:D1 2:P15");
  EXPECT_EQ(overlap.records.at(2).scheduled_ns, 3'550'000);
}

// With overlap, a step formed early sees only what was queued when the previous step started; but an
// engine with nothing else to run is idle, and its loop schedules what is queued at once.
TEST(PolicyOverlap, AnIdleEngineSchedulesWhatIsQueuedAtOnce) {
  SimulationConfig c = base(SchedulerKind::kTrtllm, 64);
  c.scheduler.overlap = true;
  c.workload.requests = {req(0, 0, 20, 1), req(1, 500'000, 20, 1)};
  Trace r = run(c);
  // t=0 A's prompt (its only token): 1.2 ms. B arrived at 0.5, after step 1 started, so the step
  // formed early has nothing in it; the idle engine then takes B at 1.2: 1.2 ms -> 2.4.
  EXPECT_EQ(r.log, (std::vector<std::string>{"0->1200000: 0:P20", "1200000->2400000: 1:P20"}));
  EXPECT_EQ(r.records.at(1).finish_ns, 2'400'000);
}

}  // namespace
}  // namespace kvplan::sim
