// CPU references for MLA decode (absorbed, paged latent cache, 16-bit or fp8) and MLA prefill
// (non-absorbed, causal, varlen). Straight loops in double: the specification the kernels match.
#include "kvplan/kernels/reference/mla_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Attention of every head of `seq` over tokens [begin, end) of its latent: writes the normalized
// out_latent of head h at out[h * kv_lora_rank ...] (0 if empty) and lse[h] (-inf if empty).
void attend_latent(const MlaDecodeParams& p, int seq, int begin, int end, double* out, double* lse) {
  const int r = p.kv_lora_rank;
  const int row = p.kv_lora_rank + p.rope_dim;
  std::vector<double> scores(static_cast<size_t>(std::max(end - begin, 0)));
  std::vector<double> latent(static_cast<size_t>(std::max(end - begin, 0)) * row);
  for (int t = begin; t < end; ++t) {
    const int32_t block = p.block_table[static_cast<size_t>(seq) * p.max_blocks_per_seq + t / p.tokens_per_block];
    const int64_t slot = int64_t{block} * p.tokens_per_block + t % p.tokens_per_block;
    for (int i = 0; i < row; ++i) latent[static_cast<size_t>(t - begin) * row + i] = mla_cache_value(p, slot, i);
  }
  for (int h = 0; h < p.num_heads; ++h) {
    double* o = out + static_cast<size_t>(h) * r;
    std::fill(o, o + r, 0.0);
    if (end <= begin) {
      lse[h] = kNegInf;
      continue;
    }
    const uint16_t* qn = p.q_nope + (static_cast<size_t>(seq) * p.num_heads + h) * r;
    const uint16_t* qr = p.q_rope + (static_cast<size_t>(seq) * p.num_heads + h) * p.rope_dim;
    double max_score = kNegInf;
    for (int t = begin; t < end; ++t) {
      const double* c = latent.data() + static_cast<size_t>(t - begin) * row;
      double dot = 0;
      for (int i = 0; i < r; ++i) dot += double(from_bits(p.dtype, qn[i])) * c[i];
      for (int i = 0; i < p.rope_dim; ++i) dot += double(from_bits(p.dtype, qr[i])) * c[r + i];
      scores[t - begin] = double(p.softmax_scale) * dot;
      max_score = std::max(max_score, scores[t - begin]);
    }
    double sum = 0;
    for (int t = begin; t < end; ++t) {
      const double w = std::exp(scores[t - begin] - max_score);
      sum += w;
      const double* c = latent.data() + static_cast<size_t>(t - begin) * row;
      for (int i = 0; i < r; ++i) o[i] += w * c[i];  // V is the latent itself (no rope part)
    }
    for (int i = 0; i < r; ++i) o[i] /= sum;
    lse[h] = max_score + std::log(sum);
  }
}

}  // namespace

double mla_cache_value(const MlaDecodeParams& p, int64_t slot, int i) {
  const int64_t at = slot * (p.kv_lora_rank + p.rope_dim) + i;
  if (p.cache_type == CacheType::kFp8E4M3) {
    const float x = fp8_e4m3_to_float(static_cast<const uint8_t*>(p.kv_cache)[at]) * p.kv_scale[0];  // fp32 product
    return double(x);
  }
  const ElemType t = p.cache_type == CacheType::kFP16 ? ElemType::kFP16 : ElemType::kBF16;
  return double(from_bits(t, static_cast<const uint16_t*>(p.kv_cache)[at]));
}

std::vector<double> mla_decode_ref(const MlaDecodeParams& p) {
  const size_t per_seq = static_cast<size_t>(p.num_heads) * p.kv_lora_rank;
  std::vector<double> out(static_cast<size_t>(p.num_seqs) * per_seq);
  std::vector<double> lse(static_cast<size_t>(p.num_heads));
  for (int s = 0; s < p.num_seqs; ++s) attend_latent(p, s, 0, p.context_lens[s], out.data() + s * per_seq, lse.data());
  return out;
}

DecodePartialsRef mla_decode_partials_ref(const MlaDecodeParams& p) {
  DecodePartialsRef r;
  r.out.resize(static_cast<size_t>(decode_partial_out_elems(p.num_seqs, p.num_splits, p.num_heads, p.kv_lora_rank)));
  r.lse.resize(static_cast<size_t>(decode_partial_lse_elems(p.num_seqs, p.num_splits, p.num_heads)));
  for (int s = 0; s < p.num_seqs; ++s) {
    for (int sp = 0; sp < p.num_splits; ++sp) {
      const DecodeSplitRange range = decode_split_range(p.context_lens[s], p.num_splits, sp);
      const size_t at = static_cast<size_t>(s) * p.num_splits + sp;
      attend_latent(p, s, range.begin, range.end, r.out.data() + at * p.num_heads * p.kv_lora_rank,
                    r.lse.data() + at * p.num_heads);
    }
  }
  return r;
}

std::vector<double> mla_prefill_ref(const MlaPrefillParams& p) {
  const int dqk = p.qk_head_dim, dv = p.v_head_dim, H = p.num_heads;
  std::vector<double> out(static_cast<size_t>(p.total_tokens) * H * dv, 0.0);
  for (int s = 0; s < p.num_seqs; ++s) {
    const int first = p.cu_seqlens[s];
    const int len = p.cu_seqlens[s + 1] - first;
    std::vector<double> scores(static_cast<size_t>(len));
    for (int h = 0; h < H; ++h) {
      for (int i = 0; i < len; ++i) {
        const uint16_t* q = p.q + (static_cast<size_t>(first + i) * H + h) * dqk;
        double max_score = kNegInf;
        for (int j = 0; j <= i; ++j) {  // causal
          const uint16_t* k = p.k + (static_cast<size_t>(first + j) * H + h) * dqk;
          double dot = 0;
          for (int c = 0; c < dqk; ++c) dot += double(from_bits(p.dtype, q[c])) * double(from_bits(p.dtype, k[c]));
          scores[j] = double(p.softmax_scale) * dot;
          max_score = std::max(max_score, scores[j]);
        }
        double* o = out.data() + (static_cast<size_t>(first + i) * H + h) * dv;
        double sum = 0;
        for (int j = 0; j <= i; ++j) {
          const double w = std::exp(scores[j] - max_score);
          sum += w;
          const uint16_t* v = p.v + (static_cast<size_t>(first + j) * H + h) * dv;
          for (int c = 0; c < dv; ++c) o[c] += w * double(from_bits(p.dtype, v[c]));
        }
        for (int c = 0; c < dv; ++c) o[c] /= sum;
      }
    }
  }
  return out;
}

}  // namespace kvplan::kernels
