// kvplan/kernels/reference/low_rank_ref.h — CPU reference of low_rank.h: reconstructs k = latent_k U_k
// and v = latent_v U_v per token in double (int4 latents dequantized as code * scale + zero), then
// plain attention — the non-absorbed form, so tests check the kernel's absorbed form against it.
//
//   std::vector<double> want = low_rank_decode_attention_ref(p);   // [num_seqs, num_q_heads, head_dim]
#pragma once

#include <vector>

#include "kvplan/kernels/low_rank.h"

namespace kvplan::kernels {

std::vector<double> low_rank_decode_attention_ref(const LowRankDecodeParams& p);

// Latent channel c of token t of (seq, kv_head), K (is_key) or V, dequantized when int4.
double low_rank_latent_ref(const LowRankDecodeParams& p, bool is_key, int seq, int kv_head, int t, int c);

}  // namespace kvplan::kernels
