// bench/kernel_bench_util.h — device buffers and checks shared by the kernel benchmark's case files.
//
//   Keep keep;                                        // owns every allocation of a case
//   uint16_t* q = upload(keep, random16(n, rng));     // fresh random bf16, never zero
//   uint16_t* out = alloc<uint16_t>(keep, n);         // poisoned: NaN until written
//   std::string bad = compare_bf16(download(out, n), reference);   // "" when it matches
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kvplan/kernels/numeric.h"

namespace kvplan::bench {

// A device allocation that lives as long as the case that uses it.
struct DeviceBlob {
  void* ptr = nullptr;
  explicit DeviceBlob(size_t n) {
    if (cudaMalloc(&ptr, std::max<size_t>(n, 16)) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBlob() { cudaFree(ptr); }
  DeviceBlob(const DeviceBlob&) = delete;
  DeviceBlob& operator=(const DeviceBlob&) = delete;
};
using Keep = std::vector<std::shared_ptr<DeviceBlob>>;

template <typename T>
T* upload(Keep& keep, const std::vector<T>& host) {
  auto blob = std::make_shared<DeviceBlob>(host.size() * sizeof(T));
  cudaMemcpy(blob->ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  keep.push_back(blob);
  return static_cast<T*>(blob->ptr);
}

// Uninitialised output, poisoned with 0xFF bytes: NaN in every float format.
template <typename T>
T* alloc(Keep& keep, size_t n) {
  auto blob = std::make_shared<DeviceBlob>(n * sizeof(T));
  cudaMemset(blob->ptr, 0xFF, n * sizeof(T));
  keep.push_back(blob);
  return static_cast<T*>(blob->ptr);
}

template <typename T>
std::vector<T> download(const T* dev, size_t n) {
  std::vector<T> host(n);
  cudaDeviceSynchronize();
  cudaMemcpy(host.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost);
  return host;
}

// Uniform bf16 values in [-1, 1), never exactly zero.
inline std::vector<uint16_t> random16(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    const float f = d(rng);
    x = kernels::float_to_bf16(f == 0.f ? 0.25f : f);
  }
  return v;
}

// "" when every element is written, finite and within bf16 tolerance (2e-2 abs + 2e-2 rel) of the
// reference; else how many were NaN/unwritten or outside.
inline std::string compare_bf16(const std::vector<uint16_t>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return "size mismatch";
  size_t bad = 0, nan = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = kernels::bf16_to_float(got[i]);
    if (std::isnan(g)) {
      ++nan;
      continue;
    }
    if (std::fabs(g - ref[i]) > 2e-2 + 2e-2 * std::fabs(ref[i])) ++bad;
  }
  if (nan + bad == 0) return "";
  return std::to_string(nan) + " NaN/unwritten, " + std::to_string(bad) + " outside tolerance of " +
         std::to_string(got.size());
}

}  // namespace kvplan::bench
