// CPU reference of causal (chunked) prefill attention. Written for clarity, not speed: one query row
// at a time, every key it may see, softmax and weighted sum in double.
#include "kvplan/kernels/reference/prefill_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {

std::vector<double> prefill_attention_ref(const PrefillAttentionParams& p) {
  if (const std::string problem = prefill_attention_params_problem(p); !problem.empty())
    throw std::invalid_argument("prefill_attention_ref: " + problem);
  if (p.cu_seqlens[0] != 0 || p.cu_seqlens[p.num_seqs] != p.total_q_tokens)
    throw std::invalid_argument("prefill_attention_ref: cu_seqlens must start at 0 and end at total_q_tokens");

  const int d = p.head_dim;
  const int group = p.num_q_heads / p.num_kv_heads;
  const size_t q_row = static_cast<size_t>(p.num_q_heads) * d;
  const size_t kv_row = static_cast<size_t>(p.num_kv_heads) * d;
  auto load = [&](const uint16_t* base, size_t index) { return static_cast<double>(from_bits(p.dtype, base[index])); };

  std::vector<double> out(static_cast<size_t>(p.total_q_tokens) * q_row, 0.0);
  std::vector<double> scores;
  std::vector<double> acc(static_cast<size_t>(d));
  for (int s = 0; s < p.num_seqs; ++s) {
    const int begin = p.cu_seqlens[s];
    const int len = p.cu_seqlens[s + 1] - begin;
    if (len < 0 || len > p.max_seqlen_q)
      throw std::invalid_argument("prefill_attention_ref: sequence " + std::to_string(s) + " has " +
                                  std::to_string(len) + " new tokens, outside [0, max_seqlen_q]");
    const int prefix = p.prefix_lens ? p.prefix_lens[s] : 0;
    if (prefix < 0 || (prefix > 0 && prefix > static_cast<int64_t>(p.max_blocks_per_seq) * p.tokens_per_block))
      throw std::invalid_argument("prefill_attention_ref: prefix_len " + std::to_string(prefix) + " of sequence " +
                                  std::to_string(s) + " does not fit its block-table row");
    // Element index of key/value at absolute position `pos`, KV head `kvh`, channel 0.
    auto kv_index = [&](int pos, int kvh, bool* from_cache) -> size_t {
      if (pos < prefix) {
        *from_cache = true;
        const int32_t block = p.block_table[static_cast<size_t>(s) * p.max_blocks_per_seq + pos / p.tokens_per_block];
        if (block < 0 || block >= p.num_blocks)
          throw std::out_of_range("prefill_attention_ref: block id " + std::to_string(block) + " outside [0, " +
                                  std::to_string(p.num_blocks) + ")");
        return ((static_cast<size_t>(block) * p.num_kv_heads + kvh) * p.tokens_per_block + pos % p.tokens_per_block) * d;
      }
      *from_cache = false;
      return static_cast<size_t>(begin + pos - prefix) * kv_row + static_cast<size_t>(kvh) * d;
    };
    for (int h = 0; h < p.num_q_heads; ++h) {
      const int kvh = h / group;
      for (int i = 0; i < len; ++i) {
        const size_t q_base = static_cast<size_t>(begin + i) * q_row + static_cast<size_t>(h) * d;
        const int visible = prefix + i + 1;  // absolute positions 0 .. prefix + i
        scores.assign(static_cast<size_t>(visible), 0.0);
        double max_score = -INFINITY;
        for (int pos = 0; pos < visible; ++pos) {
          bool cached = false;
          const size_t k_base = kv_index(pos, kvh, &cached);
          const uint16_t* kp = cached ? p.k_cache : p.k;
          double dot = 0;
          for (int c = 0; c < d; ++c) dot += load(p.q, q_base + c) * load(kp, k_base + c);
          scores[pos] = dot * static_cast<double>(p.softmax_scale);
          max_score = std::max(max_score, scores[pos]);
        }
        double sum = 0;
        for (double& sc : scores) {
          sc = std::exp(sc - max_score);
          sum += sc;
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int pos = 0; pos < visible; ++pos) {
          bool cached = false;
          const size_t v_base = kv_index(pos, kvh, &cached);
          const uint16_t* vp = cached ? p.v_cache : p.v;
          for (int c = 0; c < d; ++c) acc[c] += scores[pos] * load(vp, v_base + c);
        }
        for (int c = 0; c < d; ++c) out[q_base + c] = acc[c] / sum;
      }
    }
  }
  return out;
}

}  // namespace kvplan::kernels
