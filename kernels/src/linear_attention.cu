// Linear attention kernels (linear_attention.h): the recurrent decode step and the chunk-parallel
// varlen prefill, their launchers (Params checks, instance choice, CUDA errors as Status).
//
// Both kernels split the value dimension: column j of a head's state, S[:, j], evolves on its own
// (S[:, j] ← a·S[:, j] + φ(k)·v_j and o_j = φ(q)·S[:, j]), so a CTA owns kTileV = 32 columns of one
// (sequence, value head) and never talks to another CTA. That is what makes the in-place state
// update race-free: every state element is read and written by exactly one thread of one CTA.
//
// Decode: one CTA of 32 x 8 threads per (sequence, value head, 32 columns). Lane = column (a warp
// reads 32 consecutive floats of a state row: one 128-byte transaction), warp w takes rows
// w, w+8, ...; each thread updates its rows, accumulates φ(q_i)·S_ij, and the 8 warps' partial
// sums meet in shared memory. Memory-bound: the state is read and written once.
//
// Prefill: one CTA of 256 threads per (sequence, value head, 32 columns) walks the sequence's
// chunks in order, holding its state slice S[dk, 32] in shared memory. Per chunk of L <= 64 tokens:
//   1. stage φ(q), φ(k) [L, dk], v [L, 32] and G_t (running Σ log a, from the chunk start);
//   2. A[t][s] = e^{G_t − G_s} φ(q_t)·φ(k_s) for s <= t only (the causal mask: entries s > t are
//      never computed nor read), and w_s = e^{G_L − G_s};
//   3. o_t[j] = scale·(e^{G_t} Σ_i φ(q_t)_i S[i][j] + Σ_{s<=t} A[t][s] v_s[j])  (state before the chunk);
//   4. S[i][j] ← e^{G_L} S[i][j] + Σ_s w_s φ(k_s)_i v_s[j].
// Barriers separate the phases. The scores of step 2 are recomputed by each of the
// ceil(dv / 32) CTAs of a head (4 for dv = 128): simple, and compute is not the limit at these
// sizes (no tensor cores; see docs/kernels.md).
#include "kvplan/kernels/linear_attention.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "recurrent_common.cuh"

namespace kvplan::kernels {
namespace {

using recurrent_detail::cuda_status;
using recurrent_detail::load_f;
using recurrent_detail::to_bits;

constexpr int kTileV = 32;
constexpr int kDecodeWarps = 8;
constexpr int kPrefillThreads = 256;
constexpr int kChunk = kLinearAttentionChunk;
constexpr int kMaxKeyDim = kLinearAttentionMaxKeyDim;

__device__ __forceinline__ float feature(FeatureMap f, float x) {
  switch (f) {
    case FeatureMap::kEluPlusOne: return x > 0.f ? x + 1.f : expf(x);
    case FeatureMap::kRelu: return fmaxf(x, 0.f);
    default: return x;
  }
}

template <typename T>
__global__ void __launch_bounds__(kTileV * kDecodeWarps) linear_attention_decode_kernel(LinearAttentionDecodeParams p) {
  __shared__ float s_q[kMaxKeyDim];
  __shared__ float s_k[kMaxKeyDim];
  __shared__ float s_part[kDecodeWarps][kTileV];
  const int lane = threadIdx.x, warp = threadIdx.y, tid = warp * kTileV + lane;
  const int seq = blockIdx.z, h = blockIdx.y, col = blockIdx.x * kTileV + lane;
  const int dk = p.key_head_dim, dv = p.value_head_dim;
  const int kh = h / (p.num_value_heads / p.num_key_heads);
  const int64_t qk_row = (int64_t{seq} * p.num_key_heads + kh) * dk;
  for (int i = tid; i < dk; i += kTileV * kDecodeWarps) {
    s_q[i] = feature(p.feature_map, load_f<T>(p.q, qk_row + i));
    s_k[i] = feature(p.feature_map, load_f<T>(p.k, qk_row + i));
  }
  __syncthreads();
  const int64_t vh = int64_t{seq} * p.num_value_heads + h;  // (sequence, value head)
  float acc = 0.f;
  if (col < dv) {
    const float vj = load_f<T>(p.v, vh * dv + col);
    const float a = p.decay ? p.decay[vh] : 1.f;
    float* S = p.state + vh * dk * dv + col;  // column `col` of this head's [dk, dv] state
    for (int i = warp; i < dk; i += kDecodeWarps) {
      const float s = fmaf(a, S[int64_t{i} * dv], s_k[i] * vj);  // update first ...
      S[int64_t{i} * dv] = s;
      acc = fmaf(s_q[i], s, acc);  // ... then read: the token sees itself
    }
  }
  s_part[warp][lane] = acc;
  __syncthreads();
  if (warp == 0 && col < dv) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) sum += s_part[w][lane];
    p.out[vh * dv + col] = to_bits<T>(p.scale * sum);
  }
}

// Shared-memory floats of the prefill kernel for key_head_dim dk (rows of φ(q), φ(k) padded by one
// float so that threads reading different rows at the same channel hit different banks).
constexpr int prefill_smem_floats(int dk) {
  return 2 * kChunk * (dk + 1) + kChunk * kTileV + kChunk * (kChunk + 1) + dk * kTileV + 2 * kChunk;
}

template <typename T>
__global__ void __launch_bounds__(kPrefillThreads) linear_attention_prefill_kernel(LinearAttentionPrefillParams p) {
  extern __shared__ float smem[];
  const int dk = p.key_head_dim, dv = p.value_head_dim, ldk = dk + 1, lda = kChunk + 1;
  float* s_q = smem;                            // [kChunk][ldk] φ(q) of the chunk
  float* s_k = s_q + kChunk * ldk;              // [kChunk][ldk] φ(k)
  float* s_v = s_k + kChunk * ldk;              // [kChunk][kTileV] this CTA's value columns
  float* s_a = s_v + kChunk * kTileV;           // [kChunk][lda] A[t][s], s <= t
  float* s_state = s_a + kChunk * lda;          // [dk][kTileV] S[:, col0 : col0 + 32]
  float* s_g = s_state + dk * kTileV;           // [kChunk] G_t
  float* s_w = s_g + kChunk;                    // [kChunk] e^{G_L - G_s}

  const int tid = threadIdx.x;
  const int seq = blockIdx.z, h = blockIdx.y, col0 = blockIdx.x * kTileV;
  const int hv = p.num_value_heads, hk = p.num_key_heads, kh = h / (hv / hk);
  const int begin = p.cu_seqlens[seq], end = p.cu_seqlens[seq + 1];
  const int64_t state_off = (int64_t{seq} * hv + h) * dk * dv;

  // Every thread owns the same state elements e = i * kTileV + j in the init, step 4 and the write-back.
  for (int e = tid; e < dk * kTileV; e += kPrefillThreads) {
    const int i = e / kTileV, col = col0 + e % kTileV;
    s_state[e] = (p.initial_state && col < dv) ? p.initial_state[state_off + int64_t{i} * dv + col] : 0.f;
  }
  for (int c0 = begin; c0 < end; c0 += kChunk) {
    const int L = min(kChunk, end - c0);
    // 1. Stage the chunk.
    for (int e = tid; e < L * dk; e += kPrefillThreads) {
      const int t = e / dk, i = e % dk;
      const int64_t src = (int64_t{c0 + t} * hk + kh) * dk + i;
      s_q[t * ldk + i] = feature(p.feature_map, load_f<T>(p.q, src));
      s_k[t * ldk + i] = feature(p.feature_map, load_f<T>(p.k, src));
    }
    for (int e = tid; e < L * kTileV; e += kPrefillThreads) {
      const int t = e / kTileV, col = col0 + e % kTileV;
      s_v[e] = col < dv ? load_f<T>(p.v, (int64_t{c0 + t} * hv + h) * dv + col) : 0.f;
    }
    if (tid < L) {
      float g = 0.f;  // Σ_{r <= t} log a_r; sequential per token: 64 terms at most
      if (p.decay) {
        for (int r = 0; r <= tid; ++r) g += logf(p.decay[int64_t{c0 + r} * hv + h]);
      }
      s_g[tid] = g;
    }
    __syncthreads();
    // 2. Decayed causal scores and the carry weights.
    for (int e = tid; e < L * L; e += kPrefillThreads) {
      const int t = e / L, s = e % L;
      if (s > t) continue;  // the causal mask: a later token never enters
      float dot = 0.f;
      for (int i = 0; i < dk; ++i) dot = fmaf(s_q[t * ldk + i], s_k[s * ldk + i], dot);
      s_a[t * lda + s] = expf(s_g[t] - s_g[s]) * dot;
    }
    if (tid < L) s_w[tid] = expf(s_g[L - 1] - s_g[tid]);
    __syncthreads();
    // 3. Outputs: the state before the chunk, decayed, plus the chunk's tokens s <= t.
    for (int e = tid; e < L * kTileV; e += kPrefillThreads) {
      const int t = e / kTileV, j = e % kTileV, col = col0 + j;
      if (col >= dv) continue;
      float from_state = 0.f;
      for (int i = 0; i < dk; ++i) from_state = fmaf(s_q[t * ldk + i], s_state[i * kTileV + j], from_state);
      float intra = 0.f;
      for (int s = 0; s <= t; ++s) intra = fmaf(s_a[t * lda + s], s_v[s * kTileV + j], intra);
      p.out[(int64_t{c0 + t} * hv + h) * dv + col] = to_bits<T>(p.scale * fmaf(expf(s_g[t]), from_state, intra));
    }
    __syncthreads();
    // 4. Carry the state to the end of the chunk.
    const float carry = expf(s_g[L - 1]);
    for (int e = tid; e < dk * kTileV; e += kPrefillThreads) {
      const int i = e / kTileV, j = e % kTileV;
      float acc = carry * s_state[e];
      for (int s = 0; s < L; ++s) acc = fmaf(s_w[s] * s_k[s * ldk + i], s_v[s * kTileV + j], acc);
      s_state[e] = acc;
    }
    __syncthreads();  // before the next chunk overwrites the staged rows
  }
  for (int e = tid; e < dk * kTileV; e += kPrefillThreads) {
    const int i = e / kTileV, col = col0 + e % kTileV;
    if (col < dv) p.final_state[state_off + int64_t{i} * dv + col] = s_state[e];
  }
}

#define KVPLAN_CHECK_PARAM(cond, why)                            \
  do {                                                           \
    if (!(cond)) return params_error(why, __FILE__, __LINE__);   \
  } while (0)

template <typename P>
Status check_grid(const P& p) {
  KVPLAN_CHECK_PARAM(p.key_head_dim <= kMaxKeyDim, "key_head_dim=" + std::to_string(p.key_head_dim) +
                                                       " exceeds the kernels' maximum " + std::to_string(kMaxKeyDim));
  KVPLAN_CHECK_PARAM(p.num_seqs <= 65535 && p.num_value_heads <= 65535, "num_seqs and num_value_heads must be <= 65535 (grid)");
  return Status::success();
}

dim3 grid_of(int value_head_dim, int num_value_heads, int num_seqs) {
  return dim3(static_cast<unsigned>((value_head_dim + kTileV - 1) / kTileV), static_cast<unsigned>(num_value_heads),
              static_cast<unsigned>(num_seqs));
}

template <typename T>
cudaError_t launch_prefill_instance(const LinearAttentionPrefillParams& p, cudaStream_t stream) {
  const int smem_bytes = prefill_smem_floats(p.key_head_dim) * static_cast<int>(sizeof(float));
  // Above 48 KB dynamic shared memory needs an explicit opt-in (108 KB at dk = 128).
  cudaError_t e = cudaFuncSetAttribute(linear_attention_prefill_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       smem_bytes);
  if (e != cudaSuccess) return e;
  linear_attention_prefill_kernel<T>
      <<<grid_of(p.value_head_dim, p.num_value_heads, p.num_seqs), kPrefillThreads, smem_bytes, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

Status launch_linear_attention_decode(const LinearAttentionDecodeParams& p, Stream stream) {
  if (std::string why = linear_attention_decode_problem(p); !why.empty()) return params_error(why, __FILE__, __LINE__);
  if (Status s = check_grid(p); !s.ok()) return s;
  if (p.num_seqs == 0) return Status::success();
  const dim3 grid = grid_of(p.value_head_dim, p.num_value_heads, p.num_seqs);
  const dim3 block(kTileV, kDecodeWarps);
  if (p.dtype == ElemType::kBF16) {
    linear_attention_decode_kernel<__nv_bfloat16><<<grid, block, 0, stream>>>(p);
  } else {
    linear_attention_decode_kernel<__half><<<grid, block, 0, stream>>>(p);
  }
  return cuda_status(cudaGetLastError(), "linear_attention_decode_kernel<<<>>>", __FILE__, __LINE__);
}

Status launch_linear_attention_prefill(const LinearAttentionPrefillParams& p, Stream stream) {
  if (std::string why = linear_attention_prefill_problem(p); !why.empty()) return params_error(why, __FILE__, __LINE__);
  if (Status s = check_grid(p); !s.ok()) return s;
  if (p.num_seqs == 0) return Status::success();
  const cudaError_t e = p.dtype == ElemType::kBF16 ? launch_prefill_instance<__nv_bfloat16>(p, stream)
                                                   : launch_prefill_instance<__half>(p, stream);
  return cuda_status(e, "linear_attention_prefill_kernel<<<>>>", __FILE__, __LINE__);
}

}  // namespace kvplan::kernels
