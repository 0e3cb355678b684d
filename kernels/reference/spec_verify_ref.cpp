// CPU reference for speculative verification: for each query token j, paged attention over
// positions [0, context + j], in double.
#include "kvplan/kernels/reference/spec_verify_ref.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {

std::vector<double> spec_verify_ref(const SpecVerifyParams& p) {
  const int nq = p.num_draft + 1;
  const int d = p.head_dim;
  const int group = p.num_q_heads / p.num_kv_heads;
  std::vector<double> out(static_cast<size_t>(p.num_seqs) * nq * p.num_q_heads * d, 0.0);
  auto row_of = [&p](int seq, int kvh, int t) {
    const int32_t block = p.block_table[static_cast<size_t>(seq) * p.max_blocks_per_seq + t / p.tokens_per_block];
    return ((static_cast<size_t>(block) * p.num_kv_heads + kvh) * p.tokens_per_block + t % p.tokens_per_block) * p.head_dim;
  };
  for (int s = 0; s < p.num_seqs; ++s) {
    for (int j = 0; j < nq; ++j) {
      const int visible = p.context_lens[s] + j + 1;  // context plus draft tokens 0..j
      std::vector<double> scores(static_cast<size_t>(visible));
      for (int qh = 0; qh < p.num_q_heads; ++qh) {
        const int kvh = qh / group;
        const size_t qrow = (static_cast<size_t>(s) * nq + j) * p.num_q_heads + qh;
        const uint16_t* q = p.q + qrow * d;
        double max_score = -std::numeric_limits<double>::infinity();
        for (int t = 0; t < visible; ++t) {
          const uint16_t* k = p.k_cache + row_of(s, kvh, t);
          double dot = 0;
          for (int i = 0; i < d; ++i) dot += double(from_bits(p.dtype, q[i])) * double(from_bits(p.dtype, k[i]));
          scores[t] = double(p.softmax_scale) * dot;
          max_score = std::max(max_score, scores[t]);
        }
        double* o = out.data() + qrow * d;
        double sum = 0;
        for (int t = 0; t < visible; ++t) {
          const double w = std::exp(scores[t] - max_score);
          sum += w;
          const uint16_t* v = p.v_cache + row_of(s, kvh, t);
          for (int i = 0; i < d; ++i) o[i] += w * double(from_bits(p.dtype, v[i]));
        }
        for (int i = 0; i < d; ++i) o[i] /= sum;
      }
    }
  }
  return out;
}

}  // namespace kvplan::kernels
