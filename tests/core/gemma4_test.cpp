// Gemma-4 (model_type gemma4 / gemma4_text): sliding layers of head_dim 256 beside full-attention
// layers of global_head_dim 512 with their own KV head count and no v_proj (attention_k_eq_v), the
// 26B-A4B's routed experts beside the dense MLP, and the Gemma-4 ViT. Expectations worked by hand
// from the released configs (data/models/gemma-4-31b.json, gemma-4-26b-a4b.json); the arithmetic
// is beside each.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/vllm_profile.h"
#include "config_refusal.h"

namespace kvplan {
namespace {

using nlohmann::json;

using test::expect_refused;
json released_config(const std::string& id) { return test::preset_config(id); }

// Vision tower, both sizes (hidden 1,152, MLP 4,304, 27 layers, patch 16, 10,240 positions):
// input_proj 768 x 1,152 = 884,736; position tables 2 x 10,240 x 1,152 = 23,592,960; per layer
// q/k/v/o 4 x 1,152² = 5,308,416, q/k norms 2 x 72, four norms 4 x 1,152, GeGLU 3 x 1,152 x 4,304 =
// 14,874,624 -> 20,187,792 x 27 = 545,070,384; std_bias + std_scale 2,304. Then the projector
// 1,152 x text hidden.
constexpr int64_t kVisionTower = 884736 + 23592960 + int64_t{27} * 20187792 + 2304;

TEST(Gemma4, DenseLayersAndParameterCountByHand) {
  const ModelConfig m = resolve_model("google/gemma-4-31B-it");
  EXPECT_EQ(m.count_layers(LayerKind::kSlidingAttention), 50);
  EXPECT_EQ(m.count_layers(LayerKind::kFullAttention), 10);
  EXPECT_EQ(m.layers[5].kind, LayerKind::kFullAttention);  // every sixth
  ASSERT_TRUE(m.layers[5].attention.has_value());
  EXPECT_FALSE(m.layers[0].attention.has_value());
  const AttentionShape& full = *m.layers[5].attention;
  EXPECT_EQ(full.head_dim, 512);
  EXPECT_EQ(full.num_kv_heads, 4);
  EXPECT_TRUE(full.k_eq_v);
  EXPECT_EQ(full.rotary_dim, 512);  // "proportional": vLLM's cos/sin cache rows span the whole head
  EXPECT_EQ(m.rotary_dim, 256);
  // hidden D = 5,376, 32 query heads.
  // sliding: q D x 8,192, k and v D x 4,096 each, o 8,192 x D = 132,120,576; q/k norms 512
  // full: q D x 16,384, k D x 2,048, no v, o 16,384 x D = 187,170,816; q/k norms 1,024
  // MLP 3 x D x 21,504 = 346,816,512; four norms 4 x D; layer_scalar 1
  const int64_t sliding = 132120576 + 512 + 346816512 + 4 * 5376 + 1;
  const int64_t global = 187170816 + 1024 + 346816512 + 4 * 5376 + 1;
  const int64_t text = int64_t{262144} * 5376 + 50 * sliding + 10 * global + 5376;  // tied embedding, final norm
  const int64_t vision = kVisionTower + int64_t{1152} * 5376;
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.vision, vision);
  EXPECT_EQ(c.total(), text + vision);
  EXPECT_EQ(c.total(), 31273088876);  // = total_size 62,546,177,752 B / 2 (bf16)
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{}), int64_t{62546177752});
  // vLLM's fused qkv_proj still holds a V shard on the full layers (filled from k_proj): the
  // per-GPU weights carry 10 x D x 2,048 more than the checkpoint.
  const WeightBytes wb = weight_bytes_breakdown(m, WeightFormat{}, Parallelism{}, 0);
  const int64_t padded_vocab_extra = 0;  // 262,144 is a multiple of 64
  EXPECT_EQ(wb.total(), int64_t{62546177752} + int64_t{10} * 5376 * 2048 * 2 + padded_vocab_extra);
}

TEST(Gemma4, MoeLayersAndParameterCountByHand) {
  const ModelConfig m = resolve_model("gemma-4-26b-a4b");
  EXPECT_EQ(m.count_layers(LayerKind::kFullAttention), 5);
  const MlpShape& mlp = m.layers[0].mlp;
  EXPECT_EQ(mlp.kind, MlpKind::kMoe);
  EXPECT_EQ(mlp.num_experts, 128);
  EXPECT_EQ(mlp.experts_per_token, 8);
  EXPECT_EQ(mlp.shared_intermediate_size, 2112);
  // hidden D = 2,816, 16 query heads.
  // sliding attention: q D x 4,096, k/v D x 2,048, o 4,096 x D = 34,603,008 + norms 512
  // full: q D x 8,192, k D x 1,024, o 8,192 x D = 49,020,928 + norms 1,024
  // dense MLP 3 x D x 2,112 = 17,842,176; experts 128 x 3 x D x 704 = 761,266,176;
  // router D x 128 + scale D + per_expert_scale 128 = 363,392; seven norms 7 x D; layer_scalar 1
  const int64_t mlp_part = 17842176 + 761266176 + 363392 + 7 * 2816 + 1;
  const int64_t sliding = 34603008 + 512 + mlp_part;
  const int64_t global = 49020928 + 1024 + mlp_part;
  const int64_t text = int64_t{262144} * 2816 + 25 * sliding + 5 * global + 2816;
  const int64_t vision = kVisionTower + int64_t{1152} * 2816;
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.total(), text + vision);
  EXPECT_EQ(c.total(), 25805936206);  // = total_size 51,611,872,412 B / 2 (bf16)
  // active: everything but the 120 experts a token does not take, 120 x 3 x D x 704 per layer
  EXPECT_EQ(c.active(), c.total() - int64_t{30} * 120 * 3 * 2816 * 704);
}

// nvidia/Gemma-4-31B-IT-NVFP4: ModelOpt NVFP4 on the MLPs; every self_attn, the vision tower, its
// projector and lm_head stay 16-bit.
TEST(Gemma4, Nvfp4QuantizesTheMlpsOnly) {
  const ModelConfig m = resolve_model("gemma-4-31b-nvfp4");
  const WeightFormat f{DType::kBF16, m.quantization};
  const WeightBytes wb = weight_bytes_breakdown(m, f, Parallelism{}, 0);
  // per MLP tensor of n = 5,376 x 21,504 = 115,605,504: n/2 + n/16 fp8 scales + two fp32 global
  // scales = 65,028,104 B; 3 per layer, 60 layers
  EXPECT_EQ(wb.quantized, int64_t{60} * 3 * 65028104);
  // the rest in bf16: 31,273,088,876 - 60 x 346,816,512 MLP parameters, plus vLLM's V shard of the
  // 10 full layers (10 x 5,376 x 2,048)
  EXPECT_EQ(wb.unquantized, 2 * (int64_t{31273088876} - int64_t{60} * 346816512 + int64_t{10} * 5376 * 2048));
}

TEST(Gemma4, KvBytesPerLayerShape) {
  const ModelConfig m = resolve_model("gemma-4-31b");
  const KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 2u);
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.kind == LayerKind::kFullAttention) {
      EXPECT_EQ(g.num_layers, 10);
      EXPECT_DOUBLE_EQ(g.bytes_per_token, 2.0 * 4 * 512 * 2);  // K and V both kept (V = K, still cached)
    } else {
      EXPECT_EQ(g.num_layers, 50);
      EXPECT_EQ(g.window_tokens, 1024);
      EXPECT_DOUBLE_EQ(g.bytes_per_token, 2.0 * 16 * 256 * 2);
    }
  }
  // TP 8: the 4 global KV heads replicate (one per rank), the 16 sliding ones split to 2.
  const KvLayout tp8 = build_kv_layout(m, KvScheme{}, Parallelism{8, 1});
  for (const KvLayerGroup& g : tp8.groups()) {
    EXPECT_EQ(g.heads_per_gpu, g.kind == LayerKind::kFullAttention ? 1 : 2);
  }
}

// find_string id 63102470423: google/gemma-4-31b-it under vLLM 0.23.0, one ~95 GiB card,
// max_model_len 32,768, max_num_batched_tokens 8,192: "Available KV cache memory: 28.41 GiB",
// "GPU KV cache size: 97,541 tokens", "Maximum concurrency for 32,768 tokens per request: 2.98x"
// (data/vllm_logs/98_gemma4-31b-it_rtxpro6000-inferred_tp1_v0230.log).
TEST(Gemma4, ReproducesTheVllmLog) {
  const ModelConfig m = resolve_model("gemma-4-31b");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  // pages at 16 tokens: sliding 16 x 16,384 = 262,144 B, full 16 x 8,192 = 131,072 B; vLLM
  // doubles the full layers' block to 32 tokens so both pages are 262,144 B
  EXPECT_EQ(vllm_v1_unify_attention_pages(layout), 262144);
  for (const KvLayerGroup& g : layout.groups()) {
    EXPECT_EQ(layout.block_tokens(g), g.kind == LayerKind::kFullAttention ? 32 : 16);
  }
  const VllmKvGroups groups = vllm_v1_kv_groups(layout);
  EXPECT_EQ(groups.group_size, 10);
  EXPECT_EQ(groups.num_groups(), 6);  // 1 full + 5 sliding groups of 10 layers
  // 11,636 blocks of 10 pages = 30,503,075,840 B = 28.41 GiB. A request of 32,768 tokens takes
  // cdiv(32,768, 32) = 1,024 full blocks and, per sliding group, cdiv(1,023 + 8,192, 16) + 1 = 577:
  // 1,024 + 5 x 577 = 3,909 -> 11,636 / 3,909 = 2.9767 -> int(2.9767 x 32,768) = 97,541.
  EXPECT_EQ(fmt::format("{:.2f}", int64_t{11636} * 262144 * 10 / 1073741824.0), "28.41");
  const double concurrency = vllm_v1_hybrid_max_concurrency(groups, 11636, 16, 32768, 8192);
  EXPECT_EQ(fmt::format("{:.2f}", concurrency), "2.98");
  EXPECT_EQ(static_cast<int64_t>(concurrency * 32768), 97541);
  // the memory answer applies the same rules
  ServingConfig c;
  c.engine = Engine::kVllm;
  c.version = parse_engine_version("0.23.0");
  c.max_model_len = 32768;
  c.max_num_seqs = 20;
  const MemoryPlan plan = plan_memory(m, resolve_gpu("rtx-pro-6000"), KvScheme{}, Parallelism{}, c);
  EXPECT_EQ(plan.block_bytes, int64_t{262144} * 60);
  const int64_t pool = plan.kv_budget_bytes / (int64_t{262144} * 10);
  EXPECT_EQ(plan.printed_kv_tokens, static_cast<int64_t>(static_cast<double>(pool) / 3909 * 32768));
}

// Gemma-4 E2B: Per-Layer Embeddings, 20 kv-shared layers with double-wide MLPs, the audio conformer.
TEST(Gemma4, E2bParameterCountByHand) {
  const ModelConfig m = resolve_model("google/gemma-4-E2B-it");
  int shared = 0;
  for (const LayerSpec& l : m.layers) shared += l.kv_shared ? 1 : 0;
  EXPECT_EQ(shared, 20);
  EXPECT_FALSE(m.layers[14].kv_shared);
  EXPECT_EQ(m.layers[14].mlp.intermediate_size, 6144);
  EXPECT_EQ(m.layers[15].mlp.intermediate_size, 12288);  // use_double_wide_mlp on the shared layers
  // D = 1,536, 35 layers (7 full at 4, 9, ..., 34), one KV head, Per-Layer Embeddings of 256.
  // sliding attention q D x 2,048, k and v D x 256, o 2,048 x D = 7,077,888 + q/k norms 512
  // full attention q D x 4,096, k and v D x 512, o = 14,155,776 + 1,024 (the shared layers keep k/v)
  // MLP 3 x D x 6,144 = 28,311,552 (15 layers) or x 12,288 = 56,623,104 (20 layers)
  // per layer: four norms, layer_scalar, per_layer_input_gate 256 x D, per_layer_projection D x 256,
  //   post_per_layer_input_norm D = 6,145 + 787,968
  const int64_t layers = int64_t{28} * 7078400 + int64_t{7} * 14156800 + int64_t{15} * 28311552 +
                         int64_t{20} * 56623104 + int64_t{35} * (6145 + 787968);
  // embeddings 262,144 x D; PLE table 262,144 x 35 x 256; its projection D x 8,960 and norm 256; final norm
  const int64_t text = int64_t{262144} * 1536 + int64_t{262144} * 8960 + int64_t{1536} * 8960 + 256 + layers + 1536;
  // vision: patch 768 x 768, positions 2 x 10,240 x 768, 16 x (4 x 768² + 2 x 64 + 4 x 768 + 3 x 768 x 3,072),
  //   projector 1,536 x 768
  const int64_t vision = int64_t{768} * 768 + int64_t{2} * 10240 * 768 + int64_t{16} * (4 * 768 * 768 + 128 + 4 * 768 + 3 * 768 * 3072) +
                         int64_t{1536} * 768;
  // audio, H = 1,024: convolutions 128 x 9 + 128 + 32 x 128 x 9 + 32, input_proj H x (128 / 4 x 32);
  //   12 x (24 H² + 9 H + 5 H + 128); output_proj 1,536 x H + 1,536; embed_audio 1,536 x 1,536
  const int64_t H = 1024;
  const int64_t audio = 1152 + 128 + 36864 + 32 + H * 1024 + 12 * (24 * H * H + 14 * H + 128) + 1536 * H + 1536 +
                        int64_t{1536} * 1536;
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.vision, vision + audio);
  EXPECT_EQ(c.total(), text + vision + audio);
  EXPECT_EQ(c.total(), 5123178051);  // the published HF total
}

TEST(Gemma4, KvSharedLayersStoreNoKv) {
  const ModelConfig m = resolve_model("gemma-4-e4b");
  const KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  for (const KvLayerGroup& g : layout.groups()) {
    // 42 layers, full at 5, 11, ..., 41; the last 18 (24..41) read layer 23's or 22's KV
    if (g.kind == LayerKind::kFullAttention) {
      EXPECT_EQ(g.num_layers, 4);
      EXPECT_EQ(g.shared_layers, 3);
    } else {
      EXPECT_EQ(g.num_layers, 20);
      EXPECT_EQ(g.shared_layers, 15);
    }
  }
  // per token: 4 x 2 x 512 x 2 x 2 + 20 x 2 x 256 x 2 x 2 = 57,344 B
  EXPECT_DOUBLE_EQ(layout.bytes_per_token(), 57344.0);
  EXPECT_EQ(count_parameters(m).total(), 7996156490);  // the published HF total
}

// find_string id 54492899325: google/gemma-4-E4B-it under vLLM 0.22.1 on an RTX 3090 Ti,
// max_model_len 32,768, max_num_batched_tokens 2,048: "Available KV cache memory: 4.1 GiB",
// "GPU KV cache size: 224,353 tokens", "Maximum concurrency ...: 6.85x".
TEST(Gemma4, ReproducesTheE4bVllmLog) {
  KvLayout layout = build_kv_layout(resolve_model("gemma-4-e4b"), KvScheme{}, Parallelism{});
  // pages at 16 tokens: full 16 x 4,096 = 65,536 B, sliding 16 x 2,048: its block doubles to 32
  EXPECT_EQ(vllm_v1_unify_attention_pages(layout), 65536);
  const VllmKvGroups groups = vllm_v1_kv_groups(layout);
  EXPECT_EQ(groups.group_size, 4);    // the 4 KV-owning full layers; the 20 sliding ones in 5 groups
  EXPECT_EQ(groups.num_groups(), 6);
  // a request: cdiv(32,768, 16) = 2,048 full blocks + 5 x (cdiv(511 + 2,048, 32) + 1 = 81) = 2,453;
  // 16,795 blocks x 4 pages x 65,536 B = 4.10 GiB; 16,795 / 2,453 = 6.8467x; x 32,768 = 224,353
  const double concurrency = vllm_v1_hybrid_max_concurrency(groups, 16795, 16, 32768, 2048);
  EXPECT_EQ(fmt::format("{:.2f}", concurrency), "6.85");
  EXPECT_EQ(static_cast<int64_t>(concurrency * 32768), 224353);
  EXPECT_EQ(fmt::format("{:.1f}", int64_t{16795} * 4 * 65536 / 1073741824.0), "4.1");
}

TEST(Gemma4, UnknownLayoutsAreRefused) {
  json c = released_config("gemma-4-26b-a4b");
  c["text_config"]["num_kv_shared_layers"] = 5;
  c["text_config"]["use_double_wide_mlp"] = true;
  expect_refused(c, "use_double_wide_mlp");
  c = released_config("gemma-4-31b");
  c["text_config"]["num_kv_shared_layers"] = 60;
  expect_refused(c, "num_kv_shared_layers");
  c = released_config("gemma-4-e2b");
  c["audio_config"]["hidden_act"] = "gelu";
  expect_refused(c, "hidden_act=gelu");
  c = released_config("gemma-4-31b");
  c["text_config"]["hidden_activation"] = "silu";
  expect_refused(c, "hidden_activation=silu");
  c = released_config("gemma-4-31b");
  c["text_config"]["attention_k_eq_v"] = true;
  c["text_config"].erase("num_global_key_value_heads");
  expect_refused(c, "num_global_key_value_heads");
  // without k_eq_v the full layers keep num_key_value_heads and a v_proj
  c = released_config("gemma-4-31b");
  c["text_config"]["attention_k_eq_v"] = false;
  const ModelConfig m = parse_model_config(c, "no-k-eq-v");
  EXPECT_EQ(m.layers[5].attention->num_kv_heads, 16);
  EXPECT_FALSE(m.layers[5].attention->k_eq_v);
}

TEST(Gemma4, StepCostsUseEachLayersOwnShape) {
  const ModelConfig m = resolve_model("gemma-4-31b");
  const KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  StepShapeBuilder b(layout);
  b.add_decode(100);
  const StepOps ops = build_step_ops(m, layout, Parallelism{}, b.shape(), {});
  int qkv = 0;
  for (const StepOp& o : ops.ops) {
    if (std::string(o.name) != "qkv_proj") continue;
    ++qkv;
    // T = 1: sliding 2 x 5,376 x (8,192 + 2 x 4,096); full 2 x 5,376 x (16,384 + 2 x 2,048)
    const bool full = o.flops > 2.0 * 5376 * 16384;
    EXPECT_DOUBLE_EQ(o.flops, full ? 2.0 * 5376 * (16384 + 4096) : 2.0 * 5376 * (8192 + 8192));
  }
  EXPECT_EQ(qkv, 2);  // one op list per layer type
}

}  // namespace
}  // namespace kvplan
