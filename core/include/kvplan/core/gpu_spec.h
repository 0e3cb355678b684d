// kvplan/core/gpu_spec.h — datasheet facts about one accelerator, each with its source.
//
//   GpuSpec h100 = parse_gpu_spec(json_object);          // a preset entry (data/gpus/gpus.json)
//   GpuSpec mine = load_gpu_spec_file("my-gpu.json");    // a custom GPU, same schema (docs/gpus.md)
//   double t = flops / h100.peak_flops(DType::kBF16);
//
// Peak FLOP/s are dense (no structured sparsity). `memory_bytes` is the marketed capacity;
// `usable_memory_bytes` is what the CUDA driver reports as total (torch.cuda.mem_get_info), which
// engines use for their budgets; where no measured figure is known it is estimated (labelled).
// Parsing is strict: unknown keys (other than "_comment"-style keys starting with '_') and
// numbers out of range throw ConfigError naming the GPU, the field, the value and the rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvplan/core/dtype.h"

namespace kvplan {

struct GpuSpec {
  std::string id;      // preset id, e.g. "h100-sxm"
  std::string name;    // e.g. "NVIDIA H100 SXM5 80GB"
  std::string vendor;  // "nvidia" or "amd"
  std::vector<std::string> aliases;       // other lower-case ids --gpu accepts, e.g. "h100"
  std::vector<std::string> device_names;  // exact names drivers print, e.g. "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;
  int64_t usable_memory_bytes = 0;
  std::string usable_memory_source;
  bool usable_memory_estimated = false;   // no measured total: 0.99 x the marketed capacity
  std::string memory_type;                // e.g. "HBM3", "GDDR6X"; "" when not given
  double memory_bandwidth_bytes_per_s = 0;
  double peak_flops_bf16 = 0;  // dense tensor-core FLOP/s, fp32 accumulate
  double peak_flops_fp8 = 0;   // 0 when the GPU has no fp8 tensor cores
  double peak_flops_int8 = 0;
  double peak_flops_fp4 = 0;   // dense fp4 tensor-core FLOP/s (Blackwell); 0 when the GPU has none
  int num_sms = 0;             // SMs (NVIDIA) or CUs (AMD)
  double interconnect_bytes_per_s = 0;  // per-GPU NVLink/Infinity Fabric (0: PCIe only)
  // GPUs one scale-up domain joins at interconnect_bytes_per_s (an HGX/OAM board: 8; NVL72: 72;
  // NVLink-bridged PCIe cards: 2 or 4). PCIe-only GPUs: the GPUs of one server (8). Tensor
  // parallelism beyond it crosses the network, which the cost model does not price.
  int scale_up_domain_gpus = 8;
  std::string scale_up_domain_source;   // where the domain size comes from ("default: ..." when not given)
  double pcie_bytes_per_s = 0;          // host link, one direction
  double tdp_w = 0;                     // board power in W; 0 when not given
  double price_usd_per_gpu_hour = 0;    // 0 when not given
  std::string price_source;             // where the price comes from (required with a price)
  std::string architecture;             // "ampere", "hopper", ...
  bool spec_only = false;               // no kernels can run on it in kvplan (e.g. AMD)
  std::string source;                   // datasheet the numbers come from

  double peak_flops(DType compute) const;
};

// `what` names the GPU in error messages; empty: "gpu preset '<id>'".
GpuSpec parse_gpu_spec(const nlohmann::json& object, std::string_view what = {});

// Reads one GPU object (same schema as a preset) from a JSON file; errors name the file.
GpuSpec load_gpu_spec_file(const std::string& path);

}  // namespace kvplan
