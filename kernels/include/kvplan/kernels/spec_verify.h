// kvplan/kernels/spec_verify.h — speculative-decoding verification: multi-query decode of
// num_draft + 1 query tokens per sequence over a paged 16-bit GQA cache, causal within the draft.
//
//   SpecVerifyParams p;  p.num_draft = 4;  p.q = q;  p.k_cache = k;  ...;  p.context_lens = lens;
//   Status s = launch_spec_verify(p, stream);   // then spec_rollback (spec_rollback.h) per sequence
//
// Positions. Sequence s has context_lens[s] tokens before the verify step. Its num_draft + 1 query
// tokens (the last sampled token, then the num_draft draft tokens) sit at positions
// context_lens[s] + j, j = 0..num_draft, and their K/V are ALREADY in the cache there (the KV-write
// kernel ran first). Query j attends to positions [0, context_lens[s] + j]: the context plus draft
// tokens 0..j, never a later one. With num_draft = 0 this is paged decode (decode_attention.h) with
// context length context_lens[s] + 1. Cache layout, GQA mapping, scale and rounding are those of
// PagedDecodeAttentionParams. No split-KV: a batch of verify steps (k + 1 queries x group heads per
// KV head) already fills the GPU at the batch sizes speculative decoding is used at.
#pragma once

#include <cstdint>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

struct SpecVerifyParams {
  ElemType dtype = ElemType::kBF16;  // of q, k_cache, v_cache, out
  int num_seqs = 0;
  int num_draft = 0;  // k >= 0: num_draft + 1 query tokens per sequence
  int num_q_heads = 0;
  int num_kv_heads = 0;  // divides num_q_heads
  int head_dim = 0;      // CUDA kernel: 64, 128 or 256
  int num_blocks = 0;
  int tokens_per_block = 0;  // a power of two in [1, 1024]
  int max_blocks_per_seq = 0;
  float softmax_scale = 0.f;

  const uint16_t* q = nullptr;            // [num_seqs, num_draft + 1, num_q_heads, head_dim]
  const uint16_t* k_cache = nullptr;      // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const uint16_t* v_cache = nullptr;      // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const int32_t* block_table = nullptr;   // [num_seqs, max_blocks_per_seq], entries in [0, num_blocks)
  const int32_t* context_lens = nullptr;  // [num_seqs] tokens before the query tokens; context + num_draft + 1 <= max_blocks_per_seq * tokens_per_block
  uint16_t* out = nullptr;                // [num_seqs, num_draft + 1, num_q_heads, head_dim]
};

// Pointers 16-byte aligned; context_lens are trusted (device data).
Status launch_spec_verify(const SpecVerifyParams& p, Stream stream);

}  // namespace kvplan::kernels
