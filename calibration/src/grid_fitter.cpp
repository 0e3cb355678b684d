// fit_shape_grid: regularised least squares for ShapeGrid knot values (grid_fitter.h).
#include "kvplan/calibration/grid_fitter.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <span>

#include <Eigen/IterativeLinearSolvers>
#include <Eigen/Sparse>
#include <Eigen/SparseCholesky>
#include <fmt/format.h>

#include "kvplan/calibration/heldout_split.h"
#include "kvplan/core/error.h"

namespace kvplan::calibration {

namespace {

using SpMat = Eigen::SparseMatrix<double>;
using Triplet = Eigen::Triplet<double>;

// Distinct values of one axis, or `max_knots` of them evenly spaced in the coordinate.
std::vector<double> knots_of(std::vector<double> values, int max_knots) {
  std::sort(values.begin(), values.end());
  std::vector<double> distinct;
  for (double v : values) {
    if (distinct.empty() || v > distinct.back() + 1e-9) distinct.push_back(v);
  }
  if (static_cast<int>(distinct.size()) <= max_knots || max_knots < 2) return distinct;
  const double lo = distinct.front(), hi = distinct.back();
  std::vector<double> out;
  for (int i = 0; i < max_knots; ++i) {
    const double target = lo + (hi - lo) * i / (max_knots - 1);
    auto it = std::lower_bound(distinct.begin(), distinct.end(), target);
    double v = it == distinct.end() ? distinct.back() : *it;
    if (it != distinct.begin() && it != distinct.end() && target - *(it - 1) < *it - target) v = *(it - 1);
    if (out.empty() || v > out.back()) out.push_back(v);
  }
  return out;
}

// The penalty ‖D g‖² along axis `axis` as D^T D: second and first differences, in knot index.
SpMat penalty(const ShapeGrid& g, size_t axis, double curvature, double membrane) {
  const size_t cells = g.size();
  const size_t dims = g.knots.size();
  std::vector<size_t> stride(dims, 1);
  for (size_t d = dims; d-- > 1;) stride[d - 1] = stride[d] * g.knots[d].size();
  std::vector<Triplet> t;
  Eigen::Index row = 0;
  for (size_t c = 0; c < cells; ++c) {
    for (size_t d = axis; d == axis; ++d) {
      const size_t n = g.knots[d].size();
      const size_t i = (c / stride[d]) % n;
      if (i + 2 < n && curvature > 0) {  // √κ (g[i] − 2 g[i+1] + g[i+2])
        const double w = std::sqrt(curvature);
        t.emplace_back(row, static_cast<Eigen::Index>(c), w);
        t.emplace_back(row, static_cast<Eigen::Index>(c + stride[d]), -2.0 * w);
        t.emplace_back(row, static_cast<Eigen::Index>(c + 2 * stride[d]), w);
        ++row;
      }
      if (i + 1 < n && membrane > 0) {  // √μ (g[i+1] − g[i])
        const double w = std::sqrt(membrane);
        t.emplace_back(row, static_cast<Eigen::Index>(c), -w);
        t.emplace_back(row, static_cast<Eigen::Index>(c + stride[d]), w);
        ++row;
      }
    }
  }
  SpMat D(row, static_cast<Eigen::Index>(cells));
  D.setFromTriplets(t.begin(), t.end());
  return SpMat(D.transpose() * D);
}

struct Normal {
  SpMat ata;
  Eigen::VectorXd aty;
};

// A^T A and A^T y of the interpolation rows of `samples` (only those with use[i]).
Normal normal_equations(const ShapeGrid& g, const std::vector<GridSample>& samples, const std::vector<char>& use,
                        size_t dims) {
  const auto cells = static_cast<Eigen::Index>(g.size());
  std::vector<Triplet> t;
  Eigen::VectorXd aty = Eigen::VectorXd::Zero(cells);
  std::vector<size_t> index;
  std::vector<double> weight;
  for (size_t s = 0; s < samples.size(); ++s) {
    if (!use[s]) continue;
    g.corners(std::span<const double>(samples[s].x.data(), dims), index, weight);
    for (size_t a = 0; a < index.size(); ++a) {
      if (weight[a] == 0) continue;
      aty(static_cast<Eigen::Index>(index[a])) += weight[a] * samples[s].y;
      for (size_t b = 0; b < index.size(); ++b) {
        if (weight[b] == 0) continue;
        t.emplace_back(static_cast<Eigen::Index>(index[a]), static_cast<Eigen::Index>(index[b]), weight[a] * weight[b]);
      }
    }
  }
  Normal n;
  n.ata.resize(cells, cells);
  n.ata.setFromTriplets(t.begin(), t.end());
  n.aty = std::move(aty);
  return n;
}

Eigen::VectorXd solve(const SpMat& m, const Eigen::VectorXd& b) {
  Eigen::ConjugateGradient<SpMat, Eigen::Lower | Eigen::Upper, Eigen::IncompleteCholesky<double>> cg;
  cg.setMaxIterations(20000);
  cg.setTolerance(1e-10);
  cg.compute(m);
  Eigen::VectorXd x = cg.solve(b);
  if (cg.info() == Eigen::Success && x.allFinite()) return x;
  Eigen::SimplicialLDLT<SpMat> ldlt(m);
  return ldlt.solve(b);
}

double mean_abs_residual(const ShapeGrid& g, const std::vector<GridSample>& samples, const std::vector<char>& use,
                         size_t dims) {
  double sum = 0;
  int64_t n = 0;
  for (size_t s = 0; s < samples.size(); ++s) {
    if (!use[s]) continue;
    sum += std::fabs(std::log(g.factor(std::span<const double>(samples[s].x.data(), dims))) - samples[s].y);
    ++n;
  }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

void set_values(ShapeGrid& g, const Eigen::VectorXd& x, double round_to) {
  const int decimals = round_to > 0 ? std::max(0, static_cast<int>(std::lround(-std::log10(round_to)))) : 0;
  g.log_ratio.resize(static_cast<size_t>(x.size()));
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    double v = std::clamp(x(i), -20.0, 20.0);  // ShapeGrid::from_json's range
    // Rounded through its decimal text, so the JSON holds the short form ("0.0353", not
    // "0.035300000000000005" as round(v / r) · r would give).
    if (round_to > 0) v = std::strtod(fmt::format("{:.{}f}", v, decimals).c_str(), nullptr);
    if (v == 0) v = 0;  // no "-0" in the JSON
    g.log_ratio[static_cast<size_t>(i)] = v;
  }
}

}  // namespace

GridFit fit_shape_grid(const std::vector<GridSample>& samples, const std::vector<std::string>& axes,
                       const GridFitOptions& options) {
  if (samples.empty()) throw ConfigError("shape grid fit: no samples");
  const size_t dims = axes.size();
  if (dims == 0 || dims > 4) throw ConfigError(fmt::format("shape grid fit: {} axes (1 to 4 supported)", dims));
  GridFit out;
  ShapeGrid& g = out.grid;
  g.features = axes;
  for (size_t d = 0; d < dims; ++d) {
    std::vector<double> v;
    v.reserve(samples.size());
    for (const GridSample& s : samples) v.push_back(s.x[d]);
    g.knots.push_back(knots_of(std::move(v), options.max_knots_per_axis));
  }
  g.training_rows = static_cast<int64_t>(samples.size());
  const auto cells = static_cast<Eigen::Index>(g.size());
  std::vector<SpMat> pen;
  for (size_t d = 0; d < dims; ++d) pen.push_back(penalty(g, d, options.curvature, options.membrane));
  SpMat ridge(cells, cells);
  ridge.setIdentity();
  ridge *= options.ridge;
  auto system = [&](const SpMat& ata, double lambda, const std::vector<double>& w) {
    SpMat m = ata + ridge;
    for (size_t d = 0; d < dims; ++d) m += (lambda * w[d]) * pen[d];
    return m;
  };

  // λ and the axis weights by inner validation: fit on the inner training samples, score on the
  // others. First λ with every axis weighted 1, then each axis's weight in turn (coordinate search):
  // a shape effect that alternates along one axis (GEMM m = 512 vs 513) wants little smoothing
  // along that axis and ordinary smoothing along the others.
  std::vector<char> all(samples.size(), 1), inner_train(samples.size(), 0), inner_test(samples.size(), 0);
  int64_t n_test = 0;
  for (size_t s = 0; s < samples.size(); ++s) {
    const bool test = split_bucket(samples[s].key_hash, kInnerSplitSalt) < options.inner_heldout_percent;
    inner_test[s] = test ? 1 : 0;
    inner_train[s] = test ? 0 : 1;
    n_test += test ? 1 : 0;
  }
  std::vector<double> choices = options.smoothing_choices;
  if (choices.empty()) choices = {1.0};
  double best_lambda = choices.front();
  std::vector<double> weights(dims, 1.0);
  if (n_test > 0 && n_test < static_cast<int64_t>(samples.size()) &&
      (choices.size() > 1 || !options.axis_weight_choices.empty())) {
    const Normal inner = normal_equations(g, samples, inner_train, dims);
    auto score = [&](double lambda, const std::vector<double>& w) {
      ShapeGrid trial = g;
      set_values(trial, solve(system(inner.ata, lambda, w), inner.aty), 0);
      return mean_abs_residual(trial, samples, inner_test, dims);
    };
    double best = std::numeric_limits<double>::infinity();
    for (double lambda : choices) {
      const double err = score(lambda, weights);
      if (err < best) {
        best = err;
        best_lambda = lambda;
      }
    }
    for (size_t d = 0; d < dims && dims > 1; ++d) {
      for (double f : options.axis_weight_choices) {
        std::vector<double> w = weights;
        w[d] = f;
        const double err = score(best_lambda, w);
        if (err < best) {
          best = err;
          weights = w;
        }
      }
    }
    out.inner_mean_abs = best;
  }
  const Normal full = normal_equations(g, samples, all, dims);
  set_values(g, solve(system(full.ata, best_lambda, weights), full.aty), options.round_to);
  out.smoothing = best_lambda;
  out.axis_weights = weights;
  out.train_mean_abs = mean_abs_residual(g, samples, all, dims);
  return out;
}

}  // namespace kvplan::calibration
