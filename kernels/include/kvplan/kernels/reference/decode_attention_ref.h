// kvplan/kernels/reference/decode_attention_ref.h — CPU references for decode attention
// (decode_attention.h): the same Params with host pointers, double accumulation, outputs as doubles.
//
//   std::vector<double> want = decode_attention_ref(params);               // [num_seqs, num_q_heads, head_dim]
//   DecodePartialsRef parts = decode_attention_partials_ref(params);       // what the split kernel writes
#pragma once

#include <vector>

#include "kvplan/kernels/decode_attention.h"

namespace kvplan::kernels {

// The exact (unsplit) attention output; num_splits and the partial pointers are ignored.
std::vector<double> decode_attention_ref(const DecodeAttentionParams& p);
std::vector<double> paged_decode_attention_ref(const PagedDecodeAttentionParams& p);

// What the split kernel writes for p.num_splits splits: each split's softmax-normalized output over
// its own tokens (0 for an empty split) and the natural log of its sum of exp(score) (-inf if empty).
struct DecodePartialsRef {
  std::vector<double> out;  // [num_seqs, num_splits, num_q_heads, head_dim]
  std::vector<double> lse;  // [num_seqs, num_splits, num_q_heads]
};
DecodePartialsRef decode_attention_partials_ref(const DecodeAttentionParams& p);
DecodePartialsRef paged_decode_attention_partials_ref(const PagedDecodeAttentionParams& p);

// The combine kernel's result from its fp32 inputs: [num_seqs, num_q_heads, head_dim].
std::vector<double> decode_attention_combine_ref(const DecodeCombineParams& p);

}  // namespace kvplan::kernels
