// bench/serving_compute.h — published runs whose own numbers need more linear-layer work per GPU
// than the GPU has ever been measured to do.
//
//   const GemmCeilings fastest = fastest_published_gemm(data + "/measurements/aiconfigurator_vllm_gemm_h100_h200.csv");
//   mark_runs_beyond_compute(cases, fastest);  // excludes rows above the ceiling, notes those near it
//
// Measurements only, never a prediction, like serving_consistency.h. A closed loop of C users with
// no think time completes C / (TTFT + (osl − 1) · TPOT) requests per second per engine instance
// (Little's law), and every prompt and output token of a dense model passes through the decoder
// layers' linear weights: 2 · (attention + MLP parameters) FLOPs, split over the instance's tp × pp
// GPUs (embeddings, the LM head, attention scores and norms left out: a lower bound). A row whose
// bound is above the fastest GEMM rate in the GPU's published operator table for the run's dtype
// (measured with constant weights, which flatters it: README §1c) cannot have computed every prompt
// token it records: prompts reused through the prefix cache, or shorter than recorded. It is
// listed, not scored. A row at 80% or more of that rate gets a note: possible in principle, but
// with nothing left for attention, norms and scheduling.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "serving_cases.h"

namespace kvplan::bench {

// TFLOP/s by "<gpu preset>|<bf16|fp8>", the largest 2·m·n·k / latency of any row.
using GemmCeilings = std::map<std::string, double>;
GemmCeilings fastest_published_gemm(const std::string& csv_path);

inline constexpr double kNearComputeCeiling = 0.8;

// The lower bound above, TFLOP/s per GPU; 0 when the row is not a dense agg closed loop with a
// bf16 or fp8 GEMM path kvplan can name.
double implied_linear_tflops_per_gpu(const ServingCase& c, std::string* dtype = nullptr);

void mark_runs_beyond_compute(std::vector<ServingCase>& cases, const GemmCeilings& fastest);

}  // namespace kvplan::bench
