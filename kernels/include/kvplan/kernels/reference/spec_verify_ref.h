// kvplan/kernels/reference/spec_verify_ref.h — CPU reference for speculative verification
// (spec_verify.h): host pointers, double accumulation, any head_dim.
//
//   std::vector<double> want = spec_verify_ref(params);   // [num_seqs, num_draft + 1, num_q_heads, head_dim]
#pragma once

#include <vector>

#include "kvplan/kernels/spec_verify.h"

namespace kvplan::kernels {

std::vector<double> spec_verify_ref(const SpecVerifyParams& p);

}  // namespace kvplan::kernels
