// vLLM's profiling rules by release (vllm_profile.h): derived length, batch defaults, chunked
// prefill, activation peak, non-torch memory, hybrid-allocator padding. Hand-computed values.
#include <gtest/gtest.h>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/vllm_profile.h"

namespace kvplan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

ServingConfig vllm(const char* version) {
  ServingConfig c;
  c.version = parse_engine_version(version);
  return c;
}

TEST(VllmDefaultMaxModelLen, MultipliesByTheRopeFactorExceptLlama3AndGemma3) {
  // deepseek-coder-6.7b: 16,384 positions, linear x4 -> vLLM's default max_model_len 65,536
  nlohmann::json coder{{"model_type", "llama"},       {"hidden_size", 4096},          {"intermediate_size", 11008},
                       {"num_attention_heads", 32},   {"num_key_value_heads", 32},    {"num_hidden_layers", 32},
                       {"vocab_size", 32256},         {"max_position_embeddings", 16384},
                       {"rope_scaling", {{"type", "linear"}, {"factor", 4.0}}}};
  EXPECT_EQ(vllm_default_max_model_len(parse_model_config(coder, "coder")), 65536);
  // llama3 rope type: not multiplied
  EXPECT_EQ(vllm_default_max_model_len(resolve_model("llama-3.1-8b")), 131072);
  // yarn: original_max_position_embeddings 4,096 x 40 = 163,840
  EXPECT_EQ(vllm_default_max_model_len(resolve_model("deepseek-v3")), 163840);
  // no rope_scaling: max_position_embeddings
  EXPECT_EQ(vllm_default_max_model_len(resolve_model("llama-2-7b")), 4096);
  // Gemma-3's length is already scaled
  nlohmann::json g3 = coder;
  g3["model_type"] = "gemma3_text";
  g3["sliding_window"] = 1024;
  g3["head_dim"] = 128;
  g3["max_position_embeddings"] = 131072;
  g3["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  EXPECT_EQ(vllm_default_max_model_len(parse_model_config(g3, "g3")), 131072);
}

TEST(VllmProfile, V1BatchDefaultsExcludeA100FromTheLargeGpuDefaults) {
  ModelConfig m = resolve_model("qwen2-7b");
  VllmProfile h100 = vllm_profile(m, resolve_gpu("h100-sxm"), Parallelism{}, vllm("0.10.1"), 16384, true);
  EXPECT_EQ(h100.batched_tokens, 8192);
  EXPECT_EQ(h100.max_num_seqs, 1024);
  // A100 80GB has >= 70 GiB but is excluded: 2048 / 256 (logs 77-82 print 2048)
  VllmProfile a100 = vllm_profile(m, resolve_gpu("a100-80gb"), Parallelism{}, vllm("0.10.1"), 16384, true);
  EXPECT_EQ(a100.batched_tokens, 2048);
  EXPECT_EQ(a100.max_num_seqs, 256);
  VllmProfile old = vllm_profile(m, resolve_gpu("h100-sxm"), Parallelism{}, vllm("0.8"), 16384, true);
  EXPECT_EQ(old.batched_tokens, 8192);
  EXPECT_EQ(old.max_num_seqs, 256);
}

TEST(VllmProfile, V0ChunkedPrefillFollowsLengthWindowAndSetting) {
  ModelConfig llama = resolve_model("llama-3.1-8b");
  GpuSpec gpu = resolve_gpu("h100-sxm");
  // > 32K, no sliding window: on; 512 tokens before 0.7, 2048 from 0.7
  VllmProfile p063 = vllm_profile(llama, gpu, Parallelism{}, vllm("0.6.3"), 131072, true);
  EXPECT_TRUE(p063.chunked_prefill);
  EXPECT_EQ(p063.batched_tokens, 512);
  EXPECT_EQ(p063.max_num_seqs, 256);
  EXPECT_EQ(vllm_profile(llama, gpu, Parallelism{}, vllm("0.7.1"), 131072, true).batched_tokens, 2048);
  // switched off (the "long context length" warning): one prompt of max_model_len
  ServingConfig off = vllm("0.6.3");
  off.chunked_prefill = ChunkedPrefill::kOff;
  VllmProfile p_off = vllm_profile(llama, gpu, Parallelism{}, off, 131072, true);
  EXPECT_FALSE(p_off.chunked_prefill);
  EXPECT_EQ(p_off.batched_tokens, 131072);
  // <= 32K: off, max(max_model_len, 2048)
  EXPECT_EQ(vllm_profile(llama, gpu, Parallelism{}, vllm("0.6.3"), 20000, true).batched_tokens, 20000);
  EXPECT_EQ(vllm_profile(llama, gpu, Parallelism{}, vllm("0.6.3"), 1024, true).batched_tokens, 2048);
  // sliding-window model: off even above 32K
  VllmProfile gemma = vllm_profile(resolve_model("gemma-2-9b"), gpu, Parallelism{}, vllm("0.6.3"), 65536, true);
  EXPECT_FALSE(gemma.chunked_prefill);
  EXPECT_NE(gemma.chunked_prefill_why.find("sliding"), std::string::npos) << gemma.chunked_prefill_why;
  EXPECT_EQ(gemma.batched_tokens, 65536);
  // before 0.5 there was no automatic switch
  EXPECT_FALSE(vllm_profile(llama, gpu, Parallelism{}, vllm("0.4.2"), 131072, true).chunked_prefill);
}

TEST(VllmProfile, V0ActivationIsTheLargerOfForwardAndSampler) {
  ModelConfig m = resolve_model("llama-3.1-8b");  // hidden 4,096, widest 3 x 14,336 = 43,008, vocab 128,256
  GpuSpec gpu = resolve_gpu("rtx-3090");
  VllmProfile p = vllm_profile(m, gpu, Parallelism{}, vllm("0.6.4"), 20000, true);
  // forward: 20,000 tokens x 2 B x (3 x 4,096 + 43,008) = 2,211,840,000 (log 01 prints 17.06 - 14.99
  // = 2.07 GiB = 2.22e9)
  EXPECT_EQ(p.hidden_copies, 3);
  EXPECT_EQ(p.forward_bytes, 2211840000);
  // sampler: 256 x 128,256 x 32 B = 1,050,673,152 + output 20,000 x 2 x 4,096 = 163,840,000
  EXPECT_EQ(p.sampler_bytes, 1214513152);
  EXPECT_EQ(p.activation_bytes, 2211840000);
  // a rank that does not sample
  EXPECT_EQ(vllm_profile(m, gpu, Parallelism{}, vllm("0.6.4"), 20000, false).sampler_bytes, 0);
  // TP2 on NVIDIA: the custom all-reduce writes a new [T, hidden] tensor: 4 copies, widest 21,504
  Parallelism tp2{.tensor_parallel = 2};
  VllmProfile nv = vllm_profile(m, gpu, tp2, vllm("0.6.4"), 20000, false);
  EXPECT_EQ(nv.hidden_copies, 4);
  EXPECT_EQ(nv.forward_bytes, int64_t{20000} * 2 * (4 * 4096 + 21504));
  // ROCm reduces in place (custom all-reduce disabled on AMD): 3 copies
  ServingConfig rocm = vllm("0.6.4");
  rocm.rocm = true;
  EXPECT_EQ(vllm_profile(m, gpu, tp2, rocm, 20000, false).forward_bytes, int64_t{20000} * 2 * (3 * 4096 + 21504));
  // a small pass: the sampler dominates
  VllmProfile small = vllm_profile(m, gpu, Parallelism{}, vllm("0.6.4"), 2048, true);
  EXPECT_EQ(small.activation_bytes, small.sampler_bytes);
  EXPECT_EQ(small.sampler_bytes, int64_t{256} * 128256 * 32 + int64_t{2048} * 2 * 4096);
}

TEST(VllmProfile, V1SamplerIsFourteenPointSevenBytesPerLogit) {
  // gemma-2-2b: vocabulary 256,000, 1,024 rows on an H100: 262,144,000 x 147 / 10 = 3,853,516,800
  // plus the output 8,192 x 2 x 2,304 = 37,748,736 (log 23 prints 3.62 GiB = 3.89e9)
  nlohmann::json g2{{"model_type", "gemma2"},     {"hidden_size", 2304},        {"intermediate_size", 9216},
                    {"num_attention_heads", 8},   {"num_key_value_heads", 4},   {"head_dim", 256},
                    {"num_hidden_layers", 26},    {"vocab_size", 256000},       {"max_position_embeddings", 8192},
                    {"sliding_window", 4096}};
  ModelConfig m = parse_model_config(g2, "gemma-2-2b");
  VllmProfile p = vllm_profile(m, resolve_gpu("h100-sxm"), Parallelism{}, vllm("0.19"), 8192, true);
  EXPECT_EQ(p.sampler_bytes, 3853516800 + 37748736);
  EXPECT_EQ(p.hidden_copies, 4);
  EXPECT_EQ(p.activation_bytes, p.sampler_bytes);
}

TEST(VllmProfile, NonTorchMemoryByRelease) {
  ModelConfig m = resolve_model("llama-2-7b");
  GpuSpec a100 = resolve_gpu("a100-80gb");
  Parallelism tp1;
  Parallelism tp8{.tensor_parallel = 8};
  // <= 0.2.4 profiles max_memory_allocated: nothing outside PyTorch
  EXPECT_EQ(vllm_profile(m, a100, tp1, vllm("0.2.4"), 4096, true).non_torch_bytes, 0);
  // 0.2.5-0.3 profiles total - free: CUDA context 512 MiB + 320 MiB
  EXPECT_EQ(vllm_profile(m, a100, tp1, vllm("0.2.5"), 4096, true).non_torch_bytes, 832 * kMiB);
  EXPECT_EQ(vllm_profile(m, a100, tp1, vllm("0.6.3"), 4096, true).non_torch_bytes, 320 * kMiB);
  EXPECT_EQ(vllm_profile(m, a100, tp1, vllm("0.10.1"), 4096, true).non_torch_bytes, 96 * kMiB);
  EXPECT_EQ(vllm_profile(m, a100, Parallelism{.tensor_parallel = 2}, vllm("0.19"), 4096, true).non_torch_bytes,
            2150 * kMiB);
  // ROCm V0: 1.9 GiB at TP1 (log 85), 5.2 GiB at TP > 1 (log 86)
  ServingConfig rocm = vllm("0.6.3");
  rocm.rocm = true;
  GpuSpec mi300x = resolve_gpu("mi300x");
  EXPECT_EQ(vllm_profile(m, mi300x, tp1, rocm, 4096, true).non_torch_bytes, 1946 * kMiB);
  EXPECT_EQ(vllm_profile(m, mi300x, tp8, rocm, 4096, true).non_torch_bytes, 5325 * kMiB);
}

TEST(VllmHybridAllocator, PadsLayerGroupsToTheSmallestTypesCount) {
  // Gemma-3-27B: 62 layers, every 6th global: 10 full + 52 sliding. Groups of 10: the sliding
  // layers need 6 groups = 60 slots, 8 of them padding ("Add 8 padding layers", log 26): 70 pages.
  ModelConfig g3 = resolve_model("gemma-3-27b");
  KvLayout layout = build_kv_layout(g3, KvScheme{}, Parallelism{}, 0);
  EXPECT_EQ(layout.num_kv_layers(), 62);
  EXPECT_EQ(vllm_v1_padded_kv_layers(layout), 70);
  // Gemma-2-9B: 21 + 21, no padding
  EXPECT_EQ(vllm_v1_padded_kv_layers(build_kv_layout(resolve_model("gemma-2-9b"), KvScheme{}, Parallelism{}, 0)), 42);
  // Llama-4-Scout: 36 chunked + 12 full, groups of 12, no padding
  EXPECT_EQ(vllm_v1_padded_kv_layers(build_kv_layout(resolve_model("llama-4-scout"), KvScheme{}, Parallelism{}, 0)),
            48);
  // one attention type: the rule does not apply
  EXPECT_EQ(vllm_v1_padded_kv_layers(build_kv_layout(resolve_model("llama-3.1-8b"), KvScheme{}, Parallelism{}, 0)), 0);

  // In the plan (vLLM 0.19): a block costs 70 pages of 16 tokens x 2 x 16 heads x 128 x 2 B = 131,072 B
  ServingConfig c = vllm("0.19");
  c.max_model_len = 8192;
  MemoryPlan plan = plan_memory(g3, resolve_gpu("h100-sxm"), KvScheme{}, Parallelism{}, c);
  EXPECT_EQ(plan.block_bytes, int64_t{70} * 131072);
  bool noted = false;
  for (const std::string& n : plan.notes) noted = noted || n.find("Add 8 padding layers") != std::string::npos;
  EXPECT_TRUE(noted);
  // before the hybrid allocator (0.9): 62 pages
  ServingConfig c09 = vllm("0.9");
  c09.max_model_len = 8192;
  EXPECT_EQ(plan_memory(g3, resolve_gpu("h100-sxm"), KvScheme{}, Parallelism{}, c09).block_bytes,
            int64_t{62} * 131072);
}

// vLLM's printed maximum concurrency for hybrid layouts (get_max_concurrency_for_kv_cache_config).
TEST(VllmHybridAllocator, MaximumConcurrencyCountsEachGroupsBlocksPerRequest) {
  // Gemma-3-4B: 34 layers, global every 6th -> 5 full + 29 sliding (window 1024); groups of 5:
  // 1 full group + ceil(29 / 5) = 6 sliding groups (one padding layer).
  const VllmKvGroups g = vllm_v1_kv_groups(build_kv_layout(resolve_model("gemma-3-4b"), KvScheme{}, Parallelism{}, 0));
  ASSERT_EQ(g.types.size(), 2u);
  EXPECT_EQ(g.group_size, 5);
  EXPECT_EQ(g.num_groups(), 7);
  // Log 27 (vLLM 0.19.0, H100, max_model_len 8192, 8192 batched tokens): 204,817 blocks of 16 tokens.
  //   full group: 8192 / 16 = 512 blocks; each sliding group: min(1023 + 8192, 8192) / 16 + 1 = 513
  //   -> 512 + 6 * 513 = 3,590 blocks per request; 204,817 / 3,590 = 57.0521 (printed "57.05x")
  EXPECT_NEAR(vllm_v1_hybrid_max_concurrency(g, 204817, 16, 8192, 8192), 204817.0 / 3590, 1e-12);
  // The old tokens line "GPU KV cache size: 468,144" is 204,817 // 7 groups * 16, not 57.05 x 8192.
  EXPECT_EQ(204817 / g.num_groups() * 16, 468144);
  // gpt-oss-120b (log 81: 0.10.1.1, 16,384 tokens, A100 2048 batched): 18 full + 18 sliding (128),
  //   groups of 18: full 16384 / 16 = 1024 blocks; sliding min(127 + 2048, 16384) = 2175 -> 136 + 1
  //   = 137; a request takes 1,161 blocks, far fewer than 2 x 1024.
  const VllmKvGroups oss =
      vllm_v1_kv_groups(build_kv_layout(resolve_model("gpt-oss-120b"), KvScheme{}, Parallelism{}, 0));
  EXPECT_EQ(oss.group_size, 18);
  EXPECT_EQ(oss.num_groups(), 2);
  EXPECT_DOUBLE_EQ(vllm_v1_hybrid_max_concurrency(oss, 1161, 16, 16384, 2048), 1.0);
  // Llama-4's chunked local attention keeps the plain rule (0: not handled here).
  const VllmKvGroups scout =
      vllm_v1_kv_groups(build_kv_layout(resolve_model("llama-4-scout"), KvScheme{}, Parallelism{}, 0));
  EXPECT_EQ(vllm_v1_hybrid_max_concurrency(scout, 1000, 16, 8192, 8192), 0.0);
  // In the plan the printed figure follows: the pool's blocks over 3,590, within 0.1% of kvplan's
  // own blocks x groups / 3,590 (its blocks cost 35 pages, vLLM's 5).
  ServingConfig c = vllm("0.19");
  c.max_model_len = 8192;
  const MemoryPlan plan = plan_memory(resolve_model("gemma-3-4b"), resolve_gpu("h100-sxm"), KvScheme{}, Parallelism{}, c);
  EXPECT_EQ(plan.max_num_batched_tokens, 8192);
  EXPECT_NEAR(plan.max_concurrency, static_cast<double>(plan.num_blocks) * 7 / 3590, 7.0 / 3590);
}

TEST(ChunkedPrefill, ParsesItsNames) {
  EXPECT_EQ(parse_chunked_prefill("auto"), ChunkedPrefill::kAuto);
  EXPECT_EQ(parse_chunked_prefill("on"), ChunkedPrefill::kOn);
  EXPECT_EQ(parse_chunked_prefill("off"), ChunkedPrefill::kOff);
  EXPECT_EQ(chunked_prefill_name(ChunkedPrefill::kOff), "off");
  EXPECT_THROW(parse_chunked_prefill("maybe"), ConfigError);
}

}  // namespace
}  // namespace kvplan
