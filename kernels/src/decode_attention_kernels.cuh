// Device code of decode attention (decode_attention.h): the attention kernel, templated on the
// element type, head dim, query-head tile and KV addressing (contiguous or paged), and the split
// combine kernel. Internal to kernels/src; launchers and Params checks live in decode_attention.cu.
//
// Work split. One CTA per (sequence, KV head, split, tile of up to kGroupTile query heads of the
// group). With group <= 8 (every GQA model we know of; MHA is group 1) a CTA holds the whole query
// group, so each K/V element is read from memory once for all the group's query heads. Larger
// groups (MQA with many heads) take ceil(group / 8) CTAs that read the same rows back to back,
// adjacent in launch order so the repeats mostly hit L2.
//
// Inside a CTA (kThreads = 128): a token's K (and V) row is head_dim 16-bit values = head_dim / 8
// 16-byte vectors, so kLanes = head_dim / 8 consecutive threads share a token, each holding 8
// channels; kSlots = 128 / kLanes tokens are read per step, kUnroll steps per iteration (loads
// issued before use: more bytes in flight). Each thread keeps, for each query head of the tile, the
// query's 8 channels (pre-scaled), the running max m and sum l (base 2), and 8 output channels,
// over the tokens of its slot. Scores are reduced over the kLanes lanes with xor shuffles, so every
// lane of a token sees the full score. At the end the slots' (m, l, acc) are merged through shared
// memory. Every thread runs the same number of iterations (tokens past the end are masked, not
// skipped) so the full-warp shuffles are always convergent.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kvplan/kernels/decode_attention.h"

namespace kvplan::kernels::decode_detail {

constexpr int kThreads = 128;
constexpr int kUnroll = 2;
constexpr int kMaxGroupTile = 8;
constexpr int kCombineThreads = 128;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// 16-bit element conversions; T is __nv_bfloat16 or __half.
template <typename T>
struct Elem;
template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ float2 pair_to_float2(uint32_t w) {
    __nv_bfloat162 h;
    memcpy(&h, &w, sizeof(h));
    return __bfloat1622float2(h);
  }
  static __device__ __forceinline__ uint16_t from_float(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
};
template <>
struct Elem<__half> {
  static __device__ __forceinline__ float2 pair_to_float2(uint32_t w) {
    __half2 h;
    memcpy(&h, &w, sizeof(h));
    return __half22float2(h);
  }
  static __device__ __forceinline__ uint16_t from_float(float x) { return __half_as_ushort(__float2half_rn(x)); }
};

template <typename T>
__device__ __forceinline__ void to_float8(const uint4& raw, float (&f)[8]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = Elem<T>::pair_to_float2(w[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

// 16-byte read-only load; `p` is 16-byte aligned (checked by the launchers for the base pointers,
// and every row starts at a multiple of head_dim >= 64 elements).
__device__ __forceinline__ uint4 load16(const uint16_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

struct DecodeArgs {
  const uint16_t* q;            // [num_seqs, num_q_heads, head_dim]
  const int32_t* context_lens;  // [num_seqs]
  uint16_t* out;                // [num_seqs, num_q_heads, head_dim]; written when partial_out is null
  float* partial_out;           // [num_seqs, num_splits, num_q_heads, head_dim], or null (unsplit)
  float* partial_lse;           // [num_seqs, num_splits, num_q_heads], or null (unsplit)
  int num_q_heads;
  int group;        // num_q_heads / num_kv_heads
  int group_tiles;  // ceil(group / kGroupTile) of the instance launched
  int num_splits;
  float scale_log2;  // softmax_scale * log2(e): scores in base 2, so exp2f (one MUFU op) applies
};

// Row index (in units of head_dim elements) of token `token` of (seq, kv_head).
struct ContiguousRows {
  const uint16_t* k;  // [num_seqs, max_seq_len, num_kv_heads, head_dim]
  const uint16_t* v;  // [num_seqs, max_seq_len, num_kv_heads, head_dim]
  int max_seq_len;
  int num_kv_heads;
  __device__ __forceinline__ size_t row(int seq, int kv_head, int token) const {
    return (static_cast<size_t>(seq) * max_seq_len + token) * num_kv_heads + kv_head;
  }
};

struct PagedRows {
  const uint16_t* k;            // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const uint16_t* v;            // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const int32_t* block_table;   // [num_seqs, max_blocks_per_seq]
  int max_blocks_per_seq;
  int num_kv_heads;
  int log2_tokens_per_block;  // tokens_per_block is a power of two: shift and mask, no division
  __device__ __forceinline__ size_t row(int seq, int kv_head, int token) const {
    // Neighbouring slots read the same table entry: one L1 line serves the whole warp.
    const int block =
        __ldg(block_table + static_cast<size_t>(seq) * max_blocks_per_seq + (token >> log2_tokens_per_block));
    const int slot = token & ((1 << log2_tokens_per_block) - 1);
    return ((static_cast<size_t>(block) * num_kv_heads + kv_head) << log2_tokens_per_block) + slot;
  }
};

template <typename T, int kHeadDim, int kGroupTile, typename Rows>
__global__ void __launch_bounds__(kThreads) decode_attention_kernel(DecodeArgs a, Rows rows) {
  constexpr int kLanes = kHeadDim / 8;
  constexpr int kSlots = kThreads / kLanes;
  constexpr int kTokensPerIter = kSlots * kUnroll;
  static_assert(kLanes <= 32 && 32 % kLanes == 0, "a token's lanes must sit in one warp");
  static_assert(kGroupTile >= 1 && kGroupTile <= kMaxGroupTile, "query-head tile");

  const int tile = static_cast<int>(blockIdx.x) % a.group_tiles;
  const int kv_head = static_cast<int>(blockIdx.x) / a.group_tiles;
  const int split = static_cast<int>(blockIdx.y);
  const int seq = static_cast<int>(blockIdx.z);
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int slot = static_cast<int>(threadIdx.x) / kLanes;
  const int head0 = kv_head * a.group + tile * kGroupTile;     // first query head of this CTA
  const int heads = min(kGroupTile, a.group - tile * kGroupTile);  // CTA-uniform
  const int len = max(0, __ldg(a.context_lens + seq));
  const DecodeSplitRange range = decode_split_range(len, a.num_splits, split);

  float q[kGroupTile][8];  // this thread's 8 channels of each query, times scale * log2(e)
  float m[kGroupTile];     // running max score (base 2) over this slot's tokens
  float l[kGroupTile];     // running sum of exp2(score - m)
  float acc[kGroupTile][8];  // running sum of exp2(score - m) * v, this thread's 8 channels
#pragma unroll
  for (int g = 0; g < kGroupTile; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      q[g][i] = 0.f;
      acc[g][i] = 0.f;
    }
    if (g < heads) {
      const uint4 raw = load16(a.q + (static_cast<size_t>(seq) * a.num_q_heads + head0 + g) * kHeadDim + lane * 8);
      to_float8<T>(raw, q[g]);
#pragma unroll
      for (int i = 0; i < 8; ++i) q[g][i] *= a.scale_log2;
    }
  }

  for (int t0 = range.begin; t0 < range.end; t0 += kTokensPerIter) {
    uint4 k_raw[kUnroll], v_raw[kUnroll];
    bool valid[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int token = t0 + u * kSlots + slot;
      valid[u] = token < range.end;
      k_raw[u] = make_uint4(0, 0, 0, 0);
      v_raw[u] = make_uint4(0, 0, 0, 0);
      if (valid[u]) {
        const size_t at = rows.row(seq, kv_head, token) * kHeadDim + lane * 8;
        k_raw[u] = load16(rows.k + at);
        v_raw[u] = load16(rows.v + at);
      }
    }

    float s[kUnroll][kGroupTile];  // scores (base 2), then probabilities
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float k[8];
      to_float8<T>(k_raw[u], k);
#pragma unroll
      for (int g = 0; g < kGroupTile; ++g) {
        s[u][g] = -INFINITY;
        if (g < heads) {
          float dot = 0.f;
#pragma unroll
          for (int i = 0; i < 8; ++i) dot = fmaf(q[g][i], k[i], dot);
#pragma unroll
          for (int offset = kLanes / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
          s[u][g] = valid[u] ? dot : -INFINITY;
        }
      }
    }

    // Online softmax, one rescale per iteration. `base` is the new max, or 0 while no token has
    // been seen, so no -inf - -inf appears: exp2f(-inf) = 0 zeroes empty state and masked tokens.
#pragma unroll
    for (int g = 0; g < kGroupTile; ++g) {
      if (g < heads) {
        float new_m = m[g];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) new_m = fmaxf(new_m, s[u][g]);
        const float base = new_m == -INFINITY ? 0.f : new_m;
        const float alpha = exp2f(m[g] - base);
        m[g] = new_m;
        l[g] *= alpha;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] *= alpha;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          s[u][g] = exp2f(s[u][g] - base);
          l[g] += s[u][g];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float v[8];
      to_float8<T>(v_raw[u], v);
#pragma unroll
      for (int g = 0; g < kGroupTile; ++g) {
        if (g < heads) {
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[g][i] = fmaf(s[u][g], v[i], acc[g][i]);
        }
      }
    }
  }

  // Merge the slots. kSlots * kHeadDim == 8 * kThreads, so s_acc is kGroupTile * 4 KiB.
  __shared__ float s_m[kSlots][kGroupTile];
  __shared__ float s_l[kSlots][kGroupTile];
  __shared__ float s_acc[kSlots][kGroupTile][kHeadDim];
#pragma unroll
  for (int g = 0; g < kGroupTile; ++g) {
    if (g < heads) {
      if (lane == 0) {
        s_m[slot][g] = m[g];
        s_l[slot][g] = l[g];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) s_acc[slot][g][lane * 8 + i] = acc[g][i];
    }
  }
  __syncthreads();

  for (int e = static_cast<int>(threadIdx.x); e < heads * kHeadDim; e += kThreads) {
    const int g = e / kHeadDim;
    const int d = e % kHeadDim;
    float max_m = -INFINITY;
#pragma unroll
    for (int sl = 0; sl < kSlots; ++sl) max_m = fmaxf(max_m, s_m[sl][g]);
    float sum = 0.f, o = 0.f;
    if (max_m != -INFINITY) {
#pragma unroll
      for (int sl = 0; sl < kSlots; ++sl) {
        const float w = exp2f(s_m[sl][g] - max_m);  // 0 for a slot that saw no token (its l, acc are 0)
        sum = fmaf(w, s_l[sl][g], sum);
        o = fmaf(w, s_acc[sl][g][d], o);
      }
    }
    const float result = sum > 0.f ? o / sum : 0.f;  // no token in range: 0, never NaN
    const int q_head = head0 + g;
    if (a.partial_out == nullptr) {
      a.out[(static_cast<size_t>(seq) * a.num_q_heads + q_head) * kHeadDim + d] = Elem<T>::from_float(result);
    } else {
      const size_t at = (static_cast<size_t>(seq) * a.num_splits + split) * a.num_q_heads + q_head;
      a.partial_out[at * kHeadDim + d] = result;
      if (d == 0) a.partial_lse[at] = sum > 0.f ? (max_m + log2f(sum)) * kLn2 : -INFINITY;
    }
  }
}

// One CTA per (sequence, query head); each thread owns channels d, d + kCombineThreads, ...
template <typename T>
__global__ void __launch_bounds__(kCombineThreads) decode_combine_kernel(DecodeCombineParams p) {
  const int q_head = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.num_q_heads));
  const int seq = static_cast<int>(blockIdx.x / static_cast<unsigned>(p.num_q_heads));
  const float* lse = p.partial_lse + static_cast<size_t>(seq) * p.num_splits * p.num_q_heads + q_head;  // stride num_q_heads
  float max_lse = -INFINITY;
  for (int sp = 0; sp < p.num_splits; ++sp) max_lse = fmaxf(max_lse, lse[static_cast<size_t>(sp) * p.num_q_heads]);
  for (int d = static_cast<int>(threadIdx.x); d < p.head_dim; d += kCombineThreads) {
    float sum = 0.f, o = 0.f;
    if (max_lse != -INFINITY) {
      for (int sp = 0; sp < p.num_splits; ++sp) {
        const float l = lse[static_cast<size_t>(sp) * p.num_q_heads];
        if (l == -INFINITY) continue;  // empty split: weight 0, its partial is not read
        const float w = expf(l - max_lse);
        sum += w;
        o = fmaf(w, p.partial_out[((static_cast<size_t>(seq) * p.num_splits + sp) * p.num_q_heads + q_head) * p.head_dim + d], o);
      }
    }
    p.out[(static_cast<size_t>(seq) * p.num_q_heads + q_head) * p.head_dim + d] =
        Elem<T>::from_float(sum > 0.f ? o / sum : 0.f);
  }
}

}  // namespace kvplan::kernels::decode_detail
