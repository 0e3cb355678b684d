// CPU references of linear attention (linear_attention.h), and the Params checks the launchers share
// (this library is linked by both the references and the CUDA launchers).
#include "kvplan/kernels/reference/linear_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {
namespace {

template <typename P>
std::string common_problem(const P& p) {
  if (p.dtype != ElemType::kBF16 && p.dtype != ElemType::kFP16) return "dtype must be bf16 or fp16";
  if (p.feature_map != FeatureMap::kIdentity && p.feature_map != FeatureMap::kEluPlusOne &&
      p.feature_map != FeatureMap::kRelu)
    return "feature_map is not one of identity, elu+1, relu";
  if (p.num_seqs < 0) return "num_seqs=" + std::to_string(p.num_seqs) + " must be >= 0";
  if (p.num_key_heads < 1 || p.num_value_heads < 1 || p.num_value_heads % p.num_key_heads != 0)
    return "num_key_heads=" + std::to_string(p.num_key_heads) + " must divide num_value_heads=" +
           std::to_string(p.num_value_heads) + " (both >= 1)";
  if (p.key_head_dim < 1 || p.value_head_dim < 1)
    return "key_head_dim=" + std::to_string(p.key_head_dim) + " and value_head_dim=" + std::to_string(p.value_head_dim) +
           " must be >= 1";
  if (!std::isfinite(p.scale)) return "scale must be finite";
  if (!p.q || !p.k || !p.v || !p.out) return "q, k, v and out must be non-null";
  return {};
}

// Reads one 16-bit element as double.
struct Reader {
  ElemType t;
  double operator()(const uint16_t* base, size_t i) const { return double(from_bits(t, base[i])); }
};

}  // namespace

std::string linear_attention_decode_problem(const LinearAttentionDecodeParams& p) {
  if (std::string why = common_problem(p); !why.empty()) return why;
  if (!p.state) return "state must be non-null";
  return {};
}

std::string linear_attention_prefill_problem(const LinearAttentionPrefillParams& p) {
  if (std::string why = common_problem(p); !why.empty()) return why;
  if (p.total_tokens < 0) return "total_tokens=" + std::to_string(p.total_tokens) + " must be >= 0";
  if (!p.cu_seqlens || !p.final_state) return "cu_seqlens and final_state must be non-null";
  return {};
}

double linear_attention_feature(FeatureMap f, double x) {
  switch (f) {
    case FeatureMap::kIdentity: return x;
    case FeatureMap::kEluPlusOne: return x > 0 ? x + 1 : std::exp(x);
    case FeatureMap::kRelu: return x > 0 ? x : 0.0;
  }
  return x;
}

LinearAttentionRef linear_attention_decode_ref(const LinearAttentionDecodeParams& p) {
  if (std::string why = linear_attention_decode_problem(p); !why.empty()) throw std::invalid_argument(why);
  const int dk = p.key_head_dim, dv = p.value_head_dim, hv = p.num_value_heads, hk = p.num_key_heads;
  const int ratio = hv / hk;
  const Reader rd{p.dtype};
  LinearAttentionRef r;
  r.out.assign(size_t(p.num_seqs) * hv * dv, 0.0);
  r.state.assign(size_t(p.num_seqs) * size_t(linear_attention_state_elems(hv, dk, dv)), 0.0);
  std::vector<double> fq(static_cast<size_t>(dk)), fk(static_cast<size_t>(dk));
  for (int s = 0; s < p.num_seqs; ++s) {
    for (int h = 0; h < hv; ++h) {
      const size_t qk_row = (size_t(s) * hk + h / ratio) * dk;
      for (int i = 0; i < dk; ++i) {
        fq[size_t(i)] = linear_attention_feature(p.feature_map, rd(p.q, qk_row + size_t(i)));
        fk[size_t(i)] = linear_attention_feature(p.feature_map, rd(p.k, qk_row + size_t(i)));
      }
      const double a = p.decay ? double(p.decay[size_t(s) * hv + h]) : 1.0;
      const size_t v_row = (size_t(s) * hv + h) * dv;
      const size_t st = (size_t(s) * hv + h) * dk * dv;
      for (int i = 0; i < dk; ++i) {
        for (int j = 0; j < dv; ++j) {
          const size_t e = st + size_t(i) * dv + size_t(j);
          r.state[e] = a * double(p.state[e]) + fk[size_t(i)] * rd(p.v, v_row + size_t(j));
        }
      }
      for (int j = 0; j < dv; ++j) {
        double acc = 0;
        for (int i = 0; i < dk; ++i) acc += fq[size_t(i)] * r.state[st + size_t(i) * dv + size_t(j)];
        r.out[v_row + size_t(j)] = double(p.scale) * acc;
      }
    }
  }
  return r;
}

LinearAttentionRef linear_attention_prefill_ref(const LinearAttentionPrefillParams& p, int chunk_size) {
  if (std::string why = linear_attention_prefill_problem(p); !why.empty()) throw std::invalid_argument(why);
  if (chunk_size < 1) throw std::invalid_argument("chunk_size must be >= 1");
  if (p.cu_seqlens[0] != 0 || p.cu_seqlens[p.num_seqs] != p.total_tokens)
    throw std::invalid_argument("cu_seqlens must start at 0 and end at total_tokens");
  for (int s = 0; s < p.num_seqs; ++s) {
    if (p.cu_seqlens[s + 1] < p.cu_seqlens[s]) throw std::invalid_argument("cu_seqlens must be non-decreasing");
  }
  const int dk = p.key_head_dim, dv = p.value_head_dim, hv = p.num_value_heads, hk = p.num_key_heads;
  const int ratio = hv / hk;
  const Reader rd{p.dtype};
  const size_t head_state = size_t(dk) * dv;
  LinearAttentionRef r;
  r.out.assign(size_t(p.total_tokens) * hv * dv, 0.0);
  r.state.assign(size_t(p.num_seqs) * hv * head_state, 0.0);
  const size_t C = size_t(chunk_size);
  std::vector<double> fq(C * dk), fk(C * dk), g(C);
  for (int s = 0; s < p.num_seqs; ++s) {
    for (int h = 0; h < hv; ++h) {
      double* S = r.state.data() + (size_t(s) * hv + h) * head_state;  // [dk, dv], carried over the chunks
      if (p.initial_state) {
        const float* init = p.initial_state + (size_t(s) * hv + h) * head_state;
        std::copy(init, init + head_state, S);
      }
      for (int c0 = p.cu_seqlens[s]; c0 < p.cu_seqlens[s + 1]; c0 += chunk_size) {
        const int L = std::min(chunk_size, p.cu_seqlens[s + 1] - c0);
        double G = 0;  // Σ log a over the chunk so far
        for (int t = 0; t < L; ++t) {
          const size_t tok = size_t(c0 + t);
          const size_t qk_row = (tok * hk + size_t(h / ratio)) * dk;
          for (int i = 0; i < dk; ++i) {
            fq[size_t(t) * dk + i] = linear_attention_feature(p.feature_map, rd(p.q, qk_row + size_t(i)));
            fk[size_t(t) * dk + i] = linear_attention_feature(p.feature_map, rd(p.k, qk_row + size_t(i)));
          }
          G += p.decay ? std::log(double(p.decay[tok * hv + h])) : 0.0;
          g[size_t(t)] = G;
        }
        // Outputs from the state before the chunk and the chunk's own tokens s <= t.
        for (int t = 0; t < L; ++t) {
          const double* q = fq.data() + size_t(t) * dk;
          std::vector<double> w(size_t(t) + 1);  // e^{G_t - G_s} (q_t . k_s)
          for (int u = 0; u <= t; ++u) {
            double dot = 0;
            for (int i = 0; i < dk; ++i) dot += q[i] * fk[size_t(u) * dk + i];
            w[size_t(u)] = std::exp(g[size_t(t)] - g[size_t(u)]) * dot;
          }
          const double carry = std::exp(g[size_t(t)]);
          for (int j = 0; j < dv; ++j) {
            double from_state = 0;
            for (int i = 0; i < dk; ++i) from_state += q[i] * S[size_t(i) * dv + j];
            double intra = 0;
            for (int u = 0; u <= t; ++u) intra += w[size_t(u)] * rd(p.v, (size_t(c0 + u) * hv + h) * dv + size_t(j));
            r.out[(size_t(c0 + t) * hv + h) * dv + size_t(j)] = double(p.scale) * (carry * from_state + intra);
          }
        }
        // State carried to the next chunk.
        const double gl = g[size_t(L - 1)];
        for (int i = 0; i < dk; ++i) {
          for (int j = 0; j < dv; ++j) {
            double acc = std::exp(gl) * S[size_t(i) * dv + j];
            for (int u = 0; u < L; ++u)
              acc += std::exp(gl - g[size_t(u)]) * fk[size_t(u) * dk + i] * rd(p.v, (size_t(c0 + u) * hv + h) * dv + size_t(j));
            S[size_t(i) * dv + j] = acc;
          }
        }
      }
    }
  }
  return r;
}

}  // namespace kvplan::kernels
