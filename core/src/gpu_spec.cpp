#include "kvplan/core/gpu_spec.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/json_fields.h"
#include "kvplan/core/error.h"

namespace kvplan {

double GpuSpec::peak_flops(DType compute) const {
  if (is_fp8(compute) && peak_flops_fp8 > 0) return peak_flops_fp8;
  if (compute == DType::kInt8 && peak_flops_int8 > 0) return peak_flops_int8;
  return peak_flops_bf16;
}

GpuSpec parse_gpu_spec(const nlohmann::json& object) {
  std::string id = object.is_object() && object.contains("id") && object["id"].is_string()
                       ? object["id"].get<std::string>()
                       : std::string("?");
  internal::JsonFields f(object, fmt::format("gpu preset '{}'", id));
  GpuSpec g;
  g.id = f.string("id");
  g.name = f.string("name");
  g.vendor = f.string_or("vendor", "nvidia");
  g.memory_bytes = static_cast<int64_t>(f.positive_number("memory_gb") * 1e9);
  if (f.has("usable_memory_gib")) {
    g.usable_memory_bytes = static_cast<int64_t>(f.positive_number("usable_memory_gib") * 1073741824.0);
    g.usable_memory_source = f.string("usable_memory_source");
  } else {
    // Marketed "80GB" HBM/GDDR capacities are binary sizes; the driver reports about 1% less
    // (H100 80GB: 79.19 GiB, RTX A6000 48GB: 47.54 GiB in vLLM logs). Estimate, labelled as such.
    g.usable_memory_bytes = static_cast<int64_t>(f.positive_number("memory_gb") * 0.99 * 1073741824.0);
    g.usable_memory_source = "estimate: 0.99 x the marketed capacity read as GiB (no measured total known)";
  }
  g.memory_bandwidth_bytes_per_s = f.positive_number("memory_bandwidth_gb_s") * 1e9;
  g.peak_flops_bf16 = f.positive_number("bf16_dense_tflops") * 1e12;
  g.peak_flops_fp8 = f.number_or("fp8_dense_tflops", 0) * 1e12;
  g.peak_flops_int8 = f.number_or("int8_dense_tops", 0) * 1e12;
  g.num_sms = f.positive_int("num_sms");
  g.interconnect_bytes_per_s = f.number_or("interconnect_gb_s", 0) * 1e9;
  g.pcie_bytes_per_s = f.positive_number("pcie_gb_s") * 1e9;
  g.architecture = f.string("architecture");
  g.spec_only = f.bool_or("spec_only", false);
  g.source = f.string("source");
  if (static_cast<double>(g.usable_memory_bytes) > f.positive_number("memory_gb") * 1073741824.0) {
    f.fail("usable_memory_gib", fmt::format("{}", f.positive_number("usable_memory_gib")),
           "must not exceed memory_gb read as GiB");
  }
  return g;
}

}  // namespace kvplan
