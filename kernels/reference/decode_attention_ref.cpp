// CPU references for decode attention: one generic routine over "where is token t's K/V row", used
// by the contiguous and the paged entry points, so the two can only differ in addressing.
#include "kvplan/kernels/reference/decode_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Shape {
  ElemType dtype;
  int num_seqs, num_q_heads, num_kv_heads, head_dim;
  double scale;
  const uint16_t* q;
  const int32_t* context_lens;
};

// Attention of every query head of `seq` over tokens [begin, end): writes the normalized output
// (0 if empty) of query head qh at out[qh * head_dim ...] and returns log(sum exp(score)) per head.
// `row(t)` gives the element offset of token t's row (for this sequence and KV head) in k/v.
template <typename RowOf>
void attend(const Shape& s, const uint16_t* k, const uint16_t* v, int seq, int begin, int end, RowOf row_of,
            double* out, double* lse) {
  const int group = s.num_q_heads / s.num_kv_heads;
  const int d = s.head_dim;
  std::vector<double> scores(static_cast<size_t>(std::max(end - begin, 0)));
  for (int qh = 0; qh < s.num_q_heads; ++qh) {
    const int kvh = qh / group;
    const uint16_t* q = s.q + (static_cast<size_t>(seq) * s.num_q_heads + qh) * d;
    double* o = out + static_cast<size_t>(qh) * d;
    std::fill(o, o + d, 0.0);
    if (end <= begin) {
      lse[qh] = kNegInf;
      continue;
    }
    double max_score = kNegInf;
    for (int t = begin; t < end; ++t) {
      const uint16_t* kr = k + row_of(kvh, t);
      double dot = 0;
      for (int i = 0; i < d; ++i) dot += double(from_bits(s.dtype, q[i])) * double(from_bits(s.dtype, kr[i]));
      scores[t - begin] = s.scale * dot;
      max_score = std::max(max_score, scores[t - begin]);
    }
    double sum = 0;
    for (int t = begin; t < end; ++t) {
      const double w = std::exp(scores[t - begin] - max_score);
      sum += w;
      const uint16_t* vr = v + row_of(kvh, t);
      for (int i = 0; i < d; ++i) o[i] += w * double(from_bits(s.dtype, vr[i]));
    }
    for (int i = 0; i < d; ++i) o[i] /= sum;
    lse[qh] = max_score + std::log(sum);
  }
}

Shape shape_of(const DecodeAttentionParams& p) {
  return {p.dtype, p.num_seqs, p.num_q_heads, p.num_kv_heads, p.head_dim, p.softmax_scale, p.q, p.context_lens};
}
Shape shape_of(const PagedDecodeAttentionParams& p) {
  return {p.dtype, p.num_seqs, p.num_q_heads, p.num_kv_heads, p.head_dim, p.softmax_scale, p.q, p.context_lens};
}

auto contiguous_rows(const DecodeAttentionParams& p, int seq) {
  return [&p, seq](int kvh, int t) {
    return ((static_cast<size_t>(seq) * p.max_seq_len + t) * p.num_kv_heads + kvh) * p.head_dim;
  };
}
auto paged_rows(const PagedDecodeAttentionParams& p, int seq) {
  return [&p, seq](int kvh, int t) {
    const int32_t block = p.block_table[static_cast<size_t>(seq) * p.max_blocks_per_seq + t / p.tokens_per_block];
    return ((static_cast<size_t>(block) * p.num_kv_heads + kvh) * p.tokens_per_block + t % p.tokens_per_block) *
           p.head_dim;
  };
}

template <typename P, typename Rows>
std::vector<double> unsplit(const P& p, Rows rows) {
  const Shape s = shape_of(p);
  std::vector<double> out(static_cast<size_t>(p.num_seqs) * p.num_q_heads * p.head_dim);
  std::vector<double> lse(static_cast<size_t>(p.num_q_heads));
  for (int seq = 0; seq < p.num_seqs; ++seq) {
    attend(s, p.k_cache, p.v_cache, seq, 0, p.context_lens[seq], rows(p, seq),
           out.data() + static_cast<size_t>(seq) * p.num_q_heads * p.head_dim, lse.data());
  }
  return out;
}

template <typename P, typename Rows>
DecodePartialsRef split(const P& p, Rows rows) {
  const Shape s = shape_of(p);
  DecodePartialsRef r;
  r.out.resize(static_cast<size_t>(decode_partial_out_elems(p.num_seqs, p.num_splits, p.num_q_heads, p.head_dim)));
  r.lse.resize(static_cast<size_t>(decode_partial_lse_elems(p.num_seqs, p.num_splits, p.num_q_heads)));
  for (int seq = 0; seq < p.num_seqs; ++seq) {
    for (int sp = 0; sp < p.num_splits; ++sp) {
      const DecodeSplitRange range = decode_split_range(p.context_lens[seq], p.num_splits, sp);
      const size_t at = static_cast<size_t>(seq) * p.num_splits + sp;
      attend(s, p.k_cache, p.v_cache, seq, range.begin, range.end, rows(p, seq),
             r.out.data() + at * p.num_q_heads * p.head_dim, r.lse.data() + at * p.num_q_heads);
    }
  }
  return r;
}

}  // namespace

std::vector<double> decode_attention_ref(const DecodeAttentionParams& p) { return unsplit(p, contiguous_rows); }

std::vector<double> paged_decode_attention_ref(const PagedDecodeAttentionParams& p) { return unsplit(p, paged_rows); }

DecodePartialsRef decode_attention_partials_ref(const DecodeAttentionParams& p) { return split(p, contiguous_rows); }

DecodePartialsRef paged_decode_attention_partials_ref(const PagedDecodeAttentionParams& p) {
  return split(p, paged_rows);
}

std::vector<double> decode_attention_combine_ref(const DecodeCombineParams& p) {
  const size_t d = static_cast<size_t>(p.head_dim);
  std::vector<double> out(static_cast<size_t>(p.num_seqs) * p.num_q_heads * d, 0.0);
  for (int seq = 0; seq < p.num_seqs; ++seq) {
    for (int qh = 0; qh < p.num_q_heads; ++qh) {
      auto lse_at = [&](int sp) {
        return double(p.partial_lse[(static_cast<size_t>(seq) * p.num_splits + sp) * p.num_q_heads + qh]);
      };
      double max_lse = kNegInf;
      for (int sp = 0; sp < p.num_splits; ++sp) max_lse = std::max(max_lse, lse_at(sp));
      double* o = out.data() + (static_cast<size_t>(seq) * p.num_q_heads + qh) * d;
      if (max_lse == kNegInf) continue;  // every split empty: output 0
      double sum = 0;
      for (int sp = 0; sp < p.num_splits; ++sp) {
        if (lse_at(sp) == kNegInf) continue;  // empty split: weight 0, its partial is never read
        const double w = std::exp(lse_at(sp) - max_lse);
        sum += w;
        const float* part = p.partial_out + ((static_cast<size_t>(seq) * p.num_splits + sp) * p.num_q_heads + qh) * d;
        for (size_t i = 0; i < d; ++i) o[i] += w * double(part[i]);
      }
      for (size_t i = 0; i < d; ++i) o[i] /= sum;
    }
  }
  return out;
}

}  // namespace kvplan::kernels
