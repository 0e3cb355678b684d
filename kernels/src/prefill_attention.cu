// Causal prefill attention, FlashAttention-2 tiling with an online softmax; see prefill_attention.h.
//
// SCALAR-FMA VERSION. This kernel does the tile loop, the shared-memory staging of Q/K/V and the
// online softmax of FlashAttention-2, but its two products (S = Q K^T and O += P V) are plain fp32
// FMAs on CUDA cores, not tensor-core mma.sync/WMMA. It is the correct-by-construction baseline the
// tensor-core version must match; expect it to run several times below FlashAttention-2 speed, so
// do not calibrate the prefill-attention efficiency curve from it.
//
// Work split: a CTA per (query tile of kPrefillTileQ rows, query head, sequence), 4 warps, each warp
// owning kPrefillTileQ / 4 query rows. Keys/values stream through shared memory kPrefillTileKV = 32 at
// a time (one lane per key for the scores; for P V each lane owns head_dim / 32 output channels as
// pairs 2*lane + 64*i, so a warp reads one V row as 32 consecutive words). Accumulation, the running
// max and the running sum are fp32; P is not rounded to 16 bits. Shared-memory rows are padded by one
// 32-bit word so that lane j reading word w of K row j hits bank (j + w) % 32: conflict-free.
// No double buffering (cp.async) yet: a barrier separates loading a tile and using it.
#include "kvplan/kernels/prefill_attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace kvplan::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = kPrefillTileQ / kWarps;
static_assert(kPrefillTileKV == 32, "the score step maps one lane to one key of a tile");
static_assert(kPrefillTileQ % kWarps == 0, "query rows split evenly over warps");

template <typename T>
__device__ __forceinline__ float2 word_to_float2(uint32_t w);
template <>
__device__ __forceinline__ float2 word_to_float2<__nv_bfloat16>(uint32_t w) {
  __nv_bfloat162 h;
  memcpy(&h, &w, sizeof(w));
  return __bfloat1622float2(h);
}
template <>
__device__ __forceinline__ float2 word_to_float2<__half>(uint32_t w) {
  __half2 h;
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}

// Round to nearest even, like the host float_to_bf16 / float_to_fp16 the tests read outputs with.
template <typename T>
__device__ __forceinline__ uint32_t float2_to_word(float x, float y);
template <>
__device__ __forceinline__ uint32_t float2_to_word<__nv_bfloat16>(float x, float y) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(x))) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(y))) << 16);
}
template <>
__device__ __forceinline__ uint32_t float2_to_word<__half>(float x, float y) {
  return static_cast<uint32_t>(__half_as_ushort(__float2half_rn(x))) |
         (static_cast<uint32_t>(__half_as_ushort(__float2half_rn(y))) << 16);
}

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// Copies `rows` rows of D 16-bit elements into shared memory (row stride D/2 + 1 words) with 16-byte
// global loads. row_ptr(r) gives the global row or nullptr for a row past the data (stored as zeros,
// so masked scores stay finite).
template <int D, typename RowPtr>
__device__ __forceinline__ void stage_rows(uint32_t* smem, int rows, RowPtr row_ptr) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kStride = D / 2 + 1;
  for (int idx = threadIdx.x; idx < rows * kChunks; idx += kThreads) {
    const int row = idx / kChunks;
    const int chunk = idx % kChunks;
    const uint16_t* src = row_ptr(row);
    uint4 val = make_uint4(0u, 0u, 0u, 0u);
    if (src != nullptr) val = __ldg(reinterpret_cast<const uint4*>(src) + chunk);
    uint32_t* dst = smem + row * kStride + chunk * 4;
    dst[0] = val.x;
    dst[1] = val.y;
    dst[2] = val.z;
    dst[3] = val.w;
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) prefill_attention_kernel(const PrefillAttentionParams p, float scale_log2) {
  constexpr int kStride = D / 2 + 1;  // padded shared-memory row, in 32-bit words
  constexpr int kPairs = D / 64;      // channel pairs per lane in P V
  __shared__ uint32_t q_s[kPrefillTileQ * kStride];
  __shared__ uint32_t k_s[kPrefillTileKV * kStride];
  __shared__ uint32_t v_s[kPrefillTileKV * kStride];

  // Last query tiles see the most keys: start them first so they do not trail at the end of the grid.
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kPrefillTileQ;
  const int head = blockIdx.y;
  const int seq = blockIdx.z;
  const int begin = p.cu_seqlens[seq];
  const int len = p.cu_seqlens[seq + 1] - begin;
  if (q0 >= len) return;  // whole CTA leaves before any barrier
  const int prefix = p.prefix_lens != nullptr ? p.prefix_lens[seq] : 0;
  const int kv_head = head / (p.num_q_heads / p.num_kv_heads);
  const int q_rows = min(kPrefillTileQ, len - q0);
  const int kv_end = prefix + q0 + q_rows;  // keys [0, kv_end) are visible to some row of the tile
  const int64_t q_row_elems = static_cast<int64_t>(p.num_q_heads) * D;
  const int64_t kv_row_elems = static_cast<int64_t>(p.num_kv_heads) * D;

  stage_rows<D>(q_s, kPrefillTileQ, [&](int r) -> const uint16_t* {
    if (r >= q_rows) return nullptr;
    return p.q + (begin + q0 + r) * q_row_elems + static_cast<int64_t>(head) * D;
  });

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  float o[kRowsPerWarp][2 * kPairs];
  float m[kRowsPerWarp];  // running max of scaled scores (log2 units)
  float l[kRowsPerWarp];  // running sum of exp2(score - m)
  int visible_end[kRowsPerWarp];  // row r sees absolute key positions [0, visible_end[r])
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int e = 0; e < 2 * kPairs; ++e) o[r][e] = 0.f;
    visible_end[r] = min(prefix + q0 + warp * kRowsPerWarp + r + 1, kv_end);
  }

  for (int kv0 = 0; kv0 < kv_end; kv0 += kPrefillTileKV) {
    __syncthreads();  // the previous tile's K/V are no longer read (first pass: nothing to wait for)
    auto key_row = [&](const uint16_t* cache, const uint16_t* packed, int r) -> const uint16_t* {
      const int pos = kv0 + r;
      if (pos >= kv_end) return nullptr;
      if (pos < prefix) {
        const int block = p.block_table[static_cast<int64_t>(seq) * p.max_blocks_per_seq + pos / p.tokens_per_block];
        return cache + ((static_cast<int64_t>(block) * p.num_kv_heads + kv_head) * p.tokens_per_block +
                        pos % p.tokens_per_block) * D;
      }
      return packed + (begin + pos - prefix) * kv_row_elems + static_cast<int64_t>(kv_head) * D;
    };
    stage_rows<D>(k_s, kPrefillTileKV, [&](int r) { return key_row(p.k_cache, p.k, r); });
    stage_rows<D>(v_s, kPrefillTileKV, [&](int r) { return key_row(p.v_cache, p.v, r); });
    __syncthreads();  // Q (first pass), K and V staged

    // S = Q K^T for the warp's rows: lane j scores key kv0 + j.
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.f;
    const uint32_t* k_row = k_s + lane * kStride;
    const uint32_t* q_rows_s = q_s + warp * kRowsPerWarp * kStride;
#pragma unroll 8
    for (int w = 0; w < D / 2; ++w) {
      const float2 kf = word_to_float2<T>(k_row[w]);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float2 qf = word_to_float2<T>(q_rows_s[r * kStride + w]);  // broadcast read
        s[r] = fmaf(qf.x, kf.x, fmaf(qf.y, kf.y, s[r]));
      }
    }

    // Online softmax: rescale the running sum and output by exp2(m_old - m_new).
    const int key = kv0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float x = key < visible_end[r] ? s[r] * scale_log2 : -INFINITY;
      const float m_new = fmaxf(m[r], warp_max(x));
      const float base = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet stays 0
      const float prob = exp2f(x - base);                   // 0 for masked keys
      const float alpha = exp2f(m[r] - base);               // 0 on the first visible tile
      l[r] = l[r] * alpha + warp_sum(prob);
      m[r] = m_new;
#pragma unroll
      for (int e = 0; e < 2 * kPairs; ++e) o[r][e] *= alpha;
      s[r] = prob;
    }

    // O += P V: every lane walks all 32 keys, taking p_j from lane j.
#pragma unroll 4
    for (int j = 0; j < kPrefillTileKV; ++j) {
      float pj[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) pj[r] = __shfl_sync(0xffffffffu, s[r], j);
      const uint32_t* v_row = v_s + j * kStride;
#pragma unroll
      for (int i = 0; i < kPairs; ++i) {
        const float2 vf = word_to_float2<T>(v_row[lane + 32 * i]);
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          o[r][2 * i] = fmaf(pj[r], vf.x, o[r][2 * i]);
          o[r][2 * i + 1] = fmaf(pj[r], vf.y, o[r][2 * i + 1]);
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    if (row >= q_rows) continue;
    const float inv = 1.f / l[r];  // > 0: every valid row sees at least its own key
    uint32_t* out = reinterpret_cast<uint32_t*>(p.out + (begin + q0 + row) * q_row_elems + static_cast<int64_t>(head) * D);
#pragma unroll
    for (int i = 0; i < kPairs; ++i) out[lane + 32 * i] = float2_to_word<T>(o[r][2 * i] * inv, o[r][2 * i + 1] * inv);
  }
}

template <typename T, int D>
void launch_instance(const PrefillAttentionParams& p, dim3 grid, Stream stream) {
  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;  // exp(x) = exp2(x * log2(e))
  prefill_attention_kernel<T, D><<<grid, kThreads, 0, stream>>>(p, scale_log2);
}

template <typename T>
void launch_dtype(const PrefillAttentionParams& p, dim3 grid, Stream stream) {
  switch (p.head_dim) {
    case 64: launch_instance<T, 64>(p, grid, stream); break;
    case 128: launch_instance<T, 128>(p, grid, stream); break;
    default: launch_instance<T, 256>(p, grid, stream); break;
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace

Status launch_prefill_attention(const PrefillAttentionParams& p, Stream stream) {
  if (const std::string problem = prefill_attention_params_problem(p); !problem.empty())
    return params_error(problem, __FILE__, __LINE__);
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return params_error("head_dim=" + std::to_string(p.head_dim) + " has no instance (64, 128, 256)", __FILE__, __LINE__);
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.out) ||
      (p.prefix_lens != nullptr && (!aligned16(p.k_cache) || !aligned16(p.v_cache))))
    return params_error("q, k, v, out, k_cache and v_cache must be 16-byte aligned (16-byte loads)", __FILE__, __LINE__);
  if (p.num_seqs > 65535 || p.num_q_heads > 65535)
    return params_error("num_seqs=" + std::to_string(p.num_seqs) + " and num_q_heads=" + std::to_string(p.num_q_heads) +
                            " must be <= 65535 (grid y/z)",
                        __FILE__, __LINE__);
  if (p.total_q_tokens == 0 || p.max_seqlen_q == 0) return Status::success();  // nothing to compute

  const dim3 grid((p.max_seqlen_q + kPrefillTileQ - 1) / kPrefillTileQ, p.num_q_heads, p.num_seqs);
  if (p.dtype == ElemType::kBF16) {
    launch_dtype<__nv_bfloat16>(p, grid, stream);
  } else {
    launch_dtype<__half>(p, grid, stream);
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return Status::error("prefill_attention_kernel launch", static_cast<int>(e), cudaGetErrorString(e),
                         std::string(__FILE__) + ":" + std::to_string(__LINE__));
  return Status::success();
}

}  // namespace kvplan::kernels
