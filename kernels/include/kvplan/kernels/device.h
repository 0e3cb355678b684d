// kvplan/kernels/device.h — is there a CUDA device, and what is it (for GPU tests, the split-KV
// planner and benchmarks). Available only in builds with CUDA (target kvplan::kernels_cuda).
//
//   std::string why;
//   if (!cuda_device_available(&why)) GTEST_SKIP() << why;
//   DeviceInfo d = query_device(0);   // d.num_sms, d.name
#pragma once

#include <cstdint>
#include <string>

namespace kvplan::kernels {

struct DeviceInfo {
  std::string name;
  int num_sms = 0;
  int major = 0, minor = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int driver_version = 0;
  int runtime_version = 0;
};

// False, with the runtime's reason in `why`, when no usable device exists (no GPU, no driver, or a
// driver too old for this runtime).
bool cuda_device_available(std::string* why = nullptr);
DeviceInfo query_device(int device);

}  // namespace kvplan::kernels
