// Speculative verification (spec_verify.h): multi-query paged decode, causal within the draft. The
// kernel and its launcher.
//
// Structure: decode_attention_kernels.cuh's decode kernel, with "query heads of a group" replaced by
// "query rows of a KV head": the rows of (sequence, KV head) are the (num_draft + 1) x group pairs
// (query token j, head g of the group), flattened j-major, and a CTA holds a tile of up to kRowTile
// = 8 of them, so one pass over the K/V rows serves every query token of the tile. Row (j, g) stops
// at position context + j (inclusive); the CTA reads positions [0, context + j_max] for its largest
// j, and masks per row (score -inf for a position past that row's end). Tokens are spread over
// slots of kLanes = head_dim / 8 threads, each holding 8 channels, exactly as in decode; the slots'
// (m, l, acc) are merged through shared memory at the end. Every row sees at least position 0, so no
// output is empty. Llama-3.1-8B with k = 4: 5 x 4 = 20 rows per KV head = 3 CTAs per (sequence,
// KV head), adjacent in launch order, so the repeated K/V reads mostly hit L2.
#include "kvplan/kernels/spec_verify.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "decode_attention_kernels.cuh"

namespace kvplan::kernels {
namespace {

using decode_detail::Elem;
using decode_detail::load16;
using decode_detail::PagedRows;
using decode_detail::to_float8;

constexpr int kThreads = decode_detail::kThreads;  // 128
constexpr int kUnroll = decode_detail::kUnroll;
constexpr int kRowTile = 8;

struct SpecVerifyArgs {
  const uint16_t* q;            // [num_seqs, num_draft + 1, num_q_heads, head_dim]
  const int32_t* context_lens;  // [num_seqs]
  uint16_t* out;                // [num_seqs, num_draft + 1, num_q_heads, head_dim]
  int num_q_heads;
  int group;       // num_q_heads / num_kv_heads
  int num_rows;    // (num_draft + 1) * group per KV head
  int row_tiles;   // ceil(num_rows / kRowTile)
  float scale_log2;
};

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads) spec_verify_kernel(SpecVerifyArgs a, PagedRows rows) {
  constexpr int kLanes = kHeadDim / 8;
  constexpr int kSlots = kThreads / kLanes;
  constexpr int kTokensPerIter = kSlots * kUnroll;
  static_assert(kLanes <= 32 && 32 % kLanes == 0, "a token's lanes must sit in one warp");

  const int tile = static_cast<int>(blockIdx.x) % a.row_tiles;
  const int kv_head = static_cast<int>(blockIdx.x) / a.row_tiles;
  const int seq = static_cast<int>(blockIdx.z);
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int slot = static_cast<int>(threadIdx.x) / kLanes;
  const int row0 = tile * kRowTile;
  const int num = min(kRowTile, a.num_rows - row0);  // CTA-uniform
  const int context = max(0, __ldg(a.context_lens + seq));
  const int end = context + (row0 + num - 1) / a.group + 1;  // positions [0, end) cover every row here

  float q[kRowTile][8];    // this thread's 8 channels of each row's query, times scale * log2(e)
  int last[kRowTile];      // last position row r sees: context + j
  size_t out_row[kRowTile];  // row index into q / out (units of head_dim)
  float m[kRowTile], l[kRowTile], acc[kRowTile][8];
#pragma unroll
  for (int r = 0; r < kRowTile; ++r) {
    const int f = row0 + r;
    const int j = f / a.group;
    const int g = f % a.group;
    last[r] = context + j;
    out_row[r] = (static_cast<size_t>(seq) * (a.num_rows / a.group) + j) * a.num_q_heads + kv_head * a.group + g;
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      q[r][i] = 0.f;
      acc[r][i] = 0.f;
    }
    if (r < num) {
      to_float8<T>(load16(a.q + out_row[r] * kHeadDim + lane * 8), q[r]);
#pragma unroll
      for (int i = 0; i < 8; ++i) q[r][i] *= a.scale_log2;
    }
  }

  for (int t0 = 0; t0 < end; t0 += kTokensPerIter) {
    uint4 k_raw[kUnroll], v_raw[kUnroll];
    int token[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      token[u] = t0 + u * kSlots + slot;
      k_raw[u] = make_uint4(0, 0, 0, 0);
      v_raw[u] = make_uint4(0, 0, 0, 0);
      if (token[u] < end) {
        const size_t at = rows.row(seq, kv_head, token[u]) * kHeadDim + lane * 8;
        k_raw[u] = load16(rows.k + at);
        v_raw[u] = load16(rows.v + at);
      }
    }
    float s[kUnroll][kRowTile];  // scores (base 2), then probabilities
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float k[8];
      to_float8<T>(k_raw[u], k);
#pragma unroll
      for (int r = 0; r < kRowTile; ++r) {
        s[u][r] = -INFINITY;
        if (r < num) {
          float dot = 0.f;
#pragma unroll
          for (int i = 0; i < 8; ++i) dot = fmaf(q[r][i], k[i], dot);
#pragma unroll
          for (int offset = kLanes / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
          s[u][r] = token[u] <= last[r] ? dot : -INFINITY;  // also masks token >= end (last[r] < end)
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRowTile; ++r) {
      if (r < num) {
        float new_m = m[r];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) new_m = fmaxf(new_m, s[u][r]);
        const float base = new_m == -INFINITY ? 0.f : new_m;  // no -inf - -inf
        const float alpha = exp2f(m[r] - base);
        m[r] = new_m;
        l[r] *= alpha;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[r][i] *= alpha;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          s[u][r] = exp2f(s[u][r] - base);
          l[r] += s[u][r];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float v[8];
      to_float8<T>(v_raw[u], v);
#pragma unroll
      for (int r = 0; r < kRowTile; ++r) {
        if (r < num) {
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[r][i] = fmaf(s[u][r], v[i], acc[r][i]);
        }
      }
    }
  }

  // Merge the slots (kSlots * kHeadDim == 8 * kThreads: s_acc is kRowTile * 4 KiB).
  __shared__ float s_m[kSlots][kRowTile];
  __shared__ float s_l[kSlots][kRowTile];
  __shared__ float s_acc[kSlots][kRowTile][kHeadDim];
#pragma unroll
  for (int r = 0; r < kRowTile; ++r) {
    if (r < num) {
      if (lane == 0) {
        s_m[slot][r] = m[r];
        s_l[slot][r] = l[r];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) s_acc[slot][r][lane * 8 + i] = acc[r][i];
    }
  }
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e < num * kHeadDim; e += kThreads) {
    const int r = e / kHeadDim;
    const int d = e % kHeadDim;
    float max_m = -INFINITY;
#pragma unroll
    for (int sl = 0; sl < kSlots; ++sl) max_m = fmaxf(max_m, s_m[sl][r]);
    float sum = 0.f, o = 0.f;
#pragma unroll
    for (int sl = 0; sl < kSlots; ++sl) {
      const float w = exp2f(s_m[sl][r] - max_m);  // 0 for a slot that saw no token; max_m is finite
      sum = fmaf(w, s_l[sl][r], sum);
      o = fmaf(w, s_acc[sl][r][d], o);
    }
    // Row index recomputed (out_row lives in registers indexed by a runtime r).
    const int f = row0 + r;
    const size_t at = (static_cast<size_t>(seq) * (a.num_rows / a.group) + f / a.group) * a.num_q_heads +
                      kv_head * a.group + f % a.group;
    a.out[at * kHeadDim + d] = Elem<T>::from_float(sum > 0.f ? o / sum : 0.f);
  }
}

#define KVPLAN_CHECK_PARAM(cond, why) \
  do {                                \
    if (!(cond)) return params_error(why, __FILE__, __LINE__); \
  } while (0)

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

template <typename T>
void launch_head_dim(int head_dim, dim3 grid, const SpecVerifyArgs& args, const PagedRows& rows, cudaStream_t stream) {
  switch (head_dim) {
    case 64: spec_verify_kernel<T, 64><<<grid, kThreads, 0, stream>>>(args, rows); break;
    case 128: spec_verify_kernel<T, 128><<<grid, kThreads, 0, stream>>>(args, rows); break;
    default: spec_verify_kernel<T, 256><<<grid, kThreads, 0, stream>>>(args, rows); break;  // checked: 256
  }
}

}  // namespace

Status launch_spec_verify(const SpecVerifyParams& p, Stream stream) {
  KVPLAN_CHECK_PARAM(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  KVPLAN_CHECK_PARAM(p.num_seqs >= 0 && p.num_seqs <= 65535, "num_seqs must be in [0, 65535] (grid z)");
  KVPLAN_CHECK_PARAM(p.num_draft >= 0 && p.num_draft <= 64, "num_draft must be in [0, 64]");
  KVPLAN_CHECK_PARAM(p.num_q_heads > 0 && p.num_kv_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
                     "num_kv_heads=" + std::to_string(p.num_kv_heads) + " must divide num_q_heads=" +
                         std::to_string(p.num_q_heads) + " (both > 0)");
  KVPLAN_CHECK_PARAM(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256,
                     "head_dim=" + std::to_string(p.head_dim) + " has no instance (64, 128, 256)");
  const int tpb = p.tokens_per_block;
  KVPLAN_CHECK_PARAM(tpb >= 1 && tpb <= 1024 && (tpb & (tpb - 1)) == 0,
                     "tokens_per_block=" + std::to_string(tpb) + " must be a power of two in [1, 1024]");
  KVPLAN_CHECK_PARAM(p.num_blocks > 0 && p.max_blocks_per_seq > 0, "num_blocks and max_blocks_per_seq must be > 0");
  KVPLAN_CHECK_PARAM(std::isfinite(p.softmax_scale), "softmax_scale must be finite");
  KVPLAN_CHECK_PARAM(p.q && p.k_cache && p.v_cache && p.block_table && p.context_lens && p.out,
                     "null pointer among q, k_cache, v_cache, block_table, context_lens, out");
  KVPLAN_CHECK_PARAM(aligned16(p.q) && aligned16(p.k_cache) && aligned16(p.v_cache),
                     "q, k_cache and v_cache must be 16-byte aligned");
  if (p.num_seqs == 0) return Status::success();
  SpecVerifyArgs args{};
  args.q = p.q;
  args.context_lens = p.context_lens;
  args.out = p.out;
  args.num_q_heads = p.num_q_heads;
  args.group = p.num_q_heads / p.num_kv_heads;
  args.num_rows = (p.num_draft + 1) * args.group;
  args.row_tiles = (args.num_rows + kRowTile - 1) / kRowTile;
  args.scale_log2 = p.softmax_scale * decode_detail::kLog2e;
  int log2_tpb = 0;
  while ((1 << log2_tpb) < tpb) ++log2_tpb;
  const PagedRows rows{p.k_cache, p.v_cache, p.block_table, p.max_blocks_per_seq, p.num_kv_heads, log2_tpb};
  KVPLAN_CHECK_PARAM(int64_t{p.num_kv_heads} * args.row_tiles <= INT32_MAX, "num_kv_heads * row tiles must fit grid x");
  const dim3 grid(static_cast<unsigned>(p.num_kv_heads * args.row_tiles), 1u, static_cast<unsigned>(p.num_seqs));
  if (p.dtype == ElemType::kBF16) {
    launch_head_dim<__nv_bfloat16>(p.head_dim, grid, args, rows, stream);
  } else {
    launch_head_dim<__half>(p.head_dim, grid, args, rows, stream);
  }
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::success();
  return Status::error("spec_verify_kernel<<<>>>", static_cast<int>(e), cudaGetErrorString(e),
                       std::string(__FILE__) + ":" + std::to_string(__LINE__));
}

}  // namespace kvplan::kernels
