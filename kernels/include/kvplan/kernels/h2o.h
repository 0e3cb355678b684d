// kvplan/kernels/h2o.h — H2O (Zhang et al. 2023, "Heavy-Hitter Oracle") decode attention that also
// accumulates each cached token's attention mass, and the eviction kernel that keeps heavy hitters
// plus a recent window within a budget and compacts the cache.
//
//   launch_h2o_decode_attention(dp, stream);   // out, and acc_scores += this step's attention mass
//   launch_h2o_evict(ep, stream);              // keep min(len, budget) tokens per KV head, compacted
//
// Layout: a contiguous per-sequence cache, head-major, [num_seqs, num_kv_heads, max_tokens,
// head_dim] (not paged: compaction moves tokens, and within one (sequence, KV head) slab it is a
// plain ordered copy). Eviction is per KV head (each head keeps its own token set, as in H2O); every
// head of a sequence keeps the same number of tokens, so one length per sequence suffices.
//
// Decode: out as decode_attention.h over tokens [0, len). Then, for every token t < len of KV head
// h, acc_scores[s, h, t] += sum over the query heads qh of h's group of softmax_qh(t) (the full,
// normalized probability). Atomic-free and deterministic: a second kernel recomputes the scores,
// each token owned by exactly one thread (lane 0 of its lane group), which sums the group's heads
// in head order and does one read-modify-write; probabilities use the final log-sum-exp the
// attention kernel writes to `lse` (merged over splits).
//
// Eviction (per sequence s, KV head h, len = context_lens[s], B = budget_tokens, R = recent_tokens):
// if len <= B every token is kept. Otherwise the R most recent tokens [len - R, len) are kept, plus
// the B - R tokens of [0, len - R) ranked first by accumulated score, descending; equal scores rank
// the lower position first (rank(t) = #{u : score_u > score_t or (score_u == score_t and u < t)},
// a strict total order, so exactly B - R are chosen whatever the scores). Kept tokens keep their
// relative order: token t goes to slot (number of kept tokens before t). K, V and the accumulated
// scores are compacted OUT OF PLACE into k_out, v_out, scores_out (must not alias the inputs: a
// parallel in-place compaction would race; engines ping-pong two buffers), new length min(len, B).
// Slots >= the new length of the outputs are left untouched. Scores must be finite (not NaN).
// Cost: one CTA per (sequence, KV head), O(c^2 / 256) comparisons for c = len - R candidates (fine
// for evicting from a budget plus a few tokens; not meant for c in the tens of thousands).
#pragma once

#include <cstdint>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

struct H2ODecodeParams {
  ElemType dtype = ElemType::kBF16;  // of q, k_cache, v_cache, out
  int num_seqs = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;    // 64, 128 or 256
  int max_tokens = 0;  // capacity of each (sequence, KV head) slab
  float softmax_scale = 0.f;

  const uint16_t* q = nullptr;            // [num_seqs, num_q_heads, head_dim]
  const uint16_t* k_cache = nullptr;      // [num_seqs, num_kv_heads, max_tokens, head_dim]
  const uint16_t* v_cache = nullptr;      // [num_seqs, num_kv_heads, max_tokens, head_dim]
  const int32_t* context_lens = nullptr;  // [num_seqs], each in [0, max_tokens]
  uint16_t* out = nullptr;                // [num_seqs, num_q_heads, head_dim]
  float* acc_scores = nullptr;            // [num_seqs, num_kv_heads, max_tokens]; [.., t < len] updated in place

  int num_splits = 1;
  float* lse = nullptr;                   // [num_seqs, num_splits, num_q_heads] workspace, always required
  float* partial_out = nullptr;           // [num_seqs, num_splits, num_q_heads, head_dim] (num_splits > 1)
};

struct H2OEvictParams {
  int num_seqs = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // a multiple of 8 (rows move as 16-byte vectors)
  int max_tokens = 0;
  int budget_tokens = 0;  // B >= 1
  int recent_tokens = 0;  // R in [0, B]

  const uint16_t* k_in = nullptr;         // [num_seqs, num_kv_heads, max_tokens, head_dim] (16-bit, any type)
  const uint16_t* v_in = nullptr;         // [num_seqs, num_kv_heads, max_tokens, head_dim]
  const float* scores_in = nullptr;       // [num_seqs, num_kv_heads, max_tokens]
  const int32_t* context_lens = nullptr;  // [num_seqs], each in [0, max_tokens]
  uint16_t* k_out = nullptr;              // [num_seqs, num_kv_heads, max_tokens, head_dim]
  uint16_t* v_out = nullptr;              // [num_seqs, num_kv_heads, max_tokens, head_dim]
  float* scores_out = nullptr;            // [num_seqs, num_kv_heads, max_tokens]
  int32_t* new_context_lens = nullptr;    // [num_seqs]: min(len, budget_tokens)
};

constexpr int h2o_kept_tokens(int len, int budget_tokens) { return len < budget_tokens ? len : budget_tokens; }

// The attention kernel (out, lse; partials + combine when split), then the accumulation kernel.
Status launch_h2o_decode_attention(const H2ODecodeParams& p, Stream stream);
Status launch_h2o_evict(const H2OEvictParams& p, Stream stream);

}  // namespace kvplan::kernels
