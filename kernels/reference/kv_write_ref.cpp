// CPU references of the KV write kernels, the shared Params checks, and dequantization of stored rows.
#include "kvplan/kernels/reference/kv_write_ref.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {

namespace {

#define KVPLAN_CHECK(cond, why) \
  if (!(cond)) return params_error(why, __FILE__, __LINE__)

Status check_group(int head_dim, int group_size) {
  KVPLAN_CHECK(group_size > 0 && group_size % 8 == 0 && head_dim % group_size == 0,
               "group_size=" + std::to_string(group_size) + " must be a multiple of 8 dividing head_dim=" +
                   std::to_string(head_dim));
  return Status::success();
}

void throw_if(const Status& s) {
  if (!s.ok()) throw std::invalid_argument(s.describe());
}

float stored_fp16(uint16_t h) { return fp16_to_float(h); }

// The fp32 steps of the rule, in the order the kernels use.
uint8_t code_of(float x, float zero, float scale, int qmax) {
  if (!(scale > 0.f)) return 0;
  float q = std::nearbyint((x - zero) / scale);
  q = std::fmin(std::fmax(q, 0.f), static_cast<float>(qmax));
  return static_cast<uint8_t>(q);
}

}  // namespace

GroupQuant quantize_group(const float* x, int n, int stride, int qmax, uint8_t* codes) {
  float mn = x[0], mx = x[0];
  for (int i = 1; i < n; ++i) {
    mn = std::fmin(mn, x[static_cast<size_t>(i) * stride]);
    mx = std::fmax(mx, x[static_cast<size_t>(i) * stride]);
  }
  GroupQuant g;
  g.scale = float_to_fp16((mx - mn) / static_cast<float>(qmax));
  g.zero = float_to_fp16(mn);
  const float scale = stored_fp16(g.scale), zero = stored_fp16(g.zero);
  for (int i = 0; i < n; ++i) codes[i] = code_of(x[static_cast<size_t>(i) * stride], zero, scale, qmax);
  return g;
}

uint8_t quantize_fp8(float x, float scale) { return float_to_fp8_e4m3(x / scale); }

Status check_kv_write_params(const KvWriteParams& p) {
  const QuantKvCache& c = p.cache;
  KVPLAN_CHECK(p.num_tokens >= 0, "num_tokens must be >= 0");
  if (p.num_tokens == 0) return Status::success();
  KVPLAN_CHECK(p.k_new && p.v_new && p.slot_mapping && c.k_data && c.v_data, "null k_new, v_new, slot_mapping or cache data");
  KVPLAN_CHECK(c.num_kv_heads > 0, "num_kv_heads must be > 0");
  KVPLAN_CHECK(c.head_dim > 0 && c.head_dim % 8 == 0, "head_dim=" + std::to_string(c.head_dim) + " must be a positive multiple of 8");
  KVPLAN_CHECK(c.num_slots > 0, "cache.num_slots must be > 0");
  KVPLAN_CHECK(c.layout == CacheLayout::kContiguous || c.tokens_per_block > 0, "paged cache needs tokens_per_block > 0");
  switch (c.type) {
    case CacheType::kBF16:
    case CacheType::kFP16:
      KVPLAN_CHECK((c.type == CacheType::kBF16) == (p.dtype == ElemType::kBF16), "a 16-bit cache must have the type of k_new");
      break;
    case CacheType::kFp8E4M3:
      KVPLAN_CHECK(c.k_scale && c.v_scale, "fp8 cache needs k_scale and v_scale");
      break;
    case CacheType::kInt8:
    case CacheType::kInt4: {
      KVPLAN_CHECK(c.k_meta && c.v_meta, "int8/int4 cache needs k_meta and v_meta");
      Status s = check_group(c.head_dim, c.group_size);
      if (!s.ok()) return s;
      break;
    }
    case CacheType::kKivi2:
      return params_error("kKivi2 caches are written by launch_kivi_write", __FILE__, __LINE__);
  }
  return Status::success();
}

Status check_kivi_write_params(const KiviWriteParams& p) {
  const KiviCache& c = p.cache;
  KVPLAN_CHECK(c.num_seqs >= 0 && p.num_new_tokens >= 0, "num_seqs and num_new_tokens must be >= 0");
  if (c.num_seqs == 0) return Status::success();
  KVPLAN_CHECK(p.new_token_offsets && p.context_lens_before, "null new_token_offsets or context_lens_before");
  KVPLAN_CHECK(p.num_new_tokens == 0 || (p.k_new && p.v_new), "null k_new or v_new");
  KVPLAN_CHECK(c.k_codes && c.v_codes && c.k_meta && c.v_meta && c.k_residual && c.v_residual, "null KIVI cache array");
  KVPLAN_CHECK(c.num_kv_heads > 0, "num_kv_heads must be > 0");
  KVPLAN_CHECK(c.head_dim > 0 && c.head_dim % 8 == 0, "head_dim=" + std::to_string(c.head_dim) + " must be a positive multiple of 8");
  Status s = check_group(c.head_dim, c.group_size);
  if (!s.ok()) return s;
  KVPLAN_CHECK(c.residual_tokens >= 0, "residual_tokens must be >= 0");
  KVPLAN_CHECK(c.max_seq_len > 0 && c.max_seq_len % c.group_size == 0, "max_seq_len must be a positive multiple of group_size");
  return Status::success();
}

void kv_write_ref(const KvWriteParams& p) {
  throw_if(check_kv_write_params(p));
  const QuantKvCache& c = p.cache;
  const int H = c.num_kv_heads, D = c.head_dim;
  std::vector<float> x(static_cast<size_t>(D));
  std::vector<uint8_t> codes(static_cast<size_t>(D));
  for (int t = 0; t < p.num_tokens; ++t) {
    const int64_t slot = p.slot_mapping[t];
    if (slot < 0) continue;
    if (slot >= c.num_slots) throw std::out_of_range("slot " + std::to_string(slot) + " of token " + std::to_string(t) + " >= num_slots");
    for (int kv = 0; kv < 2; ++kv) {
      const uint16_t* src = kv == 0 ? p.k_new : p.v_new;
      for (int h = 0; h < H; ++h) {
        const uint16_t* in = src + (static_cast<int64_t>(t) * H + h) * D;
        for (int d = 0; d < D; ++d) x[static_cast<size_t>(d)] = from_bits(p.dtype, in[d]);
        const int64_t row = cache_row(c, slot, h);
        uint8_t* data = static_cast<uint8_t*>(kv == 0 ? c.k_data : c.v_data) + row * data_row_bytes(c.type, D);
        switch (c.type) {
          case CacheType::kBF16:
          case CacheType::kFP16:
            std::copy(in, in + D, reinterpret_cast<uint16_t*>(data));
            break;
          case CacheType::kFp8E4M3: {
            const float* scale = kv == 0 ? c.k_scale : c.v_scale;
            const float s = scale[c.fp8_scale_per_head ? h : 0];
            for (int d = 0; d < D; ++d) data[d] = quantize_fp8(x[static_cast<size_t>(d)], s);
            break;
          }
          case CacheType::kInt8:
          case CacheType::kInt4: {
            uint16_t* meta = (kv == 0 ? c.k_meta : c.v_meta) + row * meta_row_elems(c.type, D, c.group_size);
            const int G = c.group_size;
            for (int g = 0; g < D / G; ++g) {
              GroupQuant gq = quantize_group(&x[static_cast<size_t>(g) * G], G, 1, max_code(c.type), &codes[static_cast<size_t>(g) * G]);
              meta[2 * g] = gq.scale;
              meta[2 * g + 1] = gq.zero;
            }
            if (c.type == CacheType::kInt8) {
              std::copy(codes.begin(), codes.end(), data);
            } else {
              for (int j = 0; j < D / 2; ++j) data[j] = static_cast<uint8_t>(codes[2 * j] | (codes[2 * j + 1] << 4));
            }
            break;
          }
          case CacheType::kKivi2:
            break;  // rejected by the check
        }
      }
    }
  }
}

namespace {

// Quantizes tokens [g*G, g*G+G) of (seq, head), K and V, from the ring.
void kivi_flush_group(const KiviCache& c, int seq, int h, int g) {
  const int G = c.group_size, D = c.head_dim;
  std::vector<float> x(static_cast<size_t>(G) * D);
  std::vector<uint8_t> codes(static_cast<size_t>(G) * D);
  for (int kv = 0; kv < 2; ++kv) {
    const uint16_t* ring = kv == 0 ? c.k_residual : c.v_residual;
    for (int i = 0; i < G; ++i) {
      const uint16_t* row = ring + kivi_residual_offset(c, seq, h, g * G + i);
      for (int d = 0; d < D; ++d) x[static_cast<size_t>(i) * D + d] = from_bits(c.residual_type, row[d]);
    }
    if (kv == 0) {  // keys: per channel over the G tokens
      for (int d = 0; d < D; ++d) {
        std::vector<uint8_t> ch(static_cast<size_t>(G));
        GroupQuant gq = quantize_group(&x[static_cast<size_t>(d)], G, D, kKivi2MaxCode, ch.data());
        uint16_t* meta = c.k_meta + kivi_key_meta_offset(c, seq, h, g * G, d);
        meta[0] = gq.scale;
        meta[1] = gq.zero;
        for (int i = 0; i < G; ++i) codes[static_cast<size_t>(i) * D + d] = ch[static_cast<size_t>(i)];
      }
    } else {  // values: per token over groups of G channels
      for (int i = 0; i < G; ++i) {
        for (int cg = 0; cg < D / G; ++cg) {
          const size_t at = static_cast<size_t>(i) * D + static_cast<size_t>(cg) * G;
          GroupQuant gq = quantize_group(&x[at], G, 1, kKivi2MaxCode, &codes[at]);
          uint16_t* meta = c.v_meta + kivi_value_meta_offset(c, seq, h, g * G + i, cg * G);
          meta[0] = gq.scale;
          meta[1] = gq.zero;
        }
      }
    }
    uint8_t* out = kv == 0 ? c.k_codes : c.v_codes;
    for (int i = 0; i < G; ++i) {
      uint8_t* row = out + kivi_code_offset(c, seq, h, g * G + i);
      for (int j = 0; j < D / 4; ++j) {
        const uint8_t* q = &codes[static_cast<size_t>(i) * D + 4 * static_cast<size_t>(j)];
        row[j] = static_cast<uint8_t>(q[0] | (q[1] << 2) | (q[2] << 4) | (q[3] << 6));
      }
    }
  }
}

}  // namespace

void kivi_write_ref(const KiviWriteParams& p) {
  throw_if(check_kivi_write_params(p));
  const KiviCache& c = p.cache;
  const int H = c.num_kv_heads, D = c.head_dim, G = c.group_size, R = c.residual_tokens;
  for (int s = 0; s < c.num_seqs; ++s) {
    const int first = p.new_token_offsets[s], last = p.new_token_offsets[s + 1];
    if (first < 0 || last < first || last > p.num_new_tokens) {
      throw std::invalid_argument("new_token_offsets of sequence " + std::to_string(s) + " out of order or range");
    }
    int length = p.context_lens_before[s];
    if (length < 0 || length + (last - first) > c.max_seq_len) {
      throw std::out_of_range("sequence " + std::to_string(s) + " would exceed max_seq_len");
    }
    int quantized = kivi_quantized_tokens(length, R, G);
    for (int i = first; i < last; ++i, ++length) {
      for (int h = 0; h < H; ++h) {
        const int64_t in = (static_cast<int64_t>(i) * H + h) * D;
        std::copy(p.k_new + in, p.k_new + in + D, c.k_residual + kivi_residual_offset(c, s, h, length));
        std::copy(p.v_new + in, p.v_new + in + D, c.v_residual + kivi_residual_offset(c, s, h, length));
      }
      if (length + 1 - quantized == R + G) {  // the ring is full: its oldest G tokens become one group
        for (int h = 0; h < H; ++h) kivi_flush_group(c, s, h, quantized / G);
        quantized += G;
      }
    }
  }
}

std::vector<double> dequantize_row(const QuantKvCache& c, bool key, int64_t slot, int kv_head) {
  const int D = c.head_dim;
  const int64_t row = cache_row(c, slot, kv_head);
  const uint8_t* data = static_cast<const uint8_t*>(key ? c.k_data : c.v_data) + row * data_row_bytes(c.type, D);
  std::vector<double> out(static_cast<size_t>(D));
  for (int d = 0; d < D; ++d) {
    double v = 0;
    switch (c.type) {
      case CacheType::kBF16:
      case CacheType::kFP16:
        v = from_bits(c.type == CacheType::kBF16 ? ElemType::kBF16 : ElemType::kFP16, reinterpret_cast<const uint16_t*>(data)[d]);
        break;
      case CacheType::kFp8E4M3: {
        const float* scale = key ? c.k_scale : c.v_scale;
        v = static_cast<double>(fp8_e4m3_to_float(data[d])) * scale[c.fp8_scale_per_head ? kv_head : 0];
        break;
      }
      case CacheType::kInt8:
      case CacheType::kInt4: {
        const uint16_t* meta = (key ? c.k_meta : c.v_meta) + row * meta_row_elems(c.type, D, c.group_size);
        const int g = d / c.group_size;
        const int code = c.type == CacheType::kInt8 ? data[d] : (data[d / 2] >> (4 * (d % 2))) & 0xF;
        v = code * static_cast<double>(fp16_to_float(meta[2 * g])) + fp16_to_float(meta[2 * g + 1]);
        break;
      }
      case CacheType::kKivi2:
        throw std::invalid_argument("dequantize_row: KIVI caches are read with kivi_dequantize_token");
    }
    out[static_cast<size_t>(d)] = v;
  }
  return out;
}

std::vector<double> kivi_dequantize_token(const KiviCache& c, bool key, int seq, int kv_head, int t, int length) {
  const int D = c.head_dim;
  std::vector<double> out(static_cast<size_t>(D));
  if (t >= kivi_quantized_tokens(length, c.residual_tokens, c.group_size)) {
    const uint16_t* row = (key ? c.k_residual : c.v_residual) + kivi_residual_offset(c, seq, kv_head, t);
    for (int d = 0; d < D; ++d) out[static_cast<size_t>(d)] = from_bits(c.residual_type, row[d]);
    return out;
  }
  const uint8_t* codes = (key ? c.k_codes : c.v_codes) + kivi_code_offset(c, seq, kv_head, t);
  for (int d = 0; d < D; ++d) {
    const int code = (codes[d / 4] >> (2 * (d % 4))) & 3;
    const uint16_t* meta = key ? c.k_meta + kivi_key_meta_offset(c, seq, kv_head, t, d)
                               : c.v_meta + kivi_value_meta_offset(c, seq, kv_head, t, d);
    out[static_cast<size_t>(d)] = code * static_cast<double>(fp16_to_float(meta[0])) + fp16_to_float(meta[1]);
  }
  return out;
}

}  // namespace kvplan::kernels
