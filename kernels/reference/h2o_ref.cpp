// CPU references of h2o.h: attention plus per-token attention mass over the head-major slab, and the
// heavy-hitter + recent selection with ordered compaction.
#include "kvplan/kernels/reference/h2o_ref.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "attend_rows_ref.h"
#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {

H2ODecodeRef h2o_decode_attention_ref(const H2ODecodeParams& p) {
  const int d = p.head_dim;
  const int group = p.num_q_heads / p.num_kv_heads;
  H2ODecodeRef r;
  r.out.assign(static_cast<size_t>(p.num_seqs) * p.num_q_heads * d, 0.0);
  const size_t acc_elems = static_cast<size_t>(p.num_seqs) * p.num_kv_heads * p.max_tokens;
  r.acc_scores.assign(p.acc_scores, p.acc_scores + acc_elems);
  for (int seq = 0; seq < p.num_seqs; ++seq) {
    const int n = std::max(0, p.context_lens[seq]);
    for (int kvh = 0; kvh < p.num_kv_heads; ++kvh) {
      const size_t slab = static_cast<size_t>(seq) * p.num_kv_heads + kvh;
      std::vector<double> k(static_cast<size_t>(n) * d), v(k.size());
      for (size_t e = 0; e < k.size(); ++e) {
        k[e] = from_bits(p.dtype, p.k_cache[slab * p.max_tokens * d + e]);
        v[e] = from_bits(p.dtype, p.v_cache[slab * p.max_tokens * d + e]);
      }
      std::vector<double> mass(static_cast<size_t>(n), 0.0), probs;
      for (int g = 0; g < group; ++g) {
        const int qh = kvh * group + g;
        std::vector<double> q(static_cast<size_t>(d));
        for (int c = 0; c < d; ++c) q[c] = from_bits(p.dtype, p.q[(static_cast<size_t>(seq) * p.num_q_heads + qh) * d + c]);
        ref_detail::attend_rows(q.data(), k, v, n, d, p.softmax_scale,
                                r.out.data() + (static_cast<size_t>(seq) * p.num_q_heads + qh) * d, &probs);
        for (int t = 0; t < n; ++t) mass[t] += probs[t];
      }
      for (int t = 0; t < n; ++t) r.acc_scores[slab * p.max_tokens + t] += mass[t];
    }
  }
  return r;
}

std::vector<int> h2o_kept_positions(const float* scores, int len, int budget_tokens, int recent_tokens) {
  std::vector<int> kept;
  if (len <= budget_tokens) {
    kept.resize(static_cast<size_t>(std::max(len, 0)));
    std::iota(kept.begin(), kept.end(), 0);
    return kept;
  }
  const int num_old = len - recent_tokens;
  std::vector<int> order(static_cast<size_t>(num_old));
  std::iota(order.begin(), order.end(), 0);
  // Descending score, ties to the lower position: the strict total order of h2o.h.
  std::sort(order.begin(), order.end(), [scores](int a, int b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  kept.assign(order.begin(), order.begin() + (budget_tokens - recent_tokens));
  for (int t = num_old; t < len; ++t) kept.push_back(t);
  std::sort(kept.begin(), kept.end());
  return kept;
}

H2OEvictRef h2o_evict_ref(const H2OEvictParams& p) {
  const size_t d = static_cast<size_t>(p.head_dim);
  const size_t slabs = static_cast<size_t>(p.num_seqs) * p.num_kv_heads;
  const size_t rows = slabs * p.max_tokens;
  H2OEvictRef r;
  r.k = p.k_out ? std::vector<uint16_t>(p.k_out, p.k_out + rows * d) : std::vector<uint16_t>(rows * d, 0);
  r.v = p.v_out ? std::vector<uint16_t>(p.v_out, p.v_out + rows * d) : std::vector<uint16_t>(rows * d, 0);
  r.scores = p.scores_out ? std::vector<float>(p.scores_out, p.scores_out + rows) : std::vector<float>(rows, 0.f);
  r.new_context_lens.assign(static_cast<size_t>(p.num_seqs), 0);
  for (int seq = 0; seq < p.num_seqs; ++seq) {
    const int len = std::min(std::max(0, p.context_lens[seq]), p.max_tokens);
    for (int kvh = 0; kvh < p.num_kv_heads; ++kvh) {
      const size_t slab = static_cast<size_t>(seq) * p.num_kv_heads + kvh;
      const float* sc = p.scores_in + slab * p.max_tokens;
      const std::vector<int> kept = h2o_kept_positions(sc, len, p.budget_tokens, p.recent_tokens);
      for (size_t j = 0; j < kept.size(); ++j) {
        const size_t src = slab * p.max_tokens + static_cast<size_t>(kept[j]);
        const size_t dst = slab * p.max_tokens + j;
        std::copy_n(p.k_in + src * d, d, r.k.begin() + static_cast<long>(dst * d));
        std::copy_n(p.v_in + src * d, d, r.v.begin() + static_cast<long>(dst * d));
        r.scores[dst] = sc[kept[j]];
      }
      r.new_context_lens[seq] = static_cast<int32_t>(kept.size());
    }
  }
  return r;
}

}  // namespace kvplan::kernels
