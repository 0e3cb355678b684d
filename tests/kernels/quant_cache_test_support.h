// tests/kernels/quant_cache_test_support.h — host storage for the quantized caches of kv_cache.h,
// sized from a shape and filled with the poison byte 0xFF, for the KV write and quantized decode
// tests (CPU and GPU).
//
//   HostQuantCache h(CacheType::kInt4, CacheLayout::kPaged, /*num_slots=*/64, /*heads=*/3, /*head_dim=*/128, /*tpb=*/16, /*group=*/32);
//   kv_write_ref(KvWriteParams{..., h.view(), ...});
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/kernels/kv_cache.h"

namespace kvplan::kernels::testing {

struct HostQuantCache {
  QuantKvCache shape;  // pointers unset; every size field filled
  std::vector<uint8_t> k_data, v_data;
  std::vector<uint16_t> k_meta, v_meta;
  std::vector<float> k_scale, v_scale;

  HostQuantCache(CacheType type, CacheLayout layout, int64_t num_slots, int num_kv_heads, int head_dim,
                 int tokens_per_block, int group_size, bool fp8_per_head = false) {
    shape.type = type;
    shape.layout = layout;
    shape.num_kv_heads = num_kv_heads;
    shape.head_dim = head_dim;
    shape.group_size = group_size;
    shape.tokens_per_block = tokens_per_block;
    shape.num_slots = num_slots;
    shape.fp8_scale_per_head = fp8_per_head;
    const int64_t rows = num_slots * num_kv_heads;
    k_data.assign(static_cast<size_t>(rows * data_row_bytes(type, head_dim)), 0xFF);
    v_data = k_data;
    if (has_group_meta(type)) {
      k_meta.assign(static_cast<size_t>(rows * meta_row_elems(type, head_dim, group_size)), 0xFFFF);
      v_meta = k_meta;
    }
    if (type == CacheType::kFp8E4M3) {
      k_scale.assign(fp8_per_head ? static_cast<size_t>(num_kv_heads) : 1u, 1.f);
      v_scale = k_scale;
    }
  }
  QuantKvCache view() {
    QuantKvCache c = shape;
    c.k_data = k_data.data();
    c.v_data = v_data.data();
    c.k_meta = k_meta.empty() ? nullptr : k_meta.data();
    c.v_meta = v_meta.empty() ? nullptr : v_meta.data();
    c.k_scale = k_scale.empty() ? nullptr : k_scale.data();
    c.v_scale = v_scale.empty() ? nullptr : v_scale.data();
    return c;
  }
};

struct HostKiviCache {
  KiviCache shape;
  std::vector<uint8_t> k_codes, v_codes;
  std::vector<uint16_t> k_meta, v_meta, k_residual, v_residual;

  HostKiviCache(ElemType type, int num_seqs, int num_kv_heads, int head_dim, int group_size, int residual_tokens,
                int max_seq_len) {
    shape.residual_type = type;
    shape.num_seqs = num_seqs;
    shape.num_kv_heads = num_kv_heads;
    shape.head_dim = head_dim;
    shape.group_size = group_size;
    shape.residual_tokens = residual_tokens;
    shape.max_seq_len = max_seq_len;
    k_codes.assign(static_cast<size_t>(kivi_code_bytes(shape)), 0xFF);
    v_codes = k_codes;
    k_meta.assign(static_cast<size_t>(kivi_key_meta_elems(shape)), 0xFFFF);
    v_meta.assign(static_cast<size_t>(kivi_value_meta_elems(shape)), 0xFFFF);
    k_residual.assign(static_cast<size_t>(kivi_residual_elems(shape)), 0xFFFF);
    v_residual = k_residual;
  }
  KiviCache view() {
    KiviCache c = shape;
    c.k_codes = k_codes.data();
    c.v_codes = v_codes.data();
    c.k_meta = k_meta.data();
    c.v_meta = v_meta.data();
    c.k_residual = k_residual.data();
    c.v_residual = v_residual.data();
    return c;
  }
};

}  // namespace kvplan::kernels::testing
