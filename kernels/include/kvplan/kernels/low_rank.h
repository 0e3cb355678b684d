// kvplan/kernels/low_rank.h — decode attention over a low-rank KV cache: per KV head, K and V are
// stored as rank-r latents with per-head projections (k ≈ latent_k · U_k, v ≈ latent_v · U_v), in
// 16-bit or int4 (asymmetric, fp16 scale + zero per group: the rule of kv_cache.h). This is the
// per-head "low-rank KV projection" scheme of DESIGN §3, not MLA.
//
//   LowRankDecodeParams p;  p.rank = 64;  p.int4_latents = true;  p.group_size = 32;  ...
//   Status s = launch_low_rank_decode_attention(p, stream);
//
// Absorbed form. score_t = scale · q · (latent_k,t U_k) = scale · (q U_kᵀ) · latent_k,t and
// out = Σ_t p_t latent_v,t U_v = (Σ_t p_t latent_v,t) U_v: the kernel projects each query head into
// the latent space once (q_lat = q U_kᵀ, r values, fp32), runs the decode loop over r-wide latent
// rows, and projects the r-wide result back with U_v once. Exact in real arithmetic, like
// reconstructing k and v per token, but the per-token work and bytes are r, not head_dim (the
// reason the scheme exists); reconstruction would cost 2 · r · head_dim per token per KV head.
// The reference reconstructs k and v per token (the other form), so the tests check the equality.
//
// Layout: contiguous per sequence, head-major (like KIVI in kv_cache.h):
//   16-bit latents: k_latent, v_latent uint16 [num_seqs, num_kv_heads, max_seq_len, rank]
//   int4 latents:   uint8 [num_seqs, num_kv_heads, max_seq_len, rank / 2], byte j holds latent
//                   channel 2j in its low nibble and 2j+1 in its high one; k_meta, v_meta fp16
//                   [num_seqs, num_kv_heads, max_seq_len, rank / group_size, 2] {scale, zero};
//                   value = code * scale + zero.
#pragma once

#include <cstdint>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

struct LowRankDecodeParams {
  ElemType dtype = ElemType::kBF16;  // of q, out, u_k, u_v and 16-bit latents
  bool int4_latents = false;
  int num_seqs = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;     // 64, 128 or 256
  int rank = 0;         // r: 32, 64 or 128
  int group_size = 0;   // int4: latent channels per {scale, zero}; a multiple of 8 dividing rank
  int max_seq_len = 0;
  float softmax_scale = 0.f;  // applied to q · k (k of head_dim channels), usually 1 / sqrt(head_dim)

  const uint16_t* q = nullptr;            // [num_seqs, num_q_heads, head_dim]
  const uint16_t* u_k = nullptr;          // [num_kv_heads, rank, head_dim]
  const uint16_t* u_v = nullptr;          // [num_kv_heads, rank, head_dim]
  const void* k_latent = nullptr;         // 16-bit [num_seqs, num_kv_heads, max_seq_len, rank] or int4 [.., rank / 2] bytes
  const void* v_latent = nullptr;         // same as k_latent
  const uint16_t* k_meta = nullptr;       // int4: [num_seqs, num_kv_heads, max_seq_len, rank / group_size, 2] fp16
  const uint16_t* v_meta = nullptr;       // int4: same as k_meta
  const int32_t* context_lens = nullptr;  // [num_seqs], each in [0, max_seq_len]
  uint16_t* out = nullptr;                // [num_seqs, num_q_heads, head_dim]

  int num_splits = 1;
  float* partial_out = nullptr;           // [num_seqs, num_splits, num_q_heads, head_dim] (num_splits > 1)
  float* partial_lse = nullptr;           // [num_seqs, num_splits, num_q_heads] (num_splits > 1)
};

Status launch_low_rank_decode_attention(const LowRankDecodeParams& p, Stream stream);

}  // namespace kvplan::kernels
