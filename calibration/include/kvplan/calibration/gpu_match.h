// kvplan/calibration/gpu_match.h — which GPU preset a calibration run was measured on.
//
//   std::optional<std::string> id = match_gpu_preset("NVIDIA H100 80GB HBM3", 85'520'809'984);
//   // -> "h100-sxm"; std::nullopt when no preset fits (the caller asks for --gpu)
//
// The runner stores the name CUDA reports (cudaDeviceProp::name), which differs from the preset
// names ("NVIDIA H100 80GB HBM3" is the SXM5 part). Memory separates the A100 40/80 GB parts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvplan::calibration {

std::optional<std::string> match_gpu_preset(std::string_view cuda_name, int64_t memory_bytes);

}  // namespace kvplan::calibration
