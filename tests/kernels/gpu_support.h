// tests/kernels/gpu_support.h — device buffers and the skip rule for GPU tests (label `gpu`).
//
//   KVPLAN_REQUIRE_GPU();                           // GTEST_SKIP with the runtime's reason if no device
//   DeviceBuffer<uint16_t> out(n);  out.poison16();  // every element NaN until the kernel writes it
//   launch_...(params, nullptr);  std::vector<uint16_t> host = out.download();
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kvplan/kernels/device.h"

#define KVPLAN_REQUIRE_GPU()                                              \
  do {                                                                    \
    std::string kvplan_why_;                                              \
    if (!::kvplan::kernels::cuda_device_available(&kvplan_why_)) {        \
      GTEST_SKIP() << kvplan_why_;                                        \
    }                                                                     \
  } while (0)

namespace kvplan::kernels::testing {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { cuda_check(cudaMalloc(&ptr_, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return static_cast<T*>(ptr_); }
  const T* get() const { return static_cast<const T*>(ptr_); }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    cuda_check(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    cuda_check(cudaDeviceSynchronize(), "kernel");
    cuda_check(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return host;
  }
  // All bytes 0xFF: NaN in bf16, fp16, fp32 and fp8 e4m3.
  void poison() { cuda_check(cudaMemset(ptr_, 0xFF, n_ * sizeof(T)), "poison"); }

 private:
  void* ptr_ = nullptr;
  size_t n_ = 0;
};

}  // namespace kvplan::kernels::testing
