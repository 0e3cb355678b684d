// DeepSeek-V4 (model_type deepseek_v4): the parameter count and checkpoint bytes against the
// released checkpoints, the caches each layer keeps, vLLM's pool for them against two published
// start-up logs, and the refusals. Expectations worked by hand from the released configs
// (data/models/deepseek-v4-flash.json, deepseek-v4-pro.json); the arithmetic is beside each.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/op_time.h"
#include "kvplan/core/published_profiles.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/vllm_dsv4_pool.h"
#include "kvplan/core/mixer_ops.h"
#include "config_refusal.h"

namespace kvplan {
namespace {

using nlohmann::json;
using test::expect_refused;

KvScheme fp8_scheme(int block = 256) {
  KvScheme s;
  s.kv_dtype = DType::kFp8E4M3;
  s.tokens_per_block = block;
  return s;
}

TEST(DeepseekV4, LayersOfTheReleasedConfigs) {
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  ASSERT_EQ(m.num_layers(), 43);
  EXPECT_EQ(m.count_layers(LayerKind::kCompressedAttention), 43);
  // compress_ratios [0, 0, (4, 128) x 20, 4] and the MTP block's 0
  EXPECT_EQ(m.layers[0].compress_ratio, 0);
  EXPECT_EQ(m.layers[1].compress_ratio, 0);
  EXPECT_EQ(m.layers[2].compress_ratio, 4);
  EXPECT_EQ(m.layers[3].compress_ratio, 128);
  EXPECT_EQ(m.layers[42].compress_ratio, 4);
  EXPECT_EQ(m.compressed.window, 128);
  EXPECT_EQ(m.compressed.hc_mult, 4);
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  EXPECT_EQ(m.quantization.scale_bytes, 1);
  EXPECT_EQ(m.quantization.expert_method, QuantMethod::kMxfp4);
  const ModelConfig pro = resolve_model("deepseek-v4-pro");
  EXPECT_EQ(pro.num_layers(), 61);
  EXPECT_EQ(pro.layers[0].compress_ratio, 128);  // every Pro layer has a compressor
}

// The model cards' "284B" and "1.6T" count the main model (the MTP block aside, as DeepSeek-V3's
// 671B): every tensor of inference/model.py with the FP4 experts unpacked, their e8m0 scales and the
// int64 tid2eid table left out. The checkpoint bytes of those tensors plus the MTP block are the
// index files' total_size.
TEST(DeepseekV4, ParametersAndCheckpointBytes) {
  const ModelConfig flash = resolve_model("deepseek-v4-flash");
  EXPECT_EQ(count_parameters(flash).total(), 284332240471);
  // the six routed experts per token of 256, the rest always: 13.8 B with the embedding and head
  EXPECT_EQ(count_parameters(flash).active(), 13799632471);
  const int64_t flash_bytes = weight_bytes_total(flash, WeightFormat{flash.dtype, flash.quantization});
  // The MTP block is one more ratio-0, non-hash layer plus e_proj and h_proj (fp8 4,096² with
  // 32 x 32 e8m0 scales: 2 x 16,778,240), enorm, hnorm and norm (3 x 4,096 x 2 B) and its own
  // hc_head (4 x 16,384 + 4 + 1 fp32 = 262,164 B).
  json c = test::preset_config("deepseek-v4-flash");
  c["num_hidden_layers"] = 44;
  c["compress_ratios"] = json::array();
  for (int r : {0, 0}) c["compress_ratios"].push_back(r);
  for (int i = 0; i < 20; ++i) {
    c["compress_ratios"].push_back(4);
    c["compress_ratios"].push_back(128);
  }
  c["compress_ratios"].push_back(4);
  c["compress_ratios"].push_back(0);
  const ModelConfig with_block = parse_model_config(c, "flash-44");
  const int64_t block = weight_bytes_total(with_block, WeightFormat{with_block.dtype, with_block.quantization}) -
                        flash_bytes;
  EXPECT_EQ(block, 3559944536);
  const int64_t mtp = block + 2 * 16778240 + 3 * 4096 * 2 + 262164;
  EXPECT_EQ(flash_bytes + mtp, 159609485896);  // deepseek-ai/DeepSeek-V4-Flash index total_size

  const ModelConfig pro = resolve_model("deepseek-v4-pro");
  EXPECT_EQ(count_parameters(pro).total(), 1572997201763);
  // Pro's MTP block (hidden 7,168): its bytes are 13,956,587,692 by the same rule
  EXPECT_EQ(weight_bytes_total(pro, WeightFormat{pro.dtype, pro.quantization}) + 13956587692, 864704792696);
}

TEST(DeepseekV4, Mxfp4ExpertsAndE8m0BlockScales) {
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  // one expert's w1 [2,048, 4,096]: MXFP4 4,194,304 + one e8m0 byte per 32 = 262,144
  EXPECT_EQ(quantized_linear_bytes(expert_quantization(m.quantization), 2048, 4096, DType::kBF16), 4194304 + 262144);
  // wq_b [64 x 512, 1,024]: fp8 33,554,432 + 256 x 8 e8m0 scales
  EXPECT_EQ(quantized_linear_bytes(m.quantization, 32768, 1024, DType::kBF16), 33554432 + 2048);
}

// Per layer: the latent window (448 fp8 NoPE + 64 bf16 RoPE + 7 scale bytes + 1 pad = 584 B a
// token, the last 128), the compressed latents (584 B per r tokens), the indexer's keys (128 fp8 + a
// fp32 scale = 132 B per 4 tokens) and the compressors' fp32 state (kv and score rows, 2 coff x width
// x 4 B a token over the last coff x r tokens: 8,192 B x 8 for r = 4, 2,048 B x 8 for the indexer's,
// 4,096 B x 128 for r = 128).
TEST(DeepseekV4, CachesPerLayerByHand) {
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  const KvLayout layout = build_kv_layout(m, fp8_scheme(), Parallelism{});
  ASSERT_EQ(layout.groups().size(), 7u);
  auto find = [&](const std::string& name) -> const KvLayerGroup& {
    for (const KvLayerGroup& g : layout.groups()) {
      if (g.name == name) return g;
    }
    ADD_FAILURE() << "no group " << name;
    return layout.groups().front();
  };
  EXPECT_EQ(find("latent_window(128)").num_layers, 43);
  EXPECT_EQ(find("latent_window(128)").entry_bytes(), 584);
  EXPECT_EQ(find("csa(1/4)").num_layers, 21);
  EXPECT_EQ(find("csa(1/4)").entry_bytes(), 584);
  EXPECT_EQ(find("csa(1/4)").sparse_topk, 512);
  EXPECT_EQ(find("csa_indexer(1/4)").entry_bytes(), 132);
  EXPECT_EQ(find("hca(1/128)").num_layers, 20);
  EXPECT_EQ(find("hca(1/128)").entry_bytes(), 584);
  EXPECT_EQ(find("csa_compressor_state(8)").entry_bytes(), 8192);
  EXPECT_EQ(find("csa_indexer_compressor_state(8)").entry_bytes(), 2048);
  EXPECT_EQ(find("hca_compressor_state(128)").entry_bytes(), 4096);
  // One request of 1,000 tokens: 43 x 128 x 584 + 21 x 250 x (584 + 132) + 20 x 7 x 584
  // + 21 x 8 x (8,192 + 2,048) + 20 x 128 x 4,096
  const int64_t expected = int64_t{43} * 128 * 584 + int64_t{21} * 250 * (584 + 132) + int64_t{20} * 7 * 584 +
                           int64_t{21} * 8 * (8192 + 2048) + int64_t{20} * 128 * 4096;
  EXPECT_EQ(layout.request_bytes(1000), expected);
  // 3 tokens: the windows hold 3, nothing is compressed yet
  EXPECT_EQ(layout.request_bytes(3), int64_t{43} * 3 * 584 + int64_t{21} * 3 * (8192 + 2048) + int64_t{20} * 3 * 4096);
  // tensor parallelism does not split the one shared latent: every rank holds all of it
  Parallelism tp8;
  tp8.tensor_parallel = 8;
  EXPECT_EQ(build_kv_layout(m, fp8_scheme(), tp8).request_bytes(1000), expected);
}

// vLLM 0.25.0 (patched) on 2 x RTX PRO 6000, TP2, MTP (one draft layer's window cache), max_model_len
// 1,048,576, max_num_batched_tokens 4,096: "KV cache: 1,993,100 tokens", "1.90x" (a published benchmark
// report; docs/benchmarks.md). Pages at block 256, padded to 576 B: window 64 x 584 = 37,376 -> 37,440;
// C4 latents 64 x 584 -> 37,440; C128 latents 2 x 584 = 1,168 -> 1,728; indexer 64 x 132 = 8,448 -> 8,640;
// states 4 x 8,192 and 8 x 4,096 = 32,768 -> 32,832, raised to the 37,440 page; indexer states
// 4 x 2,048 -> 8,640. Groups: the 62 compressed caches; the 44 windows in two groups of 22; the 42
// r = 4 states; the 20 r = 128 states (T = 22). Stride 22 x 37,440 + 21 x 8,640 + 20 x 1,728 = 1,039,680.
TEST(DeepseekV4, ReproducesTheVllm025Log) {
  const KvLayout layout = build_kv_layout(resolve_model("deepseek-v4-flash"), fp8_scheme(), Parallelism{});
  const VllmDsv4Pool pool = vllm_dsv4_pool(layout, 256, 1048576, 4096, /*draft_window_layers=*/1);
  EXPECT_EQ(pool.group_size, 22);
  ASSERT_EQ(pool.groups.size(), 5u);
  EXPECT_EQ(pool.block_stride_bytes, 1039680);
  // Pages per request: compressed cdiv(1,048,576, 256) = 4,096; windows cdiv(127 + 4,096, 64) + 1 = 67;
  // r = 4 states cdiv(7 + 4,096, 4) + 1 = 1,027; r = 128 states cdiv(127 + 4,096, 8) + 1 = 529; weighed
  // by page bytes (P0 = 21 x 37,440 + 20 x 1,728 + 21 x 8,640 = 1,002,240):
  // cdiv(4,096 x P0 + 67 x 2 x 823,680 + 1,027 x 967,680 + 529 x 748,800, P0) = 5,593
  EXPECT_EQ(pool.blocks_per_request, 5593);
  // 10,631 blocks (available KV between 11,052,838,080 and 11,053,877,759 B)
  const double concurrency = 10631.0 / static_cast<double>(pool.blocks_per_request);
  EXPECT_EQ(fmt::format("{:.2f}", concurrency), "1.90");
  EXPECT_EQ(static_cast<int64_t>(concurrency * 1048576), 1993100);
  EXPECT_EQ(11052838080 / pool.block_stride_bytes, 10631);
}

// vLLM 0.26.0 on 2 x H20, TP2, MTP, a 7.01 GiB pool, max_model_len 912,128, the default
// max_num_batched_tokens 8,192 (vllm-project/vllm issue #51041): 1.11x, 1,009,661 tokens.
TEST(DeepseekV4, ReproducesTheVllm026Log) {
  const KvLayout layout = build_kv_layout(resolve_model("deepseek-v4-flash"), fp8_scheme(), Parallelism{});
  const VllmDsv4Pool pool = vllm_dsv4_pool(layout, 256, 912128, 8192, 1);
  EXPECT_EQ(pool.blocks_per_request, 6537);
  // 7.01 GiB: 7,236 blocks is the one count in [7.005, 7.015) GiB / 1,039,680 B that prints the log
  EXPECT_EQ(fmt::format("{:.2f}", 7236.0 * 1039680 / 1073741824.0), "7.01");
  const double concurrency = 7236.0 / 6537.0;
  EXPECT_EQ(fmt::format("{:.2f}", concurrency), "1.11");
  EXPECT_EQ(static_cast<int64_t>(concurrency * 912128), 1009661);
}

TEST(DeepseekV4, MemoryAnswerUsesThePool) {
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  ServingConfig c;
  c.engine = Engine::kVllm;
  c.version = parse_engine_version("0.25.0");
  c.max_model_len = 1048576;
  Parallelism tp8;
  tp8.tensor_parallel = 8;
  const MemoryPlan plan = plan_memory(m, resolve_gpu("h200"), fp8_scheme(16), tp8, c);
  EXPECT_EQ(plan.tokens_per_block, 256);  // vLLM's DeepSeek-V4 block, not the scheme's 16
  EXPECT_EQ(plan.block_bytes, 1039680);   // no MTP draft layer: the windows are groups of 22 and 21
  EXPECT_EQ(plan.num_blocks, plan.kv_budget_bytes / 1039680);
  const VllmDsv4Pool pool = vllm_dsv4_pool(build_kv_layout(m, fp8_scheme(), tp8), 256, 1048576, 8192);
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(plan.num_blocks) / static_cast<double>(pool.blocks_per_request));
  // TensorRT-LLM's pool for it is not modelled: refused, not answered as vLLM's (SGLang's:
  // sglang_dsv4_pool_test.cpp)
  c.engine = Engine::kTrtllm;
  EXPECT_THROW(plan_memory(m, resolve_gpu("h200"), fp8_scheme(), tp8, c), ConfigError);
}

TEST(DeepseekV4, RefusesWhatItDoesNotRead) {
  const json base = test::preset_config("deepseek-v4-flash");
  json c = base;
  c["compress_ratios"][5] = 64;
  expect_refused(c, "compress_ratios[5]");
  c = base;
  c["num_key_value_heads"] = 2;
  expect_refused(c, "num_key_value_heads");
  c = base;
  c["compress_ratios"].erase(c["compress_ratios"].begin());
  c["compress_ratios"].erase(c["compress_ratios"].begin());
  expect_refused(c, "compress_ratios");
  c = base;
  c["expert_dtype"] = "fp8";
  expect_refused(c, "expert_dtype");
  c = base;
  c["quantization_config"]["quant_algo"] = "MIXED_PRECISION";  // a ModelOpt export: other expert bytes
  expect_refused(c, "quant_algo");
  c = base;
  c["quantization_config"]["scale_fmt"] = "fp32";
  expect_refused(c, "scale_fmt");
  // a 16-bit cache has no layout in any engine
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  EXPECT_THROW(build_kv_layout(m, KvScheme{}, Parallelism{}), ConfigError);
}

// A step's operators: per layer the hyper-connections (pre, post) and one attention module op for the
// prefill chunks and one for the decode tokens, CSA, HCA and window-only layers as their own types.
TEST(DeepseekV4, StepOperatorsPerLayerType) {
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  const KvLayout layout = build_kv_layout(m, fp8_scheme(), Parallelism{});
  StepShape shape;
  shape.prefill_tokens = 2048;
  shape.prefill_sequences = 1;
  shape.decode_sequences = 8;
  shape.emitting_sequences = 9;
  shape.groups.resize(layout.groups().size());
  for (size_t g = 0; g < layout.groups().size(); ++g) {
    shape.groups[g].prefill_kv_tokens = 2048 + 1000;  // a 1,000-token cached prefix
    shape.groups[g].decode_tokens = 8 * 4097;         // 4,096 past tokens each, plus the new one
  }
  StepOps ops;
  StepOpsBuilder(m, layout, Parallelism{}, StepOpsOptions{}).build(shape, ops);
  ASSERT_EQ(ops.types.size(), 3u);  // window-only (layers 0-1), CSA, HCA
  int modules = 0, mhc = 0;
  for (const StepOp& op : ops.ops) {
    if (op.op_class == OpClass::kDsv4Attention) {
      ++modules;
      const std::string variant = op.grid_variant;
      EXPECT_EQ(variant.rfind("flash_", 0), 0u) << variant;  // V4-Flash's geometry
      if (variant.find("prefill") != std::string::npos) {
        EXPECT_EQ(op.shape.dims, 4);
        EXPECT_DOUBLE_EQ(op.shape.v[1], 2048);  // new tokens per sequence
        EXPECT_DOUBLE_EQ(op.shape.v[2], 1000);  // cached
      } else {
        EXPECT_DOUBLE_EQ(op.shape.v[1], 4096);  // past, the new token excluded (the table's convention)
      }
    }
    mhc += op.op_class == OpClass::kMhc ? 1 : 0;
  }
  EXPECT_EQ(modules, 6);  // prefill and decode per type
  EXPECT_EQ(mhc, 6);
}

// The published H200 profile prices a module shape of the table within 10% (the variants' held-out p90
// on H200 is 2.9-8.2%, docs/benchmarks.md): V4-Flash at TP 8
// (8 heads), one 2,048-token prompt without a prefix, CSA: 0.6148 ms; 64 decode sequences at 4,096 past
// tokens, HCA: 0.0611 ms (data/measurements/aiconfigurator_dsv4_attention_vllm_h100_h200_b200.csv).
TEST(DeepseekV4, PublishedModuleTimes) {
  const ModelConfig m = resolve_model("deepseek-v4-flash");
  const GpuSpec gpu = resolve_gpu("h200");
  const OpClassProfile& c = published_profile("h200")->at(OpClass::kDsv4Attention);
  const StepOp csa = dsv4_attention_op(true, 4, m.compressed, m.hidden_size, 8, 1, 2048, 0, true);
  EXPECT_NEAR(op_kernel_ns(c, gpu, csa) / 614800.0, 1.0, 0.10);
  const StepOp hca = dsv4_attention_op(false, 128, m.compressed, m.hidden_size, 8, 64, 64, 64 * 4096.0, true);
  EXPECT_NEAR(op_kernel_ns(c, gpu, hca) / 61100.0, 1.0, 0.10);
}

}  // namespace
}  // namespace kvplan
