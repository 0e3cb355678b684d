// kvplan/kernels/quant_decode_attention.h — decode attention (one query token per sequence, GQA)
// over a quantized KV cache, dequantizing inside the kernel: paged fp8 e4m3, int8, int4
// (QuantKvCache) or the KIVI-2 per-sequence cache (KiviCache). Formats: kv_cache.h.
//
//   QuantDecodeParams p;  p.cache = paged_int4;  p.q = q;  p.out = out;  p.block_table = bt;  ...
//   Status s = launch_quant_decode_attention(p, stream);
//
// out[s, qh, :] = sum_t softmax_t(softmax_scale * q[s, qh] . K[s, kvh, t]) V[s, kvh, t] over
// t < context_lens[s], kvh = qh / (num_q_heads / num_kv_heads). A sequence with context 0 gets 0.
#pragma once

#include <cstdint>

#include "kvplan/kernels/kv_cache.h"
#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

// One CTA (4 warps) per (sequence, KV head, chunk of up to 8 query heads of its group). Each warp
// splits into sub-groups of head_dim/8 lanes, one token per sub-group at a time, 8 channels per
// lane (16-byte loads of 16-bit data, 8-byte fp8/int8, 4-byte int4, 2-byte KIVI codes); every
// sub-group keeps an fp32 online softmax and the sub-groups merge in shared memory at the end.
struct QuantDecodeParams {
  ElemType dtype = ElemType::kBF16;  // of q and out
  bool kivi = false;                 // false: read `cache` (kFp8E4M3, kInt8, kInt4, paged); true: read `kivi_cache`
  QuantKvCache cache;                // paged; its num_kv_heads / head_dim must equal the ones below
  KiviCache kivi_cache;              // its num_seqs >= num_seqs; residual_type == dtype
  const uint16_t* q = nullptr;       // [num_seqs, num_q_heads, head_dim]
  uint16_t* out = nullptr;           // [num_seqs, num_q_heads, head_dim]
  const int32_t* block_table = nullptr;   // [num_seqs, max_blocks_per_seq] (paged only)
  const int32_t* context_lens = nullptr;  // [num_seqs]; paged: <= max_blocks_per_seq * tokens_per_block; KIVI: <= max_seq_len
  int num_seqs = 0;
  int num_q_heads = 0;   // a multiple of num_kv_heads
  int num_kv_heads = 0;
  int head_dim = 0;      // 64, 128 or 256
  int max_blocks_per_seq = 0;
  float softmax_scale = 0.f;
};

Status check_quant_decode_params(const QuantDecodeParams& p);
Status launch_quant_decode_attention(const QuantDecodeParams& p, Stream stream);

}  // namespace kvplan::kernels
