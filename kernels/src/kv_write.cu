// KV write kernels: copy or quantize-on-write into paged/contiguous caches (launch_kv_write) and the
// KIVI-2 append (launch_kivi_write). Formats and rounding: kv_cache.h; CPU references: kv_write_ref.cpp.
#include "kvplan/kernels/kv_write.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "quant_math.cuh"

namespace kvplan::kernels {

namespace {

using namespace detail;

// One CTA per token. Work item = (K or V, head, unit): a unit is 8 channels for 16-bit and fp8
// caches, one quantization group for int8/int4 (its min and max need the whole group; the group is
// read twice, the second time from L1).
template <bool kBF16, CacheType kType>
__global__ void kv_write_kernel(KvWriteParams p) {
  const int t = blockIdx.x;
  const int64_t slot = p.slot_mapping[t];
  const QuantKvCache& c = p.cache;
  if (slot < 0 || slot >= c.num_slots) return;
  const int H = c.num_kv_heads, D = c.head_dim;
  constexpr bool kGrouped = has_group_meta(kType);
  const int unit = kGrouped ? c.group_size : 8;
  const int units = D / unit;
  const int items = 2 * H * units;
  for (int i = threadIdx.x; i < items; i += blockDim.x) {
    const bool key = i < H * units;
    const int h = (i % (H * units)) / units;
    const int u = i % units;
    const uint16_t* in = (key ? p.k_new : p.v_new) + (static_cast<int64_t>(t) * H + h) * D + u * unit;
    const int64_t row = cache_row(c, slot, h);
    uint8_t* data = static_cast<uint8_t*>(key ? c.k_data : c.v_data) + row * data_row_bytes(kType, D);
    if constexpr (kType == CacheType::kBF16 || kType == CacheType::kFP16) {
      *reinterpret_cast<uint4*>(data + 16 * u) = *reinterpret_cast<const uint4*>(in);
    } else if constexpr (kType == CacheType::kFp8E4M3) {
      const float scale = (key ? c.k_scale : c.v_scale)[c.fp8_scale_per_head ? h : 0];
      float x[8];
      load8<kBF16>(in, x);
      uint2 out;
      out.x = fp8_code(x[0], scale) | fp8_code(x[1], scale) << 8 | fp8_code(x[2], scale) << 16 | fp8_code(x[3], scale) << 24;
      out.y = fp8_code(x[4], scale) | fp8_code(x[5], scale) << 8 | fp8_code(x[6], scale) << 16 | fp8_code(x[7], scale) << 24;
      *reinterpret_cast<uint2*>(data + 8 * u) = out;
    } else {
      constexpr int kMax = max_code(kType);
      float mn = __int_as_float(0x7f800000), mx = -mn;  // +inf, -inf
      for (int j = 0; j < unit; j += 8) {
        float x[8];
        load8<kBF16>(in + j, x);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          mn = fminf(mn, x[e]);
          mx = fmaxf(mx, x[e]);
        }
      }
      const GroupParams g = group_params(mn, mx, kMax);
      uint16_t* meta = (key ? c.k_meta : c.v_meta) + row * meta_row_elems(kType, D, unit) + 2 * u;
      *reinterpret_cast<uint32_t*>(meta) = static_cast<uint32_t>(g.scale_bits) | static_cast<uint32_t>(g.zero_bits) << 16;
      for (int j = 0; j < unit; j += 8) {
        float x[8];
        load8<kBF16>(in + j, x);
        uint32_t q[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) q[e] = quant_code(x[e], g, kMax);
        const int ch = u * unit + j;  // first channel of these 8
        if constexpr (kType == CacheType::kInt8) {
          *reinterpret_cast<uint2*>(data + ch) =
              make_uint2(q[0] | q[1] << 8 | q[2] << 16 | q[3] << 24, q[4] | q[5] << 8 | q[6] << 16 | q[7] << 24);
        } else {  // int4: byte k = channel 2k (low nibble) | channel 2k+1 (high nibble)
          *reinterpret_cast<uint32_t*>(data + ch / 2) =
              q[0] | q[1] << 4 | q[2] << 8 | q[3] << 12 | q[4] << 16 | q[5] << 20 | q[6] << 24 | q[7] << 28;
        }
      }
    }
  }
}

// One CTA per (sequence, KV head). Phase 1 quantizes the key groups this append completes, tokens
// [Q0, Q1), reading each token from the ring (t < L0) or from the new input; phase 2, after a
// barrier (a new ring token may take the slot of a token phase 1 reads), stores the new tokens that
// stay in the ring, [max(Q1, L0), L1). The result equals L1 - L0 single appends (kv_cache.h).
template <bool kBF16>
__global__ void kivi_write_kernel(KiviWriteParams p) {
  const KiviCache& c = p.cache;
  const int s = blockIdx.x, h = blockIdx.y;
  const int H = c.num_kv_heads, D = c.head_dim, G = c.group_size;
  const int first = p.new_token_offsets[s];
  const int n = p.new_token_offsets[s + 1] - first;
  const int L0 = p.context_lens_before[s];
  const int L1 = L0 + n;
  if (n <= 0 || L0 < 0 || L1 > c.max_seq_len) return;  // nothing to do, or a bad length (the reference reports it)
  const int Q0 = kivi_quantized_tokens(L0, c.residual_tokens, G);
  const int Q1 = kivi_quantized_tokens(L1, c.residual_tokens, G);
  auto row_of = [&](bool key, int t) -> const uint16_t* {
    return t < L0 ? (key ? c.k_residual : c.v_residual) + kivi_residual_offset(c, s, h, t)
                  : (key ? p.k_new : p.v_new) + (static_cast<int64_t>(first + t - L0) * H + h) * D;
  };

  // Keys: item = (group, 4 channels = one code byte per token); values: item = (token, channel group).
  const int key_items = (Q1 - Q0) / G * (D / 4);
  const int value_items = (Q1 - Q0) * (D / G);
  for (int i = threadIdx.x; i < key_items + value_items; i += blockDim.x) {
    if (i < key_items) {
      const int t0 = Q0 + i / (D / 4) * G;
      const int ch = i % (D / 4) * 4;
      float mn[4], mx[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) mn[e] = __int_as_float(0x7f800000), mx[e] = -mn[e];
      for (int k = 0; k < G; ++k) {
        const uint2 w = *reinterpret_cast<const uint2*>(row_of(true, t0 + k) + ch);
        const float x[4] = {to_float<kBF16>(w.x & 0xFFFFu), to_float<kBF16>(w.x >> 16), to_float<kBF16>(w.y & 0xFFFFu),
                            to_float<kBF16>(w.y >> 16)};
#pragma unroll
        for (int e = 0; e < 4; ++e) mn[e] = fminf(mn[e], x[e]), mx[e] = fmaxf(mx[e], x[e]);
      }
      GroupParams g[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) g[e] = group_params(mn[e], mx[e], kKivi2MaxCode);
      *reinterpret_cast<uint4*>(c.k_meta + kivi_key_meta_offset(c, s, h, t0, ch)) =
          make_uint4(g[0].scale_bits | static_cast<uint32_t>(g[0].zero_bits) << 16,
                     g[1].scale_bits | static_cast<uint32_t>(g[1].zero_bits) << 16,
                     g[2].scale_bits | static_cast<uint32_t>(g[2].zero_bits) << 16,
                     g[3].scale_bits | static_cast<uint32_t>(g[3].zero_bits) << 16);
      for (int k = 0; k < G; ++k) {
        const uint2 w = *reinterpret_cast<const uint2*>(row_of(true, t0 + k) + ch);
        const uint32_t q = quant_code(to_float<kBF16>(w.x & 0xFFFFu), g[0], kKivi2MaxCode) |
                           quant_code(to_float<kBF16>(w.x >> 16), g[1], kKivi2MaxCode) << 2 |
                           quant_code(to_float<kBF16>(w.y & 0xFFFFu), g[2], kKivi2MaxCode) << 4 |
                           quant_code(to_float<kBF16>(w.y >> 16), g[3], kKivi2MaxCode) << 6;
        c.k_codes[kivi_code_offset(c, s, h, t0 + k) + ch / 4] = static_cast<uint8_t>(q);
      }
    } else {
      const int v = i - key_items;
      const int t = Q0 + v / (D / G);
      const int ch0 = v % (D / G) * G;
      const uint16_t* in = row_of(false, t) + ch0;
      float mn = __int_as_float(0x7f800000), mx = -mn;
      for (int j = 0; j < G; j += 8) {
        float x[8];
        load8<kBF16>(in + j, x);
#pragma unroll
        for (int e = 0; e < 8; ++e) mn = fminf(mn, x[e]), mx = fmaxf(mx, x[e]);
      }
      const GroupParams g = group_params(mn, mx, kKivi2MaxCode);
      *reinterpret_cast<uint32_t*>(c.v_meta + kivi_value_meta_offset(c, s, h, t, ch0)) =
          g.scale_bits | static_cast<uint32_t>(g.zero_bits) << 16;
      uint8_t* codes = c.v_codes + kivi_code_offset(c, s, h, t);
      for (int j = 0; j < G; j += 8) {
        float x[8];
        load8<kBF16>(in + j, x);
        uint32_t q = 0;
#pragma unroll
        for (int e = 0; e < 8; ++e) q |= quant_code(x[e], g, kKivi2MaxCode) << (2 * e);
        *reinterpret_cast<uint16_t*>(codes + (ch0 + j) / 4) = static_cast<uint16_t>(q);
      }
    }
  }
  __syncthreads();

  const int ring_first = max(Q1, L0);
  const int chunks = D / 8;
  const int copy_items = 2 * (L1 - ring_first) * chunks;
  for (int i = threadIdx.x; i < copy_items; i += blockDim.x) {
    const bool key = i % 2 == 0;
    const int t = ring_first + i / 2 / chunks;
    const int ch = i / 2 % chunks * 8;
    uint16_t* dst = (key ? c.k_residual : c.v_residual) + kivi_residual_offset(c, s, h, t) + ch;
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(row_of(key, t) + ch);
  }
}

Status launch_error(cudaError_t e, int line) {
  return Status::error("cudaLaunchKernel", static_cast<int>(e), cudaGetErrorString(e), std::string(__FILE__) + ":" + std::to_string(line));
}

bool aligned(const void* ptr, int bytes) { return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes) == 0; }

template <bool kBF16, CacheType kType>
void launch_typed(const KvWriteParams& p, cudaStream_t stream) {
  const int units = has_group_meta(kType) ? p.cache.head_dim / p.cache.group_size : p.cache.head_dim / 8;
  const int items = 2 * p.cache.num_kv_heads * units;
  const int threads = std::min(256, (items + 31) / 32 * 32);
  kv_write_kernel<kBF16, kType><<<p.num_tokens, threads, 0, stream>>>(p);
}

}  // namespace

Status launch_kv_write(const KvWriteParams& p, Stream stream_handle) {
  Status s = check_kv_write_params(p);
  if (!s.ok() || p.num_tokens == 0) return s;
  const QuantKvCache& c = p.cache;
  const int data_align = c.type == CacheType::kInt4 ? 4 : (c.type == CacheType::kBF16 || c.type == CacheType::kFP16) ? 16 : 8;
  if (!aligned(p.k_new, 16) || !aligned(p.v_new, 16) || !aligned(c.k_data, data_align) || !aligned(c.v_data, data_align) ||
      !aligned(c.k_meta, 4) || !aligned(c.v_meta, 4)) {
    return params_error("k_new/v_new need 16-byte alignment, cache data " + std::to_string(data_align) + "-byte, metadata 4-byte",
                        __FILE__, __LINE__);
  }
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
  const bool bf16 = p.dtype == ElemType::kBF16;
  switch (c.type) {
    case CacheType::kBF16: launch_typed<true, CacheType::kBF16>(p, stream); break;
    case CacheType::kFP16: launch_typed<false, CacheType::kFP16>(p, stream); break;
    case CacheType::kFp8E4M3:
      bf16 ? launch_typed<true, CacheType::kFp8E4M3>(p, stream) : launch_typed<false, CacheType::kFp8E4M3>(p, stream);
      break;
    case CacheType::kInt8:
      bf16 ? launch_typed<true, CacheType::kInt8>(p, stream) : launch_typed<false, CacheType::kInt8>(p, stream);
      break;
    case CacheType::kInt4:
      bf16 ? launch_typed<true, CacheType::kInt4>(p, stream) : launch_typed<false, CacheType::kInt4>(p, stream);
      break;
    case CacheType::kKivi2: break;  // rejected by the check
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return launch_error(e, __LINE__);
  return Status::success();
}

Status launch_kivi_write(const KiviWriteParams& p, Stream stream_handle) {
  Status s = check_kivi_write_params(p);
  if (!s.ok() || p.cache.num_seqs == 0) return s;
  const KiviCache& c = p.cache;
  if (!aligned(p.k_new, 16) || !aligned(p.v_new, 16) || !aligned(c.k_residual, 16) || !aligned(c.v_residual, 16) ||
      !aligned(c.k_meta, 16) || !aligned(c.v_meta, 4) || !aligned(c.v_codes, 2)) {
    return params_error("k_new/v_new/residual/k_meta need 16-byte alignment, v_meta 4-byte, v_codes 2-byte", __FILE__, __LINE__);
  }
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
  const dim3 grid(static_cast<unsigned>(c.num_seqs), static_cast<unsigned>(c.num_kv_heads));
  if (c.residual_type == ElemType::kBF16) {
    kivi_write_kernel<true><<<grid, 128, 0, stream>>>(p);
  } else {
    kivi_write_kernel<false><<<grid, 128, 0, stream>>>(p);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return launch_error(e, __LINE__);
  return Status::success();
}

}  // namespace kvplan::kernels
