// The engines' custom all-reduce (custom_all_reduce.h): published H100 points, their fit, and the
// per-engine choice.
#include "kvplan/core/custom_all_reduce.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace kvplan {

namespace {

constexpr const char* kPr24532 =
    "vllm-project/vllm PR #24532 (H100, TP4), https://github.com/vllm-project/vllm/pull/24532";
constexpr const char* kPr24111 =
    "vllm-project/vllm PR #24111 (H100, TP2 and TP4), https://github.com/vllm-project/vllm/pull/24111";

// The shipped constants: fit_custom_all_reduce(h100_custom_all_reduce_points(), h100-sxm) rounded
// to 0.01 us and 0.001 (tests/core/custom_all_reduce_test.cpp recomputes them). 6.36 us of fixed
// time matches the other published small-message figures: SGLang PR #2904 (H100, vLLM's kernel,
// eager: 8.5-10 us including an input copy launch) and FlagGems-vllm PR #773 (H100, CUDA graph,
// TensorRT-LLM one-shot fused with RMSNorm, TP2 at 72 KiB: 6.98 us). 0.439 of the 900 GB/s preset
// is 395 GB/s, close to one direction of H100 NVLink (450 GB/s).
constexpr double kFixedNs = 6360;
constexpr double kLinkEfficiency = 0.439;
// vLLM's CustomAllreduce(max_size=8192 * 1024) (custom_all_reduce.py): larger tensors use NCCL.
constexpr double kMaxPayloadBytes = 8.0 * 1024 * 1024;

}  // namespace

const std::vector<CustomAllReducePoint>& h100_custom_all_reduce_points() {
  // Tensor (32..256, 8192) bf16 = 0.5..4 MiB per rank; times in ms as printed (3 decimals).
  static const std::vector<CustomAllReducePoint> points = {
      {2, 524288, 7000, kPr24111},    //
      {4, 524288, 10000, kPr24111},   {4, 1048576, 15000, kPr24111}, {4, 1572864, 19000, kPr24111},
      {4, 2097152, 22000, kPr24111},  {4, 3145728, 30000, kPr24111}, {4, 4194304, 38000, kPr24111},
      {4, 524288, 10000, kPr24532},   {4, 1048576, 14000, kPr24532}, {4, 1572864, 19000, kPr24532},
      {4, 2097152, 23000, kPr24532},  {4, 3145728, 30000, kPr24532}, {4, 4194304, 38000, kPr24532},
  };
  return points;
}

CustomAllReduce fit_custom_all_reduce(const std::vector<CustomAllReducePoint>& points, const GpuSpec& gpu) {
  if (points.size() < 2 || gpu.interconnect_bytes_per_s <= 0) {
    throw std::invalid_argument("fit_custom_all_reduce: needs >= 2 points and a GPU with an interconnect");
  }
  // time = a + b · x with x = (ranks - 1) · payload
  double mx = 0, my = 0;
  for (const CustomAllReducePoint& p : points) {
    mx += (p.ranks - 1) * p.payload_bytes;
    my += p.time_ns;
  }
  mx /= static_cast<double>(points.size());
  my /= static_cast<double>(points.size());
  double sxy = 0, sxx = 0;
  for (const CustomAllReducePoint& p : points) {
    const double dx = (p.ranks - 1) * p.payload_bytes - mx;
    sxy += dx * (p.time_ns - my);
    sxx += dx * dx;
  }
  if (sxx <= 0) throw std::invalid_argument("fit_custom_all_reduce: every point has the same (ranks - 1) x payload");
  const double b = sxy / sxx;  // ns per byte read from the peers
  CustomAllReduce ar;
  ar.fixed_ns = my - b * mx;
  ar.link_efficiency = 1.0 / (b * 1e-9 * gpu.interconnect_bytes_per_s);
  ar.max_payload_bytes = kMaxPayloadBytes;
  ar.label = "custom all-reduce (fitted)";
  ar.source = fmt::format("fitted on {} points", points.size());
  return ar;
}

std::optional<CustomAllReduce> engine_custom_all_reduce(Engine engine, const GpuSpec& gpu) {
  if (engine == Engine::kStatic) return std::nullopt;
  if (gpu.vendor != "nvidia" || gpu.interconnect_bytes_per_s <= 0) return std::nullopt;
  CustomAllReduce ar;
  ar.fixed_ns = kFixedNs;
  ar.link_efficiency = kLinkEfficiency;
  ar.max_payload_bytes = kMaxPayloadBytes;
  ar.label = fmt::format("custom all-reduce (one-shot, vLLM's published H100 timings{})",
                         gpu.id == "h100-sxm" ? "" : ", transferred by NVLink bandwidth");
  ar.source = fmt::format(
      "custom all-reduce (one-shot over NVLink, as vLLM/SGLang/TensorRT-LLM run below 8 MiB): {:.2f} us + (ranks-1) x "
      "payload at {:.3f} x {:.0f} GB/s, least squares on 13 published H100 CUDA-graph points of vLLM's "
      "benchmark_device_communicators.py ca_1stage ({}; {}){}",
      kFixedNs / 1e3, kLinkEfficiency, gpu.interconnect_bytes_per_s / 1e9, kPr24111, kPr24532,
      gpu.id == "h100-sxm" ? "" : fmt::format("; transferred to {} by its interconnect bandwidth", gpu.id));
  return ar;
}

double custom_all_reduce_ns(const CustomAllReduce& ar, const GpuSpec& gpu, double payload_bytes, int ranks) {
  const double peers = std::max(0, ranks - 1);
  const double bw = gpu.interconnect_bytes_per_s * ar.link_efficiency;
  return ar.fixed_ns + (bw > 0 ? peers * payload_bytes / bw * 1e9 : 0.0);
}

}  // namespace kvplan
