// kvplan/kernels/reference/kv_write_ref.h — CPU references of launch_kv_write and launch_kivi_write
// (the same Params with *host* pointers; the caches are written in place, byte for byte what the
// kernels must write), the quantization rule of kv_cache.h, and dequantization of any stored row.
//
//   kv_write_ref(params);                               // params.cache points at host arrays
//   std::vector<double> k = dequantize_row(cache, true, slot, kv_head);
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/kernels/kv_cache.h"
#include "kvplan/kernels/kv_write.h"

namespace kvplan::kernels {

// fp16 bit patterns of one group's {scale, zero}.
struct GroupQuant {
  uint16_t scale = 0;
  uint16_t zero = 0;
};

// The rule of kv_cache.h on x[i * stride], i < n; codes[i] receives code i (0..qmax).
GroupQuant quantize_group(const float* x, int n, int stride, int qmax, uint8_t* codes);
// fp8 e4m3 code of x under `scale` (fp32 division, saturating).
uint8_t quantize_fp8(float x, float scale);

// Throw std::invalid_argument for Params the launcher rejects and std::out_of_range for a slot >=
// cache.num_slots (kv_write_ref) or a sequence growing past max_seq_len (kivi_write_ref).
// kivi_write_ref appends one token at a time: the definition the batched kernel must match.
void kv_write_ref(const KvWriteParams& p);
void kivi_write_ref(const KiviWriteParams& p);

// Dequantized K (key=true) or V row of (slot, kv_head), head_dim values.
std::vector<double> dequantize_row(const QuantKvCache& c, bool key, int64_t slot, int kv_head);
// Dequantized K or V of token t of a KIVI sequence of length `length` (code or ring, by the rule).
std::vector<double> kivi_dequantize_token(const KiviCache& c, bool key, int seq, int kv_head, int t, int length);

}  // namespace kvplan::kernels
