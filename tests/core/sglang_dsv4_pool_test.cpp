// SGLang's DeepSeek-V4 pools (sglang_dsv4_pool.h) against published start-up logs, term by term.
// Each log prints bytes_per_full_token to two decimals and the budget in GiB to two, so the tests
// check the per-token bytes to the printed digits and the token counts against the budget interval
// the printed figure stands for. Sources: docs/benchmarks.md, "SGLang's DeepSeek-V4 pools".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/sglang_dsv4_pool.h"

namespace kvplan {
namespace {

constexpr double kGiBytes = 1073741824.0;

int64_t gib(double g) { return static_cast<int64_t>(g * kGiBytes); }

// The budgets whose printed value ("{:.2f} GB" of bytes / 2^30) is `printed`.
void expect_tokens_for_printed_budget(const SglangDsv4Shape& shape, double printed, int64_t logged_full_tokens) {
  const SglangDsv4Pool low = sglang_dsv4_pool(shape, gib(printed - 0.005));
  const SglangDsv4Pool high = sglang_dsv4_pool(shape, gib(printed + 0.005));
  EXPECT_LE(low.full_tokens, logged_full_tokens);
  EXPECT_GE(high.full_tokens, logged_full_tokens);
}

TEST(SglangDsv4Pool, ShapeByRelease) {
  const ModelConfig flash = resolve_model("deepseek-v4-flash");
  const ModelConfig pro = resolve_model("deepseek-v4-pro");
  // <= 0.5.12: every compress_ratios entry, the MTP block's 0 too, on every pipeline stage
  SglangDsv4Shape old = sglang_dsv4_shape(pro, parse_engine_version("0.5.12.post1"), 15, 30);
  EXPECT_FALSE(old.c128_state_fixed);
  EXPECT_EQ(old.layers, 62);  // 61 layers + the MTP block
  EXPECT_EQ(old.layers_c4, 30);
  EXPECT_EQ(old.layers_c128, 31);
  old = sglang_dsv4_shape(flash, parse_engine_version("0.5.12"), 0, 43);
  EXPECT_EQ(old.layers, 44);  // compress_ratios [0, 0, (4, 128) x 20, 4, 0]
  EXPECT_EQ(old.layers_c4, 21);
  EXPECT_EQ(old.layers_c128, 20);
  // 0.5.15 on: the stage's slice of compress_ratios, the MTP entry past the last layer left out
  SglangDsv4Shape now = sglang_dsv4_shape(flash, parse_engine_version("0.5.15"), 0, 43);
  EXPECT_TRUE(now.c128_state_fixed);
  EXPECT_EQ(now.layers, 43);
  now = sglang_dsv4_shape(flash, parse_engine_version("0.5.15"), 0, 22);  // stage 0 of 2: layers 0..21
  EXPECT_EQ(now.layers, 22);
  EXPECT_EQ(now.layers_c4, 10);    // layers 2, 4, .., 20
  EXPECT_EQ(now.layers_c128, 10);  // layers 3, 5, .., 21
  EXPECT_EQ(now.nope_dim, 448);
  EXPECT_EQ(now.rope_dim, 64);
  EXPECT_EQ(now.index_head_dim, 128);
  EXPECT_EQ(now.window, 128);
  EXPECT_THROW(sglang_dsv4_shape(resolve_model("llama-3.1-8b"), parse_engine_version("0.5.15"), 0, 32), ConfigError);
}

// SGLang v0.5.12.post1, DeepSeek-V4-Pro on 4 x 8 H800, TP8 PP4 and TP16 PP2 (a published test report,
// code-index id 57899791574): bytes_per_full_token 23,749.84 on both, max_total_num_tokens 1,607,936 at
// ~35.57 GB of KV budget per GPU and 1,573,888 at ~34.81 GB.
//   r K N = 0.1 x 584 x 62 = 3,620.8; K N4/4 = 584 x 30/4 = 4,380; K N128/128 = 584 x 31/128 = 141.4375;
//   I N4/4 = 132 x 30/4 = 990; r (8/128) 8,192 x 30 = 1,536; r (128/128) 4,096 x 31 = 12,697.6;
//   r (8/128) 2,048 x 30 = 384; sum 23,749.8375.
TEST(SglangDsv4Pool, ReproducesThe0512Log) {
  const SglangDsv4Shape s =
      sglang_dsv4_shape(resolve_model("deepseek-v4-pro"), parse_engine_version("0.5.12.post1"), 0, 16);
  const SglangDsv4Pool at_3557 = sglang_dsv4_pool(s, gib(35.57));
  EXPECT_NEAR(at_3557.bytes_per_full_token, 23749.8375, 1e-9);
  EXPECT_EQ(at_3557.c128_state_fixed_bytes, 0);
  EXPECT_EQ(at_3557.full_tokens, 1607936);
  expect_tokens_for_printed_budget(s, 34.81, 1573888);
}

// SGLang 0.5.15, DeepSeek-V4-Pro, swa_full_tokens_ratio 0.15, max_running_requests 64 (a published
// write-up, code-index id 62139008554): "bytes_per_full_token=13735.04, available_bytes=118.93 GB,
// c128_state_fixed=1.01 GB, full_token=9217792"; "full=9217792, swa=1382656, c4=2304448, c128=72014".
//   r K N = 0.15 x 584 x 61 = 5,343.6; + 4,380 + 141.4375 + 990; r (8/128) 8,192 x 30 = 2,304;
//   r (8/128) 2,048 x 30 = 576; sum 13,735.0375.
//   c128 state: rows ceil128(65 x 128 + 129) = 8,576, x 2 x 512 x 4 B x 31 layers = 1,088,946,176 B (1.01 GiB).
TEST(SglangDsv4Pool, ReproducesThe0515Log) {
  SglangDsv4Shape s = sglang_dsv4_shape(resolve_model("deepseek-v4-pro"), parse_engine_version("0.5.15"), 0, 61);
  s.swa_ratio = 0.15;
  s.max_running_requests = 64;
  const SglangDsv4Pool pool = sglang_dsv4_pool(s, gib(118.93));
  EXPECT_NEAR(pool.bytes_per_full_token, 13735.0375, 1e-9);
  EXPECT_EQ(pool.c128_state_fixed_bytes, 1088946176);
  expect_tokens_for_printed_budget(s, 118.93, 9217792);
  // the pools from the logged full_token
  const SglangDsv4Pool logged = sglang_dsv4_pool(s, 1088946176 + static_cast<int64_t>(9217792 * 13735.0375) + 1);
  EXPECT_EQ(logged.full_tokens, 9217792);
  EXPECT_EQ(logged.swa_tokens, 1382656);
  EXPECT_EQ(logged.c4_tokens, 2304448);
  EXPECT_EQ(logged.c128_tokens, 72014);
}

// A DeepSeek-V4-Flash log of 2026-08-10 (code-index id 57615238133; page size 128, max_running_requests
// 4): "bytes_per_full_token=7705.45, available_bytes=1.57 GB, c128_state_fixed=0.07 GB, full_token=209280";
// "full=209280, swa=20864, c4=52320, c128=1635, c4_state=1304".
//   r K N = 0.1 x 584 x 43 = 2,511.2; K N4/4 = 3,066; K N128/128 = 91.25; I N4/4 = 693;
//   r (8/128) 8,192 x 21 = 1,075.2; r (8/128) 2,048 x 21 = 268.8; sum 7,705.45.
//   c128 state: rows ceil128(5 x 128 + 129) = 896, x 4,096 B x 20 layers = 73,400,320 B (0.07 GiB).
// And a bf16-state run (SGLANG_DSV4_COMPRESS_STATE_DTYPE=bf16; code-index id 57363862497):
// bytes_per_full_token 7,033.45 (the two state terms halved: 537.6 + 134.4), full 6,859,008, swa 685,824.
TEST(SglangDsv4Pool, ReproducesTheFlashLogs) {
  SglangDsv4Shape s = sglang_dsv4_shape(resolve_model("deepseek-v4-flash"), parse_engine_version("0.5.15"), 0, 43);
  s.page_tokens = 128;
  s.max_running_requests = 4;
  const SglangDsv4Pool pool = sglang_dsv4_pool(s, gib(1.57));
  EXPECT_NEAR(pool.bytes_per_full_token, 7705.45, 1e-9);
  EXPECT_EQ(pool.c128_state_fixed_bytes, 73400320);
  expect_tokens_for_printed_budget(s, 1.57, 209280);
  const SglangDsv4Pool logged = sglang_dsv4_pool(s, 73400320 + static_cast<int64_t>(209280 * 7705.45) + 1);
  EXPECT_EQ(logged.full_tokens, 209280);
  EXPECT_EQ(logged.swa_tokens, 20864);
  EXPECT_EQ(logged.c4_tokens, 52320);
  EXPECT_EQ(logged.c128_tokens, 1635);
  EXPECT_EQ(logged.c4_state_slots, 1304);

  s.state_bytes = 2;
  s.page_tokens = 256;
  EXPECT_NEAR(sglang_dsv4_pool(s, 0).bytes_per_full_token, 7033.45, 1e-9);
  const int64_t fixed = int64_t{896} * 1024 * 2 * 20;  // the ratio-128 states in bf16 too
  const SglangDsv4Pool bf16 = sglang_dsv4_pool(s, fixed + static_cast<int64_t>(6859008 * 7033.45) + 1);
  EXPECT_EQ(bf16.c128_state_fixed_bytes, fixed);
  EXPECT_EQ(bf16.full_tokens, 6859008);
  EXPECT_EQ(bf16.swa_tokens, 685824);  // int(6,859,008 x 0.1) = 685,900, floored to the page
}

// Without --max-running-requests SGLang sizes the ratio-128 states for its own estimate:
// min(clamp(int(F0 / context_len x 512), 2048, 4096), F0 / 2).
TEST(SglangDsv4Pool, EstimatesRunningRequestsWhenNoneGiven) {
  SglangDsv4Shape s = sglang_dsv4_shape(resolve_model("deepseek-v4-flash"), parse_engine_version("0.5.15"), 0, 43);
  s.context_len = 1048576;
  // F0 = 100 GiB / 7,705.45 = 13.9 M tokens: 6,800 requests' worth at 512 per 1 M, clamped to 4,096
  EXPECT_EQ(sglang_dsv4_pool(s, gib(100)).c128_state_requests, 4096);
  // F0 = 2 GiB / 7,705.45 = 278,692: 136 -> 2,048 (the floor)
  EXPECT_EQ(sglang_dsv4_pool(s, gib(2)).c128_state_requests, 2048);
  // F0 = 3,000 tokens: the estimate, 1, is raised to 2,048, then capped at F0 / 2 = 1,500
  EXPECT_EQ(sglang_dsv4_pool(s, static_cast<int64_t>(3000 * 7705.45) + 1).c128_state_requests, 1500);
  s.max_running_requests = 64;
  EXPECT_EQ(sglang_dsv4_pool(s, gib(100)).c128_state_requests, 64);
  s.page_tokens = 64;
  EXPECT_THROW(sglang_dsv4_pool(s, gib(100)), ConfigError);
}

TEST(SglangDsv4Pool, MemoryAnswerUsesThePools) {
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  ServingConfig c;
  c.engine = Engine::kSglang;
  c.version = parse_engine_version("0.5.15");
  c.max_model_len = 1048576;
  c.max_num_seqs = 64;
  Parallelism tp8;
  tp8.tensor_parallel = 8;
  KvScheme fp8;
  fp8.kv_dtype = DType::kFp8E4M3;
  const MemoryPlan plan = plan_memory(m, resolve_gpu("h200"), fp8, tp8, c);
  SglangDsv4Shape s = sglang_dsv4_shape(m, c.version, 0, 43);
  s.max_running_requests = 64;
  const SglangDsv4Pool pool = sglang_dsv4_pool(s, plan.kv_budget_bytes);
  EXPECT_EQ(pool.c128_state_fixed_bytes, int64_t{8576} * 1024 * 4 * 20);
  EXPECT_EQ(plan.tokens_per_block, 256);  // SGLang's DeepSeek-V4 page, not the scheme's 16
  EXPECT_EQ(plan.kv_cache_tokens, pool.full_tokens);
  EXPECT_EQ(plan.num_blocks, pool.full_tokens / 256);
  EXPECT_EQ(plan.requests_at_max_len, pool.full_tokens / 1048576);
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(pool.full_tokens) / 1048576.0);
  // TensorRT-LLM's pool for it is not modelled: refused, not answered as another engine's
  c.engine = Engine::kTrtllm;
  EXPECT_THROW(plan_memory(m, resolve_gpu("h200"), fp8, tp8, c), ConfigError);
}

}  // namespace
}  // namespace kvplan
