// SGLang's hybrid sliding-window KV pools (core/sglang_swa.h): which models and releases split the
// pool, and the split itself, worked by hand and against a public SGLang start-up report.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/sglang_swa.h"

namespace kvplan {
namespace {

// find_string id 70350793512 (a committed diagnosis note of a Gemma-4-26B-A4B-class model on a 24 GB
// card, SGLang, fp8 KV): "Sliding pool: 29,664 tokens", "Full pool: 37,081 tokens",
// "SWAKVPool mem usage: 3.18 GB", "max_total_num_tokens=37081".
TEST(SglangSwa, SplitsLikeThePublishedGemma4Report) {
  const ModelConfig m = resolve_model("gemma-4-26b-a4b");
  KvScheme s;
  s.kv_dtype = DType::kFp8E4M3;
  const KvLayout layout = build_kv_layout(m, s, Parallelism{});
  // full: 5 layers x 2 KV heads x 512 x (K, V) x 1 B = 10,240 B; sliding: 25 x 8 x 256 x 2 x 1 = 102,400 B
  // cell = 10,240 + 0.8 x 102,400 = 92,160 B; a budget in [37,081, 37,082) cells gives 37,081 full tokens
  const SglangSwaPools p = sglang_hybrid_swa_pools(layout, int64_t{37081} * 92160 + 50000, kSglangSwaFullTokensRatio);
  EXPECT_EQ(p.full_layer_bytes, 10240);
  EXPECT_EQ(p.swa_layer_bytes, 102400);
  EXPECT_EQ(p.cell_bytes, 92160);
  EXPECT_EQ(p.full_tokens, 37081);
  EXPECT_EQ(p.swa_tokens, 29664);  // floor(0.8 x 37,081)
  // the pools' bytes, as SGLang prints them: 37,081 x 10,240 + 29,664 x 102,400 = 3.18 GiB
  const double pool = static_cast<double>(p.full_tokens * p.full_layer_bytes + p.swa_tokens * p.swa_layer_bytes);
  EXPECT_NEAR(pool / (1 << 30), 3.18, 0.005);
}

TEST(SglangSwa, WhichModelsAndReleasesSplit) {
  std::string why;
  const ModelConfig oss = resolve_model("gpt-oss-120b");
  EXPECT_TRUE(sglang_uses_hybrid_swa(oss, false, parse_engine_version("0.5.9"), &why)) << why;
  EXPECT_FALSE(sglang_uses_hybrid_swa(oss, false, parse_engine_version("0.5.4"), &why));
  EXPECT_NE(why.find("disable_hybrid_swa_memory"), std::string::npos) << why;
  EXPECT_FALSE(sglang_uses_hybrid_swa(oss, true, parse_engine_version("0.5.9"), &why));  // trtllm_mha on B200
  EXPECT_NE(why.find("trtllm_mha"), std::string::npos) << why;
  EXPECT_TRUE(sglang_uses_hybrid_swa(resolve_model("gemma-4-31b"), true, parse_engine_version("0.5.9"), &why));
  EXPECT_TRUE(sglang_uses_hybrid_swa(resolve_model("llama-4-scout"), false, parse_engine_version("0.5.9"), &why));
  // Gemma-2/3 are forced off in server_args.py; Mistral's window is not on the allowlist
  EXPECT_FALSE(sglang_uses_hybrid_swa(resolve_model("gemma-3-27b"), false, parse_engine_version("0.5.9"), &why));
  EXPECT_FALSE(sglang_uses_hybrid_swa(resolve_model("mistral-7b-v0.1"), false, parse_engine_version("0.5.9"), &why));
}

TEST(SglangSwa, MemoryAnswerPrintsTheFullPool) {
  const ModelConfig m = resolve_model("gpt-oss-120b");
  ServingConfig c;
  c.engine = Engine::kSglang;
  c.version = parse_engine_version("0.5.9");
  c.max_model_len = 32768;
  c.weights.quant = m.quantization;  // MXFP4 experts, as released
  const MemoryPlan h100 = plan_memory(m, resolve_gpu("h100-sxm"), KvScheme{}, Parallelism{}, c);
  // 18 full + 18 sliding layers of 8 KV heads x 64 x (K, V) x 2 B = 2,048 B each:
  // cell = 18 x 2,048 + 0.8 x 18 x 2,048 = 66,355.2 B
  EXPECT_EQ(h100.kv_cache_tokens, static_cast<int64_t>(std::floor(static_cast<double>(h100.kv_budget_bytes) / 66355.2)));
  EXPECT_GT(h100.kv_cache_tokens, 100000);
  EXPECT_EQ(h100.printed_kv_tokens, h100.kv_cache_tokens);
  // on B200 the split is off: every layer at full length, 36 x 2,048 B per token
  const MemoryPlan b200 = plan_memory(m, resolve_gpu("b200"), KvScheme{}, Parallelism{}, c);
  EXPECT_EQ(b200.kv_cache_tokens, b200.kv_budget_bytes / (36 * 2048));
}

}  // namespace
}  // namespace kvplan
