// kvplan/kernels/decode_attention.h — decode attention (one query token per sequence) over a 16-bit
// KV cache, contiguous or paged, optionally split along the context (flash-decoding) with a combine
// kernel. One general GQA kernel: MHA (num_q_heads == num_kv_heads) and MQA (num_kv_heads == 1) are
// its cases. Head dims 64/128/256; bf16 or fp16; per-sequence context lengths.
//
//   DecodeAttentionParams p;  p.dtype = ElemType::kBF16;  p.q = q;  ...;  p.num_splits = plan.num_splits;
//   Status s = launch_decode_attention(p, stream);   // partials + combine when num_splits > 1
//
// Conventions shared by every Params below:
// - query head `qh` attends with KV head `qh / (num_q_heads / num_kv_heads)` (consecutive query
//   heads form a group; num_kv_heads must divide num_q_heads);
// - scores are `softmax_scale * dot(q, k)`, softmax in fp32 on the GPU, output `sum_t p_t * v_t`;
// - a sequence with context length 0 produces an all-zero output (never NaN);
// - split `s` of a sequence of `len` tokens covers decode_split_range(len, num_splits, s): every
//   split gets ceil(len / num_splits) tokens except the last non-empty one; splits past the end are
//   empty (partial output 0, lse -inf) and the combine gives them weight 0;
// - pointers are device pointers for the launchers, host pointers for the references
//   (reference/decode_attention_ref.h); q, k_cache and v_cache must be 16-byte aligned (the
//   kernels load 8 elements at a time);
// - context_lens are trusted (device data the launcher cannot see): a length beyond the cache
//   (max_seq_len, or max_blocks_per_seq * tokens_per_block) reads out of bounds.
#pragma once

#include <cstdint>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

// The tokens [begin, end) of one split. Plain constexpr so the kernels and the references share it
// (device code uses it through --expt-relaxed-constexpr).
struct DecodeSplitRange {
  int begin = 0;
  int end = 0;
};
constexpr DecodeSplitRange decode_split_range(int context_len, int num_splits, int split) {
  const int chunk = (context_len + num_splits - 1) / num_splits;
  const int begin = split * chunk < context_len ? split * chunk : context_len;
  const int end = begin + chunk < context_len ? begin + chunk : context_len;
  return {begin, end};
}

// Decode attention over a contiguous cache (one slab of max_seq_len tokens per sequence).
struct DecodeAttentionParams {
  ElemType dtype = ElemType::kBF16;  // of q, k_cache, v_cache, out
  int num_seqs = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // 64, 128 or 256
  int max_seq_len = 0;
  float softmax_scale = 0.f;  // usually 1 / sqrt(head_dim)

  const uint16_t* q = nullptr;             // [num_seqs, num_q_heads, head_dim]
  const uint16_t* k_cache = nullptr;       // [num_seqs, max_seq_len, num_kv_heads, head_dim]
  const uint16_t* v_cache = nullptr;       // [num_seqs, max_seq_len, num_kv_heads, head_dim]
  const int32_t* context_lens = nullptr;   // [num_seqs], each in [0, max_seq_len]
  uint16_t* out = nullptr;                 // [num_seqs, num_q_heads, head_dim]

  // Split-KV (flash-decoding). With num_splits == 1 the partial buffers are unused and may be null.
  int num_splits = 1;                      // see plan_decode_splits (split_plan.h)
  float* partial_out = nullptr;            // [num_seqs, num_splits, num_q_heads, head_dim], each split normalized
  float* partial_lse = nullptr;            // [num_seqs, num_splits, num_q_heads], natural log of sum exp(score)
};

// Decode attention through block tables: token t of sequence s lives in block
// block_table[s][t / tokens_per_block], slot t % tokens_per_block.
struct PagedDecodeAttentionParams {
  ElemType dtype = ElemType::kBF16;
  int num_seqs = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;          // 64, 128 or 256
  int num_blocks = 0;        // blocks in the pool
  int tokens_per_block = 0;  // a power of two (8, 16, 32, 64, 128 are the tested sizes)
  int max_blocks_per_seq = 0;
  float softmax_scale = 0.f;

  const uint16_t* q = nullptr;             // [num_seqs, num_q_heads, head_dim]
  const uint16_t* k_cache = nullptr;       // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const uint16_t* v_cache = nullptr;       // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const int32_t* block_table = nullptr;    // [num_seqs, max_blocks_per_seq], entries in [0, num_blocks)
  const int32_t* context_lens = nullptr;   // [num_seqs], each in [0, max_blocks_per_seq * tokens_per_block]
  uint16_t* out = nullptr;                 // [num_seqs, num_q_heads, head_dim]

  int num_splits = 1;
  float* partial_out = nullptr;            // [num_seqs, num_splits, num_q_heads, head_dim]
  float* partial_lse = nullptr;            // [num_seqs, num_splits, num_q_heads]
};

// Merges split partials into the final output: out = sum_s w_s * partial_out_s with
// w_s = exp(lse_s - max lse) / sum of those; all-empty (all lse -inf) gives 0.
struct DecodeCombineParams {
  ElemType dtype = ElemType::kBF16;  // of out
  int num_seqs = 0;
  int num_splits = 0;
  int num_q_heads = 0;
  int head_dim = 0;  // any multiple of 8 up to 256 (the attention kernels use 64/128/256)

  const float* partial_out = nullptr;  // [num_seqs, num_splits, num_q_heads, head_dim]
  const float* partial_lse = nullptr;  // [num_seqs, num_splits, num_q_heads]
  uint16_t* out = nullptr;             // [num_seqs, num_q_heads, head_dim]
};

// Elements of the split workspace a launch with `num_splits` needs.
inline int64_t decode_partial_out_elems(int num_seqs, int num_splits, int num_q_heads, int head_dim) {
  return int64_t{num_seqs} * num_splits * num_q_heads * head_dim;
}
inline int64_t decode_partial_lse_elems(int num_seqs, int num_splits, int num_q_heads) {
  return int64_t{num_seqs} * num_splits * num_q_heads;
}

// num_splits == 1: one kernel writes `out`. num_splits > 1: the split kernel writes partial_out and
// partial_lse, then the combine kernel writes `out` (both on `stream`, in order).
Status launch_decode_attention(const DecodeAttentionParams& p, Stream stream);
Status launch_paged_decode_attention(const PagedDecodeAttentionParams& p, Stream stream);
Status launch_decode_attention_combine(const DecodeCombineParams& p, Stream stream);

}  // namespace kvplan::kernels
