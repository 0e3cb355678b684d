// kvplan/kernels/reference/h2o_ref.h — CPU references of h2o.h (host pointers, double accumulation).
//
//   H2ODecodeRef d = h2o_decode_attention_ref(p);   // d.out, d.acc_scores (input acc + this step's mass)
//   H2OEvictRef e = h2o_evict_ref(ep);              // compacted K, V, scores and the new lengths
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/kernels/h2o.h"

namespace kvplan::kernels {

struct H2ODecodeRef {
  std::vector<double> out;         // [num_seqs, num_q_heads, head_dim]
  std::vector<double> acc_scores;  // [num_seqs, num_kv_heads, max_tokens]: p.acc_scores + mass for t < len, else p.acc_scores
};
H2ODecodeRef h2o_decode_attention_ref(const H2ODecodeParams& p);

// Positions kept for one (sequence, KV head), increasing (the rule of h2o.h).
std::vector<int> h2o_kept_positions(const float* scores, int len, int budget_tokens, int recent_tokens);

struct H2OEvictRef {
  std::vector<uint16_t> k, v;      // [num_seqs, num_kv_heads, max_tokens, head_dim]; slots >= new length hold k_out/v_out's input (0 if null)
  std::vector<float> scores;       // [num_seqs, num_kv_heads, max_tokens]; same rule
  std::vector<int32_t> new_context_lens;  // [num_seqs]
};
// Starts from the current contents of p.k_out / p.v_out / p.scores_out when non-null (so untouched
// slots compare equal), else zeros.
H2OEvictRef h2o_evict_ref(const H2OEvictParams& p);

}  // namespace kvplan::kernels
