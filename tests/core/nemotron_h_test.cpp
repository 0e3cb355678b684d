// Nemotron-H (model_type nemotron_h): blocks that are a mixer or an MLP alone, relu2 experts with no
// gate, the latent MoE, and the Mamba-2 state dtype each engine picks for it. Every expectation is
// worked by hand from the config (data/models/nemotron-3-*.json); the arithmetic is beside it.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/fused_moe.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/recurrent_state_dtype.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/vllm_profile.h"

#include <fmt/format.h>

namespace kvplan {
namespace {

using nlohmann::json;

// A small Nemotron-H: Mamba-2, MoE, attention, MLP blocks ("ME*-").
json small_config() {
  return json{{"model_type", "nemotron_h"},
              {"hidden_size", 256},
              {"vocab_size", 1000},
              {"num_hidden_layers", 4},
              {"hybrid_override_pattern", "ME*-"},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"head_dim", 64},
              {"mamba_num_heads", 8},
              {"mamba_head_dim", 32},
              {"ssm_state_size", 16},
              {"conv_kernel", 4},
              {"n_groups", 2},
              {"intermediate_size", 512},
              {"moe_intermediate_size", 128},
              {"moe_shared_expert_intermediate_size", 256},
              {"n_routed_experts", 8},
              {"n_shared_experts", 1},
              {"num_experts_per_tok", 2},
              {"mlp_hidden_act", "relu2"},
              {"torch_dtype", "bfloat16"}};
}

void expect_refused(const json& c, std::initializer_list<std::string> needles) {
  try {
    parse_model_config(c, "bad");
    FAIL() << "accepted: " << c.dump();
  } catch (const ConfigError& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

int64_t all_reduces(const StepOps& ops) {
  int64_t n = 0;
  for (const StepOp& o : ops.ops) {
    if (std::string(o.name).find("all_reduce") != std::string::npos) n += o.repeat;
  }
  return n;
}

// One step decoding two requests (contexts 100 and 200) on two GPUs: T = 2 new tokens.
StepOps two_decodes_at_tp2(const ModelConfig& m) {
  const KvScheme scheme;
  const Parallelism tp2{2, 1};
  const KvLayout layout = build_kv_layout(m, scheme, tp2);
  StepShapeBuilder b(layout);
  b.add_decode(100);
  b.add_decode(200);
  return build_step_ops(m, layout, tp2, b.shape(), {});
}

const StepOp* find_op(const StepOps& ops, const std::string& name) {
  for (const StepOp& o : ops.ops) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

TEST(NemotronH, EachBlockIsOneMixerOrOneMlp) {
  const ModelConfig m = parse_model_config(small_config(), "small");
  ASSERT_EQ(m.num_layers(), 4);
  EXPECT_EQ(m.layers[0].kind, LayerKind::kMamba2);
  EXPECT_EQ(m.layers[0].mlp.intermediate_size, 0);
  EXPECT_EQ(m.layers[1].kind, LayerKind::kNoMixer);
  EXPECT_EQ(m.layers[1].mlp.kind, MlpKind::kMoe);
  EXPECT_FALSE(m.layers[1].mlp.gated_experts);
  EXPECT_TRUE(m.layers[1].mlp.router_bias);
  EXPECT_EQ(m.layers[2].kind, LayerKind::kFullAttention);
  EXPECT_EQ(m.layers[3].kind, LayerKind::kNoMixer);
  EXPECT_EQ(m.layers[3].mlp.kind, MlpKind::kPlain);
  EXPECT_EQ(m.layers[3].mlp.intermediate_size, 512);
  EXPECT_EQ(m.rotary_dim, 0);         // no positional encoding in the attention blocks
  EXPECT_EQ(m.mamba.d_inner, 8 * 32);  // heads x head_dim, not expand x hidden
  EXPECT_EQ(m.norms_per_layer, 1);
}

TEST(NemotronH, ParameterCountByHand) {
  const ParamCount c = count_parameters(parse_model_config(small_config(), "small"));
  // Mamba-2: in_proj 256 x (2·256 + 2·2·16 + 8) = 256 x 584 = 149,504; conv1d (256 + 64) x 4 + 320
  // bias = 1,600; dt_bias, A_log, D 3 x 8 = 24; gated norm 256; out_proj 256 x 256 = 65,536.
  EXPECT_EQ(c.recurrent, 149504 + 1600 + 24 + 256 + 65536);
  // attention: q 256 x 256, k and v 256 x 128 each, o 256 x 256 = 196,608
  EXPECT_EQ(c.attention, 65536 + 2 * 32768 + 65536);
  // relu2 experts, up and down only: 8 x 2 x 256 x 128 = 524,288; shared 2 x 256 x 256 = 131,072
  EXPECT_EQ(c.experts, 524288);
  EXPECT_EQ(c.shared_experts, 131072);
  EXPECT_EQ(c.routers, 8 * 256 + 8);  // gate weight and e_score_correction_bias
  EXPECT_EQ(c.mlp, 2 * 256 * 512);    // the '-' block: up and down
  EXPECT_EQ(c.norms, 4 * 256 + 256);  // one per block, and norm_f
  // two experts of 2 x 256 x 128 active per token
  EXPECT_EQ(c.active(), c.total() - 524288 + 2 * 65536);
}

TEST(NemotronH, NanoMatchesItsPublishedCountAndActiveParameters) {
  const ModelConfig m = resolve_model("nemotron-3-nano-30b-a3b");
  EXPECT_EQ(m.count_layers(LayerKind::kMamba2), 23);
  EXPECT_EQ(m.count_layers(LayerKind::kFullAttention), 6);
  EXPECT_EQ(m.count_layers(LayerKind::kNoMixer), 23);
  const ParamCount c = count_parameters(m);
  // Mamba block 38,744,896 (in_proj 2688 x 10,304, conv 6,144 x 5, 3 x 64, norm 4,096, out_proj
  // 4,096 x 2,688, block norm 2,688); attention block 23,399,040; MoE block 1,297,468,160;
  // embeddings and lm_head 2 x 131,072 x 2,688; norm_f 2,688.
  EXPECT_EQ(c.total(), int64_t{23} * 38744896 + 6 * 23399040 + int64_t{23} * 1297468160 + 2 * 131072 * 2688 + 2688);
  EXPECT_EQ(c.total(), *m.published_params);
  // active: the 6 of 128 experts (2 x 2,688 x 1,856 each) in each of 23 MoE blocks
  EXPECT_EQ(c.active(), c.total() - int64_t{23} * 128 * 9977856 + int64_t{23} * 6 * 9977856);
}

TEST(NemotronH, Nvfp4KeepsTheAttentionAndTheMambaBlocksBeforeItIn16Bit) {
  const ModelConfig m = resolve_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4");
  EXPECT_EQ(count_parameters(m).total(), 31577940288);
  // ModelOpt NVFP4 linear of n elements: n/2 (e2m1) + n/16 (fp8 scales) + 8 (two fp32 scales).
  //   MoE block: 128 experts x (up + down, 4,988,928 each) = 128 x 2 x 2,806,280; shared up + down
  //   (9,977,856 each) 2 x 5,612,552; router (344,064 + 128) and block norm 2,688 in bf16
  //   = 730,326,544 B.
  //   17 quantized Mamba blocks: in_proj 27,697,152 -> 15,579,656, out_proj 11,010,048 -> 6,193,160,
  //   conv, dt/A/D, gated norm and block norm (37,696) in bf16 = 21,848,208 B.
  //   6 Mamba blocks before the attention blocks and the 6 attention blocks in bf16 (exclude list):
  //   2 x 38,744,896 and 2 x 23,399,040; embeddings, lm_head and norm_f in bf16.
  const int64_t expected = int64_t{23} * 730326544 + int64_t{17} * 21848208 + 6 * (int64_t{2} * 38744896) +
                           6 * (int64_t{2} * 23399040) + int64_t{2} * 704643072 + 2 * 2688;
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}), expected);
  EXPECT_EQ(expected, 19323948800);  // 18.00 GiB
}

TEST(NemotronH, LatentMoeProjectionsAreReplicatedAndTheExpertsWorkInTheLatent) {
  const ModelConfig m = resolve_model("nemotron-3-super-120b-a12b");
  ASSERT_EQ(m.layers[1].mlp.expert_latent_size, 1024);
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.mlp, int64_t{40} * 2 * 4096 * 1024);            // fc1 / fc2_latent_proj in the 40 MoE blocks
  EXPECT_EQ(c.experts, int64_t{40} * 512 * 2 * 1024 * 2688);  // up and down in the latent width
  EXPECT_EQ(c.total(), *m.published_params);
  // TP 2 halves the experts' width, not the replicated latent projections (bf16: 2 B).
  const WeightBytes w1 = weight_bytes_breakdown(m, WeightFormat{}, Parallelism{1, 1}, 0);
  const WeightBytes w2 = weight_bytes_breakdown(m, WeightFormat{}, Parallelism{2, 1}, 0);
  EXPECT_EQ(w2.experts * 2, w1.experts);

  const StepOps ops = two_decodes_at_tp2(m);
  const StepOp* fc1 = find_op(ops, "fc1_latent_proj");
  ASSERT_NE(fc1, nullptr);
  EXPECT_DOUBLE_EQ(fc1->flops, 2.0 * 2 * 1024 * 4096);  // T = 2 tokens, whole on each rank
  const StepOp* moe = find_op(ops, "moe_gemm");
  ASSERT_NE(moe, nullptr);
  EXPECT_DOUBLE_EQ(moe->shape.v[2], 1024.0);  // the experts' input width is the latent
}

TEST(NemotronH, OneAllReducePerBlockAndNoGateInTheExperts) {
  const ModelConfig m = resolve_model("nemotron-3-nano-30b-a3b");
  const StepOps ops = two_decodes_at_tp2(m);
  // Each of the 52 blocks ends in one all-reduce (its mixer's or its MLP's), never two.
  EXPECT_EQ(all_reduces(ops), 52);
  EXPECT_EQ(find_op(ops, "shared_gate_up"), nullptr);
  const StepOp* up = find_op(ops, "shared_up");
  ASSERT_NE(up, nullptr);
  EXPECT_DOUBLE_EQ(up->flops, 2.0 * 2 * (3712 / 2) * 2688);  // T = 2, shared width halved by TP
  const StepOp* moe = find_op(ops, "moe_gemm");
  ASSERT_NE(moe, nullptr);
  // per routed pair: up (w) and down (w) over the hidden, w = 1856 / 2: 2·h·(w + w) per row
  const MoeRankLoad load = moe_rank_load(128, 6, 2, 1, default_moe_routing(m));
  EXPECT_DOUBLE_EQ(moe->flops, 2.0 * load.rows * 2688 * (928 + 928));
}

TEST(NemotronH, TheCacheHoldsAttentionAndMambaGroupsOnly) {
  const ModelConfig m = resolve_model("nemotron-3-nano-30b-a3b");
  KvScheme scheme;
  scheme.state_dtype = DType::kF32;
  const KvLayout layout = build_kv_layout(m, scheme, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 2u);
  for (const KvLayerGroup& g : layout.groups()) EXPECT_NE(g.kind, LayerKind::kNoMixer);
  // 6 attention blocks x 2 KV heads x 128 x (K + V) x 2 B
  EXPECT_DOUBLE_EQ(layout.bytes_per_token(), 6.0 * 2 * 128 * 2 * 2);
  // Mamba-2 state per request: conv 3 x (4,096 + 2 x 8 x 128) x 2 B + ssm 64 x 64 x 128 x 4 B
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.kind == LayerKind::kMamba2) {
      EXPECT_EQ(g.state_bytes_per_request, 3 * 6144 * 2 + 64 * 64 * 128 * 4);
    }
  }
  // 8 B/C groups cannot be split over 16 GPUs (vLLM MambaMixer2 asserts the same).
  try {
    build_kv_layout(m, scheme, Parallelism{16, 1});
    FAIL() << "tp 16 accepted with 8 groups";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("n_groups"), std::string::npos) << e.what();
  }
}

TEST(NemotronH, StateDtypeFollowsEachEnginesRule) {
  const ModelConfig nano = resolve_model("nemotron-3-nano-30b-a3b");
  ASSERT_TRUE(nano.declared_state_dtype.has_value());
  EXPECT_EQ(nano.declared_state_dtype_field, "mamba_ssm_cache_dtype");
  // vLLM's NemotronH hook applies mamba_ssm_cache_dtype (float32 here)
  EXPECT_EQ(engine_state_dtype(nano, Engine::kVllm, DType::kBF16).dtype, DType::kF32);
  json c = small_config();
  c["mamba_ssm_cache_dtype"] = "bfloat16";
  const ModelConfig declared_bf16 = parse_model_config(c, "bf16-state");
  EXPECT_EQ(engine_state_dtype(declared_bf16, Engine::kVllm, DType::kBF16).dtype, DType::kBF16);
  // SGLang reads mamba_ssm_dtype only: fp32, and it says why
  const RecurrentStateDtype s = engine_state_dtype(declared_bf16, Engine::kSglang, DType::kBF16);
  EXPECT_EQ(s.dtype, DType::kF32);
  EXPECT_NE(s.source.find("not the config's mamba_ssm_cache_dtype"), std::string::npos) << s.source;
  // no key: vLLM's hook defaults to float32 (not the model dtype as for other Mamba models)
  const ModelConfig none = parse_model_config(small_config(), "none");
  EXPECT_EQ(engine_state_dtype(none, Engine::kVllm, DType::kBF16).dtype, DType::kF32);
}

TEST(NemotronH, LayersBlockTypeAndItsRefusals) {
  const ModelConfig ultra = resolve_model("nemotron-3-ultra-550b-a55b");  // layers_block_type, no num_hidden_layers
  EXPECT_EQ(ultra.num_layers(), 108);
  EXPECT_EQ(ultra.count_layers(LayerKind::kFullAttention), 12);
  json c = small_config();
  c["hybrid_override_pattern"] = "MX*-";
  expect_refused(c, {"hybrid_override_pattern[1]", "X"});
  c = small_config();
  c["num_hidden_layers"] = 5;
  expect_refused(c, {"num_hidden_layers=5", "4 blocks"});
  c = small_config();
  c["mlp_hidden_act"] = "silu";
  expect_refused(c, {"mlp_hidden_act=silu", "relu2"});
  c = small_config();
  c["block_configs"] = json::array({json::object()});
  expect_refused(c, {"block_configs"});
  c = small_config();
  c.erase("hybrid_override_pattern");
  c["layers_block_type"] = json::array({"mamba", "moe", "attention", "dense"});
  expect_refused(c, {"layers_block_type[3]", "dense"});
}

// Public vLLM start-up logs of Nemotron-Cascade-2-30B-A3B (NVFP4), which has the Nano-30B-A3B
// shapes (llama.cpp counts the same 31,577,940,288 parameters): fp8 KV cache, float32 SSM state,
// one GPU. Log C (vLLM 0.19.1, find_string id 59839511370): "Setting attention block size to 4176
// tokens", "Padding mamba page size by 0.19%", "Add 1 padding layers", "Available KV cache
// memory: 68.97 GiB", "GPU KV cache size: 4,819,104 tokens", "Maximum concurrency for 262,144
// tokens per request: 86.16x". Log B (vLLM 0.20.1rc1, id 51923877316): "Available KV cache
// memory: 3.72 GiB", "GPU KV cache size: 1,206,303 tokens", "Maximum concurrency for 256,000
// tokens per request: 4.71x".
TEST(NemotronH, ReproducesTheCascade2VllmLogs) {
  const ModelConfig m = resolve_model("nemotron-3-nano-30b-a3b");
  KvScheme s;
  s.kv_dtype = DType::kFp8E4M3;
  s.state_dtype = DType::kF32;
  const VllmHybridPages pages = vllm_v1_hybrid_pages(build_kv_layout(m, s, Parallelism{}), false, 16);
  EXPECT_EQ(pages.state_bytes, 3 * 6144 * 2 + 64 * 64 * 128 * 4);  // 2,134,016 B
  EXPECT_EQ(pages.block_tokens, 4176);  // 16 x cdiv(2,134,016, 16 x 512 B per token)
  const double padding = 100.0 * static_cast<double>(pages.page_bytes - pages.state_bytes) / static_cast<double>(pages.state_bytes);
  EXPECT_EQ(fmt::format("{:.2f}", padding), "0.19");
  s.tokens_per_block = pages.block_tokens;
  s.state_page_bytes = pages.page_bytes;
  const VllmKvGroups groups = vllm_v1_kv_groups(build_kv_layout(m, s, Parallelism{}));
  EXPECT_EQ(groups.group_size, 6);
  EXPECT_EQ(groups.num_groups(), 5);  // 6 attention, 23 Mamba layers padded to 24 ("Add 1 padding layers")
  // Log C: 68.97 GiB over 6 pages of 4176 x 512 B per block is 5,772.4-5,773.2 blocks; the
  // printed concurrency says 5,773: 5,773 / (cdiv(262,144, 4176) = 63 + 4 state blocks).
  const int64_t page6 = 6 * pages.page_bytes;
  EXPECT_EQ(static_cast<int64_t>(68.975 * 1073741824.0) / page6, 5773);
  EXPECT_EQ(5773 / groups.num_groups() * 4176, 4819104);  // 0.19: blocks / groups x block size
  EXPECT_EQ(fmt::format("{:.2f}", vllm_v1_hybrid_max_concurrency(groups, 5773, 4176, 262144, 8192)), "86.16");
  // Log B: 311 blocks (3.72 GiB / page6 = 311.4); 0.20 prints int(concurrency x max_model_len).
  EXPECT_EQ(static_cast<int64_t>(3.72 * 1073741824.0) / page6, 311);
  const double concurrency = vllm_v1_hybrid_max_concurrency(groups, 311, 4176, 256000, 32768);
  EXPECT_EQ(fmt::format("{:.2f}", concurrency), "4.71");
  EXPECT_EQ(static_cast<int64_t>(concurrency * 256000), 1206303);
  // plan_memory reports the same rule by version.
  ServingConfig c;
  c.max_model_len = 256000;
  c.version = EngineVersion{0, 20, 1};
  KvScheme fresh;
  fresh.kv_dtype = DType::kFp8E4M3;
  const MemoryPlan p20 = plan_memory(m, resolve_gpu("h100-sxm"), fresh, Parallelism{}, c);
  EXPECT_EQ(p20.tokens_per_block, 4176);
  EXPECT_EQ(p20.printed_kv_tokens, static_cast<int64_t>(p20.max_concurrency * 256000));
  EXPECT_NE(p20.printed_kv_tokens, p20.kv_cache_tokens);
  c.version = EngineVersion{0, 19, 1};
  const MemoryPlan p19 = plan_memory(m, resolve_gpu("h100-sxm"), fresh, Parallelism{}, c);
  EXPECT_EQ(p19.printed_kv_tokens, p19.kv_cache_tokens);
}

}  // namespace
}  // namespace kvplan
