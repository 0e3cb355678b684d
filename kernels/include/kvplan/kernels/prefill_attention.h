// kvplan/kernels/prefill_attention.h — causal prefill attention over variable-length sequences,
// optionally continuing a sequence whose first `prefix_len` tokens are already in a paged cache
// (chunked prefill). GQA: query head h reads KV head h / (num_q_heads / num_kv_heads).
//
//   PrefillAttentionParams p;  p.dtype = ElemType::kBF16;  p.q = q;  p.k = k;  p.v = v;  p.out = out;
//   p.cu_seqlens = cu;  p.num_seqs = 2;  ...;  Status s = launch_prefill_attention(p, stream);
//
// Layout (FlashAttention varlen): the new tokens of all sequences are packed one after another;
// sequence s owns rows [cu_seqlens[s], cu_seqlens[s+1]) of q, k, v and out.
//
// Chunked prefill: the chunk's own K/V are given *packed like q* (p.k, p.v), not read back from the
// paged cache. The prefix (absolute positions [0, prefix_len)) is read from the paged cache through
// the block table. Query i of the chunk sits at absolute position prefix_len + i and attends to every
// prefix token and to new tokens 0..i: the causal mask is offset by prefix_len. Why packed: the
// chunk's K/V are in registers/global memory right after the QKV projection anyway, and this keeps the
// kernel independent of whether (and in which cache format) the KV-write kernel stores them; it is
// also FlashAttention's `flash_attn_varlen_func(..., block_table=...)` contract minus the new-token
// copy. The caller writes the new K/V into the cache with the KV-write kernel, before or after.
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

// Tile shape of the CUDA kernel, exposed so tests can put lengths on tile boundaries ±1.
inline constexpr int kPrefillTileQ = 16;   // query rows per CTA
inline constexpr int kPrefillTileKV = 32;  // keys per shared-memory K/V tile

struct PrefillAttentionParams {
  ElemType dtype = ElemType::kBF16;  // of q, k, v, k_cache, v_cache and out

  const uint16_t* q = nullptr;   // [total_q_tokens, num_q_heads, head_dim]
  const uint16_t* k = nullptr;   // [total_q_tokens, num_kv_heads, head_dim] the chunk's new keys
  const uint16_t* v = nullptr;   // [total_q_tokens, num_kv_heads, head_dim] the chunk's new values
  const int32_t* cu_seqlens = nullptr;  // [num_seqs + 1] 0, then running sums of new tokens per sequence
  uint16_t* out = nullptr;       // [total_q_tokens, num_q_heads, head_dim]

  // Cached prefix. prefix_lens == nullptr: no prefix, the cache pointers are ignored (may be null).
  const int32_t* prefix_lens = nullptr;  // [num_seqs] tokens already cached per sequence (>= 0)
  const uint16_t* k_cache = nullptr;     // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const uint16_t* v_cache = nullptr;     // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const int32_t* block_table = nullptr;  // [num_seqs, max_blocks_per_seq] block ids in [0, num_blocks)

  int num_seqs = 0;
  int total_q_tokens = 0;  // == cu_seqlens[num_seqs]
  int max_seqlen_q = 0;    // >= every cu_seqlens[s+1] - cu_seqlens[s]; sizes the grid
  int num_q_heads = 0;
  int num_kv_heads = 0;    // divides num_q_heads
  int head_dim = 0;        // CUDA kernel: 64, 128 or 256
  int num_blocks = 0;
  int tokens_per_block = 0;
  int max_blocks_per_seq = 0;  // >= ceil(prefix_len / tokens_per_block) for every sequence
  float softmax_scale = 0.f;   // usually 1 / sqrt(head_dim)
};

// Host-checkable problems with the scalar fields and pointers (device arrays such as cu_seqlens are
// not read): empty string when none. Shared by the launcher and the CPU reference; the launcher also
// requires head_dim in {64, 128, 256} (its instances) and 16-byte aligned pointers, the reference
// takes any head_dim (hand-computed tests use 2).
inline std::string prefill_attention_params_problem(const PrefillAttentionParams& p) {
  if (!p.q || !p.k || !p.v || !p.out || !p.cu_seqlens) return "q, k, v, out and cu_seqlens must be non-null";
  if (p.num_seqs < 1) return "num_seqs=" + std::to_string(p.num_seqs) + " must be >= 1";
  if (p.total_q_tokens < 0 || p.max_seqlen_q < 0) return "total_q_tokens and max_seqlen_q must be >= 0";
  if (p.num_q_heads < 1 || p.num_kv_heads < 1 || p.num_q_heads % p.num_kv_heads != 0)
    return "num_kv_heads=" + std::to_string(p.num_kv_heads) + " must divide num_q_heads=" +
           std::to_string(p.num_q_heads) + " (both >= 1)";
  if (p.head_dim < 1) return "head_dim=" + std::to_string(p.head_dim) + " must be >= 1";
  if (!(p.softmax_scale > 0.f)) return "softmax_scale must be > 0";
  if (p.prefix_lens) {
    if (!p.k_cache || !p.v_cache || !p.block_table) return "prefix_lens given: k_cache, v_cache and block_table must be non-null";
    if (p.num_blocks < 1 || p.tokens_per_block < 1 || p.max_blocks_per_seq < 1)
      return "prefix_lens given: num_blocks, tokens_per_block and max_blocks_per_seq must be >= 1";
  }
  return {};
}

// Validates the Params, launches on `stream`, returns the first CUDA error. Preconditions it cannot
// check on the host (device data): cu_seqlens is non-decreasing with cu_seqlens[num_seqs] ==
// total_q_tokens, every new length <= max_seqlen_q, prefix_len <= max_blocks_per_seq *
// tokens_per_block, and block ids used are in [0, num_blocks).
Status launch_prefill_attention(const PrefillAttentionParams& p, Stream stream);

}  // namespace kvplan::kernels
