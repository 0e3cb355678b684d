// Parallel splits (parallelism.h): expert and data parallelism in the weights and the KV answer, and
// the splits engines refuse, each with the rule named.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"

namespace kvplan {
namespace {

std::string refusal(const ModelConfig& m, const Parallelism& p, const WeightFormat& w) {
  try {
    validate_split(m, p, w);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Parallelism, Fp8BlockMoeRefusedWhereTheExpertShardStraddlesBlocks) {
  // Qwen3-235B-A22B-FP8: moe_intermediate_size 1536 / TP 8 = 192, not a multiple of block_n 128:
  // vLLM refuses to load it (the fix users apply is expert parallelism).
  const ModelConfig m = resolve_model("qwen3-235b-a22b-fp8");
  const WeightFormat w{m.dtype, m.quantization};
  const std::string msg = refusal(m, Parallelism{.tensor_parallel = 8}, w);
  EXPECT_NE(msg.find("tensor-parallel-size=8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expert width of 192"), std::string::npos) << msg;
  EXPECT_NE(msg.find("block_n=128"), std::string::npos) << msg;
  // TP 4: 384 = 3 x 128 loads; TP 8 with expert parallelism keeps whole experts and loads too
  EXPECT_EQ(refusal(m, Parallelism{.tensor_parallel = 4}, w), "(accepted)");
  EXPECT_EQ(refusal(m, Parallelism{.tensor_parallel = 8, .expert_parallel = true}, w), "(accepted)");
}

TEST(Parallelism, WidthsThatDoNotDivideAreRefused) {
  nlohmann::json j = {{"model_type", "llama"},        {"hidden_size", 1024}, {"num_attention_heads", 16},
                      {"num_key_value_heads", 16},    {"intermediate_size", 3004},
                      {"num_hidden_layers", 2},       {"vocab_size", 1000}};
  const ModelConfig m = parse_model_config(j, "odd");
  // 16 heads split over 4 or 8 GPUs, but only 3004 / 4 = 751 is whole (3004 / 8 = 375.5)
  EXPECT_EQ(refusal(m, Parallelism{.tensor_parallel = 4}, WeightFormat{}), "(accepted)");
  const std::string msg = refusal(m, Parallelism{.tensor_parallel = 8}, WeightFormat{});
  EXPECT_NE(msg.find("must divide intermediate_size=3004"), std::string::npos) << msg;
  EXPECT_NE(refusal(m, Parallelism{.tensor_parallel = 2, .expert_parallel = true}, WeightFormat{}).find("no experts"),
            std::string::npos);
  EXPECT_NE(refusal(m, Parallelism{.data_parallel = 0}, WeightFormat{}).find("data-parallel-size=0"), std::string::npos);
}

TEST(Parallelism, ExpertParallelPlacesWholeExperts) {
  const ModelConfig m = resolve_model("qwen3-30b-a3b");  // 128 experts of width 768 on every layer
  const WeightBytes tp2 = weight_bytes_breakdown(m, WeightFormat{}, Parallelism{.tensor_parallel = 2});
  // TP 2 x DP 4 with expert parallelism: the 128 experts spread over 8 GPUs, 16 whole experts each,
  // a quarter of the 128 half-width experts TP 2 alone holds
  const WeightBytes ep8 = weight_bytes_breakdown(
      m, WeightFormat{}, Parallelism{.tensor_parallel = 2, .data_parallel = 4, .expert_parallel = true});
  EXPECT_EQ(ep8.experts * 4, tp2.experts);
  // per layer: 16 experts x 3 x 2048 x 768 x 2 B = 150,994,944; 48 layers = 7,247,757,312
  EXPECT_EQ(ep8.experts, int64_t{48} * 16 * 3 * 2048 * 768 * 2);
  // attention and the rest are still split by TP 2
  EXPECT_EQ(ep8.total() - ep8.experts, tp2.total() - tp2.experts);
}

// vLLM runs a MoE model data parallel with its experts split over every tp x dp GPU
// (FusedMoEParallelConfig.make flattens TP across DP without expert parallelism too): NVIDIA's H200
// runs of Qwen3-235B-A22B-FP8 at tp 1 on 2 GPUs. Each rank keeps whole attention; the experts are
// the TP 2 shard, not a full copy per rank.
TEST(Parallelism, DataParallelRanksShareTheExpertsSplitOverAllTheirGpus) {
  const ModelConfig m = resolve_model("qwen3-235b-a22b-fp8");
  const WeightFormat w{m.dtype, m.quantization};
  const WeightBytes tp1 = weight_bytes_breakdown(m, w, Parallelism{});
  const WeightBytes tp2 = weight_bytes_breakdown(m, w, Parallelism{.tensor_parallel = 2});
  const WeightBytes dp2 = weight_bytes_breakdown(m, w, Parallelism{.data_parallel = 2});
  // per layer and expert at width 1536 / 2 = 768: gate, up [768, 4096] and down [4096, 768] fp8,
  // 3 x 768 x 4096 B, plus 128 x 128 block scales (6 x 32 per matrix; Qwen's checkpoints store them
  // bf16): 3 x 192 x 2 B; 128 experts, 94 layers
  EXPECT_EQ(dp2.experts, int64_t{94} * 128 * (3 * 768 * 4096 + 3 * 192 * 2));
  EXPECT_EQ(dp2.experts, tp2.experts);
  EXPECT_EQ(dp2.experts * 2, tp1.experts);
  EXPECT_EQ(dp2.total() - dp2.experts, tp1.total() - tp1.experts);  // attention and the rest whole
  // It fits where a full copy per rank would not (220 GiB of weights against an H200's 141 GB).
  ServingConfig c;
  c.max_model_len = 8192;
  c.weights = w;
  const MemoryPlan plan = plan_memory(m, resolve_gpu("h200"), KvScheme{}, Parallelism{.data_parallel = 2}, c);
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.total_kv_cache_tokens(), 2 * plan.kv_cache_tokens);
  // The split rule counts every GPU an expert is split over: 1536 over tp 2 x dp 4 = 192 per GPU
  // is not a multiple of the 128-wide fp8 blocks.
  const std::string why = refusal(m, Parallelism{.tensor_parallel = 2, .data_parallel = 4}, w);
  EXPECT_NE(why.find("tensor-parallel-size x data-parallel-size=8"), std::string::npos) << why;
  EXPECT_NE(why.find("block_n=128"), std::string::npos) << why;
  // A dense model's data-parallel ranks are full copies, as before.
  const ModelConfig dense = resolve_model("llama-3.1-8b");
  EXPECT_EQ(weight_bytes_per_gpu(dense, WeightFormat{}, Parallelism{.data_parallel = 4}),
            weight_bytes_per_gpu(dense, WeightFormat{}, Parallelism{}));
}

// MoE TP x EP (TensorRT-LLM's moe_tensor_parallel_size x moe_expert_parallel_size, SGLang's --ep-size
// below --tp-size): at TP 4 with EP 2 the 128 experts go to 2 groups of 2 GPUs, each expert split
// over its group's 2 GPUs: 64 experts of width 768 per GPU.
TEST(Parallelism, ExpertParallelGroupsSplitTheirExpertsOverTheirGpus) {
  const ModelConfig m = resolve_model("qwen3-235b-a22b-fp8");
  const WeightFormat w{m.dtype, m.quantization};
  Parallelism hybrid{.tensor_parallel = 4, .expert_parallel = true, .expert_parallel_ranks = 2};
  EXPECT_EQ(hybrid.expert_parallel_size(), 2);
  EXPECT_EQ(hybrid.expert_tensor_parallel(), 2);
  const WeightBytes b = weight_bytes_breakdown(m, w, hybrid);
  EXPECT_EQ(b.experts, int64_t{94} * 64 * (3 * 768 * 4096 + 3 * 192 * 2));
  const WeightBytes tp4 = weight_bytes_breakdown(m, w, Parallelism{.tensor_parallel = 4});
  EXPECT_EQ(b.total() - b.experts, tp4.total() - tp4.experts);  // attention as at TP 4
  EXPECT_EQ(refusal(m, hybrid, w), "(accepted)");
  hybrid.expert_parallel_ranks = 3;
  EXPECT_NE(refusal(m, hybrid, w).find("expert-parallel-size=3 must divide tensor-parallel-size x data-parallel-size = 4"),
            std::string::npos)
      << refusal(m, hybrid, w);
  // An EP size above the GPUs is refused, and the sizes never divide by zero on the way.
  const Parallelism too_many{.tensor_parallel = 2, .expert_parallel = true, .expert_parallel_ranks = 4};
  EXPECT_EQ(too_many.expert_tensor_parallel(), 1);
  EXPECT_NE(refusal(m, too_many, w).find("expert-parallel-size=4 must divide"), std::string::npos);
  // Groups of 4 at TP 8 x EP 2: 1536 / 4 = 384 per GPU, three 128-wide blocks; groups of 8 would be 192.
  EXPECT_EQ(refusal(m, Parallelism{.tensor_parallel = 8, .expert_parallel = true, .expert_parallel_ranks = 2}, w), "(accepted)");
  const std::string why = refusal(m, Parallelism{.tensor_parallel = 16, .expert_parallel = true, .expert_parallel_ranks = 2}, w);
  EXPECT_NE(why.find("MoE tensor-parallel size (tensor x data parallel / expert-parallel-size)=8"), std::string::npos) << why;
}

TEST(Parallelism, DataParallelAttentionMultipliesTheLatentCache) {
  // DeepSeek-V3 on 8 x H200. TP 8: every GPU caches the same latent for every request.
  // DP 8 + EP: each GPU is its own attention rank with its own requests.
  const ModelConfig m = resolve_model("deepseek-v3");
  const GpuSpec g = resolve_gpu("h200");
  ServingConfig c;
  c.max_model_len = 32768;
  c.weights = WeightFormat{m.dtype, m.quantization};
  const MemoryPlan tp8 = plan_memory(m, g, KvScheme{}, Parallelism{.tensor_parallel = 8}, c);
  const MemoryPlan dp8 = plan_memory(m, g, KvScheme{}, Parallelism{.data_parallel = 8, .expert_parallel = true}, c);
  ASSERT_TRUE(tp8.fits);
  ASSERT_TRUE(dp8.fits);
  EXPECT_EQ(dp8.data_parallel, 8);
  EXPECT_EQ(dp8.total_kv_cache_tokens(), 8 * dp8.kv_cache_tokens);
  // each DP rank holds whole attention weights (more than a TP 8 shard), so its own pool is a bit
  // smaller, but the deployment holds several times more tokens
  EXPECT_LT(dp8.kv_cache_tokens, tp8.kv_cache_tokens);
  EXPECT_GT(dp8.total_kv_cache_tokens(), 4 * tp8.total_kv_cache_tokens());
}

TEST(Parallelism, TensorParallelBeyondOneScaleUpDomainIsFlagged) {
  // HGX H100: 8 GPUs on NVLink. TP 16 crosses nodes over the network, which the cost model does
  // not price: every memory plan (so every output) says so. GB200 NVL72 holds 72 in one domain.
  const ModelConfig m = resolve_model("llama-3.1-405b");
  ServingConfig c;
  c.max_model_len = 8192;
  c.weights = WeightFormat{m.dtype, m.quantization};
  auto warned = [](const MemoryPlan& plan, const std::string& text) {
    for (const std::string& w : plan.warnings) {
      if (w.find(text) != std::string::npos) return true;
    }
    return false;
  };
  const GpuSpec h100 = resolve_gpu("h100-sxm");
  EXPECT_EQ(h100.scale_up_domain_gpus, 8);
  EXPECT_TRUE(warned(plan_memory(m, h100, KvScheme{}, Parallelism{.tensor_parallel = 16}, c),
                     "tensor parallel 16 spans more than one scale-up domain of h100-sxm (8 GPUs"));
  EXPECT_FALSE(warned(plan_memory(m, h100, KvScheme{}, Parallelism{.tensor_parallel = 8}, c), "scale-up domain"));
  EXPECT_TRUE(warned(plan_memory(m, h100, KvScheme{}, Parallelism{.tensor_parallel = 8, .pipeline_parallel = 2}, c),
                     "tensor parallel 8 x pipeline parallel 2 spans more than one scale-up domain"));
  const GpuSpec gb200 = resolve_gpu("gb200");
  EXPECT_EQ(gb200.scale_up_domain_gpus, 72);
  EXPECT_FALSE(warned(plan_memory(m, gb200, KvScheme{}, Parallelism{.tensor_parallel = 16}, c), "scale-up domain"));
  // NVLink-bridged PCIe cards: pairs.
  const ModelConfig llama70 = resolve_model("llama-3.1-70b");
  c.weights = WeightFormat{llama70.dtype, llama70.quantization};
  EXPECT_TRUE(warned(plan_memory(llama70, resolve_gpu("h100-pcie"), KvScheme{}, Parallelism{.tensor_parallel = 4}, c),
                     "tensor parallel 4 spans more than one scale-up domain of h100-pcie (2 GPUs"));
}

}  // namespace
}  // namespace kvplan
