// kvplan/core/custom_all_reduce.h — the serving engines' own tensor-parallel all-reduce for small
// messages over NVLink, priced from published measurements.
//
//   std::optional<CustomAllReduce> ar = engine_custom_all_reduce(Engine::kVllm, gpu);
//   double ns = custom_all_reduce_ns(*ar, gpu, /*payload_bytes=*/16384, /*ranks=*/4);   // ~6.4 us
//
// vLLM, SGLang and TensorRT-LLM do not send the per-layer all-reduces of decode steps through NCCL:
// each runs a custom kernel over NVLink peer memory (vLLM csrc/custom_all_reduce.cuh, SGLang's copy
// of it in sgl-kernel, TensorRT-LLM's ONESHOT/TWOSHOT allreduce), NCCL only above a size cap.
// One-shot: every rank reads the (ranks - 1) peers' buffers and sums them, so
//     t = fixed_ns + (ranks - 1) · payload_bytes / (interconnect_bytes_per_s · link_efficiency)
// where payload_bytes is one rank's tensor (tokens · hidden · 2 B). fixed_ns is the kernel's start
// and the cross-GPU flag barriers; the second term is reading the peers over NVLink.
//
// The profile's `collective` class stays what prices every other collective and all-reduces above
// max_payload_bytes (NCCL). An all-reduce at or below the cap costs the faster of the two: the
// engines choose their kernel by size thresholds tuned to be the faster one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/gpu_spec.h"

namespace kvplan {

struct CustomAllReduce {
  double fixed_ns = 0;           // per call
  double link_efficiency = 0;    // of GpuSpec::interconnect_bytes_per_s, reading the peers
  double max_payload_bytes = 0;  // larger all-reduces go to NCCL
  std::string label;             // short, for one operator's line: "custom all-reduce (...)"
  std::string source;            // where the numbers come from, in full
};

// One published measurement the constants are fitted on.
struct CustomAllReducePoint {
  int ranks = 0;
  double payload_bytes = 0;  // one rank's tensor
  double time_ns = 0;
  const char* source = "";
};

// vLLM's benchmarks/kernels/benchmark_device_communicators.py on H100 SXM (CUDA-graph replay of
// ten calls, wall time / 10), `ca_1stage` column, hidden 8192 bf16; two independent runs.
const std::vector<CustomAllReducePoint>& h100_custom_all_reduce_points();

// fixed_ns and link_efficiency by ordinary least squares of time over (ranks - 1) · payload on
// `points` (the efficiency relative to `gpu`'s interconnect). The shipped constants are this fit on
// h100_custom_all_reduce_points(), rounded (a test checks it).
CustomAllReduce fit_custom_all_reduce(const std::vector<CustomAllReducePoint>& points, const GpuSpec& gpu);

// The custom all-reduce an engine runs on this GPU, or nullopt when it uses NCCL for every size
// (static / Hugging Face generate; GPUs without NVLink, where vLLM disables it beyond two GPUs;
// AMD, where the H100 figures say nothing).
std::optional<CustomAllReduce> engine_custom_all_reduce(Engine engine, const GpuSpec& gpu);

// One call's time in ns (formula above). ranks >= 2.
double custom_all_reduce_ns(const CustomAllReduce& ar, const GpuSpec& gpu, double payload_bytes, int ranks);

}  // namespace kvplan
