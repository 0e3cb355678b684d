// kvplan/kernels/reference/quant_decode_attention_ref.h — CPU reference of
// launch_quant_decode_attention: the same Params with *host* pointers, every cached element
// dequantized in double (kv_write_ref.h), exact softmax, double accumulation.
//
//   QuantDecodeParams p = ...;   // host pointers
//   std::vector<double> ref = quant_decode_attention_ref(p);   // [num_seqs, num_q_heads, head_dim]
#pragma once

#include <vector>

#include "kvplan/kernels/quant_decode_attention.h"

namespace kvplan::kernels {

// Throws std::invalid_argument for Params the launcher rejects or a context length beyond the
// block table (or max_seq_len), std::out_of_range for a block id outside the cache. `p.out` is ignored.
std::vector<double> quant_decode_attention_ref(const QuantDecodeParams& p);

}  // namespace kvplan::kernels
