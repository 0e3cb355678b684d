// plan/src/presets.cpp — the model and GPU presets as lists (kvplan models, kvplan gpus).
#include "kvplan/plan/presets.h"

#include <algorithm>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "kvplan/core/dtype.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/weight_quant.h"
#include "kvplan/plan/text.h"

namespace kvplan::plan {

namespace {

// A figure that may be absent (0 in the spec): JSON null instead of a made-up 0.
nlohmann::json or_null(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json models_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const ModelConfig& m : model_presets()) {
    out.push_back({{"id", m.id}, {"name", m.name}, {"model_type", m.model_type}, {"layers", m.num_layers()},
                   {"num_parameters", count_parameters(m).total()}, {"kv_bytes_per_token", kv_bytes_per_token(m, listing_scheme(m))},
                   {"kv_bytes_per_token_dtype", dtype_name(listing_scheme(m).kv_dtype)},
                   {"weights", m.quantization.method == QuantMethod::kNone ? std::string(dtype_name(m.dtype))
                                                                             : std::string(quant_method_name(m.quantization.method))},
                   {"source", m.source}, {"hf_repos", m.hf_repos},
                   {"published_params", m.published_params ? nlohmann::json(*m.published_params) : nlohmann::json(nullptr)},
                   {"published_params_source", m.published_params_source}});
  }
  return out;
}

std::string models_text() {
  // Columns as wide as the longest id and model_type (quantized presets have long ids).
  size_t id_width = 20, type_width = 12;
  for (const ModelConfig& m : model_presets()) {
    id_width = std::max(id_width, m.id.size());
    type_width = std::max(type_width, m.model_type.size());
  }
  auto row = [&](std::string_view id, std::string_view type, std::string_view layers, std::string_view params,
                 std::string_view kv, std::string_view weights, std::string_view source) {
    return fmt::format("{:<{}} {:<{}} {:>7} {:>18} {:>16}  {:<12}  {}\n", id, id_width, type, type_width, layers, params,
                       kv, weights, source);
  };
  std::string out = row("id", "model_type", "layers", "parameters", "KV B/token bf16", "weights", "source");
  for (const ModelConfig& m : model_presets()) {
    const int64_t params = count_parameters(m).total();
    const KvScheme scheme = listing_scheme(m);
    const double kv = kv_bytes_per_token(m, scheme);
    const std::string weights = m.quantization.method == QuantMethod::kNone
                                    ? std::string(dtype_name(m.dtype))
                                    : std::string(quant_method_name(m.quantization.method));
    out += row(m.id, m.model_type, std::to_string(m.num_layers()), with_commas(params),
               scheme.kv_dtype == DType::kBF16 ? with_commas(static_cast<int64_t>(kv))
                                               : fmt::format("{} ({})", with_commas(static_cast<int64_t>(kv)),
                                                             dtype_name(scheme.kv_dtype)),
               weights, m.source);
  }
  return out;
}

nlohmann::json gpus_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const GpuSpec& g : gpu_presets()) {
    out.push_back({{"id", g.id}, {"name", g.name}, {"vendor", g.vendor}, {"architecture", g.architecture},
                   {"aliases", g.aliases}, {"device_names", g.device_names},
                   {"memory_bytes", g.memory_bytes}, {"usable_memory_bytes", g.usable_memory_bytes},
                   {"usable_memory_source", g.usable_memory_source},
                   {"usable_memory_estimated", g.usable_memory_estimated},
                   {"memory_type", g.memory_type.empty() ? nlohmann::json(nullptr) : nlohmann::json(g.memory_type)},
                   {"memory_bandwidth_bytes_per_s", g.memory_bandwidth_bytes_per_s},
                   {"peak_flops_bf16", g.peak_flops_bf16}, {"peak_flops_fp8", g.peak_flops_fp8},
                   {"peak_flops_int8", g.peak_flops_int8}, {"peak_flops_fp4", or_null(g.peak_flops_fp4)},
                   {"num_sms", g.num_sms}, {"interconnect_bytes_per_s", g.interconnect_bytes_per_s},
                   {"scale_up_domain_gpus", g.scale_up_domain_gpus}, {"scale_up_domain_source", g.scale_up_domain_source},
                   {"pcie_bytes_per_s", g.pcie_bytes_per_s}, {"tdp_w", or_null(g.tdp_w)},
                   {"price_usd_per_gpu_hour", or_null(g.price_usd_per_gpu_hour)},
                   {"price_source", g.price_source}, {"spec_only", g.spec_only}, {"source", g.source}});
  }
  return out;
}

std::string gpus_text() {
  std::string out = fmt::format("{:<14} {:<36} {:>8} {:>10} {:>10} {:>10} {:>10}\n", "id", "name", "mem GiB",
                                "HBM GB/s", "bf16 TF/s", "fp8 TF/s", "price $/h");
  bool any_estimate = false;
  for (const GpuSpec& g : gpu_presets()) {
    any_estimate = any_estimate || g.usable_memory_estimated;
    const std::string memory =
        fmt::format("{}{:.2f}", g.usable_memory_estimated ? "~" : "", g.usable_memory_bytes / 1073741824.0);
    const std::string price = g.price_usd_per_gpu_hour > 0 ? fmt::format("{:.2f}", g.price_usd_per_gpu_hour) : "-";
    out += fmt::format("{:<14} {:<36} {:>8} {:>10.0f} {:>10.1f} {:>10.1f} {:>10}{}\n", g.id, g.name, memory,
                       g.memory_bandwidth_bytes_per_s / 1e9, g.peak_flops_bf16 / 1e12, g.peak_flops_fp8 / 1e12, price,
                       g.spec_only ? "  (spec only)" : "");
  }
  if (any_estimate) {
    out += "\n~ estimated total (0.99 x the marketed capacity read as GiB; no measured figure known). "
           "Give the real one with --gpu-total-memory; aliases, device names and sources: kvplan gpus --json\n";
  }
  return out;
}

}  // namespace kvplan::plan
