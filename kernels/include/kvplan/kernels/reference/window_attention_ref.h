// kvplan/kernels/reference/window_attention_ref.h — CPU reference of window_attention.h: the same
// Params with host pointers; rotary (when rotary_dim > 0) at cache positions in double.
//
//   std::vector<double> want = window_decode_attention_ref(p);   // [num_seqs, num_q_heads, head_dim]
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/kernels/window_attention.h"

namespace kvplan::kernels {

std::vector<double> window_decode_attention_ref(const WindowDecodeParams& p);

// Neox rotate-half rotary of x[0, rotary_dim) at `position` (window_attention.h), in place.
void rotary_ref(double* x, int rotary_dim, double theta, double position);

}  // namespace kvplan::kernels
