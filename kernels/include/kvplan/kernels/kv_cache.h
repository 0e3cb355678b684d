// kvplan/kernels/kv_cache.h — the exact storage of every KV cache format the kernels read and write
// (one layer, K and V), and the index arithmetic shared by the write kernels, the decode kernels and
// their CPU references.
//
//   QuantKvCache c;  c.type = CacheType::kInt4;  c.layout = CacheLayout::kPaged;  ...
//   int64_t row = cache_row(c, slot, kv_head);   // k_data + row * data_row_bytes(c), k_meta + row * meta_row_elems(c)
//
// Everything here is plain constexpr arithmetic: nvcc (--expt-relaxed-constexpr) calls it from
// device code, so kernels and references cannot disagree on an offset.
//
// ── Paged and contiguous caches (16-bit, fp8 e4m3, int8, int4): QuantKvCache ──────────────────────
// A "row" is one token of one KV head. Rows are ordered
//   paged:      [num_blocks, num_kv_heads, tokens_per_block]   slot = block_id * tokens_per_block + offset
//   contiguous: [num_seqs, max_seq_len, num_kv_heads]           slot = seq * max_seq_len + position
// so row(slot, h) = (slot / tpb * H + h) * tpb + slot % tpb (paged) or slot * H + h (contiguous).
// Data (k_data, v_data), per row:
//   kBF16 / kFP16: head_dim uint16 words           -> paged [num_blocks, num_kv_heads, tokens_per_block, head_dim]
//   kFp8E4M3:      head_dim bytes (e4m3 codes)      -> paged [num_blocks, num_kv_heads, tokens_per_block, head_dim]
//   kInt8:         head_dim bytes (uint8 codes)     -> paged [num_blocks, num_kv_heads, tokens_per_block, head_dim]
//   kInt4:         head_dim/2 bytes; byte j holds channel 2j in its low nibble and 2j+1 in its high one
//                                                   -> paged [num_blocks, num_kv_heads, tokens_per_block, head_dim/2]
// Metadata:
//   kFp8E4M3: k_scale, v_scale fp32, [1] (per tensor) or [num_kv_heads] (fp8_scale_per_head); x = fp8(code) * scale,
//             written as code = fp8_satfinite(x / scale) (division in fp32, round to nearest even).
//   kInt8 / kInt4 (asymmetric): k_meta, v_meta, per row num_groups = head_dim / group_size pairs of fp16
//             words {scale, zero}: paged [num_blocks, num_kv_heads, tokens_per_block, num_groups, 2].
//             x = code * scale + zero. Bytes per token per KV head: head_dim (int8) or head_dim/2 (int4)
//             + 4 * num_groups, exactly what core/src/kv_layout.cpp counts (vector_bytes_per_token,
//             quant_asymmetric; group_size divides head_dim so its ceil_div is exact).
//
// ── Quantization rule (int8, int4, KIVI-2; the write kernels and the references share it) ─────────
// For a group x[0..n) (fp32 values of the 16-bit inputs; inputs must be finite):
//   mn = min x, mx = max x;  scale = fp16_rn((mx - mn) / qmax);  zero = fp16_rn(mn)     (fp32 ops)
//   code_i = clamp(rint_even((x_i - zero_f) / scale_f), 0, qmax), with scale_f, zero_f the stored fp16
//   values read back as fp32 (so dequantization uses exactly what was quantized against); code 0 when
//   scale_f is 0 (a constant group). qmax = 255 (int8), 15 (int4), 3 (KIVI-2). Each step is one
//   IEEE-rounded fp32 operation (no fused multiply-add is possible in it), so GPU and CPU codes agree
//   bit for bit.
//
// ── KIVI-2 (contiguous per sequence): KiviCache ────────────────────────────────────────────────────
// Shapes, with S = max_seq_len (a multiple of G = group_size), H = num_kv_heads, D = head_dim, R =
// residual_tokens, W = R + G (residual ring capacity):
//   k_codes, v_codes  uint8  [num_seqs, H, S, D/4]     byte j of a token: channels 4j..4j+3, channel 4j+i in bits 2i..2i+1
//   k_meta            fp16   [num_seqs, H, S/G, D, 2]  {scale, zero} per channel per group of G tokens
//   v_meta            fp16   [num_seqs, H, S, D/G, 2]  {scale, zero} per token per group of G channels
//   k_residual, v_residual  16-bit [num_seqs, H, W, D] token t lives in ring slot t % W
// Write rule (KIVI's "residual then flush"): a sequence of L tokens has its first
//   Q(L) = G * floor(max(0, L - R) / G)
// tokens quantized and tokens [Q, L) in the 16-bit ring. Appending tokens one at a time: the new
// token goes to the ring; when the ring holds R + G tokens, the oldest G (one key group) are quantized
// (keys per channel over the G tokens, values per token over groups of G channels) and leave the
// ring, which then holds R. Appending n tokens at once gives exactly the state of n single appends.
// Ring slots not holding a live token, and codes/metadata at or beyond Q, are unspecified.
// Bytes: at L = R + k*G the live data is exactly core's KIVI count (min(L,R) tokens 16-bit, L-R
// tokens of 2-bit codes + per-token value metadata, ceil((L-R)/G) key metadata groups); between
// flushes up to G-1 extra tokens sit in 16-bit (kv_layout counts them as already quantized).
// Sequence s of a batch is cache row s (num_seqs rows).
#pragma once

#include <cstdint>

#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

enum class CacheLayout : uint8_t { kPaged, kContiguous };

// One layer of a 16-bit, fp8, int8 or int4 cache. Pointers are device pointers for kernels and host
// pointers for references; decode kernels only read through them.
struct QuantKvCache {
  CacheType type = CacheType::kBF16;  // kBF16, kFP16, kFp8E4M3, kInt8, kInt4
  CacheLayout layout = CacheLayout::kPaged;
  void* k_data = nullptr;  // paged [num_blocks, num_kv_heads, tokens_per_block, row bytes] (see above)
  void* v_data = nullptr;  // same as k_data
  uint16_t* k_meta = nullptr;  // int8/int4: [num_blocks, num_kv_heads, tokens_per_block, head_dim / group_size, 2] fp16
  uint16_t* v_meta = nullptr;  // same as k_meta
  const float* k_scale = nullptr;  // fp8: [1] or [num_kv_heads]
  const float* v_scale = nullptr;  // fp8: [1] or [num_kv_heads]
  bool fp8_scale_per_head = false;
  int num_kv_heads = 0;
  int head_dim = 0;
  int group_size = 0;        // int8/int4: channels per {scale, zero}; a multiple of 8 dividing head_dim
  int tokens_per_block = 0;  // paged
  int64_t num_slots = 0;     // paged: num_blocks * tokens_per_block; contiguous: num_seqs * max_seq_len
};

// KIVI-2 cache of one layer (layout above).
struct KiviCache {
  uint8_t* k_codes = nullptr;      // [num_seqs, num_kv_heads, max_seq_len, head_dim / 4]
  uint8_t* v_codes = nullptr;      // [num_seqs, num_kv_heads, max_seq_len, head_dim / 4]
  uint16_t* k_meta = nullptr;      // [num_seqs, num_kv_heads, max_seq_len / group_size, head_dim, 2] fp16
  uint16_t* v_meta = nullptr;      // [num_seqs, num_kv_heads, max_seq_len, head_dim / group_size, 2] fp16
  uint16_t* k_residual = nullptr;  // [num_seqs, num_kv_heads, residual_tokens + group_size, head_dim] 16-bit
  uint16_t* v_residual = nullptr;  // [num_seqs, num_kv_heads, residual_tokens + group_size, head_dim] 16-bit
  ElemType residual_type = ElemType::kBF16;
  int num_seqs = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int group_size = 0;       // G: tokens per key group and channels per value group; multiple of 8 dividing head_dim
  int residual_tokens = 0;  // R >= 0
  int max_seq_len = 0;      // multiple of group_size
};

inline constexpr int kInt8MaxCode = 255;
inline constexpr int kInt4MaxCode = 15;
inline constexpr int kKivi2MaxCode = 3;

// ── QuantKvCache arithmetic ──
constexpr int64_t cache_row(CacheLayout layout, int64_t slot, int kv_head, int num_kv_heads, int tokens_per_block) {
  return layout == CacheLayout::kPaged
             ? (slot / tokens_per_block * num_kv_heads + kv_head) * tokens_per_block + slot % tokens_per_block
             : slot * num_kv_heads + kv_head;
}
constexpr int64_t cache_row(const QuantKvCache& c, int64_t slot, int kv_head) {
  return cache_row(c.layout, slot, kv_head, c.num_kv_heads, c.tokens_per_block);
}
// Bytes of one row of k_data / v_data.
constexpr int64_t data_row_bytes(CacheType type, int head_dim) {
  switch (type) {
    case CacheType::kBF16:
    case CacheType::kFP16: return 2 * static_cast<int64_t>(head_dim);
    case CacheType::kFp8E4M3:
    case CacheType::kInt8: return head_dim;
    case CacheType::kInt4: return head_dim / 2;
    case CacheType::kKivi2: return head_dim / 4;
  }
  return 0;
}
constexpr bool has_group_meta(CacheType type) { return type == CacheType::kInt8 || type == CacheType::kInt4; }
// fp16 words of one row of k_meta / v_meta (0 when the type has none).
constexpr int64_t meta_row_elems(CacheType type, int head_dim, int group_size) {
  return has_group_meta(type) ? 2 * static_cast<int64_t>(head_dim / group_size) : 0;
}
// Storage bytes of one token of one KV head, K or V (the figure kv_layout.cpp counts per vector).
constexpr int64_t token_bytes_per_head(CacheType type, int head_dim, int group_size) {
  return data_row_bytes(type, head_dim) + 2 * meta_row_elems(type, head_dim, group_size);
}
constexpr int max_code(CacheType type) {
  return type == CacheType::kInt8 ? kInt8MaxCode : type == CacheType::kInt4 ? kInt4MaxCode : kKivi2MaxCode;
}

// ── KiviCache arithmetic ──
constexpr int kivi_ring_tokens(const KiviCache& c) { return c.residual_tokens + c.group_size; }
// Tokens of a length-L sequence held as 2-bit codes.
constexpr int kivi_quantized_tokens(int length, int residual_tokens, int group_size) {
  return length <= residual_tokens ? 0 : (length - residual_tokens) / group_size * group_size;
}
// (sequence, head) index: the leading two dimensions of every KIVI array.
constexpr int64_t kivi_seq_head(const KiviCache& c, int seq, int kv_head) {
  return static_cast<int64_t>(seq) * c.num_kv_heads + kv_head;
}
// Byte offset of token t's code row in k_codes / v_codes.
constexpr int64_t kivi_code_offset(const KiviCache& c, int seq, int kv_head, int t) {
  return (kivi_seq_head(c, seq, kv_head) * c.max_seq_len + t) * (c.head_dim / 4);
}
// fp16-word offset of {scale, zero} of channel `ch` of the key group holding token t.
constexpr int64_t kivi_key_meta_offset(const KiviCache& c, int seq, int kv_head, int t, int ch) {
  return ((kivi_seq_head(c, seq, kv_head) * (c.max_seq_len / c.group_size) + t / c.group_size) * c.head_dim + ch) * 2;
}
// fp16-word offset of {scale, zero} of the value channel group holding channel `ch` of token t.
constexpr int64_t kivi_value_meta_offset(const KiviCache& c, int seq, int kv_head, int t, int ch) {
  return ((kivi_seq_head(c, seq, kv_head) * c.max_seq_len + t) * (c.head_dim / c.group_size) + ch / c.group_size) * 2;
}
// Word offset of token t's row in k_residual / v_residual (valid for Q(L) <= t < L).
constexpr int64_t kivi_residual_offset(const KiviCache& c, int seq, int kv_head, int t) {
  return (kivi_seq_head(c, seq, kv_head) * kivi_ring_tokens(c) + t % kivi_ring_tokens(c)) * c.head_dim;
}
// Element counts of each KIVI array (for allocation).
constexpr int64_t kivi_code_bytes(const KiviCache& c) {
  return static_cast<int64_t>(c.num_seqs) * c.num_kv_heads * c.max_seq_len * (c.head_dim / 4);
}
constexpr int64_t kivi_key_meta_elems(const KiviCache& c) {
  return static_cast<int64_t>(c.num_seqs) * c.num_kv_heads * (c.max_seq_len / c.group_size) * c.head_dim * 2;
}
constexpr int64_t kivi_value_meta_elems(const KiviCache& c) {
  return static_cast<int64_t>(c.num_seqs) * c.num_kv_heads * c.max_seq_len * (c.head_dim / c.group_size) * 2;
}
constexpr int64_t kivi_residual_elems(const KiviCache& c) {
  return static_cast<int64_t>(c.num_seqs) * c.num_kv_heads * kivi_ring_tokens(c) * c.head_dim;
}

}  // namespace kvplan::kernels
