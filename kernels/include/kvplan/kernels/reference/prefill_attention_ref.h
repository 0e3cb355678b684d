// kvplan/kernels/reference/prefill_attention_ref.h — CPU reference of launch_prefill_attention: the
// same Params with *host* pointers, double accumulation, exact softmax.
//
//   PrefillAttentionParams p = ...;   // host pointers
//   std::vector<double> ref = prefill_attention_ref(p);   // [total_q_tokens, num_q_heads, head_dim]
#pragma once

#include <vector>

#include "kvplan/kernels/prefill_attention.h"

namespace kvplan::kernels {

// Throws std::invalid_argument for Params the launcher would reject or whose host arrays are
// inconsistent (cu_seqlens not non-decreasing, a length > max_seqlen_q, a prefix longer than its
// block-table row), and std::out_of_range for a block id outside [0, num_blocks). `p.out` is ignored.
std::vector<double> prefill_attention_ref(const PrefillAttentionParams& p);

}  // namespace kvplan::kernels
