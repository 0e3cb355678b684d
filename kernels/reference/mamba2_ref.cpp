// CPU references of the Mamba-2 decode step and the causal conv update (mamba2.h), and the Params
// checks the launchers share (this library is linked by both the references and the launchers).
#include "kvplan/kernels/reference/mamba2_ref.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {

std::string mamba2_decode_problem(const Mamba2DecodeParams& p) {
  if (p.dtype != ElemType::kBF16 && p.dtype != ElemType::kFP16) return "dtype must be bf16 or fp16";
  if (p.num_seqs < 0) return "num_seqs=" + std::to_string(p.num_seqs) + " must be >= 0";
  if (p.num_heads < 1 || p.head_dim < 1 || p.d_state < 1)
    return "num_heads=" + std::to_string(p.num_heads) + ", head_dim=" + std::to_string(p.head_dim) +
           " and d_state=" + std::to_string(p.d_state) + " must be >= 1";
  if (p.n_groups < 1 || p.num_heads % p.n_groups != 0)
    return "n_groups=" + std::to_string(p.n_groups) + " must divide num_heads=" + std::to_string(p.num_heads);
  if (!p.x || !p.dt || !p.A || !p.B || !p.C || !p.state || !p.out) return "x, dt, A, B, C, state and out must be non-null";
  return {};
}

std::string causal_conv_update_problem(const CausalConvUpdateParams& p) {
  if (p.dtype != ElemType::kBF16 && p.dtype != ElemType::kFP16) return "dtype must be bf16 or fp16";
  if (p.num_seqs < 0) return "num_seqs=" + std::to_string(p.num_seqs) + " must be >= 0";
  if (p.conv_dim < 1 || p.d_conv < 1)
    return "conv_dim=" + std::to_string(p.conv_dim) + " and d_conv=" + std::to_string(p.d_conv) + " must be >= 1";
  if (!p.x || !p.weight || !p.out || (p.d_conv > 1 && !p.conv_state))
    return "x, weight, out (and conv_state when d_conv > 1) must be non-null";
  return {};
}

double mamba2_effective_dt(double dt_plus_bias, bool softplus) {
  if (!softplus || dt_plus_bias > 20.0) return dt_plus_bias;
  return std::log1p(std::exp(dt_plus_bias));
}

Mamba2Ref mamba2_decode_ref(const Mamba2DecodeParams& p) {
  if (std::string why = mamba2_decode_problem(p); !why.empty()) throw std::invalid_argument(why);
  const size_t P = size_t(p.head_dim), N = size_t(p.d_state), H = size_t(p.num_heads), G = size_t(p.n_groups);
  const size_t heads_per_group = H / G;
  auto rd = [&](const uint16_t* base, size_t i) { return double(from_bits(p.dtype, base[i])); };
  Mamba2Ref r;
  r.out.assign(size_t(p.num_seqs) * H * P, 0.0);
  r.state.assign(size_t(p.num_seqs) * H * P * N, 0.0);
  for (size_t s = 0; s < size_t(p.num_seqs); ++s) {
    for (size_t h = 0; h < H; ++h) {
      const double dt = mamba2_effective_dt(rd(p.dt, s * H + h) + (p.dt_bias ? double(p.dt_bias[h]) : 0.0), p.dt_softplus);
      const double dA = std::exp(dt * double(p.A[h]));
      const size_t bc = (s * G + h / heads_per_group) * N;
      for (size_t c = 0; c < P; ++c) {
        const size_t xi = (s * H + h) * P + c;
        const double x = rd(p.x, xi);
        double y = 0;
        for (size_t n = 0; n < N; ++n) {
          const size_t e = xi * N + n;
          const double hn = dA * double(p.state[e]) + dt * rd(p.B, bc + n) * x;
          r.state[e] = hn;
          y += rd(p.C, bc + n) * hn;
        }
        if (p.D) y += double(p.D[h]) * x;
        if (p.z) {
          const double z = rd(p.z, xi);
          y *= z / (1.0 + std::exp(-z));
        }
        r.out[xi] = y;
      }
    }
  }
  return r;
}

CausalConvRef causal_conv_update_ref(const CausalConvUpdateParams& p) {
  if (std::string why = causal_conv_update_problem(p); !why.empty()) throw std::invalid_argument(why);
  const size_t D = size_t(p.conv_dim), W = size_t(p.d_conv), S = W - 1;
  CausalConvRef r;
  r.out.assign(size_t(p.num_seqs) * D, 0.0);
  r.conv_state.assign(size_t(p.num_seqs) * D * S, 0);
  for (size_t s = 0; s < size_t(p.num_seqs); ++s) {
    for (size_t c = 0; c < D; ++c) {
      const uint16_t* old = p.conv_state ? p.conv_state + (s * D + c) * S : nullptr;
      const uint16_t x = p.x[s * D + c];
      double acc = p.bias ? double(from_bits(p.dtype, p.bias[c])) : 0.0;
      for (size_t k = 0; k < W; ++k) {
        const uint16_t in = k < S ? old[k] : x;  // window = [old state..., x]
        acc += double(from_bits(p.dtype, p.weight[c * W + k])) * double(from_bits(p.dtype, in));
      }
      if (p.silu) acc = acc / (1.0 + std::exp(-acc));
      r.out[s * D + c] = acc;
      // New state: the window without its oldest entry.
      uint16_t* neu = r.conv_state.data() + (s * D + c) * S;
      for (size_t k = 0; k < S; ++k) neu[k] = k + 1 < S ? old[k + 1] : x;
    }
  }
  return r;
}

}  // namespace kvplan::kernels
