// Engine memory accounting (engine_memory.h): budget identities, block and token counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/vllm_profile.h"

namespace kvplan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

const MemoryTerm* find_term(const MemoryPlan& plan, std::string_view key) {
  for (const MemoryTerm& t : plan.terms) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

// Llama-3.1-8B weights in bf16 plus the RoPE cos/sin cache:
// 2 B * 8,030,261,248 + 131072 positions * 128 rotary dims * 2 B = 16,060,522,496 + 33,554,432
constexpr int64_t kLlama8bWeightsTerm = int64_t{2} * 8030261248 + int64_t{131072} * 128 * 2;

struct Llama8bOnH100 : ::testing::Test {
  ModelConfig model = resolve_model("llama-3.1-8b");
  GpuSpec gpu = resolve_gpu("h100-sxm");
  KvScheme scheme;
  Parallelism parallel;
};

TEST_F(Llama8bOnH100, VllmDefaultBudgetIdentity) {
  ServingConfig cfg;  // vLLM 0.10, utilization 0.9, max_model_len from the model
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  EXPECT_EQ(plan.max_model_len, 131072);  // max_position_embeddings
  EXPECT_EQ(plan.gpu_total_bytes, gpu.usable_memory_bytes);
  const int64_t budget = static_cast<int64_t>(std::floor(static_cast<double>(gpu.usable_memory_bytes) * 0.9));
  EXPECT_EQ(plan.engine_budget_bytes, budget);
  EXPECT_EQ(plan.kv_budget_bytes,
            budget - plan.term("weights") - plan.term("activation_peak") - plan.term("non_torch"));
  EXPECT_EQ(plan.term("weights"), kLlama8bWeightsTerm);
  EXPECT_GT(plan.term("activation_peak"), 0);
  EXPECT_GT(plan.term("non_torch"), 0);
  // block: 16 tokens * 131,072 = 2,097,152
  EXPECT_EQ(plan.tokens_per_block, 16);
  EXPECT_EQ(plan.block_bytes, 2097152);
  EXPECT_EQ(plan.num_blocks, plan.kv_budget_bytes / 2097152);
  EXPECT_EQ(plan.kv_cache_tokens, plan.num_blocks * 16);
  // 131072 / 16 = 8,192 blocks per max-length request
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(plan.num_blocks) / 8192.0);
  // a max-length request allocates 8,192 blocks * 2,097,152 B
  EXPECT_EQ(plan.request_bytes_at_max_len, int64_t{8192} * 2097152);
  EXPECT_EQ(plan.requests_at_max_len, plan.kv_budget_bytes / (int64_t{8192} * 2097152));
  EXPECT_TRUE(plan.fits);
  EXPECT_TRUE(plan.problems.empty());
  // CUDA graphs are shown but not subtracted
  bool found_graphs = false;
  for (const MemoryTerm& t : plan.terms) {
    if (t.key == "cuda_graphs") {
      found_graphs = true;
      EXPECT_FALSE(t.subtracted);
    }
  }
  EXPECT_TRUE(found_graphs);
}

TEST_F(Llama8bOnH100, VllmDefaultAbsoluteFigures) {
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, ServingConfig{});
  // usable 85,029,615,042 * 0.9 = 76,526,653,537.8 -> 76,526,653,537
  EXPECT_EQ(plan.engine_budget_bytes, 76526653537);
  // non-torch estimate for vLLM >= 0.9 at tp=1: 96 MiB
  EXPECT_EQ(plan.term("non_torch"), 96 * kMiB);
  // activation peak (vllm_profile.h, V1): the larger of
  //   forward 8,192 tokens * 2 B * (4*4096 + widest 3*14336) = 8,192 * 2 * 59,392 = 973,078,528 and
  //   sampler 1,024 seqs * 128,256 * 14.7 B = 1,930,611,916 (integer division of x147/10) plus the
  //   model output 8,192 * 2 * 4,096 = 67,108,864 -> 1,997,720,780
  // (rule changed: forward and sampler run one after the other, so the peak is the larger; V1's
  // sampler bytes per logit read off logs 22-24)
  EXPECT_EQ(plan.term("activation_peak"), 1997720780);
  // 76,526,653,537 - 16,094,076,928 - 1,997,720,780 - 100,663,296 = 58,334,192,533
  EXPECT_EQ(plan.kv_budget_bytes, 58334192533);
  // floor(58,334,192,533 / 2,097,152) = 27,815 blocks = 445,040 tokens
  EXPECT_EQ(plan.num_blocks, 27815);
  EXPECT_EQ(plan.kv_cache_tokens, 445040);
}

TEST(ActivationPeak, HandComputedForLlama8b) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  // widest intermediate: max(attention (32 + 2*8)*128 + 32*128 = 10,240, gated MLP 3*14336 = 43,008)
  // 2048 tokens * 2 B * (8,192 + 43,008) = 209,715,200; 256 seqs * 128,256 * 8 = 262,668,288
  EXPECT_EQ(vllm_activation_peak_bytes(m, Parallelism{}, 2048, 256), 209715200 + 262668288);
  // tp=2: widest MLP 3*14336/2 = 21,504; 2048 * 2 * (8,192 + 21,504) = 121,634,816; no sampling
  EXPECT_EQ(vllm_activation_peak_bytes(m, Parallelism{.tensor_parallel = 2}, 2048, 0), 121634816);
}

TEST_F(Llama8bOnH100, VllmV0ConcurrencyIsTokensOverMaxLen) {
  ServingConfig cfg;
  cfg.version = parse_engine_version("0.7.1");
  EXPECT_EQ(cfg.version.major, 0);
  EXPECT_EQ(cfg.version.minor, 7);
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(plan.kv_cache_tokens) / 131072.0);
  EXPECT_EQ(plan.kv_cache_tokens, plan.num_blocks * 16);
  EXPECT_EQ(plan.kv_budget_bytes, plan.engine_budget_bytes - plan.term("weights") -
                                      plan.term("activation_peak") - plan.term("non_torch"));
  // V0 estimate of non-torch memory: 320 MiB
  EXPECT_EQ(plan.term("non_torch"), 320 * kMiB);
}

TEST_F(Llama8bOnH100, SglangStaticFraction) {
  ServingConfig cfg;
  cfg.engine = Engine::kSglang;
  cfg.mem_fraction_static = 0.8;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  // SGLang (model_runner.py): free at start = total - context = 85,029,615,042 - 408,021,893 = 84,621,593,149;
  // reserve = free at start x (1 - 0.8) = 16,924,318,629.8 -> 16,924,318,629;
  // pool = free at start - weights - reserve = 84,621,593,149 - 16,094,076,928 - 16,924,318,629 = 51,603,197,592
  EXPECT_EQ(plan.term("weights"), kLlama8bWeightsTerm);
  EXPECT_EQ(plan.term("cuda_context"), kSglangStartContextBytes);
  EXPECT_EQ(plan.term("reserve"), 16924318629);
  EXPECT_EQ(plan.kv_budget_bytes, 51603197592);
  EXPECT_EQ(plan.tokens_per_block, 1);
  EXPECT_EQ(plan.block_bytes, 131072);
  // 51,603,197,592 / 131,072 = 393,701.4
  EXPECT_EQ(plan.kv_cache_tokens, 393701);
}

TEST_F(Llama8bOnH100, StaticBatchingReservesMaxLen) {
  ServingConfig cfg;
  cfg.engine = Engine::kStatic;
  cfg.max_model_len = 4096;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  EXPECT_EQ(plan.max_model_len, 4096);
  // one slot: 4096 * 131,072 = 536,870,912
  EXPECT_EQ(plan.request_bytes_at_max_len, int64_t{4096} * 131072);
  EXPECT_EQ(plan.requests_at_max_len, plan.kv_budget_bytes / (int64_t{4096} * 131072));
  EXPECT_EQ(plan.kv_budget_bytes, gpu.usable_memory_bytes - plan.term("weights") -
                                      plan.term("activation_peak") - plan.term("cuda_context"));
  // one max-length prefill: 4096 * 2 * (8,192 + 43,008) + 1 * 128,256 * 8 = 420,456,448
  EXPECT_EQ(plan.term("activation_peak"), 420456448);
  EXPECT_EQ(plan.kv_cache_tokens, plan.requests_at_max_len * 4096);
}

TEST_F(Llama8bOnH100, Fp8KvHalvesBlockAndSubtractsScales) {
  scheme.kv_dtype = DType::kFp8E4M3;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, ServingConfig{});
  // 16 tokens * 65,536 = 1,048,576
  EXPECT_EQ(plan.block_bytes, 1048576);
  // 32 layers * 2 fp32 scales = 256 B
  EXPECT_EQ(plan.term("kv_scales"), 256);
  EXPECT_EQ(plan.kv_budget_bytes, plan.engine_budget_bytes - plan.term("weights") -
                                      plan.term("activation_peak") - plan.term("non_torch") - 256);
  EXPECT_EQ(plan.num_blocks, plan.kv_budget_bytes / 1048576);
}

// Memory in use by other processes. H100 total 85,029,615,042 B; vLLM asks for
// 0.9 x that = 76,526,653,537.8 B.
TEST_F(Llama8bOnH100, VllmV1MemoryInUseLeavesTheBudgetWhenEnoughIsFree) {
  ServingConfig cfg;  // vLLM 0.10: V1
  cfg.memory_in_use_bytes = 4 * kGiB;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  // free at start 85,029,615,042 - 4,294,967,296 = 80,734,647,746 >= 76,526,653,537.8: starts,
  // and the budget is the one without other processes (VllmDefaultAbsoluteFigures)
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.kv_budget_bytes, 58334192533);
  EXPECT_EQ(plan.num_blocks, 27815);
  const MemoryTerm* t = find_term(plan, "memory_in_use");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->bytes, 4 * kGiB);
  EXPECT_FALSE(t->subtracted);
  EXPECT_NE(t->how.find("vLLM V1 rule"), std::string::npos) << t->how;
}

TEST_F(Llama8bOnH100, VllmV1RefusesWhenFreeMemoryIsBelowTheRequest) {
  ServingConfig cfg;
  cfg.memory_in_use_bytes = 8 * kGiB;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  // free at start 85,029,615,042 - 8,589,934,592 = 76,439,680,450 (71.19 GiB)
  //   < 76,526,653,537.8 (71.27 GiB): vLLM raises at start-up
  EXPECT_FALSE(plan.fits);
  ASSERT_EQ(plan.problems.size(), 1u);
  const std::string& why = plan.problems[0];
  EXPECT_NE(why.find("Free memory on device (71.19/79.19 GiB) on startup is less than desired GPU memory "
                     "utilization (0.90, 71.27 GiB)"),
            std::string::npos)
      << why;
  // 76,439,680,450 / 85,029,615,042 = 0.89897..., floored to 3 decimals
  EXPECT_NE(why.find("at most 0.898"), std::string::npos) << why;
  EXPECT_FALSE(find_term(plan, "memory_in_use")->subtracted);
}

TEST_F(Llama8bOnH100, VllmV0SubtractsMemoryInUse) {
  ServingConfig cfg;
  cfg.version = parse_engine_version("0.7.1");
  cfg.memory_in_use_bytes = 4 * kGiB;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  // V0 0.7 defaults: 256 seqs, chunked prefill of 2,048 tokens (max_model_len 131,072 > 32K)
  // activation = max(forward 2,048 * 2 * (3*4,096 + 43,008) = 226,492,416,
  //   sampler on the driver 256 * 128,256 * 32 B = 1,050,673,152 + output 2,048 * 2 * 4,096 = 16,777,216)
  //   = 1,067,450,368 (rule changed: V0's sort-based top-k/top-p sampler, not 8 B per logit; the
  //   larger of forward and sampler, not their sum); non-torch 320 MiB
  // 76,526,653,537 - 16,094,076,928 - 1,067,450,368 - 335,544,320 - 4,294,967,296 = 54,734,614,625
  EXPECT_EQ(plan.kv_budget_bytes, 54734614625);
  EXPECT_EQ(plan.num_blocks, 26099);  // floor(54,734,614,625 / 2,097,152)
  EXPECT_TRUE(find_term(plan, "memory_in_use")->subtracted);
  EXPECT_NE(find_term(plan, "memory_in_use")->how.find("vLLM V0 rule"), std::string::npos);
}

TEST_F(Llama8bOnH100, SglangSubtractsMemoryInUse) {
  ServingConfig cfg;
  cfg.engine = Engine::kSglang;
  cfg.mem_fraction_static = 0.8;
  cfg.memory_in_use_bytes = 4 * kGiB;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  // free at start: 85,029,615,042 - 408,021,893 - 4,294,967,296 = 80,326,625,853;
  // reserve 80,326,625,853 x 0.2 = 16,065,325,170.6 -> 16,065,325,170;
  // pool = 80,326,625,853 - 16,094,076,928 - 16,065,325,170 = 48,167,223,755
  EXPECT_EQ(plan.kv_budget_bytes, 48167223755);
  EXPECT_EQ(plan.kv_cache_tokens, 367486);  // floor(48,167,223,755 / 131,072)
  EXPECT_EQ(plan.term("reserve"), 16065325170);
  EXPECT_TRUE(find_term(plan, "memory_in_use")->subtracted);
  EXPECT_NE(find_term(plan, "memory_in_use")->how.find("SGLang rule"), std::string::npos);
}

TEST_F(Llama8bOnH100, TrtllmTakesItsFractionOfTheSmallerFreeMemory) {
  ServingConfig cfg;
  cfg.engine = Engine::kTrtllm;  // free_gpu_memory_fraction 0.9
  MemoryPlan without = plan_memory(model, gpu, scheme, parallel, cfg);
  // activation: 8,192 * 2 * 51,200 + 256 * 128,256 * 8 = 1,101,529,088
  // free after loading: 85,029,615,042 - 16,094,076,928 - 1,101,529,088 - 536,870,912 = 67,297,138,114
  // 0.9 x = 60,567,424,302.6 -> 60,567,424,302
  EXPECT_EQ(without.kv_budget_bytes, 60567424302);
  cfg.memory_in_use_bytes = 4 * kGiB;
  MemoryPlan with = plan_memory(model, gpu, scheme, parallel, cfg);
  // free after loading: 67,297,138,114 - 4,294,967,296 = 63,002,170,818; 0.9 x = 56,701,953,736.2
  EXPECT_EQ(with.kv_budget_bytes, 56701953736);
  EXPECT_EQ(with.num_blocks, 27037);  // floor(56,701,953,736 / 2,097,152)
  EXPECT_TRUE(find_term(with, "memory_in_use")->subtracted);
  EXPECT_NE(find_term(with, "memory_in_use")->how.find("TensorRT-LLM rule"), std::string::npos);
}

TEST_F(Llama8bOnH100, StaticSubtractsMemoryInUse) {
  ServingConfig cfg;
  cfg.engine = Engine::kStatic;
  cfg.max_model_len = 4096;
  MemoryPlan without = plan_memory(model, gpu, scheme, parallel, cfg);
  cfg.memory_in_use_bytes = 4 * kGiB;
  MemoryPlan with = plan_memory(model, gpu, scheme, parallel, cfg);
  EXPECT_EQ(with.kv_budget_bytes, without.kv_budget_bytes - 4 * kGiB);
  // 85,029,615,042 - 16,094,076,928 - 420,456,448 - 536,870,912 - 4,294,967,296 = 63,683,243,458;
  // slots of 4,096 * 131,072 = 536,870,912 B: 118
  EXPECT_EQ(with.kv_budget_bytes, 63683243458);
  EXPECT_EQ(with.requests_at_max_len, 118);
}

TEST_F(Llama8bOnH100, NoMemoryInUseTermWhenNoneIsGiven) {
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm, Engine::kStatic}) {
    ServingConfig cfg;
    cfg.engine = e;
    EXPECT_EQ(find_term(plan_memory(model, gpu, scheme, parallel, cfg), "memory_in_use"), nullptr) << engine_name(e);
  }
}

TEST_F(Llama8bOnH100, GpuTotalChangesTheVllmBudgetByUtilizationTimesDelta) {
  GpuSpec bigger = gpu;
  bigger.usable_memory_bytes = 90 * kGiB;
  GpuSpec smaller = gpu;
  smaller.usable_memory_bytes = 80 * kGiB;  // both >= 70 GiB: same default batch limits
  MemoryPlan a = plan_memory(model, bigger, scheme, parallel, ServingConfig{});
  MemoryPlan b = plan_memory(model, smaller, scheme, parallel, ServingConfig{});
  // 0.9 x 10 GiB = 9,663,676,416 B exactly
  EXPECT_EQ(a.kv_budget_bytes - b.kv_budget_bytes, 9663676416);
  EXPECT_EQ(a.gpu_total_bytes, 90 * kGiB);
}

TEST(EngineMemory, ModelTooLargeDoesNotFit) {
  MemoryPlan plan = plan_memory(resolve_model("llama-3.1-405b"), resolve_gpu("l4"), KvScheme{},
                                Parallelism{}, ServingConfig{});
  // ~811 GB of weights on a 24 GB GPU
  EXPECT_FALSE(plan.fits);
  EXPECT_FALSE(plan.problems.empty());
  EXPECT_LT(plan.kv_budget_bytes, 0);
}

TEST(EngineMemory, BadSettingsThrow) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  GpuSpec g = resolve_gpu("h100-sxm");
  ServingConfig cfg;
  cfg.gpu_memory_utilization = 1.5;
  EXPECT_THROW(plan_memory(m, g, KvScheme{}, Parallelism{}, cfg), ConfigError);
  cfg.gpu_memory_utilization = 0;
  EXPECT_THROW(plan_memory(m, g, KvScheme{}, Parallelism{}, cfg), ConfigError);
  cfg = ServingConfig{};
  cfg.max_model_len = -1;
  EXPECT_THROW(plan_memory(m, g, KvScheme{}, Parallelism{}, cfg), ConfigError);
  cfg = ServingConfig{};
  cfg.memory_in_use_bytes = g.usable_memory_bytes;  // must be less than the total
  EXPECT_THROW(plan_memory(m, g, KvScheme{}, Parallelism{}, cfg), ConfigError);
  cfg.memory_in_use_bytes = -1;
  EXPECT_THROW(plan_memory(m, g, KvScheme{}, Parallelism{}, cfg), ConfigError);
  EXPECT_THROW(parse_engine("vllmx"), ConfigError);
  EXPECT_THROW(parse_engine_version("latest"), ConfigError);
}

TEST(EngineMemory, ParseEngineVersion) {
  EngineVersion v = parse_engine_version("v0.6.4.post1");
  EXPECT_EQ(v.major, 0);
  EXPECT_EQ(v.minor, 6);
  EXPECT_TRUE(parse_engine_version("0.10").at_least(0, 9));
  EXPECT_FALSE(parse_engine_version("0.8").at_least(0, 9));
  EXPECT_EQ(parse_engine("sglang"), Engine::kSglang);
}

TEST_F(Llama8bOnH100, FitFixedDistribution) {
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, ServingConfig{});
  KvLayout layout = build_kv_layout(model, scheme, parallel);
  DistributionFit fit = fit_distribution(plan, layout, LengthDistribution::fixed(1000));
  EXPECT_DOUBLE_EQ(fit.mean_tokens, 1000.0);
  EXPECT_EQ(fit.p99_tokens, 1000);
  // ceil(1000/16) = 63 blocks * 16 * 131,072 = 132,120,576 B per request
  EXPECT_DOUBLE_EQ(fit.mean_request_bytes, 63.0 * 16 * 131072);
  EXPECT_EQ(fit.p99_request_bytes, int64_t{63} * 16 * 131072);
  EXPECT_EQ(fit.requests_at_mean, plan.kv_budget_bytes / (int64_t{63} * 16 * 131072));
  EXPECT_EQ(fit.requests_at_p99, plan.kv_budget_bytes / (int64_t{63} * 16 * 131072));
}

TEST_F(Llama8bOnH100, FitDistributionIsCappedAtMaxModelLen) {
  ServingConfig cfg;
  cfg.max_model_len = 512;
  MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
  KvLayout layout = build_kv_layout(model, scheme, parallel);
  DistributionFit fit = fit_distribution(plan, layout, LengthDistribution::fixed(1000));
  // capped to 512 tokens = 32 blocks * 2,097,152
  EXPECT_EQ(fit.p99_tokens, 512);
  EXPECT_EQ(fit.p99_request_bytes, int64_t{32} * 2097152);
}

}  // namespace
}  // namespace kvplan

namespace kvplan {
namespace {

// Issue 24: a memory answer for each new family on the GPUs people deploy it on.
struct Deployment {
  const char* model;
  const char* gpu;
  int tp;
  DType kv_dtype;
  int block;
  int64_t block_bytes;  // hand-computed: one block across every KV layer of one GPU
  int engine_block = 0;  // the block vLLM sets (hybrid attention + recurrent state); 0: `block`
};

TEST(Issue24Deployments, VllmMemoryAnswersOnTheirGpus) {
  const Deployment cases[] = {
      // 62 layers * 2 KV heads per GPU (8 / tp 4) * 2 * 128 * 2 B = 63,488 B/token; x16
      {"minimax-m2.5", "h200", 4, DType::kBF16, 16, int64_t{16} * 63488},
      // Hybrid: 15 full layers, 1 replicated KV head (2 < tp 8) * 2 * 256 * 2 B = 1,024 B/token per
      // layer; 45 Gated DeltaNet layers, state per layer per GPU (8 value heads, 2 key heads):
      // conv 3 * (2*2*128 + 8*128) * 2 B = 9,216 + 8 * 128 * 128 * 4 B = 524,288 -> 533,504 B.
      // vLLM: block 16 * cdiv(533,504, 16 * 1,024) = 528 tokens, page 528 * 1,024 = 540,672 B;
      // groups of 15 (counts 15 and 45): 1 + 3 groups = 60 layer pages per block.
      {"qwen3.5-397b-a17b", "h200", 8, DType::kBF16, 16, int64_t{60} * 540672, 528},
      // 61 layers * (656 fp8_ds_mla + 132 indexer) = 48,068 B/token, replicated; x64 (FlashMLA sparse)
      {"deepseek-v3.2", "h200", 8, DType::kFp8E4M3, 64, int64_t{64} * 48068},
      // 78 layers * 788 = 61,464 B/token; x64
      {"glm-5-fp8", "b200", 8, DType::kFp8E4M3, 64, int64_t{64} * 61464},
      // 61 layers * 1,152 B (bf16 latent, replicated); x16
      {"kimi-k2.5", "h200", 8, DType::kBF16, 16, int64_t{16} * 70272},
      // Qwen3-VL-8B on one H100: 36 layers * 2 * 8 KV heads * 128 * 2 B = 147,456 B/token; x16
      {"qwen3-vl-8b", "h100-sxm", 1, DType::kBF16, 16, int64_t{16} * 147456},
      // Qwen3-VL-30B-A3B on 2 x H100: 48 layers * 2 * (4 / tp 2) heads * 128 * 2 B = 49,152; x16
      {"qwen3-vl-30b-a3b", "h100-sxm", 2, DType::kBF16, 16, int64_t{16} * 49152},
      // the quantized checkpoints on the GPUs their vendors name: Qwen3.5-397B NVFP4 on 4 x B200
      //   (1,024 B/token per full layer as above; state per layer 3 * (2*4*128 + 16*128) * 2 B =
      //   18,432 + 16 * 128 * 128 * 4 B = 1,048,576 -> 1,067,008 B; head_dim 256 on B200 aligns the
      //   block to 32: 32 * cdiv(1,067,008, 32 * 1,024) = 1,056 tokens, page 1,081,344 B, 60 pages),
      //   DeepSeek-V3.2 NVFP4 on 4 x B200 (fp8 latent + indexer 48,068, x64)
      {"qwen3.5-397b-a17b-nvfp4", "b200", 4, DType::kBF16, 16, int64_t{60} * 1081344, 1056},
      {"deepseek-v3.2-nvfp4", "b200", 4, DType::kFp8E4M3, 64, int64_t{64} * 48068},
  };
  for (const Deployment& d : cases) {
    ModelConfig m = resolve_model(d.model);
    KvScheme s;
    s.kv_dtype = d.kv_dtype;
    s.tokens_per_block = d.block;
    Parallelism p{.tensor_parallel = d.tp};
    ServingConfig cfg;
    cfg.max_model_len = 32768;
    cfg.weights = WeightFormat{DType::kBF16, m.quantization};  // the checkpoint's quantization_config
    MemoryPlan plan = plan_memory(m, resolve_gpu(d.gpu), s, p, cfg);
    EXPECT_TRUE(plan.fits) << d.model;
    EXPECT_EQ(plan.block_bytes, d.block_bytes) << d.model;
    EXPECT_EQ(plan.num_blocks, plan.kv_budget_bytes / d.block_bytes) << d.model;
    const int engine_block = d.engine_block > 0 ? d.engine_block : d.block;
    EXPECT_EQ(plan.tokens_per_block, engine_block) << d.model;
    EXPECT_EQ(plan.kv_cache_tokens, plan.num_blocks * engine_block) << d.model;
    EXPECT_GE(plan.term("weights"), weight_bytes_per_gpu(m, cfg.weights, p)) << d.model;
    EXPECT_GT(plan.kv_cache_tokens, 32768) << d.model;  // at least one full request fits
  }
}

// vLLM V1 pages a hybrid model's recurrent state like attention (model_executor/models/config.py
// HybridAttentionMambaModelConfig): Qwen3.5-27B on one H100, bf16, 32,768-token requests.
// 16 full-attention layers, 4 KV heads * 2 * 256 * 2 B = 4,096 B per token per layer; 48 Gated
// DeltaNet layers of 3 * (2*16*128 + 48*128) * 2 B = 61,440 conv + 48 * 128 * 128 * 4 B = 3,145,728
// ssm = 3,207,168 B of state each. Block 16 * cdiv(3,207,168, 16 * 4,096) = 16 * 49 = 784 tokens;
// page 784 * 4,096 = 3,211,264 B (the state padded by 4,096 B); groups of 16: 1 attention + 3
// state groups, so a block of the pool costs 16 pages and the reported token count divides the
// pool by 4 groups; a 32,768-token request takes cdiv(32,768, 784) = 42 attention blocks + 3 state.
TEST(VllmHybridPages, RecurrentStateIsPagedLikeAttention) {
  const ModelConfig m = resolve_model("qwen3.5-27b");
  ServingConfig cfg;
  cfg.max_model_len = 32768;
  const MemoryPlan plan = plan_memory(m, resolve_gpu("h100-sxm"), KvScheme{}, {}, cfg);
  constexpr int64_t kPage = 3211264;
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.tokens_per_block, 784);
  EXPECT_EQ(plan.kv_scheme.state_page_bytes, kPage);
  EXPECT_EQ(plan.block_bytes, 64 * kPage);
  const int64_t pool_blocks = plan.kv_budget_bytes / (16 * kPage);
  EXPECT_EQ(plan.kv_cache_tokens, pool_blocks / 4 * 784);  // "GPU KV cache size"
  EXPECT_DOUBLE_EQ(plan.max_concurrency, static_cast<double>(pool_blocks) / (42 + 3));
  EXPECT_EQ(plan.request_bytes_at_max_len, 42 * 784 * int64_t{4096} * 16 + 48 * kPage);
  EXPECT_EQ(plan.requests_at_max_len, plan.kv_budget_bytes / plan.request_bytes_at_max_len);
  // The layout the answer and the simulator page with holds the padded state.
  const KvLayout layout = build_kv_layout(m, plan.kv_scheme, {});
  EXPECT_EQ(layout.state_bytes_per_request(), 48 * kPage);
}

// vllm-project/vllm#40691 (vLLM 0.19.0, Qwen3.5-27B on one H20, max_model_len 32,768) prints
// "GPU KV cache size: 290,864 tokens" and "Maximum concurrency for 32,768 tokens per request:
// 33.04x". Its KV memory is not printed, but both figures follow from one pool size under the
// page rule: 290,864 = 371 x 784 (the 784-token block), so the pool holds 4 x 371 .. 4 x 371 + 3
// blocks, and 1,487 / (42 + 3) = 33.04 (1,484 .. 1,486 give 32.98 .. 33.02).
TEST(VllmHybridPages, ReproducesThePublishedQwen35Log) {
  const ModelConfig m = resolve_model("qwen3.5-27b");
  KvScheme s;
  s.tokens_per_block = 784;
  s.state_page_bytes = 784 * 4096;
  const KvLayout layout = build_kv_layout(m, s, {});
  const VllmKvGroups groups = vllm_v1_kv_groups(layout);
  ASSERT_EQ(groups.num_groups(), 4);
  EXPECT_EQ(groups.group_size, 16);
  const int64_t pool = 1487;
  EXPECT_EQ(pool / groups.num_groups() * 784, 290864);
  EXPECT_EQ(fmt::format("{:.2f}", vllm_v1_hybrid_max_concurrency(groups, pool, 784, 32768, 8192)), "33.04");
  const VllmHybridPages pages = vllm_v1_hybrid_pages(build_kv_layout(m, KvScheme{}, {}), false, 16);
  EXPECT_EQ(pages.block_tokens, 784);
  EXPECT_EQ(pages.state_bytes, 3207168);
}

// Two public vLLM start-up logs print the rule's two lines, both at TP 1 with the KV cache in the
// model's 16-bit dtype: vLLM 0.19.1 serving Qwen3.5-27B (a W4A16 checkpoint; the KV and state
// shapes are the model's) prints "Setting attention block size to 784 tokens" and "Padding mamba
// page size by 0.13%"; vLLM 0.18.1rc1 serving Qwen3.5-35B-A3B (AWQ, fp16; ROCm/ROCm#6055) prints
// 1056 and 0.76%. Qwen3.5-35B-A3B: 2 KV heads x 2 x 256 x 2 B = 2,048 B per token per layer; state
// 3 x (2*16*128 + 32*128) * 2 B = 49,152 + 32 x 128 x 128 x 4 B = 2,097,152 -> 2,146,304 B;
// 16 * cdiv(2,146,304, 16 * 2,048) = 1,056 tokens, page 2,162,688 B, padding 0.76%.
TEST(VllmHybridPages, ReproducesThePublishedStartUpLines) {
  struct Case {
    const char* model;
    int block;
    const char* padding;
  };
  for (const Case& c : {Case{"qwen3.5-27b", 784, "0.13"}, Case{"qwen3.5-35b-a3b", 1056, "0.76"}}) {
    const VllmHybridPages pages = vllm_v1_hybrid_pages(build_kv_layout(resolve_model(c.model), KvScheme{}, {}), false, 16);
    EXPECT_EQ(pages.block_tokens, c.block) << c.model;
    const double padding = 100.0 * static_cast<double>(pages.page_bytes - pages.state_bytes) / static_cast<double>(pages.state_bytes);
    EXPECT_EQ(fmt::format("{:.2f}", padding), c.padding) << c.model;
  }
}

TEST(VllmHybridPages, OnlyVllmV1RaisesTheBlockAndALargerUserBlockStays) {
  const ModelConfig m = resolve_model("qwen3.5-27b");
  const GpuSpec gpu = resolve_gpu("h100-sxm");
  ServingConfig cfg;
  cfg.max_model_len = 32768;
  KvScheme big;
  big.tokens_per_block = 1024;  // already holds the state: vLLM keeps the user's block
  const MemoryPlan kept = plan_memory(m, gpu, big, {}, cfg);
  EXPECT_EQ(kept.tokens_per_block, 1024);
  EXPECT_EQ(kept.kv_scheme.state_page_bytes, 1024 * 4096);
  ServingConfig sglang = cfg;
  sglang.engine = Engine::kSglang;
  EXPECT_EQ(plan_memory(m, gpu, KvScheme{}, {}, sglang).kv_scheme.state_page_bytes, 0);
  ServingConfig old = cfg;
  old.version = EngineVersion{0, 9, 2};
  const MemoryPlan before = plan_memory(m, gpu, KvScheme{}, {}, old);
  EXPECT_EQ(before.tokens_per_block, 16);
  EXPECT_EQ(before.kv_scheme.state_page_bytes, 0);
  // A model without recurrent layers keeps its block.
  EXPECT_EQ(plan_memory(resolve_model("llama-3.1-8b"), gpu, KvScheme{}, {}, cfg).tokens_per_block, 16);
}

// From vLLM 0.21 the worker captures the CUDA graphs once before sizing the cache and subtracts
// its estimate (gpu_worker.py; every 0.21-0.27 log prints "CUDA graph memory profiling is enabled
// (default since v0.21.0)" and "--gpu-memory-utilization=g is equivalent to g - estimate / total").
// 0.19 and 0.21 share every other rule, so their budgets differ by exactly the graph term.
TEST(VllmCudaGraphs, From021TheEstimateComesOutOfTheKvBudget) {
  const ModelConfig m = resolve_model("llama-3.1-8b");
  const GpuSpec gpu = resolve_gpu("h100-sxm");
  ServingConfig before;
  before.version = EngineVersion{0, 19, 0};
  ServingConfig after = before;
  after.version = EngineVersion{0, 21, 0};
  const MemoryPlan a = plan_memory(m, gpu, KvScheme{}, {}, before);
  const MemoryPlan b = plan_memory(m, gpu, KvScheme{}, {}, after);
  ASSERT_NE(find_term(a, "cuda_graphs"), nullptr);
  ASSERT_NE(find_term(b, "cuda_graphs"), nullptr);
  EXPECT_FALSE(find_term(a, "cuda_graphs")->subtracted);
  EXPECT_TRUE(find_term(b, "cuda_graphs")->subtracted);
  EXPECT_GT(b.term("cuda_graphs"), 0);
  EXPECT_EQ(a.kv_budget_bytes - b.kv_budget_bytes, b.term("cuda_graphs"));
  // --enforce-eager captures nothing.
  ServingConfig eager = after;
  eager.enforce_eager = true;
  EXPECT_EQ(plan_memory(m, gpu, KvScheme{}, {}, eager).kv_budget_bytes, a.kv_budget_bytes);
}

// The graphs counted are the ones the logs list: 128 sequences and 2,048 batched tokens give
// "PIECEWISE=35 (largest=256), FULL=19 (largest=128)" (data/vllm_logs/97, vLLM 0.22); 20 sequences
// "PIECEWISE=8 (largest=40), FULL=5 (largest=16)" (a vLLM 0.23 Gemma-4 log); 1,024 sequences and
// 8,192 tokens 51 + 51 (largest 512).
TEST(VllmCudaGraphs, From021PiecewiseGraphsGoToTwiceTheSequences) {
  const ModelConfig m = resolve_model("qwen2.5-7b");
  const GpuSpec gpu = resolve_gpu("l40s");
  for (const auto& [seqs, tokens, graphs] : {std::tuple{128, 2048, 54}, std::tuple{20, 2048, 13}, std::tuple{1024, 8192, 102}}) {
    ServingConfig c;
    c.version = EngineVersion{0, 22, 0};
    c.max_model_len = 4096;
    c.max_num_seqs = seqs;
    c.max_num_batched_tokens = tokens;
    const MemoryPlan plan = plan_memory(m, gpu, KvScheme{}, {}, c);
    const MemoryTerm* t = find_term(plan, "cuda_graphs");
    ASSERT_NE(t, nullptr);
    EXPECT_NE(t->how.find(fmt::format("({} graphs,", graphs)), std::string::npos) << seqs << ": " << t->how;
  }
}

TEST(Issue24Deployments, SglangDsaPoolCountsTheIndexer) {
  ModelConfig m = resolve_model("deepseek-v3.2");
  KvScheme s;
  s.kv_dtype = DType::kFp8E4M3;
  ServingConfig cfg;
  cfg.engine = Engine::kSglang;
  cfg.max_model_len = 32768;
  cfg.weights = WeightFormat{DType::kBF16, m.quantization};
  MemoryPlan plan = plan_memory(m, resolve_gpu("h200"), s, Parallelism{.tensor_parallel = 8}, cfg);
  EXPECT_TRUE(plan.fits);
  // NSATokenToKVPool: 656 B of latent + 132 B of indexer key per token per layer, 61 layers
  EXPECT_EQ(plan.block_bytes, 48068);
  EXPECT_EQ(plan.kv_cache_tokens, plan.kv_budget_bytes / 48068);
}

}  // namespace
}  // namespace kvplan
