// MLA prefill, non-absorbed form (mla_attention.h): causal varlen attention with q/k head dim 192
// and v head dim 128. The kernel and its launcher.
//
// SCALAR-FMA VERSION, FlashAttention-2 tiling with an online softmax and no tensor cores (like
// prefill_attention.cu, whose structure it follows): expect several times below FlashAttention-2;
// not a calibration source for prefill until it has an MMA path.
// Work split: a CTA per (query tile of 16 rows, head, sequence), 4 warps of 4 query rows each. Keys
// and values stream through shared memory 32 at a time (16-bit words, K rows padded by one word so
// lane j reading word w of key j hits bank (j + w) % 32). Scores: lane j computes key j's score for
// the warp's row; softmax max/sum over the 32 keys by xor shuffles. P V: lane owns output channels
// {2 lane, 2 lane + 1, 64 + 2 lane, 65 + 2 lane} (V words lane and lane + 32: a warp reads a V row
// as 64 consecutive words) and takes p_j from lane j by shuffle. fp32 throughout; P is not rounded.
#include "kvplan/kernels/mla_attention.h"

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
using decode_detail::to_float8;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTileQ = 16;
constexpr int kTileK = 32;  // one key per lane
constexpr int kRowsPerWarp = kTileQ / kWarps;
constexpr int kDqk = kMlaPrefillQkHeadDim;  // 192
constexpr int kDv = kMlaPrefillVHeadDim;    // 128
constexpr int kKWords = kDqk / 2 + 1;       // 97: padded K row, in 32-bit words
constexpr int kVWords = kDv / 2;            // 64
static_assert(kDv == 128, "P V maps four channels per lane");

struct MlaPrefillArgs {
  const uint16_t* q;            // [total_tokens, num_heads, 192]
  const uint16_t* k;            // [total_tokens, num_heads, 192]
  const uint16_t* v;            // [total_tokens, num_heads, 128]
  const int32_t* cu_seqlens;    // [num_seqs + 1]
  uint16_t* out;                // [total_tokens, num_heads, 128]
  int num_heads;
  float scale_log2;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) mla_prefill_kernel(MlaPrefillArgs a) {
  __shared__ __align__(16) float s_q[kTileQ][kDqk];  // pre-scaled by scale * log2(e)
  __shared__ uint32_t s_k[kTileK][kKWords];
  __shared__ __align__(16) uint32_t s_v[kTileK][kVWords];

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int q_tile = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int seq = static_cast<int>(blockIdx.z);
  const int first = __ldg(a.cu_seqlens + seq);
  const int len = __ldg(a.cu_seqlens + seq + 1) - first;
  const int q0 = q_tile * kTileQ;
  if (q0 >= len) return;  // CTA-uniform: this sequence is shorter than the grid's longest
  const int k_end = min(len, q0 + kTileQ);  // causal: the tile's last row sees keys < k_end

  for (int i = tid; i < kTileQ * (kDqk / 8); i += kThreads) {
    const int r = i / (kDqk / 8);
    const int c = (i % (kDqk / 8)) * 8;
    float f[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (q0 + r < len) to_float8<T>(load16(a.q + (static_cast<size_t>(first + q0 + r) * a.num_heads + head) * kDqk + c), f);
#pragma unroll
    for (int e = 0; e < 8; ++e) s_q[r][c + e] = f[e] * a.scale_log2;
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][4];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;
    acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
  }

  for (int k0 = 0; k0 < k_end; k0 += kTileK) {
    __syncthreads();  // previous tile consumed (first pass: s_q written)
    for (int i = tid; i < kTileK * (kDqk / 8); i += kThreads) {
      const int j = i / (kDqk / 8);
      const int w = (i % (kDqk / 8)) * 4;
      uint4 raw = make_uint4(0, 0, 0, 0);
      if (k0 + j < k_end) raw = load16(a.k + (static_cast<size_t>(first + k0 + j) * a.num_heads + head) * kDqk + 2 * w);
      s_k[j][w] = raw.x;  // padded rows are not 16-byte aligned: four word stores
      s_k[j][w + 1] = raw.y;
      s_k[j][w + 2] = raw.z;
      s_k[j][w + 3] = raw.w;
    }
    for (int i = tid; i < kTileK * (kDv / 8); i += kThreads) {
      const int j = i / (kDv / 8);
      const int w = (i % (kDv / 8)) * 4;
      uint4 raw = make_uint4(0, 0, 0, 0);
      if (k0 + j < k_end) raw = load16(a.v + (static_cast<size_t>(first + k0 + j) * a.num_heads + head) * kDv + 2 * w);
      *reinterpret_cast<uint4*>(&s_v[j][w]) = raw;
    }
    __syncthreads();

    const int keys = min(kTileK, k_end - k0);  // CTA-uniform
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int r = warp * kRowsPerWarp + i;
      const int qi = q0 + r;  // row index in the sequence; rows >= len see nothing and are not stored
      float dot = 0.f;
#pragma unroll 8
      for (int w = 0; w < kDqk / 2; ++w) {
        const float2 kk = Elem<T>::pair_to_float2(s_k[lane][w]);
        const float2 qq = *reinterpret_cast<const float2*>(&s_q[r][2 * w]);
        dot = fmaf(qq.x, kk.x, dot);
        dot = fmaf(qq.y, kk.y, dot);
      }
      const int key = k0 + lane;
      const float s = (key < k_end && key <= qi && qi < len) ? dot : -INFINITY;
      float tile_max = s;
#pragma unroll
      for (int off = 16; off > 0; off /= 2) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
      const float m_new = fmaxf(m[i], tile_max);
      const float base = m_new == -INFINITY ? 0.f : m_new;  // no -inf - -inf
      const float alpha = exp2f(m[i] - base);
      const float p = exp2f(s - base);
      float p_sum = p;
#pragma unroll
      for (int off = 16; off > 0; off /= 2) p_sum += __shfl_xor_sync(0xffffffffu, p_sum, off);
      m[i] = m_new;
      l[i] = l[i] * alpha + p_sum;
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][c] *= alpha;
      for (int j = 0; j < keys; ++j) {
        const float pj = __shfl_sync(0xffffffffu, p, j);
        const float2 v0 = Elem<T>::pair_to_float2(s_v[j][lane]);
        const float2 v1 = Elem<T>::pair_to_float2(s_v[j][lane + 32]);
        acc[i][0] = fmaf(pj, v0.x, acc[i][0]);
        acc[i][1] = fmaf(pj, v0.y, acc[i][1]);
        acc[i][2] = fmaf(pj, v1.x, acc[i][2]);
        acc[i][3] = fmaf(pj, v1.y, acc[i][3]);
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int qi = q0 + warp * kRowsPerWarp + i;
    if (qi >= len) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;  // l >= 1 for a real row: key 0 is always visible
    uint32_t* o = reinterpret_cast<uint32_t*>(a.out + (static_cast<size_t>(first + qi) * a.num_heads + head) * kDv);
    o[lane] = static_cast<uint32_t>(Elem<T>::from_float(acc[i][0] * inv)) |
              (static_cast<uint32_t>(Elem<T>::from_float(acc[i][1] * inv)) << 16);
    o[lane + 32] = static_cast<uint32_t>(Elem<T>::from_float(acc[i][2] * inv)) |
                   (static_cast<uint32_t>(Elem<T>::from_float(acc[i][3] * inv)) << 16);
  }
}

#define KVPLAN_CHECK_PARAM(cond, why) \
  do {                                \
    if (!(cond)) return params_error(why, __FILE__, __LINE__); \
  } while (0)

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace

Status launch_mla_prefill(const MlaPrefillParams& p, Stream stream) {
  KVPLAN_CHECK_PARAM(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  KVPLAN_CHECK_PARAM(p.qk_head_dim == kDqk && p.v_head_dim == kDv,
                     "qk_head_dim=" + std::to_string(p.qk_head_dim) + ", v_head_dim=" + std::to_string(p.v_head_dim) +
                         " has no instance (192, 128)");
  KVPLAN_CHECK_PARAM(p.num_seqs >= 1 && p.num_seqs <= 65535, "num_seqs must be in [1, 65535] (grid z)");
  KVPLAN_CHECK_PARAM(p.num_heads >= 1 && p.num_heads <= 65535, "num_heads must be in [1, 65535] (grid y)");
  KVPLAN_CHECK_PARAM(p.total_tokens >= 0 && p.max_seqlen >= 0, "total_tokens and max_seqlen must be >= 0");
  KVPLAN_CHECK_PARAM(std::isfinite(p.softmax_scale), "softmax_scale must be finite");
  KVPLAN_CHECK_PARAM(p.q && p.k && p.v && p.out && p.cu_seqlens, "null pointer among q, k, v, out, cu_seqlens");
  KVPLAN_CHECK_PARAM(aligned16(p.q) && aligned16(p.k) && aligned16(p.v) && aligned16(p.out),
                     "q, k, v and out must be 16-byte aligned");
  if (p.max_seqlen == 0 || p.total_tokens == 0) return Status::success();
  MlaPrefillArgs args{p.q, p.k, p.v, p.cu_seqlens, p.out, p.num_heads, p.softmax_scale * decode_detail::kLog2e};
  const dim3 grid(static_cast<unsigned>((p.max_seqlen + kTileQ - 1) / kTileQ), static_cast<unsigned>(p.num_heads),
                  static_cast<unsigned>(p.num_seqs));
  if (p.dtype == ElemType::kBF16) {
    mla_prefill_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(args);
  } else {
    mla_prefill_kernel<__half><<<grid, kThreads, 0, stream>>>(args);
  }
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::success();
  return Status::error("mla_prefill_kernel<<<>>>", static_cast<int>(e), cudaGetErrorString(e),
                       std::string(__FILE__) + ":" + std::to_string(__LINE__));
}

}  // namespace kvplan::kernels
