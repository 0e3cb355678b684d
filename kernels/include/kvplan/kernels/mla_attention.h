// kvplan/kernels/mla_attention.h — MLA (DeepSeek-V2/V3 multi-head latent attention): decode in the
// absorbed form over a paged latent cache (bf16/fp16 or fp8 e4m3), split-KV with a combine, and
// prefill in the non-absorbed form (q/k head dim != v head dim), causal, varlen.
//
//   MlaDecodeParams p;  p.q_nope = q_abs;  p.q_rope = q_rope;  p.kv_cache = latent;  ...
//   Status s = launch_mla_decode(p, stream);   // out_latent; then out = W_UV · out_latent (a GEMM, outside)
//
// ── Decode, absorbed form (DESIGN.md §3) ─────────────────────────────────────────────────────────
// Each token of a layer stores one latent row, shared by every head and by K and V:
//   row = [c_kv (kv_lora_rank) | k_rope (rope_dim)]      DeepSeek-V3: 512 + 64
// With per-head up-projections W_UK[h] (qk_nope_head_dim x kv_lora_rank) and W_UV[h] (v_head_dim x
// kv_lora_rank), the non-absorbed head computes k_nope = W_UK[h] c_kv and v = W_UV[h] c_kv. Absorbing
// W_UK into the query (q_abs = W_UK[h]^T q_nope, done by the caller's GEMM) gives the same score,
//   q_nope · (W_UK c) + q_rope · k_rope = q_abs · c_kv + q_rope · k_rope,
// and since W_UV is linear, sum_t p_t W_UV c_t = W_UV (sum_t p_t c_t). So the kernel attends in the
// latent space and returns out_latent = sum_t p_t c_kv_t (kv_lora_rank values per head); the caller
// applies W_UV (a batched GEMM, num_heads x [v_head_dim x kv_lora_rank]) afterwards. The identity is
// checked numerically in tests/kernels/mla_ref_test.cpp. softmax_scale is the model's (DeepSeek:
// 1/sqrt(qk_nope + rope) = 1/sqrt(192), times the YaRN mscale^2 where used) — it is not derived here.
//
// Cache layout (paged; one latent per token, no head dimension):
//   kv_cache [num_blocks, tokens_per_block, kv_lora_rank + rope_dim]
//   token t of sequence s: block block_table[s][t / tokens_per_block], slot t % tokens_per_block.
// fp8 e4m3 variant (cache_type kFp8E4M3): one byte per element, same layout, one fp32 scale per
// tensor (kv_scale[0]); x = fp8(code) * scale in fp32, written as code = fp8_satfinite(x / scale):
// the per-tensor rule of kv_cache.h. 16-bit caches must have the query's dtype.
//
// Split-KV: as decode_attention.h (decode_split_range, partials normalized per split, lse natural
// log, empty splits lse -inf); the combine is decode_attention.h's, run over kv_lora_rank channels.
// Plan the split count with plan_decode_splits (split_plan.h) passing
// num_kv_heads = mla_decode_head_tiles(num_heads): the CTAs one sequence occupies without splits.
//
// ── Prefill, non-absorbed form ───────────────────────────────────────────────────────────────────
// For prompts the up-projections are applied before attention (cheaper when queries ~ keys), so
// prefill is ordinary multi-head causal attention whose q/k head dim (qk_nope + rope = 192) differs
// from the v head dim (128). k_rope, shared across heads in the cache, is broadcast to every head
// upstream: k arrives per head. Varlen packing as prefill_attention.h (cu_seqlens), no cached prefix.
#pragma once

#include <cstdint>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

// The CUDA decode kernel's instance: latent 512 + rope 64 (DeepSeek-V2/V3); the reference takes any.
inline constexpr int kMlaKvLoraRank = 512;
inline constexpr int kMlaRopeDim = 64;
// Query heads per decode CTA: the latent tile a CTA stages in shared memory serves this many heads.
inline constexpr int kMlaDecodeHeadTile = 16;
constexpr int mla_decode_head_tiles(int num_heads) { return (num_heads + kMlaDecodeHeadTile - 1) / kMlaDecodeHeadTile; }

struct MlaDecodeParams {
  ElemType dtype = ElemType::kBF16;       // of q_nope, q_rope, out (and of a 16-bit cache)
  CacheType cache_type = CacheType::kBF16;  // kBF16 / kFP16 (== dtype) or kFp8E4M3
  int num_seqs = 0;
  int num_heads = 0;     // query heads (DeepSeek-V3: 128; per TP rank 128 / tp)
  int kv_lora_rank = 0;  // CUDA kernel: 512
  int rope_dim = 0;      // CUDA kernel: 64
  int num_blocks = 0;
  int tokens_per_block = 0;  // a power of two in [1, 1024]
  int max_blocks_per_seq = 0;
  float softmax_scale = 0.f;

  const uint16_t* q_nope = nullptr;     // [num_seqs, num_heads, kv_lora_rank] absorbed: W_UK^T q_nope
  const uint16_t* q_rope = nullptr;     // [num_seqs, num_heads, rope_dim]
  const void* kv_cache = nullptr;       // [num_blocks, tokens_per_block, kv_lora_rank + rope_dim] 16-bit words or e4m3 bytes
  const float* kv_scale = nullptr;      // fp8: [1]; ignored for 16-bit caches
  const int32_t* block_table = nullptr;   // [num_seqs, max_blocks_per_seq], entries in [0, num_blocks)
  const int32_t* context_lens = nullptr;  // [num_seqs], each in [0, max_blocks_per_seq * tokens_per_block]
  uint16_t* out = nullptr;              // [num_seqs, num_heads, kv_lora_rank] out_latent

  int num_splits = 1;
  float* partial_out = nullptr;  // [num_seqs, num_splits, num_heads, kv_lora_rank]
  float* partial_lse = nullptr;  // [num_seqs, num_splits, num_heads]
};

// num_splits == 1: one kernel writes `out`; > 1: the split kernel writes the partials, then the
// combine writes `out`. Pointers 16-byte aligned. context_lens are trusted (device data).
Status launch_mla_decode(const MlaDecodeParams& p, Stream stream);

// CUDA prefill instance: qk head dim 192 (128 nope + 64 rope), v head dim 128 (DeepSeek-V2/V3).
inline constexpr int kMlaPrefillQkHeadDim = 192;
inline constexpr int kMlaPrefillVHeadDim = 128;

struct MlaPrefillParams {
  ElemType dtype = ElemType::kBF16;  // of q, k, v, out
  int num_seqs = 0;
  int total_tokens = 0;   // == cu_seqlens[num_seqs]
  int max_seqlen = 0;     // >= every sequence's length; sizes the grid
  int num_heads = 0;
  int qk_head_dim = 0;    // qk_nope_head_dim + qk_rope_head_dim; CUDA kernel: 192
  int v_head_dim = 0;     // CUDA kernel: 128
  float softmax_scale = 0.f;  // usually 1 / sqrt(qk_head_dim)

  const uint16_t* q = nullptr;          // [total_tokens, num_heads, qk_head_dim]  [q_nope | q_rope]
  const uint16_t* k = nullptr;          // [total_tokens, num_heads, qk_head_dim]  [k_nope | k_rope broadcast]
  const uint16_t* v = nullptr;          // [total_tokens, num_heads, v_head_dim]
  const int32_t* cu_seqlens = nullptr;  // [num_seqs + 1] 0, then running sums of tokens per sequence
  uint16_t* out = nullptr;              // [total_tokens, num_heads, v_head_dim]
};

// Causal: token i of a sequence attends to tokens 0..i of the same sequence.
Status launch_mla_prefill(const MlaPrefillParams& p, Stream stream);

}  // namespace kvplan::kernels
