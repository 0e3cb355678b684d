// kvplan/calibration/fitter.h — measured rows -> PerfProfile efficiency curves, per operator class.
//
//   FitReport r = fit_profile(rows, resolve_gpu("h100-sxm"), "h100-sxm run 3");
//   r.profile.at(OpClass::kGemm).source;   // "measured (h100-sxm run 3)"; classes without rows: "datasheet"
//
// Model (the step cost model's, DESIGN §4, docs/cost-model.md §3): a kernel of F FLOPs and B bytes
// takes
//   t = max(F / (P · e_c(F)), B / (W · e_m(B))),   e(s) = e_max · s / (s + half_size)
// with P the dtype's peak FLOP/s and W the class's link bandwidth (HBM; NVLink for collectives;
// PCIe for host copies). Launch overhead is not part of a CUPTI kernel duration, so it is not
// fitted: the datasheet value is kept (docs/calibration.md).
//
// Method. With u = 1/e_max and v = half_size/e_max each side is linear in its parameters:
// F/(P·e_c(F)) = (u_c·F + v_c)/P. Given which side of the max is active for each row, the
// Gauss–Newton step for the relative residuals r_i = t̂_i/t_i − 1 is therefore an exact weighted
// linear least-squares solve per side (Eigen QR, columns scaled), under e_max <= 1 and
// half_size >= 0 (box constraints, solved exactly by checking the faces). The active set is then
// recomputed and the solve repeated until it no longer changes (alternating max-affine regression);
// the iterate with the smallest Σ r_i² is kept. Start: the datasheet profile's active sides.
// Relative residuals, because timing noise is multiplicative and sizes span decades.
//
// Identifiability and fallbacks (never NaN):
//   - a class with fewer than FitOptions::min_points usable rows is not fitted (datasheet, warning);
//   - a side with fewer than min_points active rows keeps its datasheet e_max ("datasheet (...)"),
//     its fixed latency capped at the fitted side's (else a datasheet latency larger than the
//     measured one would claim the small kernels, e.g. decode attention's compute side);
//   - too few rows on either side to split them: all are fitted to the side most are on;
//   - a side whose active rows all have one size (max/min < 1.05) fits e_max only, keeping the
//     datasheet half_size (a single size cannot separate latency from throughput);
//   - no class fitted at all -> ConfigError naming the rows' classes and counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/calibration/measurement.h"
#include "kvplan/core/dtype.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/perf_profile.h"

namespace kvplan::calibration {

struct FitOptions {
  int min_points = 3;        // usable rows a class (and a curve) needs to be fitted
  int max_iterations = 50;   // active-set updates
};

struct CurveFitInfo {
  bool fitted = false;        // false: the datasheet curve is kept
  int64_t active_rows = 0;    // rows whose time this side sets at the solution
  std::string how;            // "slope and intercept", "e_max only (one size)", "datasheet (...)"
};

struct ClassFit {
  OpClass op_class = OpClass::kGemm;
  OpClassProfile profile;     // fitted curves, datasheet launch overhead, source label and note
  CurveFitInfo compute, memory;
  int64_t num_points = 0;
  // |predicted − measured| / measured over the class's rows, at the solution. Use as a
  // prediction interval: ~90% of kernels of this class fall within ±p90_rel_error.
  double mape = 0;
  double p90_rel_error = 0;
  double max_rel_error = 0;
  int iterations = 0;
};

struct FitReport {
  PerfProfile profile;                // all classes; unfitted ones keep datasheet values
  std::vector<ClassFit> classes;      // fitted classes, in OpClass order
  std::vector<std::string> warnings;  // skipped rows and classes, each with the reason
};

// Roofs a row of class `c` is normalised by (same choice as the step cost model).
struct Roofs {
  double peak_flops = 0;        // FLOP/s for the row's compute dtype
  double bandwidth = 0;         // bytes/s
};
Roofs roofs_for(OpClass c, const GpuSpec& gpu, DType compute);

// The compute dtype a row names in its params_json ("dtype", else "compute_dtype"); bf16 when absent.
DType row_compute_dtype(const Measurement& m);

// Kernel time (ns) the model predicts for a row, without launch overhead. Zero-sized sides take no time.
double predicted_kernel_ns(const OpClassProfile& c, double flops, double bytes, const Roofs& roofs);

// Fits every class with rows (Measurement::op_class, PerfProfile class names) against `gpu`'s
// datasheet roofs. `label` names the data, e.g. "h100-sxm run 3": fitted classes get source
// "measured (<label>)", others "datasheet" with a note saying no rows were measured.
FitReport fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, std::string_view label,
                      const FitOptions& options = {});

// PerfProfile::transferred_to, plus relabelling of "measured (<label>)" classes (transferred_to
// only recognises the bare "measured"): they become "transferred (from <profile gpu>)" and keep
// "<label>" in their note.
PerfProfile transfer_profile(const PerfProfile& profile, const GpuSpec& target);

}  // namespace kvplan::calibration
