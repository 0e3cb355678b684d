// Internal to kernels/reference: softmax attention of one query over n rows already in double, the
// core the scheme references (window_attention_ref, h2o_ref, low_rank_ref) share.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kvplan::kernels::ref_detail {

// q: [d]; k, v: [n, d]. Writes out[0, d) (0 when n == 0) and, when probs is non-null, the n softmax
// probabilities. Returns log(sum exp(score)) (-inf when n == 0).
inline double attend_rows(const double* q, const std::vector<double>& k, const std::vector<double>& v, int n, int d,
                          double scale, double* out, std::vector<double>* probs = nullptr) {
  std::fill(out, out + d, 0.0);
  if (probs) probs->assign(static_cast<size_t>(std::max(n, 0)), 0.0);
  if (n <= 0) return -std::numeric_limits<double>::infinity();
  std::vector<double> s(static_cast<size_t>(n));
  double mx = -std::numeric_limits<double>::infinity();
  for (int t = 0; t < n; ++t) {
    double dot = 0;
    for (int i = 0; i < d; ++i) dot += q[i] * k[static_cast<size_t>(t) * d + i];
    s[t] = scale * dot;
    mx = std::max(mx, s[t]);
  }
  double sum = 0;
  for (int t = 0; t < n; ++t) {
    s[t] = std::exp(s[t] - mx);
    sum += s[t];
  }
  for (int t = 0; t < n; ++t) {
    const double w = s[t] / sum;
    if (probs) (*probs)[t] = w;
    for (int i = 0; i < d; ++i) out[i] += w * v[static_cast<size_t>(t) * d + i];
  }
  return mx + std::log(sum);
}

}  // namespace kvplan::kernels::ref_detail
