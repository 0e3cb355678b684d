#include "kvplan/core/gpu_spec.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/json_fields.h"
#include "kvplan/core/error.h"

namespace kvplan {

namespace {

constexpr double kGiB = 1073741824.0;

// Every key a GPU object may hold (docs/gpus.md); anything else not starting with '_' is a typo.
const std::vector<std::string_view> kGpuKeys = {
    "id", "name", "vendor", "architecture", "aliases", "device_names",
    "memory_gb", "usable_memory_gib", "usable_memory_source", "memory_type", "memory_bandwidth_gb_s",
    "bf16_dense_tflops", "fp8_dense_tflops", "int8_dense_tops", "fp4_dense_tflops", "num_sms",
    "interconnect_gb_s", "scale_up_domain_gpus", "scale_up_domain_source", "pcie_gb_s", "tdp_w",
    "price_usd_per_gpu_hour", "price_source",
    "spec_only", "source"};

// Aliases are typed on command lines: lower-case letters, digits and . _ + -, starting with a
// letter or digit.
bool is_lower_case_id(const std::string& s) {
  if (s.empty() || !(std::islower(static_cast<unsigned char>(s[0])) || std::isdigit(static_cast<unsigned char>(s[0])))) {
    return false;
  }
  for (unsigned char c : s) {
    if (!(std::islower(c) || std::isdigit(c) || c == '.' || c == '_' || c == '+' || c == '-')) return false;
  }
  return true;
}

}  // namespace

double GpuSpec::peak_flops(DType compute) const {
  if (is_fp8(compute) && peak_flops_fp8 > 0) return peak_flops_fp8;
  if (compute == DType::kInt8 && peak_flops_int8 > 0) return peak_flops_int8;
  if (compute == DType::kFp4E2M1 && peak_flops_fp4 > 0) return peak_flops_fp4;
  return peak_flops_bf16;
}

GpuSpec parse_gpu_spec(const nlohmann::json& object, std::string_view what) {
  std::string id = object.is_object() && object.contains("id") && object["id"].is_string()
                       ? object["id"].get<std::string>()
                       : std::string("?");
  internal::JsonFields f(object, what.empty() ? fmt::format("gpu preset '{}'", id) : std::string(what));
  f.reject_unknown_keys(kGpuKeys);
  GpuSpec g;
  g.id = f.string("id");
  g.name = f.string("name");
  g.vendor = f.string_or("vendor", "nvidia");
  g.aliases = f.string_list_or("aliases");
  for (size_t i = 0; i < g.aliases.size(); ++i) {
    if (!is_lower_case_id(g.aliases[i])) {
      f.fail(fmt::format("aliases[{}]", i), g.aliases[i],
             "must be a lower-case id (a-z, 0-9, '.', '_', '+', '-'; starting with a letter or digit)");
    }
  }
  g.device_names = f.string_list_or("device_names");
  const double memory_gb = f.positive_number("memory_gb");
  // One device's memory, in bytes, must fit int64 with room to spare; 1 PB is far beyond any GPU.
  constexpr double kMaxMemoryGb = 1e6;
  if (memory_gb > kMaxMemoryGb) {
    f.fail("memory_gb", internal::json_value_text(f.raw("memory_gb")),
           fmt::format("must be at most {:g} (GB of one device)", kMaxMemoryGb));
  }
  g.memory_bytes = static_cast<int64_t>(memory_gb * 1e9);
  if (f.has("usable_memory_gib")) {
    const double usable_gib = f.positive_number("usable_memory_gib");
    if (usable_gib > memory_gb) {
      f.fail("usable_memory_gib", internal::json_value_text(f.raw("usable_memory_gib")),
             fmt::format("must not exceed memory_gb={} read as GiB", internal::json_value_text(f.raw("memory_gb"))));
    }
    g.usable_memory_bytes = static_cast<int64_t>(usable_gib * kGiB);
    g.usable_memory_source = f.string("usable_memory_source");
  } else {
    const std::string searched = f.has("usable_memory_source") ? f.string("usable_memory_source") : std::string();
    // Marketed "80GB" HBM/GDDR capacities are binary sizes; the driver reports about 1% less
    // (H100 80GB: 79.19 GiB, RTX A6000 48GB: 47.54 GiB in vLLM logs). Estimate, labelled as such.
    g.usable_memory_bytes = static_cast<int64_t>(memory_gb * 0.99 * kGiB);
    g.usable_memory_source = "estimate: 0.99 x the marketed capacity read as GiB (no measured total known)";
    if (!searched.empty()) g.usable_memory_source += "; " + searched;
    g.usable_memory_estimated = true;
  }
  g.memory_type = f.string_or("memory_type", "");
  g.memory_bandwidth_bytes_per_s = f.positive_number("memory_bandwidth_gb_s") * 1e9;
  g.peak_flops_bf16 = f.positive_number("bf16_dense_tflops") * 1e12;
  g.peak_flops_fp8 = f.positive_number_or("fp8_dense_tflops", 0) * 1e12;
  g.peak_flops_int8 = f.positive_number_or("int8_dense_tops", 0) * 1e12;
  g.peak_flops_fp4 = f.positive_number_or("fp4_dense_tflops", 0) * 1e12;
  g.num_sms = f.positive_int("num_sms");
  g.interconnect_bytes_per_s = f.non_negative_number_or("interconnect_gb_s", 0) * 1e9;
  if (f.has("scale_up_domain_gpus")) {
    g.scale_up_domain_gpus = f.positive_int("scale_up_domain_gpus");
    g.scale_up_domain_source = f.string("scale_up_domain_source");
  } else {
    g.scale_up_domain_source = g.interconnect_bytes_per_s > 0
                                   ? "default: an 8-GPU NVLink / Infinity Fabric board (HGX, OAM)"
                                   : "default: the 8 PCIe GPUs of one server";
  }
  g.pcie_bytes_per_s = f.positive_number("pcie_gb_s") * 1e9;
  g.tdp_w = f.positive_number_or("tdp_w", 0);
  g.price_usd_per_gpu_hour = f.positive_number_or("price_usd_per_gpu_hour", 0);
  if (f.has("price_usd_per_gpu_hour")) {
    g.price_source = f.string("price_source");
  } else if (f.has("price_source")) {
    // A note on why there is no price (e.g. "no public on-demand price found").
    g.price_source = f.string("price_source");
  }
  g.architecture = f.string("architecture");
  g.spec_only = f.bool_or("spec_only", false);
  g.source = f.string("source");
  return g;
}

GpuSpec load_gpu_spec_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("gpu file '{}': cannot be opened", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string what = fmt::format("gpu file '{}'", path);
  nlohmann::json object = internal::parse_python_json(buffer.str(), what);
  if (!object.is_object()) {
    throw ConfigError(fmt::format("{}: expected one GPU object ({{\"id\": ..., \"source\": ...}}), got {}", what,
                                  object.type_name()));
  }
  return parse_gpu_spec(object, what);
}

}  // namespace kvplan
