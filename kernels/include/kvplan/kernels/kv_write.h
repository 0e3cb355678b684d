// kvplan/kernels/kv_write.h — append new K/V vectors to a KV cache, quantizing on write when the
// cache is fp8, int8, int4 (launch_kv_write, through a slot mapping, paged or contiguous) or KIVI-2
// (launch_kivi_write, per sequence). Storage formats and the quantization rule: kv_cache.h.
//
//   KvWriteParams p;  p.cache = cache;  p.k_new = k;  p.v_new = v;  p.slot_mapping = slots;  p.num_tokens = n;
//   Status s = launch_kv_write(p, stream);
#pragma once

#include <cstdint>

#include "kvplan/kernels/kv_cache.h"
#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

// One CTA per token; each thread writes 8 channels (16-bit, fp8) or one quantization group
// (int8, int4) of one KV head, K and V.
struct KvWriteParams {
  ElemType dtype = ElemType::kBF16;   // of k_new and v_new; a 16-bit cache must have the same type
  const uint16_t* k_new = nullptr;    // [num_tokens, num_kv_heads, head_dim]
  const uint16_t* v_new = nullptr;    // [num_tokens, num_kv_heads, head_dim]
  const int64_t* slot_mapping = nullptr;  // [num_tokens]; -1 = padding, skipped (as vLLM)
  QuantKvCache cache;                 // kBF16, kFP16, kFp8E4M3, kInt8 or kInt4; head_dim a multiple of 8
  int num_tokens = 0;
};

// Checks shapes and pointers (not device contents); shared by the launcher and the reference.
Status check_kv_write_params(const KvWriteParams& p);
// Slots must lie in [0, cache.num_slots) or be negative (skipped); the kernel also skips slots
// >= num_slots so that a bad mapping cannot write out of bounds (the reference reports them).
Status launch_kv_write(const KvWriteParams& p, Stream stream);

// Appends new tokens to each sequence of a KIVI-2 cache (rule in kv_cache.h). One CTA per
// (sequence, KV head): it quantizes the key groups the append completes (from the ring or the new
// input), then stores the new tokens that stay in the 16-bit ring.
struct KiviWriteParams {
  const uint16_t* k_new = nullptr;  // [num_new_tokens, num_kv_heads, head_dim], type cache.residual_type
  const uint16_t* v_new = nullptr;  // [num_new_tokens, num_kv_heads, head_dim]
  const int32_t* new_token_offsets = nullptr;    // [num_seqs + 1]; sequence s gets rows [off[s], off[s+1])
  const int32_t* context_lens_before = nullptr;  // [num_seqs]; tokens already in the cache
  KiviCache cache;                               // its num_seqs is the batch size
  int num_new_tokens = 0;
};

// A sequence must not grow past cache.max_seq_len: the kernel then writes nothing for that
// sequence (it cannot report per-sequence errors); the reference throws std::out_of_range.
Status check_kivi_write_params(const KiviWriteParams& p);
Status launch_kivi_write(const KiviWriteParams& p, Stream stream);

}  // namespace kvplan::kernels
