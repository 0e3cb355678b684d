// CPU reference of quantized-KV decode attention, and the Params check the launcher shares.
#include "kvplan/kernels/reference/quant_decode_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/kv_write_ref.h"

namespace kvplan::kernels {

#define KVPLAN_CHECK(cond, why) \
  if (!(cond)) return params_error(why, __FILE__, __LINE__)

Status check_quant_decode_params(const QuantDecodeParams& p) {
  KVPLAN_CHECK(p.num_seqs >= 0, "num_seqs must be >= 0");
  if (p.num_seqs == 0) return Status::success();
  KVPLAN_CHECK(p.q && p.out && p.context_lens, "null q, out or context_lens");
  KVPLAN_CHECK(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256,
               "head_dim=" + std::to_string(p.head_dim) + " has no instance (64, 128, 256)");
  KVPLAN_CHECK(p.num_kv_heads > 0 && p.num_q_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
               "num_q_heads=" + std::to_string(p.num_q_heads) + " must be a positive multiple of num_kv_heads=" +
                   std::to_string(p.num_kv_heads));
  if (p.kivi) {
    const KiviCache& c = p.kivi_cache;
    KVPLAN_CHECK(c.k_codes && c.v_codes && c.k_meta && c.v_meta && c.k_residual && c.v_residual, "null KIVI cache array");
    KVPLAN_CHECK(c.num_kv_heads == p.num_kv_heads && c.head_dim == p.head_dim, "kivi_cache heads/head_dim differ from Params");
    KVPLAN_CHECK(c.num_seqs >= p.num_seqs, "kivi_cache.num_seqs < num_seqs");
    KVPLAN_CHECK(c.residual_type == p.dtype, "kivi_cache.residual_type must equal dtype");
    KVPLAN_CHECK(c.group_size > 0 && c.group_size % 8 == 0 && c.head_dim % c.group_size == 0,
                 "kivi group_size must be a multiple of 8 dividing head_dim");
    KVPLAN_CHECK(c.residual_tokens >= 0 && c.max_seq_len > 0 && c.max_seq_len % c.group_size == 0,
                 "kivi residual_tokens >= 0 and max_seq_len a positive multiple of group_size");
    return Status::success();
  }
  const QuantKvCache& c = p.cache;
  KVPLAN_CHECK(c.type == CacheType::kFp8E4M3 || c.type == CacheType::kInt8 || c.type == CacheType::kInt4,
               "cache type " + std::string(cache_type_name(c.type)) + " is not fp8_e4m3, int8 or int4");
  KVPLAN_CHECK(c.layout == CacheLayout::kPaged, "quantized decode reads a paged cache");
  KVPLAN_CHECK(c.k_data && c.v_data && p.block_table, "null cache data or block_table");
  KVPLAN_CHECK(c.num_kv_heads == p.num_kv_heads && c.head_dim == p.head_dim, "cache heads/head_dim differ from Params");
  KVPLAN_CHECK(c.tokens_per_block > 0 && p.max_blocks_per_seq > 0, "tokens_per_block and max_blocks_per_seq must be > 0");
  if (c.type == CacheType::kFp8E4M3) KVPLAN_CHECK(c.k_scale && c.v_scale, "fp8 cache needs k_scale and v_scale");
  if (has_group_meta(c.type)) {
    KVPLAN_CHECK(c.k_meta && c.v_meta, "int8/int4 cache needs k_meta and v_meta");
    KVPLAN_CHECK(c.group_size > 0 && c.group_size % 8 == 0 && c.head_dim % c.group_size == 0,
                 "group_size must be a multiple of 8 dividing head_dim");
  }
  return Status::success();
}

std::vector<double> quant_decode_attention_ref(const QuantDecodeParams& p) {
  Status st = check_quant_decode_params(p);
  if (!st.ok()) throw std::invalid_argument(st.describe());
  const int Hq = p.num_q_heads, Hkv = p.num_kv_heads, D = p.head_dim, group = Hq / Hkv;
  std::vector<double> out(static_cast<size_t>(p.num_seqs) * Hq * D, 0.0);
  for (int s = 0; s < p.num_seqs; ++s) {
    const int L = p.context_lens[s];
    if (L < 0) throw std::invalid_argument("negative context length");
    if (p.kivi ? L > p.kivi_cache.max_seq_len : L > static_cast<int64_t>(p.max_blocks_per_seq) * p.cache.tokens_per_block) {
      throw std::invalid_argument("context length of sequence " + std::to_string(s) + " beyond its cache");
    }
    if (L == 0) continue;
    for (int kvh = 0; kvh < Hkv; ++kvh) {
      std::vector<std::vector<double>> keys, values;
      for (int t = 0; t < L; ++t) {
        if (p.kivi) {
          keys.push_back(kivi_dequantize_token(p.kivi_cache, true, s, kvh, t, L));
          values.push_back(kivi_dequantize_token(p.kivi_cache, false, s, kvh, t, L));
        } else {
          const int32_t block = p.block_table[static_cast<int64_t>(s) * p.max_blocks_per_seq + t / p.cache.tokens_per_block];
          if (block < 0 || static_cast<int64_t>(block) * p.cache.tokens_per_block >= p.cache.num_slots) {
            throw std::out_of_range("block id " + std::to_string(block) + " outside the cache");
          }
          const int64_t slot = static_cast<int64_t>(block) * p.cache.tokens_per_block + t % p.cache.tokens_per_block;
          keys.push_back(dequantize_row(p.cache, true, slot, kvh));
          values.push_back(dequantize_row(p.cache, false, slot, kvh));
        }
      }
      for (int qh = kvh * group; qh < (kvh + 1) * group; ++qh) {
        const uint16_t* q = p.q + (static_cast<int64_t>(s) * Hq + qh) * D;
        std::vector<double> score(static_cast<size_t>(L));
        double mx = -std::numeric_limits<double>::infinity();
        for (int t = 0; t < L; ++t) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += static_cast<double>(from_bits(p.dtype, q[d])) * keys[static_cast<size_t>(t)][static_cast<size_t>(d)];
          score[static_cast<size_t>(t)] = dot * p.softmax_scale;
          mx = std::max(mx, score[static_cast<size_t>(t)]);
        }
        double sum = 0;
        for (double& x : score) sum += (x = std::exp(x - mx));
        double* o = &out[(static_cast<size_t>(s) * Hq + qh) * D];
        for (int t = 0; t < L; ++t) {
          for (int d = 0; d < D; ++d) o[d] += score[static_cast<size_t>(t)] / sum * values[static_cast<size_t>(t)][static_cast<size_t>(d)];
        }
      }
    }
  }
  return out;
}

}  // namespace kvplan::kernels
