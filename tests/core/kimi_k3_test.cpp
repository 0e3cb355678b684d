// Kimi-K3 (model_type kimi_k3): the Kimi-Linear language model with attention residuals, latent
// MXFP4 experts, SiTU, gated MLA with a q LoRA and a full-rank KDA gate, plus MoonViT-V2. The
// expectations are worked by hand from the released config (data/models/kimi-k3.json); the two
// published totals are the Hugging Face parameter count and the checkpoint index's total_size.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/recurrent_state_dtype.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/vllm_profile.h"
#include "config_refusal.h"

namespace kvplan {
namespace {

using nlohmann::json;
using test::expect_refused;

json released_config() { return test::preset_config("kimi-k3"); }

constexpr int64_t kH = 7168;
constexpr int64_t kP = 96 * 128;  // KDA projection width

TEST(KimiK3, LayersExpertsAndEncoder) {
  const ModelConfig m = resolve_model("moonshotai/Kimi-K3");
  EXPECT_EQ(m.model_type, "kimi_k3");
  EXPECT_EQ(m.count_layers(LayerKind::kLinearAttention), 69);
  EXPECT_EQ(m.count_layers(LayerKind::kMla), 24);
  EXPECT_EQ(m.layers[3].kind, LayerKind::kMla);   // full_attn_layers 4 (1-based)
  EXPECT_EQ(m.layers[91].kind, LayerKind::kMla);  // ... 92 and 93: the last two are both MLA
  EXPECT_EQ(m.layers[92].kind, LayerKind::kMla);
  EXPECT_EQ(m.layers[0].mlp.kind, MlpKind::kGated);  // first_k_dense_replace 1
  EXPECT_EQ(m.layers[1].mlp.num_experts, 896);
  EXPECT_EQ(m.layers[1].mlp.experts_per_token, 16);
  EXPECT_EQ(m.layers[1].mlp.expert_latent_size, 3584);
  EXPECT_TRUE(m.layers[1].mlp.expert_latent_norm);
  EXPECT_FALSE(m.layers[1].mlp.expert_latent_quantized);
  EXPECT_EQ(m.mla.q_lora_rank, 1536);
  EXPECT_TRUE(m.mla.output_gate);
  EXPECT_TRUE(m.linear.full_rank_gate);
  EXPECT_EQ(m.linear.a_log_entries, 128);
  EXPECT_EQ(m.attn_res_block_size, 12);
  EXPECT_EQ(m.max_position_embeddings, 1048576);  // not text_config's generation max_length 20
  EXPECT_FALSE(m.tie_word_embeddings);
  EXPECT_EQ(m.vision.kind, VisionKind::kMoonVit2);
  EXPECT_EQ(m.vision.qkv_hidden_size, 1536);
  EXPECT_EQ(m.quantization.method, QuantMethod::kMxfp4);
}

TEST(KimiK3, ParameterCountIsTheHuggingFaceTotal) {
  const ModelConfig m = resolve_model("kimi-k3");
  // KDA layer: q/k/v/o 4·H·P = 352,321,536; f_a 128·H = 917,504; f_b P·128 = 1,572,864; dt_bias P;
  //   b_proj 96·H = 688,128; q/k/v conv 3·P·4 = 147,456; A_log 128 (padded); the full-rank
  //   g_proj P·H = 88,080,384; o_norm 128 = 443,740,416.
  const int64_t kda = 4 * kH * kP + 128 * kH + kP * 128 + kP + 96 * kH + 3 * kP * 4 + 128 + kP * kH + 128;
  EXPECT_EQ(kda, 443740416);
  // MLA layer: q_a 1,536·H, its norm, q_b 96·192 x 1,536, kv_a 576·H, its norm 512, kv_b 96·256 x
  //   512, o_proj H x 96·128 and the output gate g_proj 96·128 x H = 232,196,096.
  const int64_t mla = 1536 * kH + 1536 + 96 * 192 * 1536 + 576 * kH + 512 + 96 * 256 * 512 + 2 * kH * 96 * 128;
  EXPECT_EQ(mla, 232196096);
  // MoE layer, besides the routed experts: router 896·H + its bias; latent down/up 2·3,584·H and
  //   routed_expert_norm 3,584; two shared experts 3 x 6,144 x H.
  const int64_t moe_rest = 896 * kH + 896 + 2 * 3584 * kH + 3584 + 3 * 6144 * kH;
  const int64_t experts = int64_t{92} * 896 * 3 * 3584 * 3072;
  const int64_t dense0 = 3 * kH * 33792;
  // two norms and two attention-residual sites (norm + [1, H] projection) per layer; the final
  // norm and one more residual site; embeddings and the untied lm_head
  const int64_t norms = 93 * 2 * kH + kH + 93 * 4 * kH + 2 * kH;
  const int64_t embeddings = 2 * int64_t{163840} * kH;
  // MoonViT-V2: patch embed 1,024 x 3·14·14; position grid 64·64 x 1,024; 27 blocks of two
  //   RMSNorms, wqkv 3·1,536 x 1,024, wo 1,024 x 1,536, fc0/fc1 2 x 4,096·1,024; final norm;
  //   projector 4,096² + 7,168 x 4,096 + post_norm 7,168
  const int64_t vision = 1024 * 588 + 64 * 64 * 1024 +
                         27 * (2 * 1024 + 3 * 1536 * 1024 + 1024 * 1536 + 2 * 4096 * 1024) + 1024 +
                         4096 * 4096 + 7168 * 4096 + 7168;
  EXPECT_EQ(vision, 401214464 + 46144512);  // the model card's 401M tower, and the projector
  const int64_t total = 69 * kda + 24 * mla + 92 * moe_rest + experts + dense0 + norms + embeddings + vision;
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.total(), total);
  EXPECT_EQ(c.total(), 2779931837184);  // Hugging Face safetensors.total
  EXPECT_EQ(c.experts, experts);
  EXPECT_EQ(c.vision, vision);
}

// The index's total_size: 16-bit everywhere except the fp32 convolutions, dt_bias, A_log, o_norm
// and router bias (11,122,432 elements), and the routed experts in MXFP4 (a packed byte per two
// weights, a uint8 scale per 32: 0.53125 B each).
TEST(KimiK3, CheckpointBytesAreTheIndexTotal) {
  const ModelConfig m = resolve_model("kimi-k3");
  const int64_t fp32 = 69 * (3 * kP * 4 + kP + 128 + 128) + int64_t{92} * 896;
  EXPECT_EQ(fp32, 11122432);  // the Hugging Face API's F32 figure
  const int64_t experts = int64_t{92} * 896 * 3 * 3584 * 3072;
  const int64_t expert_bytes = experts / 2 + experts / 32;
  const int64_t rest = 2779931837184 - experts;
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}), rest * 2 + fp32 * 2 + expert_bytes);
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}), 1560860324864);
}

TEST(KimiK3, QuantizedModulesAreTheRoutedExpertsOnly) {
  const ModelConfig m = resolve_model("kimi-k3");
  const WeightBytes w = weight_bytes_breakdown(m, WeightFormat{m.dtype, m.quantization}, Parallelism{8, 1});
  // the 16-bit modules named by the ignore list, and the latent projections it does not name but
  // the checkpoint stores 16-bit (counted in the dense MLP part, never in the quantized bytes)
  const int64_t experts = int64_t{92} * 896 * 3 * 3584 * 3072 / 8;  // each GPU's 1/8 of every expert
  EXPECT_EQ(w.quantized, experts / 2 + experts / 32);
  EXPECT_EQ(w.experts, w.quantized);
}

// vLLM's KimiMoE pads each GPU's expert slice to 256 columns without expert parallelism: at TP 16
// the 192-wide slices hold 256 (w1, w3 [256, 3,584], w2 [3,584, 256], MXFP4: 487,424 B each); at
// TP 8 (384) and with expert parallelism nothing is padded.
TEST(KimiK3, VllmPadsTheExpertSliceAtTp16) {
  const ModelConfig m = resolve_model("kimi-k3");
  const WeightFormat f{m.dtype, m.quantization};
  const int64_t slice = 256 * 3584 / 2 + 256 * 3584 / 32;
  EXPECT_EQ(slice, 487424);
  EXPECT_EQ(weight_bytes_breakdown(m, f, Parallelism{16, 1}).experts, int64_t{92} * 896 * 3 * slice);
  const int64_t tp8 = 384 * 3584 / 2 + 384 * 3584 / 32;
  EXPECT_EQ(weight_bytes_breakdown(m, f, Parallelism{8, 1}).experts, int64_t{92} * 896 * 3 * tp8);
  EXPECT_EQ(m.layers[1].mlp.expert_width_per_gpu(16), 256);
  EXPECT_EQ(m.layers[1].mlp.expert_width_per_gpu(8), 384);
}

// MLA: 24 layers of one 576-element latent per token (kv_lora_rank 512 + rope 64, cached though
// NoPE), replicated. KDA: per request, per layer on one of 8 GPUs, three short-convolution windows
// of (4 - 1) x 1,536 channels in bf16 and 12 heads x 128 x 128 in fp32 (vLLM kda_state_dtype).
TEST(KimiK3, KvBytesPerTokenAndStatePerRequest) {
  const ModelConfig m = resolve_model("kimi-k3");
  KvScheme s;
  s.state_dtype = engine_state_dtype(m, Engine::kVllm, DType::kBF16).dtype;
  EXPECT_EQ(s.state_dtype, DType::kF32);
  const KvLayout layout = build_kv_layout(m, s, Parallelism{8, 1});
  int groups = 0;
  for (const KvLayerGroup& g : layout.groups()) {
    ++groups;
    if (g.kind == LayerKind::kLinearAttention) {
      EXPECT_EQ(g.state_bytes_per_request, int64_t{3} * 3 * 1536 * 2 + int64_t{12} * 128 * 128 * 4);
      EXPECT_EQ(g.num_layers, 69);
    } else {
      EXPECT_EQ(g.kind, LayerKind::kMla);
      EXPECT_DOUBLE_EQ(g.bytes_per_token, 576.0 * 2);
      EXPECT_EQ(g.num_layers, 24);
    }
  }
  EXPECT_EQ(groups, 2);
}

// A decode step of one sequence (one token, 100 in context) on 8 GPUs: the full-rank KDA gate and MLA's output gate are GEMMs from the hidden
// state, the latent projections run 16-bit around the MXFP4 experts, and every layer adds its two
// attention-residual sites.
TEST(KimiK3, StepOpsCarryTheGatesLatentsAndResiduals) {
  const ModelConfig m = resolve_model("kimi-k3");
  KvScheme s;
  s.state_dtype = DType::kF32;
  const Parallelism tp8{8, 1};
  const KvLayout layout = build_kv_layout(m, s, tp8);
  StepShapeBuilder b(layout);
  b.add_decode(100);
  StepOpsOptions o;
  o.weights = WeightFormat{m.dtype, m.quantization};
  const StepOps ops = build_step_ops(m, layout, tp8, b.shape(), o);
  int kda_gates = 0, mla_gates = 0, latent = 0, residual_layers = 0;
  double residual_flops = 0;
  for (const StepOp& op : ops.ops) {
    const std::string name = op.name;
    EXPECT_NE(name, "g_a_proj");
    if (name == "attn_residuals") residual_flops += op.flops * op.repeat;
    if (op.layer_type < 0) continue;
    const int group = ops.types[static_cast<size_t>(op.layer_type)].group;
    const LayerKind kind = layout.groups()[static_cast<size_t>(group)].kind;
    if (name == "g_proj" && kind == LayerKind::kLinearAttention) {
      EXPECT_DOUBLE_EQ(op.flops, 2.0 * 1 * (kP / 8) * kH);
      kda_gates += op.repeat;
    }
    if (name == "g_proj" && kind == LayerKind::kMla) {
      EXPECT_DOUBLE_EQ(op.flops, 2.0 * 1 * 12 * 128 * kH);
      mla_gates += op.repeat;
    }
    if (name == "fc1_latent_proj") {
      EXPECT_EQ(op.dtype, DType::kBF16);
      EXPECT_DOUBLE_EQ(op.flops, 2.0 * 1 * 3584 * kH);  // replicated: the whole latent on each GPU
      latent += op.repeat;
    }
    if (name == "attn_residuals") residual_layers += op.repeat;
  }
  EXPECT_EQ(kda_gates, 69);
  EXPECT_EQ(mla_gates, 24);
  EXPECT_EQ(latent, 92);
  EXPECT_EQ(residual_layers, 93);
  // Sources read per token: before the attention cdiv(L, 12) + 1, before the MLP one more at L = 0,
  // 12, ..., 84: blocks 0-6 give 12 (k + 1) + 11 (k + 2) ... summed 493 + 501, and the output site 9
  // = 1,003, at 6 flops per element of 7,168.
  EXPECT_NEAR(residual_flops, 6.0 * 1 * kH * 1003, 1e-6 * residual_flops);
}

// vLLM's profiling pass holds the attention residuals' block snapshots, [tokens, cdiv(93, 12) = 8,
// hidden], beside the usual live set: 8 x 7,168 x 2 B = 114,688 B more per batched token.
TEST(KimiK3, VllmProfileHoldsTheBlockSnapshots) {
  const ModelConfig k3 = resolve_model("kimi-k3");
  ModelConfig plain = k3;
  plain.attn_res_block_size = 0;
  ServingConfig c;
  c.version = parse_engine_version("0.27.0");
  const Parallelism tp8{8, 1};
  const VllmProfile with = vllm_profile(k3, resolve_gpu("b300"), tp8, c, 131072, true);
  const VllmProfile without = vllm_profile(plain, resolve_gpu("b300"), tp8, c, 131072, true);
  EXPECT_EQ(with.forward_bytes - without.forward_bytes, with.batched_tokens * 8 * kH * 2);
  EXPECT_NE(with.activation_how.find("attention-residual block snapshots (8 x hidden)"), std::string::npos);
}

// vLLM pages the MLA latents in blocks big enough for one KDA layer's state (814,080 B per request
// at TP 8), in multiples of 128 tokens from 0.27 (64 before): bf16 128 x cdiv(814,080, 128 x 1,152)
// = 768 either way ("The real K3 value is 768", a vLLM K3 test); fp8 128 x cdiv(814,080, 128 x 576)
// = 1,536 where the 64 rule gave 64 x 23 = 1,472.
TEST(KimiK3, VllmBlockAlignsTo128TokensFrom027) {
  const ModelConfig m = resolve_model("kimi-k3");
  KvScheme s;
  s.state_dtype = DType::kF32;
  const KvLayout bf16 = build_kv_layout(m, s, Parallelism{8, 1});
  EXPECT_EQ(vllm_v1_hybrid_pages(bf16, true, 16, 128).block_tokens, 768);
  EXPECT_EQ(vllm_v1_hybrid_pages(bf16, true, 16, 64).block_tokens, 768);
  s.kv_dtype = DType::kFp8E4M3;
  const KvLayout fp8 = build_kv_layout(m, s, Parallelism{8, 1});
  EXPECT_EQ(vllm_v1_hybrid_pages(fp8, true, 16, 128).block_tokens, 1536);
  EXPECT_EQ(vllm_v1_hybrid_pages(fp8, true, 16, 64).block_tokens, 1472);
  EXPECT_EQ(vllm_mla_block_alignment(parse_engine_version("0.27.0")), 128);
  EXPECT_EQ(vllm_mla_block_alignment(parse_engine_version("0.26.1")), 64);
}

TEST(KimiK3, AnswerUnderAVllmBeforeItsSupportSaysSo) {
  const ModelConfig m = resolve_model("kimi-k3");
  ServingConfig c;
  c.version = parse_engine_version("0.10");
  const MemoryPlan old = plan_memory(m, resolve_gpu("b300"), KvScheme{}, Parallelism{8, 1}, c);
  bool said = false;
  for (const std::string& n : old.notes) said = said || n.find("predates Kimi-K3 support (0.27.0") != std::string::npos;
  EXPECT_TRUE(said);
  c.version = parse_engine_version("0.27.0");
  for (const std::string& n : plan_memory(m, resolve_gpu("b300"), KvScheme{}, Parallelism{8, 1}, c).notes) {
    EXPECT_EQ(n.find("predates Kimi-K3"), std::string::npos) << n;
  }
}

TEST(KimiK3, OtherLayoutsAreRefused) {
  json c = released_config();
  c["text_config"]["model_type"] = "deepseek_v3";
  expect_refused(c, "text_config.model_type=deepseek_v3");
  c = released_config();
  c["vision_config"]["attn_bias"] = true;
  expect_refused(c, "attn_bias");
  c = released_config();
  c["vision_config"]["mm_projector_type"] = "patchmerger";
  expect_refused(c, "mm_projector_type=patchmerger");
  c = released_config();
  c["vision_config"]["qkv_hidden_size"] = 1000;
  expect_refused(c, "qkv_hidden_size");
  c = released_config();
  c["text_config"]["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 16;
  expect_refused(c, "group_size");
  c = released_config();
  c["text_config"].erase("activation_situ_beta");
  expect_refused(c, "activation_situ_beta");
}

}  // namespace
}  // namespace kvplan
