// kvplan/core/default_profile.h — where step times come from when no --profile is given.
//
//   ProfileChoice c = default_profile(resolve_gpu("h20"));
//   c.kind;        // "transferred"
//   c.summary;     // "transferred from the published h200 profile (nearest published GPU: same architecture, hopper)"
//   StepCostModel cost(model, gpu, scheme, parallel, c.profile, {});
//
// The order (docs/cost-model.md §8):
//   1. a profile the user gives (--profile: a kvplan calibration run, "measured") — not chosen here;
//   2. the published profile of this GPU (data/profiles/<gpu>.json, fitted from published operator
//      tables), "published";
//   3. the published profile of the nearest GPU of the same vendor and memory family (HBM or
//      GDDR), its efficiencies applied to this GPU's datasheet roofs, "transferred (from <gpu>)":
//      the same architecture first, then the nearest by memory bandwidth and dense bf16 peak
//      (|ln ratio| summed). Its validation band is widened (kTransferBandWidening) and says so;
//   4. the datasheet defaults, "datasheet" — also for another vendor's GPU or another memory
//      family, where a transfer measured worse than the datasheet (bench/validate_ops --transfer:
//      Hopper/Ampere HBM profiles on the GDDR L40S err by 140-660% at p90, against 40-58% for the
//      datasheet; docs/benchmarks.md).
#pragma once

#include <string>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/perf_profile.h"

namespace kvplan {

// How much wider a transferred profile's validation band is than its source's: the median, over
// the GEMM and attention lines, of (p90 error of the transferred profile) / (p90 error of the
// target's own profile on its held-out rows), from `kvplan_validate_ops --transfer` (2026-12-01,
// docs/benchmarks.md): H100 <-> H200 (same architecture) 4.1; H100/H200 <-> A100 (HBM, another
// architecture) 5.2. Operator-level ratios applied to a whole-model band: conservative, since
// operator errors partly cancel in a step.
struct TransferBandWidening {
  double same_architecture = 4.1;
  double same_memory_family = 5.2;
};
inline constexpr TransferBandWidening kTransferBandWidening{};

struct ProfileChoice {
  PerfProfile profile;
  std::string kind;      // "published", "transferred" or "datasheet"
  std::string from_gpu;  // the published profile's GPU (published, transferred); empty for datasheet
  std::string summary;   // one line for every output: what the step times rest on
};

ProfileChoice default_profile(const GpuSpec& gpu);

// The nearest GPU with a published profile, as default_profile picks it ("" when none is shipped),
// and the words that say why ("same architecture, hopper").
struct NearestPublished {
  std::string gpu_id;
  std::string why;
  double band_widening = 1;
};
NearestPublished nearest_published_gpu(const GpuSpec& gpu);

}  // namespace kvplan
