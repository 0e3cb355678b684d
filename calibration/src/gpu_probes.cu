// Device helpers of gpu_probes.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <string>

#include "kvplan/calibration/gpu_probes.h"

namespace kvplan::calibration {

namespace {

Status cuda_status(cudaError_t e, const char* call, int line) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(call, static_cast<int>(e), cudaGetErrorString(e), "gpu_probes.cu:" + std::to_string(line));
}

__device__ uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void kvplan_fill_kernel(uint16_t* p, size_t n, uint64_t seed, bool fp16) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const uint64_t h = mix64(seed * 0x100000001B3ull + i);
    // magnitude in [1/16, 1), random sign: never zero, never denormal
    const float mag = 0.0625f + 0.9375f * static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
    const float v = (h & 1) ? -mag : mag;
    p[i] = fp16 ? __half_as_ushort(__float2half_rn(v)) : __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
}

__global__ void kvplan_empty_kernel() {}

__global__ void kvplan_elementwise_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    out[i] = __float2bfloat16_rn(__bfloat162float(in[i]) * 1.0009765625f + 0.0009765625f);
  }
}

unsigned grid_for(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

}  // namespace

Status fill_random_16bit(void* ptr, size_t elems, uint64_t seed, bool fp16, kernels::Stream stream) {
  if (!ptr || elems == 0) return Status::success();
  kvplan_fill_kernel<<<grid_for(elems), 256, 0, stream>>>(static_cast<uint16_t*>(ptr), elems, seed, fp16);
  return cuda_status(cudaGetLastError(), "kvplan_fill_kernel launch", __LINE__);
}

Status launch_empty_kernels(int count, kernels::Stream stream) {
  for (int i = 0; i < count; ++i) {
    kvplan_empty_kernel<<<1, 32, 0, stream>>>();
    if (Status s = cuda_status(cudaGetLastError(), "kvplan_empty_kernel launch", __LINE__); !s.ok()) return s;
  }
  return Status::success();
}

Status launch_elementwise(const void* in, void* out, size_t elems, kernels::Stream stream) {
  if (elems == 0) return Status::success();
  kvplan_elementwise_kernel<<<grid_for(elems), 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(in),
                                                                   static_cast<__nv_bfloat16*>(out), elems);
  return cuda_status(cudaGetLastError(), "kvplan_elementwise_kernel launch", __LINE__);
}

}  // namespace kvplan::calibration
