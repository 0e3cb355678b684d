// Rows that need more linear-layer work than the GPU has been measured to do (serving_compute.h).
#include "serving_compute.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"

namespace kvplan::bench {

namespace {

// One CSV line's fields (no quoting in these tables); a CRLF line's '\r' is dropped.
std::vector<std::string> split_commas(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> out;
  std::stringstream s(line);
  std::string field;
  while (std::getline(s, field, ',')) out.push_back(field);
  return out;
}

}  // namespace

GemmCeilings fastest_published_gemm(const std::string& csv_path) {
  std::ifstream in(csv_path);
  if (!in) throw ConfigError(fmt::format("{}: cannot be read", csv_path));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_commas(line);
  auto column = [&](const char* name) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw ConfigError(fmt::format("{}: no column '{}'", csv_path, name));
    return static_cast<size_t>(it - header.begin());
  };
  const size_t gpu = column("gpu"), dtype = column("gemm_dtype"), m = column("m"), n = column("n"), k = column("k"),
               ms = column("latency_ms");
  GemmCeilings out;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split_commas(line);
    if (f.size() != header.size()) throw ConfigError(fmt::format("{}: a row of {} fields under {} columns", csv_path, f.size(), header.size()));
    const std::string preset = f[gpu] == "h100_sxm" ? "h100-sxm" : f[gpu] == "h200_sxm" ? "h200" : "";
    const std::string kind = f[dtype] == "bfloat16" ? "bf16" : f[dtype] == "fp8" ? "fp8" : "";
    if (preset.empty() || kind.empty()) continue;
    const double flops = 2.0 * std::stod(f[m]) * std::stod(f[n]) * std::stod(f[k]);
    const double tflops = flops / (std::stod(f[ms]) * 1e-3) / 1e12;
    double& best = out[preset + "|" + kind];
    best = std::max(best, tflops);
  }
  return out;
}

namespace {

int64_t flag_int(const ServingCase& c, const char* flag) {
  auto it = c.memory_flags.find(flag);
  return it == c.memory_flags.end() ? 1 : std::stoll(it->second);
}

}  // namespace

double implied_linear_tflops_per_gpu(const ServingCase& c, std::string* dtype) {
  if (!c.why_not.empty() || c.burst || c.rate > 0 || c.deployment != "agg" || c.osl < 1) return 0;
  if (!(c.measured_ttft_ms >= 0) || !(c.measured_tpot_ms > 0)) return 0;
  auto model_flag = c.memory_flags.find("model");
  if (model_flag == c.memory_flags.end()) return 0;
  const ModelConfig m = resolve_model(model_flag->second);
  if (m.has_moe() || m.count_layers(LayerKind::kFullAttention) + m.count_layers(LayerKind::kSlidingAttention) !=
                         m.num_layers()) {
    return 0;  // dense softmax-attention decoders only: their per-token work is exact
  }
  auto quant = c.memory_flags.find("quantization");
  std::string kind = "bf16";
  if (quant != c.memory_flags.end()) {
    if (quant->second != "fp8" && quant->second != "fp8-block") return 0;
    kind = "fp8";
  } else if (m.quantization.quantized()) {
    return 0;  // the checkpoint's own format: not a bf16 or fp8 GEMM rate kvplan can name here
  }
  if (dtype != nullptr) *dtype = kind;
  const ParamCount p = count_parameters(m);
  const double seconds = (c.measured_ttft_ms + static_cast<double>(c.osl - 1) * c.measured_tpot_ms) / 1e3;
  const double requests_per_s = static_cast<double>(c.concurrency_per_replica()) / seconds;
  const double flops = requests_per_s * static_cast<double>(c.isl + c.osl) * 2.0 *
                       static_cast<double>(p.attention + p.mlp);
  const int64_t gpus = flag_int(c, "tensor-parallel-size") * flag_int(c, "pipeline-parallel-size");
  return flops / static_cast<double>(gpus) / 1e12;
}

void mark_runs_beyond_compute(std::vector<ServingCase>& cases, const GemmCeilings& fastest) {
  for (ServingCase& c : cases) {
    std::string dtype;
    const double need = implied_linear_tflops_per_gpu(c, &dtype);
    auto best = fastest.find(c.gpu + "|" + dtype);
    if (need <= 0 || best == fastest.end()) continue;
    const double share = need / best->second;
    const std::string what = fmt::format(
        "its throughput ({} users, TTFT {:.0f} ms, TPOT {:.2f} ms) needs {:.0f} TFLOP/s per GPU of decoder linear "
        "layers alone, {:.0f}% of the fastest {} GEMM in the published table ({:.0f} TFLOP/s)",
        c.concurrency_per_replica(), c.measured_ttft_ms, c.measured_tpot_ms, need, 100.0 * share, dtype, best->second);
    if (share >= 1.0) {
      c.why_not = what + ": not every recorded prompt token can have been computed";
      c.excluded = true;  // the record, not kvplan, is at fault: listed, not scored
    } else if (share >= kNearComputeCeiling) {
      c.notes += (c.notes.empty() ? "" : "; ") + what + ": no time left for attention, norms or scheduling";
    }
  }
}

}  // namespace kvplan::bench
