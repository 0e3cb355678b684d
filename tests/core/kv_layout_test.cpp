// KV bytes per token and per request, per layer group and per GPU (kv_layout.h).
// Every expectation is hand-computed; the arithmetic is in the comment beside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/presets.h"

namespace kvplan {
namespace {

const KvLayerGroup* find_group(const KvLayout& layout, LayerKind kind) {
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.kind == kind) return &g;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// bf16 bytes per token, whole model, one copy.

TEST(KvBytesPerToken, Bf16Llama2_7b) {
  // 32 layers * 2 (K,V) * 32 KV heads * 128 dim * 2 B = 524,288
  EXPECT_EQ(kv_bytes_per_token(resolve_model("llama-2-7b"), KvScheme{}), 524288.0);
}

TEST(KvBytesPerToken, Bf16Llama2_70b) {
  // 80 layers * 2 * 8 KV heads * 128 * 2 B = 327,680
  EXPECT_EQ(kv_bytes_per_token(resolve_model("llama-2-70b"), KvScheme{}), 327680.0);
}

TEST(KvBytesPerToken, Bf16Llama31_8b) {
  // 32 layers * 2 * 8 * 128 * 2 B = 131,072
  EXPECT_EQ(kv_bytes_per_token(resolve_model("llama-3.1-8b"), KvScheme{}), 131072.0);
}

TEST(KvBytesPerToken, Bf16DeepseekV3MlaLatent) {
  // one latent of kv_lora_rank 512 + rope 64 per layer: (512 + 64) * 2 B * 61 layers = 70,272
  EXPECT_EQ(kv_bytes_per_token(resolve_model("deepseek-v3"), KvScheme{}), 70272.0);
}

TEST(KvBytesPerToken, Bf16Gemma2_9bCountsSlidingLayersPerToken) {
  // 42 layers * (2 * 8 KV heads * 256 dim * 2 B = 8,192) = 344,064
  EXPECT_EQ(kv_bytes_per_token(resolve_model("gemma-2-9b"), KvScheme{}), 344064.0);
}

TEST(KvBytesPerToken, Bf16Qwen3NextOnlyFullAttentionLayers) {
  // 12 full-attention layers (every 4th of 48) * 2 * 2 KV heads * 256 * 2 B = 24,576;
  // the 36 linear-attention layers hold state only.
  EXPECT_EQ(kv_bytes_per_token(resolve_model("qwen3-next-80b-a3b"), KvScheme{}), 24576.0);
}

// ---------------------------------------------------------------------------------------------
// Families added for issue 24: a worked KV-bytes-per-token example for each.

TEST(KvBytesPerToken, MiniMaxM25FullAttentionEveryLayer) {
  ModelConfig m = resolve_model("minimax-m2.5");
  // 62 layers * 2 * 8 KV heads * 128 * 2 B = 253,952
  EXPECT_EQ(kv_bytes_per_token(m, KvScheme{}), 253952.0);
  // tp 4: 2 KV heads per GPU: 62 * 2 * 2 * 128 * 2 B = 63,488
  EXPECT_EQ(build_kv_layout(m, KvScheme{}, Parallelism{.tensor_parallel = 4}).bytes_per_token(), 63488.0);
}

TEST(KvBytesPerToken, Qwen35_397bFullLayersAndDeltaNetState) {
  ModelConfig m = resolve_model("qwen3.5-397b-a17b");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  // 15 full-attention layers (every 4th of 60) * 2 * 2 KV heads * 256 * 2 B = 30,720
  EXPECT_EQ(layout.bytes_per_token(), 30720.0);
  const KvLayerGroup* lin = find_group(layout, LayerKind::kLinearAttention);
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->num_layers, 45);
  // conv (4 - 1) * (2 * 16 * 128 + 64 * 128) * 2 B = 73,728; state 64 heads * 128 * 128 * 4 B (fp32)
  //   = 4,194,304 -> 4,268,032 per layer per request
  EXPECT_EQ(lin->state_bytes_per_request, 4268032);
  EXPECT_EQ(layout.request_bytes(1000), int64_t{45} * 4268032 + int64_t{1000} * 30720);
}

TEST(KvBytesPerToken, DeepseekV32LatentPlusIndexerKey) {
  ModelConfig m = resolve_model("deepseek-v3.2");
  // bf16: latent (512 + 64) * 2 B = 1,152 + indexer key 128 fp8 + one fp32 scale = 132 -> 1,284;
  //   61 layers -> 78,324
  KvLayout bf16 = build_kv_layout(m, KvScheme{}, Parallelism{});
  EXPECT_EQ(bf16.bytes_per_token(), 78324.0);
  ASSERT_EQ(bf16.groups().size(), 1u);
  EXPECT_EQ(bf16.groups()[0].indexer_bytes_per_token, 132);
  EXPECT_EQ(bf16.groups()[0].name, "mla+dsa_indexer");
  // fp8 (vLLM fp8_ds_mla, SGLang NSA): 512 fp8 + 4 fp32 scales (16 B) + 64 bf16 RoPE (128 B) = 656,
  //   + 132 -> 788; no per-tensor scale; 61 layers -> 48,068
  KvScheme fp8;
  fp8.kv_dtype = DType::kFp8E4M3;
  KvLayout f = build_kv_layout(m, fp8, Parallelism{});
  EXPECT_EQ(f.bytes_per_token(), 48068.0);
  EXPECT_EQ(f.fixed_bytes(), 0);
  // the latent and the indexer are replicated on every TP rank
  EXPECT_EQ(build_kv_layout(m, fp8, Parallelism{.tensor_parallel = 8}).bytes_per_token(), 48068.0);
  // a 64-token block (vLLM's FlashMLA-sparse block) across the 61 layers: 64 * 48,068 = 3,076,352
  fp8.tokens_per_block = 64;
  EXPECT_EQ(build_kv_layout(m, fp8, Parallelism{}).engine_block_bytes(), 3076352);
}

TEST(KvBytesPerToken, Glm5LatentPlusIndexerKey) {
  ModelConfig m = resolve_model("glm-5");
  // 78 layers * (1,152 + 132) = 100,152 in bf16; 78 * (656 + 132) = 61,464 in fp8
  EXPECT_EQ(kv_bytes_per_token(m, KvScheme{}), 100152.0);
  KvScheme fp8;
  fp8.kv_dtype = DType::kFp8E4M3;
  EXPECT_EQ(kv_bytes_per_token(m, fp8), 61464.0);
}

TEST(KvBytesPerToken, DsaRefusesCacheSchemesNoEngineAllocates) {
  KvScheme int4;
  int4.kv_dtype = DType::kInt4;
  EXPECT_THROW(build_kv_layout(resolve_model("deepseek-v3.2"), int4, Parallelism{}), ConfigError);
}

TEST(KvBytesPerToken, KimiK25IsTheDeepseekV3Latent) {
  // 61 layers * (512 + 64) * 2 B = 70,272 (the vision encoder holds no cache)
  EXPECT_EQ(kv_bytes_per_token(resolve_model("kimi-k2.5"), KvScheme{}), 70272.0);
}

// ---------------------------------------------------------------------------------------------
// Quantized KV.

TEST(KvBytesPerToken, Fp8PerTensorScales) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.kv_dtype = DType::kFp8E4M3;
  // 32 * 2 * 8 * 128 * 1 B = 65,536
  EXPECT_EQ(kv_bytes_per_token(m, s), 65536.0);
  KvLayout layout = build_kv_layout(m, s, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 1u);
  // two fp32 per-tensor scales (K and V) per layer = 8 B
  EXPECT_EQ(layout.groups()[0].fixed_bytes, 8);
  // 32 layers * 8 B = 256
  EXPECT_EQ(layout.fixed_bytes(), 256);
  // fixed scales do not grow with tokens: 100 tokens * 65,536
  EXPECT_EQ(layout.request_bytes(100), 100 * 65536);
}

TEST(KvBytesPerToken, Fp8PerHeadScales) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.kv_dtype = DType::kFp8E4M3;
  s.fp8_scales = Fp8Scales::kPerHead;
  KvLayout layout = build_kv_layout(m, s, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 1u);
  // 2 (K,V) * 8 heads * 4 B = 64 per layer
  EXPECT_EQ(layout.groups()[0].fixed_bytes, 64);
  // 32 * 64 = 2,048
  EXPECT_EQ(layout.fixed_bytes(), 2048);
  EXPECT_EQ(layout.bytes_per_token(), 65536.0);
}

TEST(KvBytesPerToken, Int8Group64Asymmetric) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.kv_dtype = DType::kInt8;
  s.quant_group_size = 64;
  s.quant_asymmetric = true;
  KvLayout layout = build_kv_layout(m, s, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 1u);
  // per head vector: 128 B data + 2 groups * (2 B scale + 2 B zero) = 136;
  // per layer: 8 heads * 2 (K,V) * 136 = 2,176
  EXPECT_EQ(layout.groups()[0].bytes_per_token, 2176.0);
  // 32 * 2,176 = 69,632
  EXPECT_EQ(kv_bytes_per_token(m, s), 69632.0);
  // 1000 tokens: 1000 * 69,632
  EXPECT_EQ(kv_bytes_per_request(m, s, 1000), int64_t{1000} * 69632);
  EXPECT_EQ(layout.fixed_bytes(), 0);
}

TEST(KvBytesPerToken, Int4Group32Symmetric) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.kv_dtype = DType::kInt4;
  s.quant_group_size = 32;
  s.quant_asymmetric = false;
  KvLayout layout = build_kv_layout(m, s, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 1u);
  // per head vector: 128 * 4 bit = 64 B + 4 groups * 2 B scale = 72; per layer 8 * 2 * 72 = 1,152
  EXPECT_EQ(layout.groups()[0].bytes_per_token, 1152.0);
  // 32 * 1,152 = 36,864
  EXPECT_EQ(kv_bytes_per_token(m, s), 36864.0);
}

TEST(KvBytesPerToken, QuantGroupThatDoesNotDivideHeadDimIsRejected) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.kv_dtype = DType::kInt8;
  s.quant_group_size = 48;  // 128 % 48 != 0
  EXPECT_THROW(build_kv_layout(m, s, Parallelism{}), ConfigError);
}

KvScheme kivi_scheme() {
  KvScheme s;
  s.kv_dtype = DType::kInt2;
  s.quant_group_size = 32;
  s.kivi_residual_tokens = 128;
  return s;
}

TEST(KiviLayout, SteadyStateBytesPerToken) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvLayout layout = build_kv_layout(m, kivi_scheme(), Parallelism{});
  ASSERT_EQ(layout.groups().size(), 1u);
  const KvLayerGroup& g = layout.groups()[0];
  // quantized token per layer: 8 heads * (K 128*2 bit = 32 B + V 32 B + V meta 4 groups * 4 B) = 640;
  // key metadata per 32-token group: 8 heads * 128 channels * (2 B scale + 2 B zero) = 4,096;
  // steady state: 640 + 4,096 / 32 = 768 per layer
  EXPECT_EQ(g.bytes_per_token, 768.0);
  // residual 16-bit token per layer: 2 * 8 * 128 * 2 B = 4,096
  EXPECT_EQ(g.bytes_per_token_16bit, 4096);
  // 32 layers * 768 = 24,576
  EXPECT_EQ(kv_bytes_per_token(m, kivi_scheme()), 24576.0);
}

TEST(KiviLayout, ExactBytesAt1000Tokens) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvLayout layout = build_kv_layout(m, kivi_scheme(), Parallelism{});
  const KvLayerGroup& g = layout.groups()[0];
  // residual 128 * 4,096 = 524,288; quantized 872 * 640 = 558,080;
  // key groups ceil(872 / 32) = 28 -> 28 * 4,096 = 114,688; per layer 1,197,056
  EXPECT_EQ(layout.layer_bytes(g, 1000), 1197056);
  // x 32 layers = 38,305,792
  EXPECT_EQ(kv_bytes_per_request(m, kivi_scheme(), 1000), 38305792);
}

TEST(KiviLayout, ShortRequestIsAllResidual) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  // 100 tokens <= 128 residual: 100 * 4,096 * 32 layers = 13,107,200
  EXPECT_EQ(kv_bytes_per_request(m, kivi_scheme(), 100), int64_t{100} * 4096 * 32);
}

TEST(KiviLayout, AllocatedBytesKeepResidualOutsideBlocks) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvLayout layout = build_kv_layout(m, kivi_scheme(), Parallelism{});
  // per layer: ceil(872 / 16) = 55 blocks * 16 tokens * 640 B (2-bit data + value metadata) = 563,200
  //   + key metadata ceil(872 / 32) = 28 groups * 4,096 = 114,688 + residual 128 * 4,096 = 524,288
  //   -> 1,202,176; x 32 layers = 38,469,632
  EXPECT_EQ(layout.request_allocated_bytes(1000), int64_t{32} * (55 * 16 * 640 + 28 * 4096 + 128 * 4096));
}

TEST(KiviLayout, PartialKeyGroupStillCarriesMetadata) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvLayout layout = build_kv_layout(m, kivi_scheme(), Parallelism{});
  const KvLayerGroup& g = layout.groups()[0];
  // 129 tokens: 128 residual * 4,096 + 1 quantized * 640 + ceil(1/32)=1 group * 4,096 = 529,024
  EXPECT_EQ(layout.layer_bytes(g, 129), 128 * 4096 + 640 + 4096);
}

// ---------------------------------------------------------------------------------------------
// Sliding windows and paged blocks.

TEST(SlidingWindow, MistralLayerBytesCappedAtWindow) {
  ModelConfig m = resolve_model("mistral-7b-v0.1");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 1u);
  const KvLayerGroup& g = layout.groups()[0];
  EXPECT_EQ(g.kind, LayerKind::kSlidingAttention);
  EXPECT_EQ(g.window_tokens, 4096);
  EXPECT_EQ(g.num_layers, 32);
  // per layer per token: 2 * 8 * 128 * 2 B = 4,096; held min(10000, 4096) = 4096 tokens
  EXPECT_EQ(layout.layer_bytes(g, 10000), int64_t{4096} * 4096);
  EXPECT_EQ(layout.held_tokens(g, 10000), 4096);
  EXPECT_EQ(layout.held_tokens(g, 1000), 1000);
  // whole request: 32 layers * 4096 * 4096
  EXPECT_EQ(layout.request_bytes(10000), int64_t{32} * 4096 * 4096);
}

TEST(SlidingWindow, MistralRequestBlocksFollowTheWindow) {
  ModelConfig m = resolve_model("mistral-7b-v0.1");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  // blocks are counted per layer group (one group here).
  // L=4100: window [4, 4100): first = 4/16 = 0, last = 4099/16 = 256 -> 257 blocks
  EXPECT_EQ(layout.request_blocks(4100), 257);
  // L=5000: window [904, 5000): first = 904/16 = 56, last = 4999/16 = 312 -> 257
  EXPECT_EQ(layout.request_blocks(5000), 257);
  // L=4096: not past the window, ceil(4096/16) = 256
  EXPECT_EQ(layout.request_blocks(4096), 256);
  // L=4112 (block-aligned window [16, 4112)): first = 1, last = 4111/16 = 256 -> 256
  EXPECT_EQ(layout.request_blocks(4112), 256);
}

TEST(SlidingWindow, Gemma2HasTwoGroups) {
  ModelConfig m = resolve_model("gemma-2-9b");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 2u);
  const KvLayerGroup* full = find_group(layout, LayerKind::kFullAttention);
  const KvLayerGroup* sliding = find_group(layout, LayerKind::kSlidingAttention);
  ASSERT_NE(full, nullptr);
  ASSERT_NE(sliding, nullptr);
  EXPECT_EQ(full->num_layers, 21);
  EXPECT_EQ(sliding->num_layers, 21);
  // per layer per token 2 * 8 * 256 * 2 B = 8,192
  // L=5000: 21 sliding layers hold 4096 tokens, 21 full layers hold 5000
  EXPECT_EQ(layout.request_bytes(5000), int64_t{21} * 4096 * 8192 + int64_t{21} * 5000 * 8192);
  // blocks: sliding first 904/16 = 56, last 4999/16 = 312 -> 257; full ceil(5000/16) = 313 -> 570
  EXPECT_EQ(layout.request_blocks(5000), 570);
  // allocated: 21 * 257 * (16 * 8,192) + 21 * 313 * (16 * 8,192)
  EXPECT_EQ(layout.request_allocated_bytes(5000), int64_t{21} * 257 * 131072 + int64_t{21} * 313 * 131072);
  // vLLM sizes pages as if every layer were full: 42 * 16 * 8,192 = 5,505,024
  EXPECT_EQ(layout.engine_block_bytes(), 5505024);
}

TEST(Eviction, H2OBudgetCapsRequest) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.eviction = Eviction::kH2O;
  s.h2o_budget_tokens = 1024;
  // min(4096, 1024) = 1024 tokens * 131,072
  EXPECT_EQ(kv_bytes_per_request(m, s, 4096), int64_t{1024} * 131072);
  // 500 < budget: 500 * 131,072
  EXPECT_EQ(kv_bytes_per_request(m, s, 500), int64_t{500} * 131072);
}

TEST(Eviction, StreamingLlmSinksPlusWindow) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.eviction = Eviction::kStreaming;
  s.sink_tokens = 4;
  s.streaming_window_tokens = 1020;
  // min(4096, 4 + 1020) = 1024 tokens * 131,072
  EXPECT_EQ(kv_bytes_per_request(m, s, 4096), int64_t{1024} * 131072);
  EXPECT_EQ(kv_bytes_per_request(m, s, 500), int64_t{500} * 131072);
}

TEST(Eviction, H2OWithoutBudgetIsRejected) {
  KvScheme s;
  s.eviction = Eviction::kH2O;
  s.h2o_budget_tokens = 0;
  EXPECT_THROW(build_kv_layout(resolve_model("llama-3.1-8b"), s, Parallelism{}), ConfigError);
}

// ---------------------------------------------------------------------------------------------
// Tensor and pipeline parallelism.

TEST(Parallel, TensorParallelSplitsKvHeads) {
  ModelConfig m = resolve_model("llama-3.1-70b");
  // tp=4: 8/4 = 2 KV heads per GPU; 80 layers * 2 * 2 * 128 * 2 B = 81,920
  EXPECT_EQ(build_kv_layout(m, KvScheme{}, Parallelism{.tensor_parallel = 4}).bytes_per_token(), 81920.0);
  // tp=8: 1 head per GPU; 80 * 2 * 1 * 128 * 2 = 40,960
  EXPECT_EQ(build_kv_layout(m, KvScheme{}, Parallelism{.tensor_parallel = 8}).bytes_per_token(), 40960.0);
}

TEST(Parallel, TensorParallelAboveKvHeadsReplicates) {
  ModelConfig m = resolve_model("llama-3.1-70b");
  // tp=16 > 8 KV heads: one replicated head per GPU (64 % 16 == 0 and 16 % 8 == 0 are valid):
  // 80 * 2 * 1 * 128 * 2 = 40,960
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{.tensor_parallel = 16});
  EXPECT_EQ(layout.bytes_per_token(), 40960.0);
  ASSERT_EQ(layout.groups().size(), 1u);
  EXPECT_EQ(layout.groups()[0].heads_per_gpu, 1);
}

TEST(Parallel, TensorParallelThatDoesNotDivideHeadsThrows) {
  ModelConfig m = resolve_model("llama-3.1-70b");
  // 64 query heads % 3 != 0
  EXPECT_THROW(build_kv_layout(m, KvScheme{}, Parallelism{.tensor_parallel = 3}), ConfigError);
}

TEST(Parallel, MlaLatentIsReplicatedOnEveryRank) {
  ModelConfig m = resolve_model("deepseek-v3");
  // (512 + 64) * 2 B * 61 layers = 70,272 on every GPU regardless of tp
  EXPECT_EQ(build_kv_layout(m, KvScheme{}, Parallelism{.tensor_parallel = 8}).bytes_per_token(), 70272.0);
}

TEST(Parallel, PipelineStageLayersSplitLikeVllm) {
  // 32 / 3 = 10 each, remainder 2 goes to the stages before the last: [11, 11, 10]
  EXPECT_EQ(pipeline_stage_layers(32, 3, 0), (std::pair<int, int>{0, 11}));
  EXPECT_EQ(pipeline_stage_layers(32, 3, 1), (std::pair<int, int>{11, 22}));
  EXPECT_EQ(pipeline_stage_layers(32, 3, 2), (std::pair<int, int>{22, 32}));
  // 32 / 4 = 8 each, no remainder
  EXPECT_EQ(pipeline_stage_layers(32, 4, 3), (std::pair<int, int>{24, 32}));
  // 10 / 4 = 2 each, remainder 2 to stages 2 and 1: [2, 3, 3, 2]
  EXPECT_EQ(pipeline_stage_layers(10, 4, 0), (std::pair<int, int>{0, 2}));
  EXPECT_EQ(pipeline_stage_layers(10, 4, 1), (std::pair<int, int>{2, 5}));
  EXPECT_EQ(pipeline_stage_layers(10, 4, 2), (std::pair<int, int>{5, 8}));
  EXPECT_EQ(pipeline_stage_layers(10, 4, 3), (std::pair<int, int>{8, 10}));
  // pp=1: everything
  EXPECT_EQ(pipeline_stage_layers(32, 1, 0), (std::pair<int, int>{0, 32}));
}

TEST(Parallel, PipelineStageLayoutHoldsOnlyItsLayers) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  Parallelism p{.tensor_parallel = 1, .pipeline_parallel = 3};
  // stage 2 holds 10 layers: 10 * 4,096 = 40,960
  EXPECT_EQ(build_kv_layout(m, KvScheme{}, p, 2).bytes_per_token(), 10.0 * 4096);
  // stage 0 holds 11 layers: 11 * 4,096 = 45,056
  EXPECT_EQ(build_kv_layout(m, KvScheme{}, p, 0).bytes_per_token(), 11.0 * 4096);
  EXPECT_EQ(build_kv_layout(m, KvScheme{}, p, 2).num_kv_layers(), 10);
}

// ---------------------------------------------------------------------------------------------
// Recurrent state.

TEST(RecurrentState, Mamba2StateIsIndependentOfLength) {
  ModelConfig m = resolve_model("mamba2-2.7b");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  const KvLayerGroup* g = find_group(layout, LayerKind::kMamba2);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->num_layers, 64);
  // conv: (4 - 1) * (5120 + 2 * 1 * 128) * 2 B (bf16) = 32,256
  // ssm:  80 heads * 64 * 128 * 4 B (fp32) = 2,621,440; sum 2,653,696
  EXPECT_EQ(g->state_bytes_per_request, 2653696);
  // 64 layers * 2,653,696 = 169,836,544 for any length
  EXPECT_EQ(layout.request_bytes(1), 169836544);
  EXPECT_EQ(layout.request_bytes(100000), 169836544);
  EXPECT_EQ(layout.state_bytes_per_request(), 169836544);
  EXPECT_EQ(kv_bytes_per_token(m, KvScheme{}), 0.0);
  EXPECT_EQ(layout.request_blocks(5000), 0);
}

TEST(RecurrentState, Qwen3NextLinearAttentionState) {
  ModelConfig m = resolve_model("qwen3-next-80b-a3b");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  const KvLayerGroup* lin = find_group(layout, LayerKind::kLinearAttention);
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->num_layers, 36);
  // conv: (4 - 1) * (2 * 16 * 128 + 32 * 128) * 2 B = 49,152
  // ssm: 32 value heads * 128 * 128 * 4 B = 2,097,152; sum 2,146,304
  EXPECT_EQ(lin->state_bytes_per_request, 2146304);
  // request at L=1000: 36 * 2,146,304 + 1000 * 24,576
  EXPECT_EQ(layout.request_bytes(1000), int64_t{36} * 2146304 + int64_t{1000} * 24576);
}

TEST(RecurrentState, JambaMambaStatePlusAttentionKv) {
  ModelConfig m = resolve_model("jamba-v0.1");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  const KvLayerGroup* mamba = find_group(layout, LayerKind::kMamba1);
  ASSERT_NE(mamba, nullptr);
  EXPECT_EQ(mamba->num_layers, 28);  // 32 - 4 attention layers
  // conv: (4 - 1) * d_inner 8192 * 2 B = 49,152; ssm: 8192 * d_state 16 * 4 B = 524,288 -> 573,440
  EXPECT_EQ(mamba->state_bytes_per_request, 573440);
  // 4 attention layers * 2 * 8 * 128 * 2 B = 16,384 per token
  EXPECT_EQ(layout.bytes_per_token(), 16384.0);
  // L=1000: 28 * 573,440 + 1000 * 16,384 = 16,056,320 + 16,384,000
  EXPECT_EQ(layout.request_bytes(1000), int64_t{28} * 573440 + int64_t{1000} * 16384);
  // tp=2 halves both: d_inner 4096 -> 286,720 per layer; 4 KV heads per GPU -> 8,192 per token
  KvLayout tp2 = build_kv_layout(m, KvScheme{}, Parallelism{.tensor_parallel = 2});
  EXPECT_EQ(find_group(tp2, LayerKind::kMamba1)->state_bytes_per_request, 286720);
  EXPECT_EQ(tp2.bytes_per_token(), 8192.0);
}

// ---------------------------------------------------------------------------------------------
// Cross-layer sharing and low-rank projection.

TEST(Compression, CrossLayerShareStoresEveryOtherLayer) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.cross_layer_share = 2;
  // 16 of 32 layers store: 16 * 4,096 = 65,536
  EXPECT_EQ(kv_bytes_per_token(m, s), 65536.0);
  KvLayout layout = build_kv_layout(m, s, Parallelism{});
  ASSERT_EQ(layout.groups().size(), 1u);
  EXPECT_EQ(layout.groups()[0].num_layers, 16);
  EXPECT_EQ(layout.groups()[0].shared_layers, 16);
}

TEST(Compression, LowRankLatents) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.low_rank = 32;
  // 2 (K,V) * 8 heads * 32 rank * 2 B * 32 layers = 32,768
  EXPECT_EQ(kv_bytes_per_token(m, s), 32768.0);
}

// ---------------------------------------------------------------------------------------------
// Paged allocation.

TEST(Paged, AllocatedBytesRoundUpToBlocks) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  // L=17, block 16: ceil(17/16) = 2 blocks * 16 * 131,072 = 4,194,304
  EXPECT_EQ(layout.request_allocated_bytes(17), int64_t{2} * 16 * 131072);
  EXPECT_EQ(layout.request_blocks(17), 2);
  // exact bytes: 17 * 131,072
  EXPECT_EQ(layout.request_bytes(17), int64_t{17} * 131072);
  // one block across all layers: 16 * 131,072 = 2,097,152
  EXPECT_EQ(layout.engine_block_bytes(), 2097152);
}

TEST(Paged, ContiguousAllocationIsExact) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvScheme s;
  s.paged = false;
  KvLayout layout = build_kv_layout(m, s, Parallelism{});
  // not paged: allocated == exact = 17 * 131,072
  EXPECT_EQ(layout.request_allocated_bytes(17), int64_t{17} * 131072);
}

// A request's paged allocation must be able to hold its exact bytes: allocated >= exact, for every
// preset, scheme and length (a block rounds up, never down).
TEST(Paged, AllocationNeverSmallerThanExactBytes) {
  std::vector<std::pair<std::string, KvScheme>> schemes;
  schemes.emplace_back("bf16", KvScheme{});
  {
    KvScheme s;
    s.kv_dtype = DType::kFp8E4M3;
    schemes.emplace_back("fp8", s);
  }
  {
    KvScheme s;
    s.kv_dtype = DType::kInt8;
    s.quant_group_size = 32;  // divides every preset's head_dim (64, 96, 128, 256)
    schemes.emplace_back("int8 g32", s);
  }
  {
    KvScheme s;
    s.kv_dtype = DType::kInt4;
    s.quant_group_size = 32;
    s.quant_asymmetric = false;
    schemes.emplace_back("int4 g32 sym", s);
  }
  // KIVI is checked separately (KiviLayout.AllocationHoldsPartialKeyGroupMetadata).
  {
    KvScheme s;
    s.eviction = Eviction::kH2O;
    s.h2o_budget_tokens = 1024;
    schemes.emplace_back("h2o 1024", s);
  }
  {
    KvScheme s;
    s.eviction = Eviction::kStreaming;
    s.streaming_window_tokens = 1020;
    schemes.emplace_back("streaming 4+1020", s);
  }
  const int64_t lengths[] = {1, 15, 16, 17, 100, 128, 129, 144, 160, 161, 1000, 4095, 4096, 4097, 5000, 40000};
  for (const ModelConfig& m : model_presets()) {
    for (const auto& [name, scheme] : schemes) {
      // DSA models have only the engines' bf16 and fp8 layouts (KvBytesPerToken.DsaRefuses...)
      const bool dsa_unsupported = m.mla.index_topk > 0 && (name != "bf16" && name != "fp8");
      // DeepSeek-V4 has only the engines' fp8 layout (DeepseekV4.RefusesWhatItDoesNotRead)
      const bool dsv4_unsupported = m.count_layers(LayerKind::kCompressedAttention) > 0 && name != "fp8";
      // MiniMax-M3 has only the engines' 16-bit and fp8 K / V (MiniMaxM3.RefusesWhatItDoesNotRead)
      const bool msa_unsupported = m.msa.index_head_dim > 0 && (name != "bf16" && name != "fp8");
      if (dsa_unsupported || dsv4_unsupported || msa_unsupported) {
        EXPECT_THROW(build_kv_layout(m, scheme, Parallelism{}), ConfigError) << m.id << " " << name;
        continue;
      }
      KvLayout layout = build_kv_layout(m, scheme, Parallelism{});
      for (int64_t L : lengths) {
        EXPECT_GE(layout.request_allocated_bytes(L), layout.request_bytes(L))
            << m.id << " " << name << " L=" << L;
      }
    }
  }
}

TEST(KiviLayout, AllocationHoldsPartialKeyGroupMetadata) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvLayout layout = build_kv_layout(m, kivi_scheme(), Parallelism{});
  // L=144: 128 residual tokens + 16 quantized tokens, per layer:
  //   exact = 128 * 4,096 + 16 * 640 + ceil(16/32) = 1 key group * 4,096 = 538,624
  EXPECT_EQ(layout.layer_bytes(layout.groups()[0], 144), 538624);
  //   the paged allocation (1 block of 16 tokens + the 16-bit residual) must hold at least that:
  //   32 layers * 538,624 = 17,235,968
  EXPECT_GE(layout.request_allocated_bytes(144), int64_t{32} * 538624);
}

TEST(Paged, RandomLengthsMatchClosedForm) {
  ModelConfig m = resolve_model("llama-3.1-8b");
  KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<int64_t> len(1, 200000);
  for (int i = 0; i < 1000; ++i) {
    int64_t L = len(rng);
    // exact: L * 131,072; paged: ceil(L/16) * 16 * 131,072
    ASSERT_EQ(layout.request_bytes(L), L * 131072) << "L=" << L;
    ASSERT_EQ(layout.request_allocated_bytes(L), (L + 15) / 16 * 16 * 131072) << "L=" << L;
  }
}

}  // namespace
}  // namespace kvplan
