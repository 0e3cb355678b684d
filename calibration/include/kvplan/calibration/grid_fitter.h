// kvplan/calibration/grid_fitter.h — fits a ShapeGrid (core/shape_grid.h) to the residuals of the
// efficiency curves: ln(measured / curve time) of each row at its grid coordinates.
//
//   std::vector<GridSample> s = ...;           // x = grid_coordinates(class, shape), y = ln ratio
//   GridFit f = fit_shape_grid(s, grid_axes(OpClass::kGemm), {});
//   double factor = f.grid.factor(x);          // ≈ measured / curve time at a row's shape
//
// Method: regularised linear least squares over the grid's knot values g,
//   min Σ_i (Σ_c w_ic g_c − y_i)² + λ · Σ_d a_d · (κ · Σ second differences² + μ · Σ first differences²) + ρ‖g‖²
// where w_ic are the multilinear interpolation weights of sample i (ShapeGrid::corners), a_d a
// multiplier per axis d, and the differences run along each axis between neighbouring knots (in
// knot index, so closely spaced knots such as m = 32 and 33 may differ as much as distant ones); ρ is
// tiny (it only fixes cells no sample or penalty reaches). The second differences make unseen cells
// interpolate smoothly; the weak first differences damp the slope the grid would otherwise carry
// on where there are no samples (e.g. large batch × long context cells the tables leave out).
// Knots: the distinct coordinates present on each axis; an axis with more than max_knots_per_axis
// gets that many knots evenly spaced in its coordinate, each snapped to a present value.
// λ, then a multiplier of λ per axis (one axis at a time): the candidates with the smallest mean
// |residual| on an inner validation split of the samples (by their key_hash; the caller's held-out
// rows are never seen), then refitted on all samples with the choice.
// Solved by conjugate gradients with an incomplete-Cholesky preconditioner (relative residual
// 1e-10; sparse LDLT if that does not converge). Deterministic.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/shape_grid.h"

namespace kvplan::calibration {

struct GridSample {
  std::array<double, 4> x{};  // grid coordinates (grid_coordinates), first `dims` used
  double y = 0;               // ln(measured / curve time)
  uint64_t key_hash = 0;      // for the inner validation split (heldout_split.h)
};

struct GridFitOptions {
  int max_knots_per_axis = 80;
  std::vector<double> smoothing_choices = {0.003, 0.01, 0.03, 0.1, 0.3, 1.0};  // λ candidates
  // Per-axis multipliers of λ tried, one axis at a time, after λ is chosen (empty: every axis 1).
  std::vector<double> axis_weight_choices = {0.01, 0.1, 0.3, 3.0, 10.0};
  double curvature = 1.0;         // κ: second-difference weight relative to λ
  double membrane = 0.1;          // μ: first-difference weight relative to λ
  double ridge = 1e-6;            // ρ
  int inner_heldout_percent = 20; // samples kept out to choose λ
  double round_to = 1e-4;         // log ratios are stored rounded to this power of ten (0: not rounded)
};

struct GridFit {
  ShapeGrid grid;
  double smoothing = 0;           // λ chosen
  std::vector<double> axis_weights;  // λ multiplier per axis chosen
  double inner_mean_abs = 0;      // its mean |residual| on the inner validation samples
  double train_mean_abs = 0;      // mean |residual| on all samples after the final fit
};

// `axes` names the grid's features (grid_axes(class)); its size is the number of dims used.
// Throws ConfigError when there are no samples.
GridFit fit_shape_grid(const std::vector<GridSample>& samples, const std::vector<std::string>& axes,
                       const GridFitOptions& options = {});

}  // namespace kvplan::calibration
