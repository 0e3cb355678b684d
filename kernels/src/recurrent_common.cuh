// Small device and host helpers shared by the recurrent-state kernels (linear_attention.cu,
// mamba2.cu): 16-bit loads/stores as float for a compile-time element type, and CUDA errors as
// Status. Internal to kernels/src.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kvplan/kernels/status.h"

namespace kvplan::kernels::recurrent_detail {

// T is __nv_bfloat16 or __half; values travel as uint16_t bit patterns (see types.h).
template <typename T>
__device__ __forceinline__ float to_float(uint16_t b);
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(uint16_t b) {
  return __bfloat162float(__ushort_as_bfloat16(b));
}
template <>
__device__ __forceinline__ float to_float<__half>(uint16_t b) {
  return __half2float(__ushort_as_half(b));
}
template <typename T>
__device__ __forceinline__ float load_f(const uint16_t* p, int64_t i) {
  return to_float<T>(p[i]);
}

template <typename T>
__device__ __forceinline__ uint16_t to_bits(float x);
template <>
__device__ __forceinline__ uint16_t to_bits<__nv_bfloat16>(float x) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
template <>
__device__ __forceinline__ uint16_t to_bits<__half>(float x) {
  return __half_as_ushort(__float2half_rn(x));
}

inline Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(call, static_cast<int>(e), cudaGetErrorString(e), std::string(file) + ":" + std::to_string(line));
}

}  // namespace kvplan::kernels::recurrent_detail
