// Rows that need more linear-layer work than the GPU has been measured to do (serving_compute.h).
#include "serving_compute.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "serving_csv.h"

namespace kvplan::bench {

GemmCeilings fastest_published_gemm(const std::string& csv_path) {
  GemmCeilings out;
  for (const Record& r : read_csv(csv_path)) {
    const std::string& gpu = field(r, "gpu", csv_path);
    const std::string& dtype = field(r, "gemm_dtype", csv_path);
    const std::string preset = gpu == "h100_sxm" ? "h100-sxm" : gpu == "h200_sxm" ? "h200" : "";
    const std::string kind = dtype == "bfloat16" ? "bf16" : dtype == "fp8" ? "fp8" : "";
    if (preset.empty() || kind.empty()) continue;
    const double flops = 2.0 * std::stod(field(r, "m", csv_path)) * std::stod(field(r, "n", csv_path)) *
                         std::stod(field(r, "k", csv_path));
    const double tflops = flops / (std::stod(field(r, "latency_ms", csv_path)) * 1e-3) / 1e12;
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
