// What one step asks of each KV layer group (StepShape): the decode sequences' attended tokens and
// bytes, the prefill chunks' causal (query, key) pairs, and what DeepSeek sparse attention selects,
// with windows, chunked local attention and eviction applied (step_ops.h).
#include <algorithm>
#include <limits>

#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/step_ops.h"

namespace kvplan {

int64_t causal_pairs(int64_t context, int64_t new_tokens, int64_t cap) {
  if (new_tokens <= 0) return 0;
  const int64_t a = context + 1, b = context + new_tokens;  // query positions, 1-based
  auto range_sum = [](int64_t lo, int64_t hi) { return (lo + hi) * (hi - lo + 1) / 2; };
  if (b <= cap) return range_sum(a, b);
  if (a > cap) return new_tokens * cap;
  return range_sum(a, cap) + (b - cap) * cap;
}

int64_t chunked_causal_pairs(int64_t context, int64_t new_tokens, int64_t chunk) {
  if (new_tokens <= 0) return 0;
  // Query at position p (1-based) sees ((p - 1) mod chunk) + 1 keys. S(n) sums that over 1..n.
  auto S = [chunk](int64_t n) {
    const int64_t q = n / chunk, r = n % chunk;
    return q * (chunk * (chunk + 1) / 2) + r * (r + 1) / 2;
  };
  return S(context + new_tokens) - S(context);
}

StepShapeBuilder::StepShapeBuilder(const KvLayout& layout) : layout_(&layout) {
  const KvScheme& s = layout.scheme();
  for (const KvLayerGroup& g : layout.groups()) {
    GroupRule r;
    r.per_token = holds_kv_per_token(g.kind);
    r.cap = std::numeric_limits<int64_t>::max();
    if (g.kind == LayerKind::kSlidingAttention) r.cap = std::min<int64_t>(r.cap, g.window_tokens);
    if (g.kind == LayerKind::kChunkedAttention) r.chunk = g.window_tokens;
    if (s.eviction == Eviction::kH2O) r.cap = std::min<int64_t>(r.cap, s.h2o_budget_tokens);
    if (s.eviction == Eviction::kStreaming) {
      r.cap = std::min<int64_t>(r.cap, s.sink_tokens + s.streaming_window_tokens);
    }
    r.exact_per_request = s.kv_dtype == DType::kInt2;
    r.bytes_per_token = static_cast<int64_t>(g.bytes_per_token);
    r.sparse_topk = g.sparse_topk;
    rules_.push_back(r);
  }
  reset();
}

void StepShapeBuilder::reset(int32_t decode_query_tokens) {
  std::vector<GroupStepWork> groups = std::move(shape_.groups);
  shape_ = StepShape{};
  groups.assign(rules_.size(), GroupStepWork{});
  shape_.groups = std::move(groups);
  shape_.decode_query_tokens = decode_query_tokens;
}

void StepShapeBuilder::add_decode(int64_t context_tokens) {
  shape_.decode_sequences += 1;
  shape_.emitting_sequences += 1;
  const int64_t tokens = context_tokens + shape_.decode_query_tokens;
  for (size_t g = 0; g < rules_.size(); ++g) {
    const GroupRule& r = rules_[g];
    if (!r.per_token) continue;
    GroupStepWork& w = shape_.groups[g];
    const int64_t held = std::min(r.chunk > 0 ? tokens - (tokens - 1) / r.chunk * r.chunk : tokens, r.cap);
    w.decode_tokens += held;
    w.decode_tokens_max = std::max(w.decode_tokens_max, held);
    w.decode_kv_bytes += r.exact_per_request ? layout_->layer_bytes(layout_->groups()[g], tokens)
                                             : held * r.bytes_per_token;
    if (r.sparse_topk > 0) w.sparse_decode_tokens += std::min(held, r.sparse_topk);
  }
}

void StepShapeBuilder::add_prefill(int64_t context_tokens, int64_t new_tokens, bool emits) {
  shape_.prefill_sequences += 1;
  shape_.prefill_tokens += new_tokens;
  if (emits) shape_.emitting_sequences += 1;
  for (size_t g = 0; g < rules_.size(); ++g) {
    const GroupRule& r = rules_[g];
    if (!r.per_token) continue;
    GroupStepWork& w = shape_.groups[g];
    if (r.chunk > 0) {
      w.prefill_pairs += chunked_causal_pairs(context_tokens, new_tokens, r.chunk);
      // keys read: from the start of the chunk holding the first query to the end of the chunk
      w.prefill_kv_tokens += std::min(context_tokens + new_tokens - context_tokens / r.chunk * r.chunk, r.cap);
    } else {
      w.prefill_pairs += causal_pairs(context_tokens, new_tokens, r.cap);
      w.prefill_kv_tokens += std::min(context_tokens + new_tokens, r.cap);
    }
    if (r.sparse_topk > 0) w.sparse_prefill_pairs += causal_pairs(context_tokens, new_tokens, std::min(r.cap, r.sparse_topk));
  }
}

}  // namespace kvplan
