// Serving overheads per engine. Every default is a measured or fitted number with its source;
// a term without data is 0 and says "not modelled".
#include "kvplan/sim/serving_overheads.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/sim/rng.h"

namespace kvplan::sim {

std::string ServingOverheads::describe() const {
  const std::string spread =
      request_spread.ns > 0 ? fmt::format(" ± {:.3f} ms uniform ({})", ns_to_ms(request_spread.ns), request_spread.source)
                            : std::string();
  const std::string factor = step_factor.value != 1.0
                                 ? fmt::format("; step time x {:.3f} ({})", step_factor.value, step_factor.source)
                                 : std::string();
  return fmt::format("per request {:.3f} ms ({}){}; per step {:.3f} ms ({}){}", ns_to_ms(request.ns), request.source,
                     spread, ns_to_ms(step.ns), step.source, factor);
}

namespace {
// Rng stream of request i's delay: + i. Fixed forever (renumbering changes every seeded run); far
// from workload.cpp's (0-2, 1000 + user), bench_client.cpp's (0xBE0C...) and the replicas'.
constexpr uint64_t kRequestDelayStream = 0xDE1A'0000'0000'0000ULL;
}  // namespace

TimeNs request_delay_ns(const ServingOverheads& o, uint64_t seed, int64_t request_id) {
  if (o.request_spread.ns <= 0) return o.request.ns;
  Rng rng = Rng::stream(seed, kRequestDelayStream + static_cast<uint64_t>(request_id));
  const double offset = (2.0 * rng.uniform01() - 1.0) * static_cast<double>(o.request_spread.ns);
  return std::max<TimeNs>(0, o.request.ns + static_cast<TimeNs>(std::llround(offset)));
}

namespace {

// Fitted by bench/validate_serving.cpp (kvplan_validate_serving) on the fit half of the mode=agg
// rows of data/measurements/aiconfigurator_silicon_e2e_h100.csv (NVIDIA's silicon_sample.csv, H100
// SXM, every run with CUDA graphs), simulated with kvplan's default step costs: the published
// h100-sxm profile (data/profiles/h100-sxm.json) and the engines' custom all-reduce
// (core/custom_all_reduce.h). Per engine and bench start rule:
//   - step-time factor and step overhead: least squares of the relative TPOT error over the fit
//     rows at concurrency <= 128 per engine instance (TPOT ~ factor x predicted + overhead; the
//     overhead may not be negative);
//   - request overhead: median (measured - predicted) TTFT over the fit rows at low concurrency,
//     rerun with those step terms;
//   - the start rule (bench_client.h) with the smaller fit-half median + p90 |error| of TTFT and TPOT.
// In-sample for that half; docs/benchmarks-serving.md has the held-out errors. They absorb the
// profile's own bias for each engine's kernels (the operator tables were timed inside vLLM 0.24):
// refit (rerun the tool) whenever the step costs change; the tool prints "DIFFERS" until then.
struct Fitted {
  TimeNs request_ns;
  TimeNs step_ns;
  double factor;
  const char* what;
};

constexpr Fitted kVllm{33'174'000, 679'000, 1.052,
                       "vLLM 0.11-0.18, staggered bench client: step terms from 107 fit rows at concurrency <= 128, "
                       "request overhead from 34 at <= 8 (Qwen3-32B, Llama-3.1-70B fp8, gpt-oss-120b)"};
constexpr Fitted kSglang{150'758'000, 320'000, 1.082,
                         "SGLang 0.5.1, burst bench client: step terms from 34 fit rows at concurrency 16-128, request "
                         "overhead from 12 at 16 (Qwen3-32B)"};
constexpr Fitted kTrtllm{165'295'000, 1'193'000, 0.852,
                         "TensorRT-LLM 1.0-1.3, staggered bench client: step terms from 228 fit rows at concurrency "
                         "<= 128, request overhead from 48 at <= 8 (Llama-3.1-8B, Qwen3-32B fp8, Qwen3-235B-A22B-FP8)"};

OverheadTerm term(TimeNs ns, const Fitted& f) {
  return OverheadTerm{ns, fmt::format("fitted on the aiconfigurator H100 e2e set, fit half, in-sample ({}; with the "
                                      "published h100-sxm profile; kvplan_validate_serving)", f.what)};
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
  o.step_factor = StepFactor{f->factor, term(0, *f).source};
  return o;
}

TimeNs engine_step_ns(TimeNs model_ns, double factor, TimeNs overhead_ns) {
  const TimeNs scaled = factor == 1.0 ? model_ns : static_cast<TimeNs>(std::llround(factor * static_cast<double>(model_ns)));
  return std::max<TimeNs>(scaled + overhead_ns, 1);
}

StepTermsFit fit_step_terms(const std::vector<double>& predicted_ms, const std::vector<double>& measured_ms) {
  // Weighted normal equations with x1 = p/m, x2 = 1/m, target 1.
  double s11 = 0, s12 = 0, s22 = 0, s1 = 0, s2 = 0;
  StepTermsFit fit;
  for (size_t i = 0; i < std::min(predicted_ms.size(), measured_ms.size()); ++i) {
    const double p = predicted_ms[i], m = measured_ms[i];
    if (!(p > 0) || !(m > 0) || !std::isfinite(p) || !std::isfinite(m)) continue;
    const double x1 = p / m, x2 = 1.0 / m;
    s11 += x1 * x1;
    s12 += x1 * x2;
    s22 += x2 * x2;
    s1 += x1;
    s2 += x2;
    ++fit.rows;
  }
  if (fit.rows < 2) return StepTermsFit{};
  const double det = s11 * s22 - s12 * s12;
  if (det > 0) {
    fit.factor = (s1 * s22 - s2 * s12) / det;
    fit.overhead_ms = (s11 * s2 - s12 * s1) / det;
  } else {
    fit.overhead_ms = -1;  // every row has the same p/m ratio and 1/m: fit the factor alone
  }
  fit.unconstrained_overhead_ms = fit.overhead_ms;
  if (fit.overhead_ms < 0 || fit.factor <= 0) {
    fit.overhead_ms = 0;
    fit.factor = s1 / s11;
  }
  return fit;
}

TimeNs overhead_ms_to_ns(double ms, const std::string& field) {
  if (!std::isfinite(ms) || ms < 0 || ms > 1e6) {
    throw ConfigError(fmt::format("{}={} must be in [0, 1e6] ms", field, ms));
  }
  return static_cast<TimeNs>(std::llround(ms * 1e6));
}

}  // namespace kvplan::sim
