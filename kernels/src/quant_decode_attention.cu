// Decode attention over quantized KV caches (paged fp8 e4m3 / int8 / int4, KIVI-2), dequantizing in
// registers. Work split and shapes: quant_decode_attention.h; formats: kv_cache.h; CPU reference:
// quant_decode_attention_ref.cpp.
#include "kvplan/kernels/quant_decode_attention.h"

#include <cuda_runtime.h>

#include <string>

#include "quant_math.cuh"

namespace kvplan::kernels {

namespace {

using namespace detail;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxQ = 8;  // query heads per CTA: q and the accumulators of each live in registers
constexpr int kChunk = 8; // channels per lane

// Dequantized channels [c0, c0 + 8) of K and V of token t of (seq, kv_head).
template <CacheType kType, bool kBF16, int D>
struct TokenLoader {
  // Paged caches (fp8, int8, int4).
  __device__ static void load(const QuantDecodeParams& p, int s, int kvh, int t, int c0, float k_scale, float v_scale,
                              float (&k)[kChunk], float (&v)[kChunk]) {
    const QuantKvCache& c = p.cache;
    const int tpb = c.tokens_per_block;
    const int64_t block = p.block_table[static_cast<int64_t>(s) * p.max_blocks_per_seq + t / tpb];
    const int64_t row = (block * c.num_kv_heads + kvh) * tpb + t % tpb;
    const uint8_t* kd = static_cast<const uint8_t*>(c.k_data) + row * data_row_bytes(kType, D);
    const uint8_t* vd = static_cast<const uint8_t*>(c.v_data) + row * data_row_bytes(kType, D);
    if constexpr (kType == CacheType::kFp8E4M3) {
      const uint2 kw = *reinterpret_cast<const uint2*>(kd + c0);
      const uint2 vw = *reinterpret_cast<const uint2*>(vd + c0);
      const uint32_t kk[2] = {kw.x, kw.y}, vv[2] = {vw.x, vw.y};
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float2 kf = fp8x2_to_float2(kk[i] >> (16 * j));
          const float2 vf = fp8x2_to_float2(vv[i] >> (16 * j));
          k[4 * i + 2 * j] = kf.x * k_scale;
          k[4 * i + 2 * j + 1] = kf.y * k_scale;
          v[4 * i + 2 * j] = vf.x * v_scale;
          v[4 * i + 2 * j + 1] = vf.y * v_scale;
        }
      }
    } else {
      // The lane's 8 channels lie in one group (group_size is a multiple of 8).
      const int64_t meta_at = row * meta_row_elems(kType, D, c.group_size) + 2 * (c0 / c.group_size);
      const uint32_t km = *reinterpret_cast<const uint32_t*>(c.k_meta + meta_at);
      const uint32_t vm = *reinterpret_cast<const uint32_t*>(c.v_meta + meta_at);
      const float ks = half_bits_to_float(km), kz = half_bits_to_float(km >> 16);
      const float vs = half_bits_to_float(vm), vz = half_bits_to_float(vm >> 16);
      if constexpr (kType == CacheType::kInt8) {
        const uint2 kw = *reinterpret_cast<const uint2*>(kd + c0);
        const uint2 vw = *reinterpret_cast<const uint2*>(vd + c0);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const uint32_t kc = ((e < 4 ? kw.x : kw.y) >> (8 * (e % 4))) & 0xFFu;
          const uint32_t vc = ((e < 4 ? vw.x : vw.y) >> (8 * (e % 4))) & 0xFFu;
          k[e] = fmaf(static_cast<float>(kc), ks, kz);
          v[e] = fmaf(static_cast<float>(vc), vs, vz);
        }
      } else {  // int4: channel c0 + e is nibble e of the 32-bit word (low nibble = even channel)
        const uint32_t kw = *reinterpret_cast<const uint32_t*>(kd + c0 / 2);
        const uint32_t vw = *reinterpret_cast<const uint32_t*>(vd + c0 / 2);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          k[e] = fmaf(static_cast<float>((kw >> (4 * e)) & 0xFu), ks, kz);
          v[e] = fmaf(static_cast<float>((vw >> (4 * e)) & 0xFu), vs, vz);
        }
      }
    }
  }
};

template <bool kBF16, int D>
struct TokenLoader<CacheType::kKivi2, kBF16, D> {
  // `quantized` = Q(context length): tokens below it are 2-bit codes, the rest are in the ring.
  __device__ static void load(const QuantDecodeParams& p, int s, int kvh, int t, int c0, int quantized,
                              float (&k)[kChunk], float (&v)[kChunk]) {
    const KiviCache& c = p.kivi_cache;
    if (t >= quantized) {
      const int64_t at = kivi_residual_offset(c, s, kvh, t) + c0;
      load8<kBF16>(c.k_residual + at, k);
      load8<kBF16>(c.v_residual + at, v);
      return;
    }
    const int64_t code_at = kivi_code_offset(c, s, kvh, t) + c0 / 4;
    const uint32_t kc = *reinterpret_cast<const uint16_t*>(c.k_codes + code_at);
    const uint32_t vc = *reinterpret_cast<const uint16_t*>(c.v_codes + code_at);
    // Keys: {scale, zero} per channel of the token's group, 8 channels = 32 bytes.
    const uint4* km = reinterpret_cast<const uint4*>(c.k_meta + kivi_key_meta_offset(c, s, kvh, t, c0));
    const uint4 m0 = km[0], m1 = km[1];
    const uint32_t kmeta[8] = {m0.x, m0.y, m0.z, m0.w, m1.x, m1.y, m1.z, m1.w};
    // Values: one {scale, zero} for the lane's 8 channels (one channel group).
    const uint32_t vm = *reinterpret_cast<const uint32_t*>(c.v_meta + kivi_value_meta_offset(c, s, kvh, t, c0));
    const float vs = half_bits_to_float(vm), vz = half_bits_to_float(vm >> 16);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      k[e] = fmaf(static_cast<float>((kc >> (2 * e)) & 3u), half_bits_to_float(kmeta[e]), half_bits_to_float(kmeta[e] >> 16));
      v[e] = fmaf(static_cast<float>((vc >> (2 * e)) & 3u), vs, vz);
    }
  }
};

// Grid (num_seqs, num_kv_heads, ceil(group / kMaxQ)). Sub-groups of D/8 lanes take tokens
// sub, sub + NS, ...; the loop bound is warp-uniform so the shuffles always have the full warp.
template <int D, bool kBF16, CacheType kType>
__global__ void __launch_bounds__(kThreads) quant_decode_kernel(QuantDecodeParams p) {
  constexpr int kLanesPerToken = D / kChunk;             // 8, 16, 32
  constexpr int kSubPerWarp = 32 / kLanesPerToken;        // 4, 2, 1
  constexpr int kSubgroups = kWarps * kSubPerWarp;        // 16, 8, 4
  constexpr float kLog2e = 1.4426950408889634f;
  __shared__ float sm_acc[kSubgroups][kMaxQ][D];          // 32 KiB for every D
  __shared__ float sm_m[kSubgroups][kMaxQ];
  __shared__ float sm_l[kSubgroups][kMaxQ];

  const int s = blockIdx.x, kvh = blockIdx.y;
  const int group = p.num_q_heads / p.num_kv_heads;
  const int q_first = kvh * group + blockIdx.z * kMaxQ;
  const int nq = min(kMaxQ, group - static_cast<int>(blockIdx.z) * kMaxQ);
  const int L = p.context_lens[s];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int sub_in_warp = lane / kLanesPerToken;
  const int sub = warp * kSubPerWarp + sub_in_warp;
  const int c0 = (lane % kLanesPerToken) * kChunk;

  float q[kMaxQ][kChunk];
  float m[kMaxQ], l[kMaxQ], acc[kMaxQ][kChunk];
  const float q_scale = p.softmax_scale * kLog2e;  // scores in log2 units: exp2 instead of exp
#pragma unroll
  for (int i = 0; i < kMaxQ; ++i) {
    m[i] = -__int_as_float(0x7f800000);
    l[i] = 0.f;
#pragma unroll
    for (int e = 0; e < kChunk; ++e) acc[i][e] = 0.f, q[i][e] = 0.f;
    if (i < nq) {
      load8<kBF16>(p.q + (static_cast<int64_t>(s) * p.num_q_heads + q_first + i) * D + c0, q[i]);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) q[i][e] *= q_scale;
    }
  }

  float k_scale = 1.f, v_scale = 1.f;
  int quantized = 0;
  if constexpr (kType == CacheType::kFp8E4M3) {
    k_scale = p.cache.k_scale[p.cache.fp8_scale_per_head ? kvh : 0];
    v_scale = p.cache.v_scale[p.cache.fp8_scale_per_head ? kvh : 0];
  }
  if constexpr (kType == CacheType::kKivi2) {
    quantized = kivi_quantized_tokens(L, p.kivi_cache.residual_tokens, p.kivi_cache.group_size);
  }

  for (int base = warp * kSubPerWarp; base < L; base += kSubgroups) {
    const int t = base + sub_in_warp;
    const bool valid = t < L;
    float k[kChunk] = {}, v[kChunk] = {};
    if (valid) {
      if constexpr (kType == CacheType::kKivi2) {
        TokenLoader<kType, kBF16, D>::load(p, s, kvh, t, c0, quantized, k, v);
      } else {
        TokenLoader<kType, kBF16, D>::load(p, s, kvh, t, c0, k_scale, v_scale, k, v);
      }
    }
#pragma unroll
    for (int i = 0; i < kMaxQ; ++i) {
      if (i >= nq) break;  // CTA-uniform
      float dot = 0.f;
#pragma unroll
      for (int e = 0; e < kChunk; ++e) dot = fmaf(q[i][e], k[e], dot);
#pragma unroll
      for (int off = kLanesPerToken / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
      if (valid) {
        const float m_new = fmaxf(m[i], dot);
        const float alpha = exp2f(m[i] - m_new);  // 0 on the first token (m = -inf)
        const float pr = exp2f(dot - m_new);
        l[i] = l[i] * alpha + pr;
#pragma unroll
        for (int e = 0; e < kChunk; ++e) acc[i][e] = fmaf(acc[i][e], alpha, pr * v[e]);
        m[i] = m_new;
      }
    }
  }

  // Merge the sub-groups' partial softmaxes.
#pragma unroll
  for (int i = 0; i < kMaxQ; ++i) {
#pragma unroll
    for (int e = 0; e < kChunk; ++e) sm_acc[sub][i][c0 + e] = acc[i][e];
    if (lane % kLanesPerToken == 0) {
      sm_m[sub][i] = m[i];
      sm_l[sub][i] = l[i];
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < nq * D; idx += kThreads) {
    const int i = idx / D, d = idx % D;
    float m_max = -__int_as_float(0x7f800000);
#pragma unroll
    for (int g = 0; g < kSubgroups; ++g) m_max = fmaxf(m_max, sm_m[g][i]);
    float o = 0.f, sum = 0.f;
    if (m_max != -__int_as_float(0x7f800000)) {  // context 0 leaves every sub-group empty: output 0
#pragma unroll
      for (int g = 0; g < kSubgroups; ++g) {
        const float w = exp2f(sm_m[g][i] - m_max);  // 0 for an empty sub-group
        sum += sm_l[g][i] * w;
        o += sm_acc[g][i][d] * w;
      }
      o /= sum;
    }
    p.out[(static_cast<int64_t>(s) * p.num_q_heads + q_first + i) * D + d] = from_float<kBF16>(o);
  }
}

template <int D, bool kBF16>
void launch_d(const QuantDecodeParams& p, dim3 grid, cudaStream_t stream) {
  if (p.kivi) {
    quant_decode_kernel<D, kBF16, CacheType::kKivi2><<<grid, kThreads, 0, stream>>>(p);
    return;
  }
  switch (p.cache.type) {
    case CacheType::kFp8E4M3: quant_decode_kernel<D, kBF16, CacheType::kFp8E4M3><<<grid, kThreads, 0, stream>>>(p); break;
    case CacheType::kInt8: quant_decode_kernel<D, kBF16, CacheType::kInt8><<<grid, kThreads, 0, stream>>>(p); break;
    case CacheType::kInt4: quant_decode_kernel<D, kBF16, CacheType::kInt4><<<grid, kThreads, 0, stream>>>(p); break;
    default: break;  // rejected by the check
  }
}

template <bool kBF16>
void launch_dtype(const QuantDecodeParams& p, dim3 grid, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64: launch_d<64, kBF16>(p, grid, stream); break;
    case 128: launch_d<128, kBF16>(p, grid, stream); break;
    case 256: launch_d<256, kBF16>(p, grid, stream); break;
    default: break;  // rejected by the check
  }
}

bool aligned(const void* ptr, int bytes) { return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes) == 0; }

}  // namespace

Status launch_quant_decode_attention(const QuantDecodeParams& p, Stream stream_handle) {
  Status st = check_quant_decode_params(p);
  if (!st.ok() || p.num_seqs == 0) return st;
  bool ok = aligned(p.q, 16) && aligned(p.out, 2);
  if (p.kivi) {
    const KiviCache& c = p.kivi_cache;
    ok = ok && aligned(c.k_residual, 16) && aligned(c.v_residual, 16) && aligned(c.k_meta, 16) && aligned(c.v_meta, 4) &&
         aligned(c.k_codes, 2) && aligned(c.v_codes, 2);
  } else {
    const int data_align = p.cache.type == CacheType::kInt4 ? 4 : 8;
    ok = ok && aligned(p.cache.k_data, data_align) && aligned(p.cache.v_data, data_align) && aligned(p.cache.k_meta, 4) &&
         aligned(p.cache.v_meta, 4);
  }
  if (!ok) return params_error("misaligned pointer (q 16 B; cache data 16/8/4 B as loaded; metadata 4 or 16 B)", __FILE__, __LINE__);
  const int group = p.num_q_heads / p.num_kv_heads;
  const dim3 grid(static_cast<unsigned>(p.num_seqs), static_cast<unsigned>(p.num_kv_heads),
                  static_cast<unsigned>((group + kMaxQ - 1) / kMaxQ));
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
  if (p.dtype == ElemType::kBF16) {
    launch_dtype<true>(p, grid, stream);
  } else {
    launch_dtype<false>(p, grid, stream);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    return Status::error("cudaLaunchKernel", static_cast<int>(e), cudaGetErrorString(e),
                         std::string(__FILE__) + ":" + std::to_string(__LINE__));
  }
  return Status::success();
}

}  // namespace kvplan::kernels
