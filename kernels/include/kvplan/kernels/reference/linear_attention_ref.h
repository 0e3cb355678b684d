// kvplan/kernels/reference/linear_attention_ref.h — CPU references of linear_attention.h: the same
// Params with *host* pointers, double accumulation, outputs and states as doubles. Inputs are not
// modified (the kernels update the state in place; the references return the new state).
//
//   LinearAttentionRef r = linear_attention_decode_ref(p);          // r.out, r.state
//   LinearAttentionRef c = linear_attention_prefill_ref(p, 64);      // chunk-parallel form, chunks of 64
#pragma once

#include <vector>

#include "kvplan/kernels/linear_attention.h"

namespace kvplan::kernels {

struct LinearAttentionRef {
  std::vector<double> out;    // shaped like Params::out
  std::vector<double> state;  // decode: the updated state; prefill: the final states
};

// φ in double, as the kernels apply it in float.
double linear_attention_feature(FeatureMap f, double x);

// Throws std::invalid_argument for Params with a problem (linear_attention_*_problem) and, for the
// prefill, for cu_seqlens that is not non-decreasing from 0 to total_tokens. `out` and the output
// state pointer are ignored.
LinearAttentionRef linear_attention_decode_ref(const LinearAttentionDecodeParams& p);

// The prefill in the chunk-parallel form of linear_attention.h with chunks of `chunk_size` tokens
// (the kernel's kLinearAttentionChunk by default; 1 is the plain recurrence). Every chunk size gives
// the same result up to rounding; tests use that to check the chunk formula against the recurrence.
LinearAttentionRef linear_attention_prefill_ref(const LinearAttentionPrefillParams& p,
                                                int chunk_size = kLinearAttentionChunk);

}  // namespace kvplan::kernels
