// CPU reference of low_rank.h in the non-absorbed form: k_t = latent_k,t U_k and v_t = latent_v,t U_v
// reconstructed per token in double, then plain softmax attention.
#include "kvplan/kernels/reference/low_rank_ref.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attend_rows_ref.h"
#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {

double low_rank_latent_ref(const LowRankDecodeParams& p, bool is_key, int seq, int kv_head, int t, int c) {
  const size_t row = (static_cast<size_t>(seq) * p.num_kv_heads + kv_head) * p.max_seq_len + t;
  if (!p.int4_latents) {
    const uint16_t* base = static_cast<const uint16_t*>(is_key ? p.k_latent : p.v_latent);
    return from_bits(p.dtype, base[row * p.rank + c]);
  }
  const uint8_t* codes = static_cast<const uint8_t*>(is_key ? p.k_latent : p.v_latent);
  const uint8_t byte = codes[row * (p.rank / 2) + c / 2];
  const int code = c % 2 == 0 ? (byte & 0xF) : (byte >> 4);
  const uint16_t* meta = (is_key ? p.k_meta : p.v_meta) + (row * (p.rank / p.group_size) + c / p.group_size) * 2;
  return code * double(fp16_to_float(meta[0])) + double(fp16_to_float(meta[1]));
}

std::vector<double> low_rank_decode_attention_ref(const LowRankDecodeParams& p) {
  const int d = p.head_dim;
  const int r = p.rank;
  const int group = p.num_q_heads / p.num_kv_heads;
  std::vector<double> out(static_cast<size_t>(p.num_seqs) * p.num_q_heads * d, 0.0);
  for (int seq = 0; seq < p.num_seqs; ++seq) {
    const int n = std::max(0, p.context_lens[seq]);
    for (int kvh = 0; kvh < p.num_kv_heads; ++kvh) {
      std::vector<double> k(static_cast<size_t>(n) * d, 0.0), v(k.size(), 0.0);
      for (int t = 0; t < n; ++t) {
        for (int j = 0; j < r; ++j) {
          const double lk = low_rank_latent_ref(p, true, seq, kvh, t, j);
          const double lv = low_rank_latent_ref(p, false, seq, kvh, t, j);
          const size_t u = (static_cast<size_t>(kvh) * r + j) * d;
          for (int c = 0; c < d; ++c) {
            k[static_cast<size_t>(t) * d + c] += lk * from_bits(p.dtype, p.u_k[u + c]);
            v[static_cast<size_t>(t) * d + c] += lv * from_bits(p.dtype, p.u_v[u + c]);
          }
        }
      }
      for (int g = 0; g < group; ++g) {
        const int qh = kvh * group + g;
        std::vector<double> q(static_cast<size_t>(d));
        for (int c = 0; c < d; ++c) q[c] = from_bits(p.dtype, p.q[(static_cast<size_t>(seq) * p.num_q_heads + qh) * d + c]);
        ref_detail::attend_rows(q.data(), k, v, n, d, p.softmax_scale,
                                out.data() + (static_cast<size_t>(seq) * p.num_q_heads + qh) * d);
      }
    }
  }
  return out;
}

}  // namespace kvplan::kernels
