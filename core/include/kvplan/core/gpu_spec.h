// kvplan/core/gpu_spec.h — datasheet facts about one accelerator, each with its source.
//
//   GpuSpec h100 = parse_gpu_spec(json_object);
//   double t = flops / h100.peak_flops(DType::kBF16);
//
// Peak FLOP/s are dense (no structured sparsity). `memory_bytes` is the marketed capacity;
// `usable_memory_bytes` is what the CUDA driver reports as total (torch.cuda.mem_get_info), which
// engines use for their budgets; where no measured figure is known it is estimated (labelled).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvplan/core/dtype.h"

namespace kvplan {

struct GpuSpec {
  std::string id;      // preset id, e.g. "h100-sxm"
  std::string name;    // e.g. "NVIDIA H100 SXM5 80GB"
  std::string vendor;  // "nvidia" or "amd"
  int64_t memory_bytes = 0;
  int64_t usable_memory_bytes = 0;
  std::string usable_memory_source;
  double memory_bandwidth_bytes_per_s = 0;
  double peak_flops_bf16 = 0;  // dense tensor-core FLOP/s, fp32 accumulate
  double peak_flops_fp8 = 0;   // 0 when the GPU has no fp8 tensor cores
  double peak_flops_int8 = 0;
  int num_sms = 0;             // SMs (NVIDIA) or CUs (AMD)
  double interconnect_bytes_per_s = 0;  // per-GPU NVLink/Infinity Fabric (0: PCIe only)
  double pcie_bytes_per_s = 0;          // host link, one direction
  std::string architecture;             // "ampere", "hopper", ...
  bool spec_only = false;               // no kernels can run on it in kvplan (e.g. AMD)
  std::string source;                   // datasheet the numbers come from

  double peak_flops(DType compute) const;
};

GpuSpec parse_gpu_spec(const nlohmann::json& object);

}  // namespace kvplan
