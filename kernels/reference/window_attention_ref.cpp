// CPU reference of window_attention.h: gathers the attended tokens (window_span) through the block
// table, rotates q and k at cache positions when rotary_dim > 0, then plain softmax attention.
#include "kvplan/kernels/reference/window_attention_ref.h"

#include <cmath>
#include <cstddef>
#include <vector>

#include "attend_rows_ref.h"
#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {

void rotary_ref(double* x, int rotary_dim, double theta, double position) {
  const int half = rotary_dim / 2;
  for (int j = 0; j < half; ++j) {
    const double angle = position * std::pow(theta, -2.0 * j / rotary_dim);
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = x[j], b = x[j + half];
    x[j] = a * c - b * s;
    x[j + half] = b * c + a * s;
  }
}

std::vector<double> window_decode_attention_ref(const WindowDecodeParams& p) {
  const int d = p.head_dim;
  const int group = p.num_q_heads / p.num_kv_heads;
  std::vector<double> out(static_cast<size_t>(p.num_seqs) * p.num_q_heads * d, 0.0);
  for (int seq = 0; seq < p.num_seqs; ++seq) {
    const WindowSpan span = window_span(p.context_lens[seq], p.sink_tokens, p.window_tokens);
    const int n = span.count;
    for (int kvh = 0; kvh < p.num_kv_heads; ++kvh) {
      std::vector<double> k(static_cast<size_t>(n) * d), v(k.size());
      for (int i = 0; i < n; ++i) {
        const int t = window_token(span, i);
        const int32_t block = p.block_table[static_cast<size_t>(seq) * p.max_blocks_per_seq + t / p.tokens_per_block];
        const size_t row = ((static_cast<size_t>(block) * p.num_kv_heads + kvh) * p.tokens_per_block + t % p.tokens_per_block) * d;
        for (int c = 0; c < d; ++c) {
          k[static_cast<size_t>(i) * d + c] = from_bits(p.dtype, p.k_cache[row + c]);
          v[static_cast<size_t>(i) * d + c] = from_bits(p.dtype, p.v_cache[row + c]);
        }
        if (p.rotary_dim > 0) rotary_ref(k.data() + static_cast<size_t>(i) * d, p.rotary_dim, p.rope_theta, i);
      }
      for (int g = 0; g < group; ++g) {
        const int qh = kvh * group + g;
        std::vector<double> q(static_cast<size_t>(d));
        for (int c = 0; c < d; ++c) q[c] = from_bits(p.dtype, p.q[(static_cast<size_t>(seq) * p.num_q_heads + qh) * d + c]);
        if (p.rotary_dim > 0) rotary_ref(q.data(), p.rotary_dim, p.rope_theta, n > 0 ? n - 1 : 0);
        ref_detail::attend_rows(q.data(), k, v, n, d, p.softmax_scale,
                                out.data() + (static_cast<size_t>(seq) * p.num_q_heads + qh) * d);
      }
    }
  }
  return out;
}

}  // namespace kvplan::kernels
