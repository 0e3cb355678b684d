// kvplan/calibration/fitter.h — measured or published rows -> PerfProfile, per operator class:
// efficiency curves, per-variant shape correction grids, a per-kernel floor and held-out errors.
//
//   FitReport r = fit_profile(rows, resolve_gpu("h100-sxm"), "h100-sxm run 3");
//   r.profile.at(OpClass::kGemm).source;   // "measured (h100-sxm run 3)"; classes without rows: "datasheet"
//
// Model: the step cost model's, through the same code (core/op_time.h, docs/cost-model.md §3). A
// row stands for one StepOp (row_ops.h) of F FLOPs and B bytes, and takes
//   t = max(roofline · grid(shape, variant), kernels · floor_ns)
//   roofline = max(F / (P · e_c(F)), κ · B / (W · e_m(B))),   e(s) = e_max · s / (s + half_size)
// with P the dtype's peak FLOP/s, W the stream's link bandwidth (HBM; NVLink for collectives; PCIe
// for host copies) and κ = max(1, critical_bytes / (B · share)) the split-KV critical path of decode
// attention (1 for everything else; it does not depend on the curves). Launch overhead is not
// part of a kernel time, so it is not fitted: the datasheet value is kept (docs/calibration.md).
//
// Steps, per class, on the class's FITTED rows (the others are held out, see below):
//  1. Curves. With u = 1/e_max and v = half_size/e_max each side is linear in its parameters:
//     F/(P·e_c(F)) = (u_c·F + v_c)/P. Given which side of the max is active for each row, the
//     Gauss–Newton step for the relative residuals r_i = t̂_i/t_i − 1 is therefore an exact
//     weighted linear least-squares solve per side (Eigen QR, columns scaled), under e_max <= 1 and
//     half_size >= 0 (box constraints, solved exactly by checking the faces). The active set is then
//     recomputed and the solve repeated until it no longer changes (alternating max-affine
//     regression); the iterate with the smallest Σ r_i² is kept. Start: the datasheet profile's
//     active sides. Relative residuals, because timing noise is multiplicative and sizes span decades.
//  2. Grids (rows with a shape, i.e. published rows): one ShapeGrid per variant (GEMM dtype,
//     attention KV dtype, "bf16" collectives) on ln(measured / curve time), grid_fitter.h.
//  3. Floor: the smallest measured time per kernel of the fitted rows (a kernel is never faster),
//     when that row's time is a fixed latency on the fitted curve (size <= half_size of its active
//     side); a class whose rows are all large sets none.
//  4. Held-out validation: rows whose shape hashes into the held-out percentage (heldout_split.h)
//     are priced by the finished class profile; the p90 of |predicted/measured − 1| is stored as
//     OpClassProfile::heldout_p90_rel_error. Classes with fewer than min_rows_for_heldout rows are
//     fitted on every row and stay unvalidated (0).
//
// Identifiability and fallbacks (never NaN):
//   - a class with fewer than FitOptions::min_points usable rows is not fitted (datasheet, warning);
//   - a side with fewer than min_points active rows keeps its datasheet e_max ("datasheet (...)"),
//     its fixed latency capped at the fitted side's (else a datasheet latency larger than the
//     measured one would claim the small kernels, e.g. decode attention's compute side);
//   - too few rows on either side to split them: all are fitted to the side most are on;
//   - a side whose active rows all have one size (max/min < 1.05) fits e_max only, keeping the
//     datasheet half_size (a single size cannot separate latency from throughput), and so does a
//     side whose rows all take over 1000x the datasheet's fixed latency (it is below their noise,
//     e.g. BabelStream's 21 GB kernels);
//   - a variant with fewer than min_grid_rows shaped rows gets no grid;
//   - no class fitted at all -> ConfigError naming the rows' classes and counts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/calibration/grid_fitter.h"
#include "kvplan/calibration/measurement.h"
#include "kvplan/core/dtype.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/perf_profile.h"

namespace kvplan::calibration {

struct FitOptions {
  int min_points = 3;        // usable rows a class (and a curve) needs to be fitted
  int max_iterations = 50;   // active-set updates
  int heldout_percent = 30;  // of a class's shapes, kept out of the fit to measure its error
  int min_rows_for_heldout = 60;  // fewer usable rows: fit on all, no held-out error
  bool fit_grids = true;
  int min_grid_rows = 20;    // shaped rows a variant needs for a grid
  bool fit_floor = true;
  GridFitOptions grid;
};

struct CurveFitInfo {
  bool fitted = false;        // false: the datasheet curve is kept
  int64_t active_rows = 0;    // rows whose time this side sets at the solution
  std::string how;            // "slope and intercept", "e_max only (one size)", "datasheet (...)"
};

// Error of a class profile over a set of rows: |predicted / measured − 1|.
struct ErrorStats {
  int64_t rows = 0;
  double median = 0, p90 = 0, max = 0, mean = 0;
};
ErrorStats error_stats(std::vector<double> rel_errors);

// One correction grid (one variant of a class).
struct VariantFit {
  std::string variant;        // "bf16", "fp8_e4m3"
  int64_t cells = 0;
  double smoothing = 0;       // λ the grid fitter chose
  std::vector<double> axis_weights;  // and its multiplier per axis
  ErrorStats fitted, heldout; // through the whole class profile (curves, grid, floor)
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
  ErrorStats heldout;                  // rows == 0: not validated
  std::vector<VariantFit> variants;    // grids fitted, in variant name order
  double floor_ns = 0;
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

// Kernel time (ns) the curves alone predict for a row, without launch overhead, grid or critical
// path. Zero-sized sides take no time.
double predicted_kernel_ns(const OpClassProfile& c, double flops, double bytes, const Roofs& roofs);

// Kernel time (ns) a class profile predicts for a stored row, exactly as the step cost model
// prices the same operator (row_op + op_kernel_ns): curves, critical path, grid, floor.
double predicted_row_ns(const OpClassProfile& c, const GpuSpec& gpu, const Measurement& row);

// The source label of each fitted class, e.g. "measured (h100-sxm run 3)" or
// "published (aiconfigurator, vLLM 0.24.0, NVIDIA H100 80GB HBM3)".
using ClassSource = std::function<std::string(OpClass)>;

// Fits every class with rows (Measurement::op_class, PerfProfile class names) against `gpu`'s
// datasheet roofs. `label` names the data, e.g. "h100-sxm run 3": fitted classes get source
// "measured (<label>)", others "datasheet" with a note saying no rows were measured.
FitReport fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, std::string_view label,
                      const FitOptions& options = {});
// The same with each fitted class labelled by `source` (fit_run: "published (...)" for published runs).
FitReport fit_profile(const std::vector<Measurement>& rows, const GpuSpec& gpu, const ClassSource& source,
                      const FitOptions& options = {});

// PerfProfile::transferred_to, plus relabelling of "measured (<label>)" classes (transferred_to
// only recognises the bare "measured"): they become "transferred (from <profile gpu>)" and keep
// "<label>" in their note.
PerfProfile transfer_profile(const PerfProfile& profile, const GpuSpec& target);

}  // namespace kvplan::calibration
