// Golden tests: tiny scenarios whose every step and timestamp is worked out by hand in the
// comments. The step time is a formula (FormulaTimer), so each expected number can be checked with
// a pencil: 1 ms per step + 10 us per prefill token + 100 us per decode sequence.
// Llama-3.1-8B in bf16 holds 131,072 bytes per token, so a 16-token block is 2 MiB.
#include <gtest/gtest.h>

#include <fmt/format.h>

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

SimulationConfig base(int64_t blocks) {
  SimulationConfig c = testing::small_engine_config(blocks);
  c.scheduler.kind = SchedulerKind::kVllm;
  c.scheduler.chunked_prefill = true;
  return c;
}

struct GoldenRun {
  SimulationResult result;
  std::vector<std::string> log;
  std::map<int64_t, RequestRecord> records;
};

GoldenRun run(const SimulationConfig& c) {
  GoldenRun out;
  RunHooks hooks;
  hooks.on_step = [&](const StepLog& s) {
    std::string line = fmt::format("r{} {}->{}:", s.replica, s.start_ns, s.end_ns);
    for (const PlannedWork& w : s.work) line += fmt::format(" {}:{}{}", w.request_id, w.decode ? "D" : "P", w.tokens);
    out.log.push_back(line);
  };
  hooks.on_request = [&](const RequestRecord& r) { out.records[r.id] = r; };
  out.result = run_simulation(c, hooks);
  return out;
}

TEST(EngineGolden, ChunkedPrefillThenDecode) {
  SimulationConfig c = base(64);
  c.workload.requests = {req(0, 0, 100, 3), req(1, 500'000, 20, 2)};
  GoldenRun r = run(c);
  // t=0     A alone: a 64-token chunk (budget 64): 1 + 0.64 = 1.64 ms.
  // t=1.64  A's last 36 prompt tokens, then B (arrived at 0.5 ms) takes 20 of the 28 left:
  //         1 + 0.56 = 1.56 ms. Both prompts complete: first tokens at 3.20 ms.
  // t=3.20  two decodes: 1.2 ms. B has its 2 tokens at 4.40 ms and leaves.
  // t=4.40  A decodes alone: 1.1 ms; its third token at 5.50 ms.
  EXPECT_EQ(r.log, (std::vector<std::string>{"r0 0->1640000: 0:P64", "r0 1640000->3200000: 0:P36 1:P20",
                                             "r0 3200000->4400000: 0:D1 1:D1", "r0 4400000->5500000: 0:D1"}));
  const RequestRecord& a = r.records.at(0);
  EXPECT_EQ(a.scheduled_ns, 0);
  EXPECT_EQ(a.first_token_ns, 3'200'000);
  EXPECT_EQ(a.finish_ns, 5'500'000);
  EXPECT_DOUBLE_EQ(a.tpot_ns(), 1'150'000.0);  // (5.50 - 3.20) / 2
  EXPECT_EQ(a.max_gap_ns, 1'200'000);
  const RequestRecord& b = r.records.at(1);
  EXPECT_EQ(b.queue_ns(), 1'140'000);  // arrived 0.5 ms, scheduled 1.64 ms
  EXPECT_EQ(b.ttft_ns(), 2'700'000);
  EXPECT_EQ(b.e2e_ns(), 3'900'000);
  EXPECT_EQ(r.result.summary.finished, 2);
  EXPECT_EQ(r.result.summary.preemptions, 0);
  EXPECT_EQ(r.result.steps, 4);
  // Throughput: 2 requests and 5 output tokens between the first arrival (0) and last finish (5.5 ms).
  EXPECT_NEAR(r.result.summary.requests_per_s, 2 / 0.0055, 1e-6);
  EXPECT_NEAR(r.result.summary.output_tokens_per_s, 5 / 0.0055, 1e-6);
  // No limit held anything back; the peak KV was at t=1.64: A's 100 prompt tokens in 7 blocks and
  // B's 20 in 2, 9 of 64 blocks.
  const EngineLimitUse& l = r.result.summary.limits;
  EXPECT_EQ(l.steps, 4);
  EXPECT_EQ(l.kv_limited_steps, 0);
  EXPECT_EQ(l.seq_limited_steps, 0);
  EXPECT_EQ(l.peak_running, 2);
  EXPECT_DOUBLE_EQ(l.peak_kv_used, 9.0 / 64);
}

TEST(EngineGolden, PreemptionByRecompute) {
  SimulationConfig c = base(4);  // 4 blocks = 64 token slots
  c.workload.requests = {req(0, 0, 30, 10), req(1, 0, 30, 10)};
  GoldenRun r = run(c);
  // t=0     A and B arrive together and share the first step (the engine plans it once both are
  //         queued): 2 x 30 prefill tokens (2 blocks each, 4 of 4 used): 1 + 0.6 = 1.6 ms.
  // t=1.6   decode both (30 -> 31): 1.2 ms -> 2.8; (31 -> 32): -> 4.0. Each has 3 tokens.
  // t=4.0   A needs a 3rd block for token 33: none free, so B (admitted last) is preempted by
  //         recompute; A decodes alone, 1.1 ms -> 5.1. No admissions in a step that preempted.
  // t=5.1   B must re-prefill 30 + 3 generated = 33 tokens = 3 blocks, but only 1 is free: it
  //         waits. A's tokens: 4 at 5.1, then one every 1.1 ms: 10 at 11.7, and it leaves.
  // t=11.7  B re-prefills 33 tokens: 1.33 ms -> 13.03, its 4th token (a 9.03 ms gap after 4.0).
  //         6 more decodes of 1.1 ms: its 10th token at 13.03 + 6.6 = 19.63 ms.
  const RequestRecord& a = r.records.at(0);
  const RequestRecord& b = r.records.at(1);
  EXPECT_EQ(r.log.at(0), "r0 0->1600000: 0:P30 1:P30");
  EXPECT_EQ(a.first_token_ns, 1'600'000);
  EXPECT_EQ(a.finish_ns, 11'700'000);
  EXPECT_EQ(a.preemptions, 0);
  EXPECT_EQ(b.first_token_ns, 1'600'000);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b.max_gap_ns, 13'030'000 - 4'000'000);
  EXPECT_EQ(b.finish_ns, 19'630'000);
  EXPECT_EQ(r.log.at(3), "r0 4000000->5100000: 0:D1");
  EXPECT_EQ(r.log.at(10), "r0 11700000->13030000: 1:P33");
  EXPECT_EQ(r.result.summary.preemptions, 1);
  // Engine limits (EngineLimitUse): 17 steps (log 0-16). Step 3 preempted B; steps 4-9 (A's
  // tokens 5-10) kept B waiting for 3 blocks with 1 free: 7 steps held back by KV memory. Both
  // sequences ran at once (peak 2 of 4); the first step filled all 4 blocks.
  const EngineLimitUse& l = r.result.summary.limits;
  EXPECT_EQ(r.log.size(), 17u);
  EXPECT_EQ(l.steps, 17);
  EXPECT_EQ(l.kv_limited_steps, 7);
  EXPECT_EQ(l.seq_limited_steps, 0);
  EXPECT_EQ(l.peak_running, 2);
  EXPECT_EQ(l.max_num_seqs, 4);
  EXPECT_DOUBLE_EQ(l.peak_kv_used, 1.0);
}

TEST(EngineGolden, RequestsWaitingAtMaxNumSeqsAreCounted) {
  SimulationConfig c = base(64);
  c.scheduler.max_num_seqs = 1;
  c.workload.requests = {req(0, 0, 10, 3), req(1, 0, 10, 2)};
  GoldenRun r = run(c);
  // A runs alone (the limit is 1) while B waits: prefill 10 (1.1 ms), decodes to 2.2 and 3.3 ms.
  // Then B: prefill to 4.4, decode to 5.5. The three steps of A had B waiting at the limit.
  EXPECT_EQ(r.log, (std::vector<std::string>{"r0 0->1100000: 0:P10", "r0 1100000->2200000: 0:D1",
                                             "r0 2200000->3300000: 0:D1", "r0 3300000->4400000: 1:P10",
                                             "r0 4400000->5500000: 1:D1"}));
  const EngineLimitUse& l = r.result.summary.limits;
  EXPECT_EQ(l.steps, 5);
  EXPECT_EQ(l.seq_limited_steps, 3);
  EXPECT_EQ(l.kv_limited_steps, 0);
  EXPECT_EQ(l.peak_running, 1);
  EXPECT_EQ(l.max_num_seqs, 1);
  EXPECT_DOUBLE_EQ(l.seq_limited_share(), 0.6);
  // One block of 16 slots holds 10 and then 11, 12 tokens: 1 of 64 blocks.
  EXPECT_DOUBLE_EQ(l.peak_kv_used, 1.0 / 64);
}

TEST(EngineGolden, StaticBatchesPadAndWaitForTheLongest) {
  SimulationConfig c = base(0);
  c.scheduler.kind = SchedulerKind::kStatic;
  c.scheduler.chunked_prefill = false;
  c.scheduler.max_num_seqs = 2;
  c.scheduler.max_model_len = 64;
  c.kv_policy = KvPolicy::kReserveMaxLength;
  c.kv_capacity_bytes = 2 * 64 * 131072;  // two max-length regions
  c.workload.requests = {req(0, 0, 10, 3), req(1, 500'000, 20, 1), req(2, 600'000, 5, 2)};
  GoldenRun r = run(c);
  // t=0    A alone: prefill 10 (1.1 ms), decodes at 2.2 and 3.3 ms: the batch ends at 3.3.
  // t=3.3  B and C together, prompts padded to 20: 1 + 0.4 = 1.4 ms -> 4.7 (B done, 1 token);
  //        C needs one more token: the batch decodes both (B as padding): 1.2 ms -> 5.9.
  EXPECT_EQ(r.log, (std::vector<std::string>{"r0 0->1100000: 0:P10", "r0 1100000->2200000: 0:D1",
                                             "r0 2200000->3300000: 0:D1", "r0 3300000->4700000: 1:P20 2:P5",
                                             "r0 4700000->5900000: 1:D1 2:D1"}));
  EXPECT_EQ(r.records.at(0).finish_ns, 3'300'000);
  EXPECT_EQ(r.records.at(1).finish_ns, 4'700'000);
  EXPECT_EQ(r.records.at(1).queue_ns(), 2'800'000);
  EXPECT_EQ(r.records.at(2).finish_ns, 5'900'000);
}

TEST(EngineGolden, SpeculativeDecodingAcceptingEverything) {
  SimulationConfig c = base(64);
  c.scheduler.spec = SpecDecodeConfig{.draft_tokens = 3, .acceptance_rate = 1.0, .draft_cost_ratio = 0.5};
  c.workload.requests = {req(0, 0, 10, 9)};
  GoldenRun r = run(c);
  // Prefill 10: 1.1 ms, token 1. Each verify step: 1.1 ms for 4 query tokens plus drafting
  // 3 x 0.5 x 1.1 ms = 1.65 ms; all 3 drafts accepted + 1 bonus = 4 tokens: 5 at 3.85, 9 at 6.6.
  EXPECT_EQ(r.log, (std::vector<std::string>{"r0 0->1100000: 0:P10", "r0 1100000->3850000: 0:D4",
                                             "r0 3850000->6600000: 0:D4"}));
  EXPECT_EQ(r.records.at(0).finish_ns, 6'600'000);
}

TEST(EngineGolden, SpeculativeDecodingRejectingEverythingEmitsOneTokenPerStep) {
  SimulationConfig c = base(64);
  c.scheduler.spec = SpecDecodeConfig{.draft_tokens = 3, .acceptance_rate = 0.0, .draft_cost_ratio = 0.0};
  c.workload.requests = {req(0, 0, 10, 3)};
  GoldenRun r = run(c);
  EXPECT_EQ(r.result.steps, 3);  // prefill + 2 verify steps, one token each
  EXPECT_EQ(r.records.at(0).finish_ns, 1'100'000 + 2 * 1'100'000);
}

TEST(EngineGolden, PrefixCacheServesTheSharedPrompt) {
  SimulationConfig c = base(64);
  c.scheduler.kind = SchedulerKind::kSglang;
  c.prefix_caching = true;
  RequestSpec a = req(0, 0, 40, 1);
  a.hash_block_tokens = 16;
  a.prefix_hashes = {111, 222};
  RequestSpec b = a;
  b.id = 1;
  b.arrival_ns = 2'000'000;
  c.workload.requests = {a, b};
  GoldenRun r = run(c);
  // A: prefill 40 -> 1.4 ms, done (1 token). B at 2 ms finds 2 cached blocks = 32 tokens and
  // prefills the other 8: 1.08 ms -> 3.08 ms.
  EXPECT_EQ(r.log, (std::vector<std::string>{"r0 0->1400000: 0:P40", "r0 2000000->3080000: 1:P8"}));
  EXPECT_EQ(r.records.at(1).cached_tokens, 32);
  EXPECT_DOUBLE_EQ(r.result.summary.prefix_hit_rate, 32.0 / 80.0);
}

TEST(EngineGolden, RejectsRequestsLongerThanTheModelLength) {
  SimulationConfig c = base(64);
  c.workload.requests = {req(0, 0, 1000, 100), req(1, 0, 10, 1)};
  GoldenRun r = run(c);
  EXPECT_EQ(r.result.summary.rejected, 1);
  EXPECT_EQ(r.result.summary.finished, 1);
}

}  // namespace
}  // namespace kvplan::sim
