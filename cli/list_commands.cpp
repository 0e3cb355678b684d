#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "report_format.h"

namespace kvplan::cli {

int run_models(bool json) {
  nlohmann::json out = nlohmann::json::array();
  if (!json) {
    std::cout << fmt::format("{:<20} {:<12} {:>7} {:>18} {:>16}  {}\n", "id", "model_type", "layers",
                             "parameters", "KV B/token bf16", "source");
  }
  for (const ModelConfig& m : model_presets()) {
    int64_t params = count_parameters(m).total();
    double kv = kv_bytes_per_token(m, KvScheme{});
    if (json) {
      out.push_back({{"id", m.id}, {"name", m.name}, {"model_type", m.model_type}, {"layers", m.num_layers()},
                     {"num_parameters", params}, {"kv_bytes_per_token", kv}, {"source", m.source}});
    } else {
      std::cout << fmt::format("{:<20} {:<12} {:>7} {:>18} {:>16}  {}\n", m.id, m.model_type, m.num_layers(),
                               with_commas(params), with_commas(static_cast<int64_t>(kv)), m.source);
    }
  }
  if (json) std::cout << out.dump(2) << "\n";
  return 0;
}

int run_gpus(bool json) {
  nlohmann::json out = nlohmann::json::array();
  if (!json) {
    std::cout << fmt::format("{:<14} {:<36} {:>8} {:>10} {:>10} {:>10}\n", "id", "name", "mem GiB",
                             "HBM GB/s", "bf16 TF/s", "fp8 TF/s");
  }
  for (const GpuSpec& g : gpu_presets()) {
    if (json) {
      out.push_back({{"id", g.id}, {"name", g.name}, {"usable_memory_bytes", g.usable_memory_bytes},
                     {"memory_bandwidth_bytes_per_s", g.memory_bandwidth_bytes_per_s},
                     {"peak_flops_bf16", g.peak_flops_bf16}, {"peak_flops_fp8", g.peak_flops_fp8},
                     {"num_sms", g.num_sms}, {"spec_only", g.spec_only}, {"source", g.source}});
    } else {
      std::cout << fmt::format("{:<14} {:<36} {:>8.2f} {:>10.0f} {:>10.1f} {:>10.1f}{}\n", g.id, g.name,
                               g.usable_memory_bytes / 1073741824.0, g.memory_bandwidth_bytes_per_s / 1e9,
                               g.peak_flops_bf16 / 1e12, g.peak_flops_fp8 / 1e12, g.spec_only ? "  (spec only)" : "");
    }
  }
  if (json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace kvplan::cli
