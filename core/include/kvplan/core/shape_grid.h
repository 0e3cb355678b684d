// kvplan/core/shape_grid.h — a measured correction to an operator's roofline time as a function of
// its shape, fitted from tables of real kernel timings (published or measured).
//
//   ShapeGrid g = ...;                                   // knots in log2 m, log2 n, log2 k
//   double t = roofline_ns * g.factor({log2(m), log2(n), log2(k)});
//
// The roofline with efficiency curves (perf_profile.h) captures throughput and a fixed latency per
// kernel; what it cannot capture — tile and wave quantisation of GEMMs, split-KV occupancy of decode
// attention at a given batch and head count, NCCL's protocol switches — shows up as a smooth,
// shape-dependent ratio measured / roofline. The grid stores ln(ratio) at knots on each feature axis
// and interpolates it multilinearly (clamped at the ends), so a shape between measured ones gets a
// correction between theirs, and a shape outside the table the nearest edge's.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvplan {

struct ShapeGrid {
  std::vector<std::string> features;       // axis names, e.g. {"log2 m", "log2 n", "log2 k"}
  std::vector<std::vector<double>> knots;  // per axis, strictly ascending
  std::vector<double> log_ratio;           // row-major over the knots (last axis fastest)
  int64_t training_rows = 0;               // rows the grid was fitted on

  bool empty() const { return log_ratio.empty(); }
  size_t size() const;                     // product of the knot counts
  // exp(multilinear interpolation of log_ratio at x), x clamped to each axis's range. x must
  // have one value per axis. An empty grid returns 1.
  double factor(std::span<const double> x) const;
  // The 2^dims corner indices and weights interpolating at x (for fitting: factor is
  // exp(sum weight_i · log_ratio[index_i])).
  void corners(std::span<const double> x, std::vector<size_t>& index, std::vector<double>& weight) const;

  nlohmann::json to_json() const;
  // Strict: axes and values must agree in size, knots ascending, values finite; errors name
  // `where`, the field and the rule.
  static ShapeGrid from_json(const nlohmann::json& json, const std::string& where);
};

}  // namespace kvplan
