// MiniMax-M3 (model_type minimax_m3): the parameter count against the published safetensors total,
// the KV and index-key bytes per token worked by hand, the engines' one-block-table pools, a
// published vLLM start-up log, and the refusals. Expectations worked by hand from the preset's
// config (data/models/minimax-m3.json: hidden 6,144, 60 layers, 64 q / 4 KV heads of 128, layers
// 0-2 dense MLP 12,288, layers 3-59 MSA + 128 experts of 3,072 top-4 + one shared expert of 3,072,
// index keys 128 wide, vocab 200,064, untied head); the arithmetic is beside each.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/mixer_ops.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/op_time.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"
#include "kvplan/core/step_ops.h"
#include "config_refusal.h"

namespace kvplan {
namespace {

using nlohmann::json;
using test::expect_refused;

KvScheme scheme(DType kv, int block = 128) {
  KvScheme s;
  s.kv_dtype = kv;
  s.tokens_per_block = block;
  return s;
}

Parallelism tp(int n) {
  Parallelism p;
  p.tensor_parallel = n;
  return p;
}

TEST(MiniMaxM3, LayersOfTheReleasedConfig) {
  const ModelConfig m = resolve_model("minimax-m3");
  ASSERT_EQ(m.num_layers(), 60);
  EXPECT_EQ(m.count_layers(LayerKind::kFullAttention), 60);
  int msa = 0;
  for (const LayerSpec& l : m.layers) msa += l.msa_indexer ? 1 : 0;
  EXPECT_EQ(msa, 57);
  EXPECT_FALSE(m.layers[2].msa_indexer);
  EXPECT_TRUE(m.layers[3].msa_indexer);
  EXPECT_EQ(m.layers[2].mlp.kind, MlpKind::kGated);
  EXPECT_EQ(m.layers[2].mlp.intermediate_size, 12288);
  EXPECT_EQ(m.layers[3].mlp.kind, MlpKind::kMoe);
  EXPECT_EQ(m.layers[3].mlp.shared_intermediate_size, 3072);
  EXPECT_EQ(m.msa.index_head_dim, 128);
  EXPECT_EQ(m.msa.topk_blocks, 16);
  EXPECT_EQ(m.msa.block_size, 128);
  EXPECT_EQ(m.rotary_dim, 64);
  EXPECT_EQ(m.max_position_embeddings, 1048576);
  EXPECT_EQ(m.num_mtp_layers, 0);  // the checkpoint carries no MTP weights
}

// Per layer: q 6,144 x 8,192 + k, v 6,144 x 512 each + o 8,192 x 6,144 = 106,954,752 + q/k norms
// 2 x 128; on the 57 MSA layers index_q 6,144 x 512 + index_k 6,144 x 128 + 2 x 128 norms =
// 3,932,416. Experts 57 x 128 x 3 x 6,144 x 3,072; shared 57 x 3 x 6,144 x 3,072; routers (fp32)
// 57 x (128 x 6,144 + 128); dense MLPs 3 x 3 x 6,144 x 12,288; norms 60 x 2 x 6,144 + 6,144;
// embedding and head 200,064 x 6,144 each.
TEST(MiniMaxM3, ParametersEqualThePublishedTotalWithTheVisionTower) {
  const ModelConfig m = resolve_model("minimax-m3");
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.attention, int64_t{60} * (106954752 + 256) + int64_t{57} * 3932416);
  EXPECT_EQ(c.experts, int64_t{57} * 128 * 3 * 6144 * 3072);
  EXPECT_EQ(c.shared_experts, int64_t{57} * 3 * 6144 * 3072);
  EXPECT_EQ(c.routers, int64_t{57} * (128 * 6144 + 128));
  EXPECT_EQ(c.mlp, int64_t{3} * 3 * 6144 * 12288);
  EXPECT_EQ(c.norms, int64_t{60} * 2 * 6144 + 6144);
  EXPECT_EQ(c.embedding, int64_t{200064} * 6144);
  EXPECT_EQ(c.lm_head, int64_t{200064} * 6144);
  EXPECT_EQ(c.total(), 426174572928);
  // The vision tower the checkpoint adds (vLLM minimax_m3 vision_tower.py): Conv3d patch embed
  // 3 x 2 x 14 x 14 x 1,280 (no bias), pre_layrnorm 2 x 1,280, 32 CLIP layers (qkv and out with
  // biases 4 x (1,280² + 1,280), fc1 / fc2 with biases 2 x 1,280 x 5,120 + 5,120 + 1,280, two
  // LayerNorms 4 x 1,280), no post_layernorm, multi_modal_projector 1,280 -> 6,144 -> 6,144 and
  // patch_merge_mlp 24,576 -> 6,144 -> 6,144, both with biases.
  const int64_t clip_layer = 4 * (1280 * 1280 + 1280) + 2 * 1280 * 5120 + 5120 + 1280 + 4 * 1280;
  EXPECT_EQ(clip_layer, 19677440);
  const int64_t vision = 3 * 2 * 14 * 14 * 1280 + 2 * 1280 + 32 * clip_layer +
                         (1280 * 6144 + 6144 + 6144 * 6144 + 6144) + (24576 * 6144 + 6144 + 6144 * 6144 + 6144);
  EXPECT_EQ(vision, 865567232);
  ASSERT_TRUE(m.published_params.has_value());
  EXPECT_EQ(c.total() + vision, *m.published_params);  // recipes: "427.04B total from safetensors metadata"
  // active: 4 of 128 experts, everything else always (the card's "~23B" leaves out embedding and head)
  EXPECT_EQ(c.active(), 25962473856);
  EXPECT_EQ(c.active() - 2 * c.embedding, 23504087424);
  // bf16 with the fp32 routers: (total - 44,833,920) x 2 + 44,833,920 x 4
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}), 852438813696);
}

// KV bytes per token on one GPU: K and V on all 60 layers, 2 x max(1, 4 / tp) x 128 x s(kv), and
// one bf16 index key of 128 on the 57 MSA layers, 256 B whatever the KV dtype and the TP size.
TEST(MiniMaxM3, KvAndIndexKeyBytesPerTokenByHand) {
  const ModelConfig m = resolve_model("minimax-m3");
  const KvLayout tp8 = build_kv_layout(m, scheme(DType::kBF16), tp(8));
  ASSERT_EQ(tp8.groups().size(), 2u);
  EXPECT_EQ(tp8.groups()[0].name, "full_attention");
  EXPECT_EQ(tp8.groups()[0].num_layers, 60);
  EXPECT_EQ(tp8.groups()[0].bytes_per_token, 512);  // 2 x 1 head (replicated) x 128 x 2 B
  EXPECT_EQ(tp8.groups()[1].name, "msa_index_keys");
  EXPECT_EQ(tp8.groups()[1].num_layers, 57);
  EXPECT_EQ(tp8.groups()[1].bytes_per_token, 256);
  EXPECT_EQ(tp8.bytes_per_token(), 60 * 512 + 57 * 256);  // 45,312
  // fp8 K / V: 60 x 256 + 57 x 256 = 29,952 (the index keys stay bf16)
  EXPECT_EQ(build_kv_layout(m, scheme(DType::kFp8E4M3), tp(8)).bytes_per_token(), 29952);
  EXPECT_EQ(build_kv_layout(m, scheme(DType::kFp8E4M3), tp(4)).bytes_per_token(), 29952);
  // TP2: 2 heads, 60 x 1,024 + 14,592 = 76,032; TP1 (the whole model): 60 x 2,048 + 14,592 = 137,472
  EXPECT_EQ(build_kv_layout(m, scheme(DType::kBF16), tp(2)).bytes_per_token(), 76032);
  EXPECT_EQ(kv_bytes_per_token(m, scheme(DType::kBF16)), 137472);
  // one request of 1,000 tokens at TP8 bf16: 1,000 x 45,312; a block of 128 tokens 128 x 45,312
  EXPECT_EQ(tp8.request_bytes(1000), int64_t{1000} * 45312);
  EXPECT_EQ(tp8.engine_block_bytes(), int64_t{128} * 45312);
}

// 4 x DGX Spark (GB10), TP4, vLLM (commit 4ab5e501), nvidia/MiniMax-M3-NVFP4, --kv-cache-dtype fp8
// --block-size 128 (tdwyer/nvidia-MiniMax-M3-NVFP4-vllm-...-DGX-Spark-4-node boot_scripts/notes.md):
// "--kv-cache-memory=46170898432 (43 GiB)", "GPU KV cache size: 1,541,087 tokens", "Maximum concurrency
// for 512,288 tokens per request: 3.01x". One block: 128 x 29,952 = 3,833,856 B; 12,042 blocks; a
// request cdiv(512,288, 128) = 4,003 blocks; vLLM prints int(12,042 / 4,003 x 512,288).
// (The README's 30 GB run at max_model_len 1,048,576 prints 1,073,627 tokens; this rule gives
// 8,402 blocks, 1,075,456, +0.17%: that run's DSpark drafter shares the pool, not modelled.)
TEST(MiniMaxM3, ReproducesTheDgxSparkLog) {
  const KvLayout layout = build_kv_layout(resolve_model("minimax-m3"), scheme(DType::kFp8E4M3), tp(4));
  EXPECT_EQ(layout.engine_block_bytes(), 3833856);
  const int64_t blocks = int64_t{46170898432} / layout.engine_block_bytes();
  EXPECT_EQ(blocks, 12042);
  const double concurrency = static_cast<double>(blocks) / 4003.0;
  EXPECT_NEAR(concurrency, 3.01, 0.005);
  EXPECT_EQ(static_cast<int64_t>(concurrency * 512288), 1541087);
}

ServingConfig serving(Engine e) {
  ServingConfig c;
  c.engine = e;
  c.version = parse_engine_version(e == Engine::kVllm ? "0.24.0" : "0.5.16");
  c.max_model_len = 131072;
  return c;
}

// vLLM: one KV cache group (UniformTypeKVCacheSpecs), block 128 whatever the scheme said, so the
// pool is budget // (128 x 45,312); SGLang: budget // 45,312, rounded down to whole 128-token pages.
TEST(MiniMaxM3, EnginePoolsPageBothCachesWithOneBlockTable) {
  const ModelConfig m = resolve_model("minimax-m3");
  const MemoryPlan v = plan_memory(m, resolve_gpu("h200"), scheme(DType::kBF16, 16), tp(8), serving(Engine::kVllm));
  EXPECT_EQ(v.tokens_per_block, 128);
  EXPECT_EQ(v.block_bytes, int64_t{128} * 45312);
  EXPECT_EQ(v.num_blocks, v.kv_budget_bytes / (int64_t{128} * 45312));
  EXPECT_DOUBLE_EQ(v.max_concurrency, static_cast<double>(v.num_blocks) / 1024.0);  // 131,072 / 128 blocks a request
  const MemoryPlan s = plan_memory(m, resolve_gpu("h200"), scheme(DType::kBF16), tp(8), serving(Engine::kSglang));
  EXPECT_EQ(s.kv_cache_tokens, s.kv_budget_bytes / 45312 / 128 * 128);
  // TensorRT-LLM's and static batching's pools for it are not modelled: refused
  EXPECT_THROW(plan_memory(m, resolve_gpu("h200"), scheme(DType::kBF16), tp(8), serving(Engine::kTrtllm)), ConfigError);
  EXPECT_THROW(plan_memory(m, resolve_gpu("h200"), scheme(DType::kBF16), tp(8), serving(Engine::kStatic)), ConfigError);
}

// A step's operators: the 57 MSA layers price their attention as one module op per phase (class
// msa_attention), the three dense layers as ordinary GQA attention.
TEST(MiniMaxM3, StepOperatorsPerLayerType) {
  const ModelConfig m = resolve_model("minimax-m3");
  const KvLayout layout = build_kv_layout(m, scheme(DType::kBF16), tp(8));
  StepShape shape;
  shape.prefill_tokens = 2048;
  shape.prefill_sequences = 1;
  shape.decode_sequences = 8;
  shape.emitting_sequences = 9;
  shape.groups.resize(layout.groups().size());
  for (size_t g = 0; g < layout.groups().size(); ++g) {
    shape.groups[g].prefill_kv_tokens = 2048 + 1000;  // a 1,000-token cached prefix
    shape.groups[g].decode_tokens = 8 * 4097;         // 4,096 past tokens each, plus the new one
    shape.groups[g].decode_tokens_max = 4097;
  }
  StepOps ops;
  StepOpsBuilder(m, layout, tp(8), StepOpsOptions{}).build(shape, ops);
  ASSERT_EQ(ops.types.size(), 2u);  // dense layers 0-2, MSA + MoE layers 3-59
  int modules = 0;
  for (const StepOp& op : ops.ops) {
    if (op.op_class != OpClass::kMsaAttention) continue;
    ++modules;
    const std::string variant = op.grid_variant;
    if (variant == "bf16_prefill") {
      EXPECT_EQ(op.shape.dims, 4);
      EXPECT_DOUBLE_EQ(op.shape.v[1], 2048);  // new tokens per sequence
      EXPECT_DOUBLE_EQ(op.shape.v[2], 1000);  // cached
      EXPECT_DOUBLE_EQ(op.shape.v[3], 8);     // 64 query heads / TP 8
    } else {
      EXPECT_EQ(variant, "bf16_decode");
      EXPECT_DOUBLE_EQ(op.shape.v[1], 4096);  // past, the new token excluded (the table's convention)
    }
  }
  EXPECT_EQ(modules, 2);  // prefill and decode of the MSA type; the dense type has no module op
  const std::vector<OpClass> dense_classes = [&] {
    std::vector<OpClass> out;
    const StepLayerType& t = ops.types[0];
    for (int i = t.first_op; i < t.end_op; ++i) out.push_back(ops.ops[static_cast<size_t>(i)].op_class);
    return out;
  }();
  EXPECT_NE(std::find(dense_classes.begin(), dense_classes.end(), OpClass::kAttentionPrefill), dense_classes.end());
}

// The published H200 profile prices the table's own shapes within 10% (held-out p90 3.9-5.1% on H200,
// docs/benchmarks.md): TP 8 (8 query heads), one 2,048-token prompt, bf16 KV: 0.274 ms; 64 decode
// sequences at 4,095 cached tokens, bf16 KV: 0.0683 ms; at 131,071, fp8 KV: 0.5543 ms
// (data/measurements/aiconfigurator_msa_module_vllm_h100_h200_b200.csv).
TEST(MiniMaxM3, PublishedModuleTimes) {
  const ModelConfig m = resolve_model("minimax-m3");
  const GpuSpec gpu = resolve_gpu("h200");
  const OpClassProfile& c = published_profile("h200")->at(OpClass::kMsaAttention);
  const MsaDims d = msa_dims(m);
  EXPECT_NEAR(op_kernel_ns(c, gpu, msa_attention_op(true, d, 8, 1, 2048, 0, false, true)) / 274000.0, 1.0, 0.10);
  EXPECT_NEAR(op_kernel_ns(c, gpu, msa_attention_op(false, d, 8, 64, 64, 64 * 4095.0, false, true)) / 68300.0, 1.0,
              0.10);
  EXPECT_NEAR(op_kernel_ns(c, gpu, msa_attention_op(false, d, 8, 64, 64, 64 * 131071.0, true, true)) / 554300.0, 1.0,
              0.10);
}

TEST(MiniMaxM3, RefusesWhatItDoesNotRead) {
  const json base = test::preset_config("minimax-m3");
  json c = base;
  c["sparse_attention_config"]["sparse_score_type"] = "mean";
  expect_refused(c, "sparse_score_type=mean");
  c = base;
  c["sparse_attention_config"]["sparse_num_index_heads"] = 8;
  expect_refused(c, "sparse_num_index_heads=8");
  c = base;
  c["sparse_attention_config"]["sparse_disable_index_value"][10] = 0;
  expect_refused(c, "sparse_disable_index_value[10]");
  c = base;
  c["sparse_attention_config"]["use_sparse_attention"] = false;
  expect_refused(c, "use_sparse_attention");
  c = base;
  c["sparse_attention_config"]["sparse_attention_freq"].erase(0);
  expect_refused(c, "sparse_attention_freq");
  c = base;
  c.erase("sparse_attention_config");
  expect_refused(c, "sparse_attention_config");
  c = base;
  c["qk_norm_type"] = "per_layer";
  expect_refused(c, "qk_norm_type=per_layer");
  c = base;
  c["shared_intermediate_size"] = 6144;
  expect_refused(c, "shared_intermediate_size=6144");
  c = base;
  c["first_k_dense_replace"] = 2;
  expect_refused(c, "first_k_dense_replace=2");
  c = base;
  c["moe_layer_freq"][5] = 2;
  expect_refused(c, "moe_layer_freq[5]");
  c = base;
  c["attention_output_gate"] = true;
  expect_refused(c, "attention_output_gate");
  c = base;
  c["scoring_func"] = "softmax";
  expect_refused(c, "scoring_func=softmax");
  // the Hugging Face wrapper (vision tower not enumerated) is refused, naming what is missing
  json wrapper = {{"model_type", "minimax_m3_vl"}, {"text_config", base}};
  expect_refused(wrapper, "vision tower");
  // KV schemes no engine runs it with
  const ModelConfig m = resolve_model("minimax-m3");
  EXPECT_THROW(build_kv_layout(m, scheme(DType::kInt4), tp(8)), ConfigError);
  KvScheme evict = scheme(DType::kBF16);
  evict.eviction = Eviction::kH2O;
  evict.h2o_budget_tokens = 1024;
  EXPECT_THROW(build_kv_layout(m, evict, tp(8)), ConfigError);
}

}  // namespace
}  // namespace kvplan
