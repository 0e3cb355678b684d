// kvplan/kernels/reference/mla_attention_ref.h — CPU references for MLA (mla_attention.h): the same
// Params with host pointers, any kv_lora_rank / rope_dim / head dims, double accumulation.
//
//   std::vector<double> want = mla_decode_ref(params);     // [num_seqs, num_heads, kv_lora_rank]
//   DecodePartialsRef parts = mla_decode_partials_ref(params);  // what the split kernel writes
#pragma once

#include <vector>

#include "kvplan/kernels/mla_attention.h"
#include "kvplan/kernels/reference/decode_attention_ref.h"

namespace kvplan::kernels {

// Latent value of element `i` of token row `slot` (block * tokens_per_block + offset) of the cache,
// as the kernel reads it: the 16-bit value, or fp8(code) * kv_scale[0] rounded to fp32.
double mla_cache_value(const MlaDecodeParams& p, int64_t slot, int i);

// Unsplit out_latent; num_splits and the partial pointers are ignored.
std::vector<double> mla_decode_ref(const MlaDecodeParams& p);
// Per split (num_splits of them): normalized partial out_latent [num_seqs, num_splits, num_heads,
// kv_lora_rank] and lse [num_seqs, num_splits, num_heads]; combine with decode_attention_combine_ref
// (head_dim = kv_lora_rank).
DecodePartialsRef mla_decode_partials_ref(const MlaDecodeParams& p);

// [total_tokens, num_heads, v_head_dim]
std::vector<double> mla_prefill_ref(const MlaPrefillParams& p);

}  // namespace kvplan::kernels
