#include "kvplan/kernels/device.h"

#include <cuda_runtime_api.h>

namespace kvplan::kernels {

bool cuda_device_available(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no CUDA device: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device: cudaGetDeviceCount returned 0";
    return false;
  }
  return true;
}

DeviceInfo query_device(int device) {
  DeviceInfo d;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return d;
  d.name = p.name;
  d.num_sms = p.multiProcessorCount;
  d.major = p.major;
  d.minor = p.minor;
  d.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  d.l2_bytes = p.l2CacheSize;
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  return d;
}

}  // namespace kvplan::kernels
