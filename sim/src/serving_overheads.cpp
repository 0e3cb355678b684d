// Serving overheads per engine. Every default is a measured or fitted number with its source;
// a term without data is 0 and says "not modelled".
#include "kvplan/sim/serving_overheads.h"

#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

std::string ServingOverheads::describe() const {
  return fmt::format("per request {:.3f} ms ({}); per step {:.3f} ms ({})", ns_to_ms(request.ns), request.source,
                     ns_to_ms(step.ns), step.source);
}

namespace {

// Fitted by bench/validate_serving.cpp (kvplan_validate_serving) on the fit half of the mode=agg
// rows of data/measurements/aiconfigurator_silicon_e2e_h100.csv (NVIDIA's silicon_sample.csv, H100
// SXM, every run with CUDA graphs): per engine, step = median (measured − predicted) TPOT and then
// request = median (measured − predicted) TTFT over the fit rows at low concurrency, simulated
// with kvplan's datasheet step costs and the engine's default bench start (bench_client.h). They
// are in-sample for that half, and they absorb the datasheet cost model's own bias at low load:
// refit (rerun the tool) whenever the step costs change. docs/benchmarks-serving.md has the
// held-out errors.
struct Fitted {
  TimeNs request_ns;
  TimeNs step_ns;
  const char* what;
};

constexpr Fitted kVllm{57'517'000, 1'181'000,
                       "vLLM 0.12-0.18: 34 fit rows at concurrency <= 8 (Qwen3-32B, Llama-3.1-70B fp8, gpt-oss-120b), "
                       "staggered bench client"};
constexpr Fitted kSglang{136'203'000, 904'000,
                         "SGLang 0.5.1: 12 fit rows at concurrency 16 (Qwen3-32B), burst bench client"};
constexpr Fitted kTrtllm{176'619'000, 767'000,
                         "TensorRT-LLM 1.0.0rc3: 48 fit rows at concurrency <= 8 (Llama-3.1-8B, Qwen3-32B fp8, "
                         "Qwen3-235B-A22B-FP8), staggered bench client"};

OverheadTerm term(TimeNs ns, const Fitted& f) {
  return OverheadTerm{ns, fmt::format("fitted on the aiconfigurator H100 e2e set, fit half, in-sample ({}; "
                                      "absorbs the datasheet step costs' bias; kvplan_validate_serving)", f.what)};
}

}  // namespace

ServingOverheads default_serving_overheads(Engine engine, bool cuda_graphs) {
  ServingOverheads o;
  if (!cuda_graphs) {
    // Every measured run used CUDA graphs; eager runs have different CPU costs per step (launches
    // are in the cost model already) and no data here.
    o.request.source = "not modelled (no measurements without CUDA graphs)";
    o.step.source = o.request.source;
    return o;
  }
  const Fitted* f = nullptr;
  switch (engine) {
    case Engine::kVllm: f = &kVllm; break;
    case Engine::kSglang: f = &kSglang; break;
    case Engine::kTrtllm: f = &kTrtllm; break;
    case Engine::kStatic: break;
  }
  if (f == nullptr) return o;  // Hugging Face generate: not modelled
  o.request = term(f->request_ns, *f);
  o.step = term(f->step_ns, *f);
  return o;
}

TimeNs overhead_ms_to_ns(double ms, const std::string& field) {
  if (!std::isfinite(ms) || ms < 0 || ms > 1e6) {
    throw ConfigError(fmt::format("{}={} must be in [0, 1e6] ms", field, ms));
  }
  return static_cast<TimeNs>(std::llround(ms * 1e6));
}

}  // namespace kvplan::sim
