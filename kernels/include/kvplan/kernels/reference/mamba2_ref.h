// kvplan/kernels/reference/mamba2_ref.h — CPU references of mamba2.h: the same Params with *host*
// pointers, double arithmetic, outputs and states as doubles; inputs are not modified.
//
//   Mamba2Ref r = mamba2_decode_ref(p);               // r.out [num_seqs, num_heads, head_dim], r.state
//   CausalConvRef c = causal_conv_update_ref(cp);     // c.out, c.conv_state (16-bit, exact)
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/kernels/mamba2.h"

namespace kvplan::kernels {

struct Mamba2Ref {
  std::vector<double> out;    // [num_seqs, num_heads, head_dim]
  std::vector<double> state;  // [num_seqs, num_heads, head_dim, d_state] after the step
};

struct CausalConvRef {
  std::vector<double> out;           // [num_seqs, conv_dim]
  std::vector<uint16_t> conv_state;  // [num_seqs, conv_dim, d_conv - 1] after the step (a pure shift: exact)
};

// dt after bias and (optional) softplus, as the kernel computes it (threshold 20).
double mamba2_effective_dt(double dt_plus_bias, bool softplus);

// Throw std::invalid_argument for Params with a problem (*_problem in mamba2.h); `out` is ignored.
Mamba2Ref mamba2_decode_ref(const Mamba2DecodeParams& p);
CausalConvRef causal_conv_update_ref(const CausalConvUpdateParams& p);

}  // namespace kvplan::kernels
