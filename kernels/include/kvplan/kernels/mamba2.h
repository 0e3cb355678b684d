// kvplan/kernels/mamba2.h — the two per-token state updates of a Mamba-2 layer at decode: the
// selective state update (SSD form, fp32 state [num_heads, head_dim, d_state] per sequence) and the
// short causal depthwise convolution over the last d_conv inputs (16-bit conv state per sequence).
//
//   CausalConvUpdateParams c;  c.x = xBC;  c.conv_state = conv_state;  c.out = xBC_conv;  ...
//   Mamba2DecodeParams p;  p.x = x;  p.dt = dt;  p.B = B;  p.C = C;  p.state = ssm_state;  ...
//   launch_causal_conv_update(c, stream);  launch_mamba2_decode(p, stream);
//
// Semantics follow the Mamba-2 reference implementation (mamba_ssm's `selective_state_update` in
// its tied-head-dim Mamba-2 form, and causal-conv1d's `causal_conv1d_update`); what we took from
// them, as semantics only:
// - dt' = dt + dt_bias[h]; with dt_softplus, dt' = softplus(dt') = log(1 + e^{dt'}), except
//   dt' > 20 is kept as is (their threshold);
// - per head one scalar A[h] (negative; the caller passes -exp(A_log)) and one dt' shared by all
//   head_dim channels: dA = exp(dt'·A[h]);
// - B and C per group [n_groups, d_state]; head h uses group h / (num_heads / n_groups);
// - h[p][n] ← dA·h[p][n] + (dt'·B[n])·x[p];   y[p] = Σ_n C[n]·h[p][n] + D[h]·x[p];
//   with z: y[p] ← y[p]·z[p]·sigmoid(z[p])  (the state is updated first, then read);
// - the conv: window = [conv_state (oldest first), x], out[c] = Σ_k w[c][k]·window[k] + bias[c],
//   optional silu; the new conv state is the last d_conv-1 entries of the window.
// Not taken: their state_batch_indices (our state is indexed by the batch position) and
// non-tied dt/A per channel (Mamba-1).
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

// Largest d_state and d_conv the CUDA kernels take (the references take any).
inline constexpr int kMamba2MaxState = 256;
inline constexpr int kCausalConvMaxWidth = 8;

struct Mamba2DecodeParams {
  ElemType dtype = ElemType::kBF16;  // of x, dt, B, C, z, out
  int num_seqs = 0;
  int num_heads = 0;
  int head_dim = 0;   // channels per head (P), any >= 1
  int d_state = 0;    // N, kernel: 1..kMamba2MaxState
  int n_groups = 1;   // divides num_heads
  bool dt_softplus = true;

  const uint16_t* x = nullptr;      // [num_seqs, num_heads, head_dim]
  const uint16_t* dt = nullptr;     // [num_seqs, num_heads] before bias and softplus
  const float* dt_bias = nullptr;   // [num_heads]; nullptr = 0
  const float* A = nullptr;         // [num_heads] negative (-exp(A_log))
  const uint16_t* B = nullptr;      // [num_seqs, n_groups, d_state]
  const uint16_t* C = nullptr;      // [num_seqs, n_groups, d_state]
  const float* D = nullptr;         // [num_heads] skip connection; nullptr = 0
  const uint16_t* z = nullptr;      // [num_seqs, num_heads, head_dim] gate; nullptr = no gate
  float* state = nullptr;           // [num_seqs, num_heads, head_dim, d_state] in/out, fp32
  uint16_t* out = nullptr;          // [num_seqs, num_heads, head_dim]
};

// One step of the causal depthwise convolution for num_seqs sequences (one new input each).
// Mamba-2: conv_dim = d_inner + 2·n_groups·d_state (x, B and C are convolved together).
struct CausalConvUpdateParams {
  ElemType dtype = ElemType::kBF16;  // of x, weight, bias, conv_state, out
  int num_seqs = 0;
  int conv_dim = 0;
  int d_conv = 0;       // kernel width, kernel: 1..kCausalConvMaxWidth
  bool silu = true;     // apply silu to the output (Mamba-2 does)

  const uint16_t* x = nullptr;       // [num_seqs, conv_dim] the new input
  const uint16_t* weight = nullptr;  // [conv_dim, d_conv]; weight[c][d_conv-1] multiplies the new input
  const uint16_t* bias = nullptr;    // [conv_dim]; nullptr = no bias
  uint16_t* conv_state = nullptr;    // [num_seqs, conv_dim, d_conv - 1] in/out, oldest input first
  uint16_t* out = nullptr;           // [num_seqs, conv_dim]
};

// Host-checkable problems (empty string when none); shared by launchers and references.
std::string mamba2_decode_problem(const Mamba2DecodeParams& p);
std::string causal_conv_update_problem(const CausalConvUpdateParams& p);

Status launch_mamba2_decode(const Mamba2DecodeParams& p, Stream stream);
Status launch_causal_conv_update(const CausalConvUpdateParams& p, Stream stream);

}  // namespace kvplan::kernels
