// Device helpers shared by the KV write and quantized decode kernels: 16-bit <-> fp32, and the
// quantization rule of kv_cache.h in the exact fp32 operations the CPU reference performs.
// Private to kernels/src (a .cuh, included only by .cu files).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace kvplan::kernels::detail {

template <bool kBF16>
__device__ __forceinline__ float to_float(uint16_t b) {
  if constexpr (kBF16) {
    return __uint_as_float(static_cast<uint32_t>(b) << 16);  // exact
  } else {
    return __half2float(__ushort_as_half(b));
  }
}

template <bool kBF16>
__device__ __forceinline__ uint16_t from_float(float x) {
  if constexpr (kBF16) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  } else {
    return __half_as_ushort(__float2half_rn(x));
  }
}

// Eight 16-bit values at p (16-byte aligned) as fp32.
template <bool kBF16>
__device__ __forceinline__ void load8(const uint16_t* p, float (&x)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = to_float<kBF16>(static_cast<uint16_t>(w[i] & 0xFFFFu));
    x[2 * i + 1] = to_float<kBF16>(static_cast<uint16_t>(w[i] >> 16));
  }
}

__device__ __forceinline__ float half_bits_to_float(uint32_t bits16) {
  return __half2float(__ushort_as_half(static_cast<uint16_t>(bits16 & 0xFFFFu)));
}

// {scale, zero} of a group from its min and max; *_bits are the stored fp16 words, scale/zero the
// same values as fp32. Matches quantize_group (kv_write_ref.cpp): (mx - mn) / qmax in fp32, then fp16_rn.
struct GroupParams {
  uint16_t scale_bits, zero_bits;
  float scale, zero;
};
__device__ __forceinline__ GroupParams group_params(float mn, float mx, int qmax) {
  const __half s = __float2half_rn(__fdiv_rn(__fsub_rn(mx, mn), static_cast<float>(qmax)));
  const __half z = __float2half_rn(mn);
  return GroupParams{__half_as_ushort(s), __half_as_ushort(z), __half2float(s), __half2float(z)};
}

// code = clamp(rint_even((x - zero) / scale), 0, qmax); 0 for a zero scale. The _rn intrinsics keep
// each step one IEEE-rounded operation whatever the compiler flags (no contraction, no fast division).
__device__ __forceinline__ uint32_t quant_code(float x, const GroupParams& g, int qmax) {
  if (!(g.scale > 0.f)) return 0;
  const float q = rintf(__fdiv_rn(__fsub_rn(x, g.zero), g.scale));
  return static_cast<uint32_t>(fminf(fmaxf(q, 0.f), static_cast<float>(qmax)));
}

__device__ __forceinline__ uint32_t fp8_code(float x, float scale) {
  return static_cast<uint32_t>(__nv_cvt_float_to_fp8(__fdiv_rn(x, scale), __NV_SATFINITE, __NV_E4M3));
}

// Two e4m3 codes (low byte first) as fp32; the fp8 -> fp16 conversion is exact.
__device__ __forceinline__ float2 fp8x2_to_float2(uint32_t two_codes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two_codes & 0xFFFFu), __NV_E4M3);
  return __half22float2(__half2(h));
}

}  // namespace kvplan::kernels::detail
