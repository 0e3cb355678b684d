// Kimi-Linear (model_type kimi_linear): Kimi delta attention layers between MLA layers without
// RoPE, and a DeepSeek-V3-style MoE. Expectations worked by hand from the released config
// (data/models/kimi-linear-48b-a3b.json); the arithmetic is beside each.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/recurrent_state_dtype.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/vllm_profile.h"
#include "config_refusal.h"

#include <fmt/format.h>

namespace kvplan {
namespace {

using nlohmann::json;

using test::expect_refused;
json released_config() { return test::preset_config("kimi-linear-48b-a3b"); }

TEST(KimiLinear, LayersAndParameterCountByHand) {
  const ModelConfig m = resolve_model("moonshotai/Kimi-Linear-48B-A3B-Instruct");
  EXPECT_EQ(m.count_layers(LayerKind::kLinearAttention), 20);
  EXPECT_EQ(m.count_layers(LayerKind::kMla), 7);
  EXPECT_EQ(m.layers[3].kind, LayerKind::kMla);   // full_attn_layers lists 4 (1-based)
  EXPECT_EQ(m.layers[26].kind, LayerKind::kMla);  // ... and 27
  EXPECT_EQ(m.max_position_embeddings, 1048576);  // model_max_length
  EXPECT_EQ(m.rotary_dim, 0);
  // KDA layer, P = 32 x 128 = 4,096, d = 128, D = 2,304: q/k/v/o 4·D·P = 37,748,736; f_a, g_a
  //   2·D·d = 589,824; f_b, g_b 2·d·P = 1,048,576; dt_bias 4,096; b_proj D·32 = 73,728; q/k/v
  //   conv 3·P·4 = 49,152; A_log 32; o_norm 128 = 39,514,272.
  // MLA layer (no q LoRA): q_proj D x 32·192 = 14,155,776; kv_a D x 576 = 1,327,104; kv_a norm
  //   512; kv_b 512 x 32·256 = 4,194,304; o_proj 4,096 x D = 9,437,184 = 29,114,880.
  // MoE layer: router 256 x D + 256; 256 experts 3 x D x 1,024; shared 3 x D x 1,024
  //   = 1,819,607,296. Layer 0 dense: 3 x D x 9,216 = 63,700,992.
  // Two norms per layer, norm, embeddings and lm_head 2 x 163,840 x D.
  const int64_t total = int64_t{20} * 39514272 + int64_t{7} * 29114880 + int64_t{26} * 1819607296 + 63700992 +
                        int64_t{27} * 2 * 2304 + 2304 + int64_t{2} * 163840 * 2304;
  EXPECT_EQ(count_parameters(m).total(), total);
  EXPECT_EQ(total, 49122681728);  // HF total_parameters and safetensors.total
}

TEST(KimiLinear, StateIsThreeConvWindowsAndAnFp32Recurrence) {
  const ModelConfig m = resolve_model("kimi-linear-48b-a3b");
  KvScheme s;
  s.state_dtype = engine_state_dtype(m, Engine::kVllm, DType::kBF16).dtype;
  EXPECT_EQ(s.state_dtype, DType::kF32);  // vLLM kda_state_dtype: fp32 whatever the flag
  EXPECT_THROW(chosen_state_dtype(m, Engine::kVllm, DType::kBF16, DType::kBF16), ConfigError);
  for (const auto& [tp, bytes] : {std::pair{1, int64_t{3} * 4096 * 3 * 2 + 32 * 128 * 128 * 4},
                                  std::pair{2, int64_t{3} * 2048 * 3 * 2 + 16 * 128 * 128 * 4}}) {
    const KvLayout layout = build_kv_layout(m, s, Parallelism{tp, 1});
    for (const KvLayerGroup& g : layout.groups()) {
      if (g.kind == LayerKind::kLinearAttention) {
        EXPECT_EQ(g.state_bytes_per_request, bytes) << "tp " << tp;
      } else {
        EXPECT_DOUBLE_EQ(g.bytes_per_token, 576.0 * 2);  // MLA latent 512 + rope 64, bf16
      }
    }
  }
}

TEST(KimiLinear, KdaCoreHasItsOwnOperatorClass) {
  const ModelConfig m = resolve_model("kimi-linear-48b-a3b");
  KvScheme s;
  s.state_dtype = DType::kF32;
  const KvLayout layout = build_kv_layout(m, s, Parallelism{});
  StepShapeBuilder b(layout);
  b.add_decode(100);
  const StepOps ops = build_step_ops(m, layout, Parallelism{}, b.shape(), {});
  int kda = 0;
  for (const StepOp& o : ops.ops) {
    EXPECT_NE(o.op_class, OpClass::kGatedDeltaNet) << o.name;
    if (o.op_class != OpClass::kKimiDelta) continue;
    ++kda;
    EXPECT_STREQ(o.name, "kda_decode");
    // one token of one sequence, 32 heads of 128: 32 x 7 x 128² + 2 x 1 x 32 x 384 x 4 (the three convolutions)
    EXPECT_DOUBLE_EQ(o.flops, 32.0 * 7 * 128 * 128 + 2.0 * 32 * 384 * 4);
    EXPECT_EQ(o.shape.v[2], 32);
  }
  EXPECT_EQ(kda, 2);  // one op list per KDA layer type: layer 0 (dense MLP) and the MoE ones
}

TEST(KimiLinear, DecayAndGateProjectionsAreReplicated) {
  const ModelConfig m = resolve_model("kimi-linear-48b-a3b");
  const KvScheme scheme;
  const Parallelism tp2{2, 1};
  const KvLayout layout = build_kv_layout(m, scheme, tp2);
  StepShapeBuilder b(layout);
  b.add_decode(100);
  const StepOps ops = build_step_ops(m, layout, tp2, b.shape(), {});
  bool seen = false;
  for (const StepOp& o : ops.ops) {
    if (std::string(o.name) == "f_a_proj") {
      EXPECT_DOUBLE_EQ(o.flops, 2.0 * 1 * 128 * 2304);  // T = 1, the whole head_dim on each rank
      seen = true;
    }
    if (std::string(o.name) == "f_b_proj") {
      EXPECT_DOUBLE_EQ(o.flops, 2.0 * 1 * 2048 * 128);  // P / 2
    }
  }
  EXPECT_TRUE(seen);
}

// vllm-project/vllm#28228: Kimi-Linear-48B-A3B (AWQ) on 2 x RTX 3090, TP 2, max_model_len
// 120,000, vLLM of 2025-11: "Available KV cache memory: 2.30 GiB", "Add 1 padding layers, may waste
// at most 5.00% KV cache memory", "GPU KV cache size: 75,840 tokens", "Maximum concurrency for
// 120,000 tokens per request: 2.48x".
TEST(KimiLinear, ReproducesTheVllmIssueLog) {
  const ModelConfig m = resolve_model("kimi-linear-48b-a3b");
  KvScheme s;
  s.state_dtype = DType::kF32;
  const Parallelism tp2{2, 1};
  const VllmHybridPages pages = vllm_v1_hybrid_pages(build_kv_layout(m, s, tp2), false, 16);
  // state 1,085,440 B per layer and rank; MLA pages align to 64 tokens of 1,152 B:
  // 64 x cdiv(1,085,440, 64 x 1,152) = 960
  EXPECT_EQ(pages.state_bytes, 1085440);
  EXPECT_EQ(pages.block_tokens, 960);
  s.tokens_per_block = pages.block_tokens;
  s.state_page_bytes = pages.page_bytes;
  const VllmKvGroups groups = vllm_v1_kv_groups(build_kv_layout(m, s, tp2));
  EXPECT_EQ(groups.group_size, 7);
  EXPECT_EQ(groups.num_groups(), 4);  // 7 MLA layers; 20 KDA layers padded to 21 (5.00% = 1/20)
  // 2.30 GiB over 7 pages of 960 x 1,152 B is 318.3-319.7 blocks; the printed concurrency pins
  // 318: 318 / (cdiv(120,000, 960) = 125 + 3 state blocks) = 2.48.
  EXPECT_EQ(fmt::format("{:.2f}", vllm_v1_hybrid_max_concurrency(groups, 318, 960, 120000, 8192)), "2.48");
  EXPECT_EQ(318 / groups.num_groups() * 960, 75840);
}

TEST(KimiLinear, OtherLayoutsAreRefused) {
  json c = released_config();
  c["hidden_act"] = "gelu";
  expect_refused(c, "hidden_act=gelu");
  c = released_config();
  c["hidden_act"] = "situ";  // Kimi-K3's activation needs its two betas
  expect_refused(c, "activation_situ_beta");
  c = released_config();
  c["latent_moe_use_norm"] = true;
  expect_refused(c, "routed_expert_hidden_size");
  c = released_config();
  c["linear_attn_config"]["full_attn_layers"] = json::array({4, 8, 12, 16, 20, 24});
  expect_refused(c, "exactly once");
  c = released_config();
  c["mla_use_nope"] = false;
  expect_refused(c, "mla_use_nope");
}

// Every KDA checkpoint stores dt_bias and A_log in fp32: the released Kimi-Linear's index
// total_size is 98,245,528,576 B (data/models/SOURCES.md), the 16-bit count plus 20 layers x
// (4,096 + 32) x 2 B.
TEST(KimiLinear, CheckpointBytesKeepDtBiasAndALogInFp32) {
  const ModelConfig m = resolve_model("kimi-linear-48b-a3b");
  const WeightFormat bf16{DType::kBF16, {}};
  EXPECT_EQ(weight_bytes_total(m, bf16), int64_t{49122681728} * 2 + int64_t{20} * 4128 * 2);
  EXPECT_EQ(weight_bytes_total(m, bf16), 98245528576);
}

}  // namespace
}  // namespace kvplan
