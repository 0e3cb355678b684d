// Device code shared by the decode kernels of the KV-reduction schemes (window_attention.h, h2o.h,
// low_rank.h): ONE decode loop, parameterized by a variant that says which tokens a sequence visits,
// how a stored row becomes 8 fp32 channels (16-bit, int4 latent, rotary at cache position), how the
// query is prepared (as is, rotated, projected into a latent space) and how the result is written
// (as is, or projected back). FlashInfer's "variant" pattern: the scheme is a small object, the loop
// is written once. Internal to kernels/src.
//
// The loop is the one of decode_attention_kernels.cuh (copied in its essentials, not shared: that
// file belongs to the plain decode kernels): one CTA of kThreads per (sequence, KV head, split, tile
// of up to kGroupTile query heads); kDim / 8 consecutive lanes share a token (8 channels each), xor
// shuffles reduce its score, fp32 online softmax in base 2 per slot, slots merged in shared memory.
// kDim is the width of a STORED row: head_dim, or the latent rank for low-rank KV. Every thread
// runs the same number of iterations (tokens past the split are masked, not skipped), so the
// full-warp shuffles — including a variant's rotary shuffle — are always convergent.
//
// Variant interface (device, const):
//   struct Seq { int n; ... };                                 // per-thread state of one sequence
//   Seq seq_state(int seq, int lane) const;                    // n = tokens visited (CTA-uniform)
//   template <T, kDim> void prepare_query(const SchemeArgs&, const Seq&, int seq, int kv_head,
//       int head0, int heads, float* s_q) const;               // s_q[g * kDim + c], g < heads; all threads call
//   template <T, kDim> void load(const Seq&, int seq, int kv_head, int i, int lane, bool valid,
//       float (&k)[8], float (&v)[8]) const;                   // visited token i; all threads call (valid or not)
//   template <T, kDim> void finish(const SchemeArgs&, int seq, int split, int kv_head, int head0,
//       int heads, const float* s_res) const;                  // s_res[g * kDim + c]: normalized result
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "kvplan/kernels/decode_attention.h"
#include "kvplan/kernels/status.h"

namespace kvplan::kernels::scheme_detail {

constexpr int kThreads = 128;
constexpr int kUnroll = 2;
constexpr int kMaxGroupTile = 8;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ── 16-bit element conversions (T is __nv_bfloat16 or __half) ──
template <typename T>
__device__ __forceinline__ float to_float(uint16_t b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __uint_as_float(static_cast<uint32_t>(b) << 16);  // exact
  } else {
    return __half2float(__ushort_as_half(b));
  }
}
template <typename T>
__device__ __forceinline__ uint16_t from_float(float x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  } else {
    return __half_as_ushort(__float2half_rn(x));
  }
}
template <typename T>
__device__ __forceinline__ void to_float8(const uint4& raw, float (&f)[8]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = to_float<T>(static_cast<uint16_t>(w[i] & 0xFFFFu));
    f[2 * i + 1] = to_float<T>(static_cast<uint16_t>(w[i] >> 16));
  }
}
// 16-byte read-only load; p is 16-byte aligned (launchers check base pointers; rows are multiples
// of 8 elements).
__device__ __forceinline__ uint4 load16(const uint16_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

struct SchemeArgs {
  const uint16_t* q;     // [num_seqs, num_q_heads, head_dim]
  uint16_t* out;         // [num_seqs, num_q_heads, head_dim]; written when partial_out is null
  float* partial_out;    // [num_seqs, num_splits, num_q_heads, head_dim], or null (unsplit)
  float* partial_lse;    // [num_seqs, num_splits, num_q_heads], or null (not wanted)
  int num_q_heads;
  int head_dim;          // of q and out (kDim may differ: latent rank)
  int group;             // num_q_heads / num_kv_heads
  int group_tiles;       // ceil(group / kGroupTile) of the instance launched
  int num_splits;
  float scale_log2;      // softmax_scale * log2(e)
};

// Writes one element of the (normalized) output of query head q_head: 16-bit `out` when unsplit,
// fp32 `partial_out` of this split otherwise.
template <typename T>
__device__ __forceinline__ void store_out(const SchemeArgs& a, int seq, int split, int q_head, int d, float value) {
  if (a.partial_out == nullptr) {
    a.out[(static_cast<size_t>(seq) * a.num_q_heads + q_head) * a.head_dim + d] = from_float<T>(value);
  } else {
    a.partial_out[((static_cast<size_t>(seq) * a.num_splits + split) * a.num_q_heads + q_head) * a.head_dim + d] = value;
  }
}

// Query as given (kDim == head_dim), and result as given: the variants without projections use these.
template <typename T, int kDim>
__device__ __forceinline__ void plain_query(const SchemeArgs& a, int seq, int head0, int heads, float* s_q) {
  for (int e = static_cast<int>(threadIdx.x); e < heads * kDim; e += kThreads) {
    s_q[e] = to_float<T>(a.q[(static_cast<size_t>(seq) * a.num_q_heads + head0) * kDim + e]);
  }
}
template <typename T, int kDim>
__device__ __forceinline__ void plain_finish(const SchemeArgs& a, int seq, int split, int head0, int heads, const float* s_res) {
  for (int e = static_cast<int>(threadIdx.x); e < heads * kDim; e += kThreads) {
    store_out<T>(a, seq, split, head0 + e / kDim, e % kDim, s_res[e]);
  }
}

template <typename T, int kDim, int kGroupTile, typename Variant>
__global__ void __launch_bounds__(kThreads) scheme_decode_kernel(SchemeArgs a, Variant var) {
  constexpr int kLanes = kDim / 8;
  constexpr int kSlots = kThreads / kLanes;
  constexpr int kTokensPerIter = kSlots * kUnroll;
  static_assert(kDim % 8 == 0 && kLanes <= 32 && 32 % kLanes == 0, "a token's lanes must sit in one warp");
  static_assert(kGroupTile >= 1 && kGroupTile <= kMaxGroupTile, "query-head tile");

  const int tile = static_cast<int>(blockIdx.x) % a.group_tiles;
  const int kv_head = static_cast<int>(blockIdx.x) / a.group_tiles;
  const int split = static_cast<int>(blockIdx.y);
  const int seq = static_cast<int>(blockIdx.z);
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int slot = static_cast<int>(threadIdx.x) / kLanes;
  const int head0 = kv_head * a.group + tile * kGroupTile;         // first query head of this CTA
  const int heads = min(kGroupTile, a.group - tile * kGroupTile);  // CTA-uniform
  const typename Variant::Seq sq = var.seq_state(seq, lane);
  const DecodeSplitRange range = decode_split_range(sq.n, a.num_splits, split);

  // s_q: the prepared queries (stored-row space), later the merged, normalized results.
  // Shared bytes: 4 * kGroupTile * kDim * (1 + kSlots) + small = 40 KiB at kGroupTile 8.
  __shared__ float s_q[kGroupTile * kDim];
  __shared__ float s_m[kSlots][kGroupTile];
  __shared__ float s_l[kSlots][kGroupTile];
  __shared__ float s_acc[kSlots][kGroupTile][kDim];
  __shared__ float s_lse[kGroupTile];

  var.template prepare_query<T, kDim>(a, sq, seq, kv_head, head0, heads, s_q);
  __syncthreads();

  float q[kGroupTile][8];    // this thread's 8 channels of each query, times scale * log2(e)
  float m[kGroupTile];       // running max score (base 2) over this slot's tokens
  float l[kGroupTile];       // running sum of exp2(score - m)
  float acc[kGroupTile][8];  // running sum of exp2(score - m) * v, this thread's 8 channels
#pragma unroll
  for (int g = 0; g < kGroupTile; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      q[g][i] = g < heads ? s_q[g * kDim + lane * 8 + i] * a.scale_log2 : 0.f;
      acc[g][i] = 0.f;
    }
  }

  for (int i0 = range.begin; i0 < range.end; i0 += kTokensPerIter) {
    float k[kUnroll][8], v[kUnroll][8];
    bool valid[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * kSlots + slot;
      valid[u] = i < range.end;
      var.template load<T, kDim>(sq, seq, kv_head, i, lane, valid[u], k[u], v[u]);
    }
    float s[kUnroll][kGroupTile];  // scores (base 2), then probabilities
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int g = 0; g < kGroupTile; ++g) {
        s[u][g] = -INFINITY;
        if (g < heads) {
          float dot = 0.f;
#pragma unroll
          for (int i = 0; i < 8; ++i) dot = fmaf(q[g][i], k[u][i], dot);
#pragma unroll
          for (int offset = kLanes / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
          s[u][g] = valid[u] ? dot : -INFINITY;
        }
      }
    }
    // Online softmax; `base` is 0 while nothing was seen, so no -inf - -inf (NaN) appears.
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
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[g][i] = fmaf(s[u][g], v[u][i], acc[g][i]);
        }
      }
    }
  }

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
  __syncthreads();  // also: every thread has read s_q into registers long ago, s_q is free
  for (int e = static_cast<int>(threadIdx.x); e < heads * kDim; e += kThreads) {
    const int g = e / kDim;
    const int d = e % kDim;
    float max_m = -INFINITY;
#pragma unroll
    for (int sl = 0; sl < kSlots; ++sl) max_m = fmaxf(max_m, s_m[sl][g]);
    float sum = 0.f, o = 0.f;
    if (max_m != -INFINITY) {
#pragma unroll
      for (int sl = 0; sl < kSlots; ++sl) {
        const float w = exp2f(s_m[sl][g] - max_m);  // 0 for a slot that saw no token
        sum = fmaf(w, s_l[sl][g], sum);
        o = fmaf(w, s_acc[sl][g][d], o);
      }
    }
    s_q[e] = sum > 0.f ? o / sum : 0.f;  // no token: 0, never NaN
    if (d == 0) s_lse[g] = sum > 0.f ? (max_m + log2f(sum)) * kLn2 : -INFINITY;
  }
  __syncthreads();
  var.template finish<T, kDim>(a, seq, split, kv_head, head0, heads, s_q);
  if (a.partial_lse != nullptr && static_cast<int>(threadIdx.x) < heads) {
    const int g = static_cast<int>(threadIdx.x);
    a.partial_lse[(static_cast<size_t>(seq) * a.num_splits + split) * a.num_q_heads + head0 + g] = s_lse[g];
  }
}

// ── Host side ──
inline Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(call, static_cast<int>(e), cudaGetErrorString(e), std::string(file) + ":" + std::to_string(line));
}
inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

template <typename T, int kDim, int kGroupTile, typename Variant>
cudaError_t launch_instance(SchemeArgs a, int num_kv_heads, int num_seqs, const Variant& var, cudaStream_t stream) {
  a.group_tiles = (a.group + kGroupTile - 1) / kGroupTile;
  const dim3 grid(static_cast<unsigned>(num_kv_heads * a.group_tiles), static_cast<unsigned>(a.num_splits),
                  static_cast<unsigned>(num_seqs));
  scheme_decode_kernel<T, kDim, kGroupTile, Variant><<<grid, kThreads, 0, stream>>>(a, var);
  return cudaGetLastError();
}

// Query-head tile as in decode_attention.cu: 1 for MHA, 4 for groups of 2-4, 8 above.
template <typename T, int kDim, typename Variant>
cudaError_t launch_group(const SchemeArgs& a, int num_kv_heads, int num_seqs, const Variant& var, cudaStream_t stream) {
  if (a.group == 1) return launch_instance<T, kDim, 1>(a, num_kv_heads, num_seqs, var, stream);
  if (a.group <= 4) return launch_instance<T, kDim, 4>(a, num_kv_heads, num_seqs, var, stream);
  return launch_instance<T, kDim, 8>(a, num_kv_heads, num_seqs, var, stream);
}

// Combine of split partials into `out` through the public combine launcher (decode_attention.h).
inline Status combine_splits(ElemType dtype, int num_seqs, int num_splits, int num_q_heads, int head_dim,
                             const float* partial_out, const float* partial_lse, uint16_t* out, Stream stream) {
  DecodeCombineParams c;
  c.dtype = dtype;
  c.num_seqs = num_seqs;
  c.num_splits = num_splits;
  c.num_q_heads = num_q_heads;
  c.head_dim = head_dim;
  c.partial_out = partial_out;
  c.partial_lse = partial_lse;
  c.out = out;
  return launch_decode_attention_combine(c, stream);
}

}  // namespace kvplan::kernels::scheme_detail

#define KVPLAN_SCHEME_CHECK(cond, why) \
  do {                                 \
    if (!(cond)) return ::kvplan::kernels::params_error(why, __FILE__, __LINE__); \
  } while (0)
