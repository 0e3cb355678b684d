// ShapeGrid: multilinear interpolation of ln(measured / roofline) over log2 shape axes.
#include "kvplan/core/shape_grid.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"

namespace kvplan {

size_t ShapeGrid::size() const {
  if (knots.empty()) return 0;
  size_t n = 1;
  for (const std::vector<double>& k : knots) n *= k.size();
  return n;
}

namespace {

// The corners of the cell holding x, written into index/weight (room for 2^dims entries); returns
// how many. Shared by corners() (vectors, for fitting) and factor() (stack arrays: it runs on every
// step-cost miss of a simulation, where two heap vectors per call cost more than the arithmetic).
// `skip_zero_weights` (factor only): on an axis where x sits exactly on a knot (t == 0) or is
// clamped to the last one (t == 1), the corners on the other side have weight exactly 0 and the
// kept ones are multiplied by exactly 1, so they are left out instead of doubled. A 4-axis
// attention grid whose head counts are knots then sums 4 corners, not 16. The sum is unchanged to
// the bit: the dropped terms are 0 x a finite log ratio, i.e. ±0, and adding ±0 to a sum that
// starts at +0 never changes it; the kept terms keep their order. corners() keeps every corner,
// zero weights included, for the fitter.
size_t corner_list(const ShapeGrid& g, std::span<const double> x, size_t* index, double* weight,
                   bool skip_zero_weights = false) {
  size_t n = 1;
  index[0] = 0;
  weight[0] = 1.0;
  size_t stride = g.size();
  for (size_t d = 0; d < g.knots.size(); ++d) {
    const std::vector<double>& k = g.knots[d];
    stride /= k.size();
    size_t lo = 0;
    double t = 0;
    const double v = d < x.size() ? x[d] : k.front();
    if (k.size() == 1 || v <= k.front()) {
      lo = 0;
      t = 0;
    } else if (v >= k.back()) {
      lo = k.size() - 2;
      t = 1;
    } else {
      lo = static_cast<size_t>(std::upper_bound(k.begin(), k.end(), v) - k.begin()) - 1;
      t = (v - k[lo]) / (k[lo + 1] - k[lo]);
    }
    if (k.size() == 1) {
      continue;  // a single knot: every corner keeps offset 0 on this axis
    }
    if (skip_zero_weights && (t == 0 || t == 1)) {
      const size_t offset = (t == 0 ? lo : lo + 1) * stride;
      for (size_t i = 0; i < n; ++i) index[i] += offset;
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      index[n + i] = index[i] + (lo + 1) * stride;
      weight[n + i] = weight[i] * t;
      index[i] += lo * stride;
      weight[i] *= 1 - t;
    }
    n *= 2;
  }
  return n;
}

constexpr size_t kStackAxes = 6;  // from_json's limit

}  // namespace

void ShapeGrid::corners(std::span<const double> x, std::vector<size_t>& index, std::vector<double>& weight) const {
  const size_t room = size_t{1} << knots.size();
  index.assign(room, 0);
  weight.assign(room, 0.0);
  const size_t n = corner_list(*this, x, index.data(), weight.data());
  index.resize(n);
  weight.resize(n);
}

double ShapeGrid::factor(std::span<const double> x) const {
  if (empty()) return 1.0;
  double s = 0;
  if (knots.size() <= kStackAxes) {
    std::array<size_t, size_t{1} << kStackAxes> index;
    std::array<double, size_t{1} << kStackAxes> weight;
    const size_t n = corner_list(*this, x, index.data(), weight.data(), /*skip_zero_weights=*/true);
    for (size_t i = 0; i < n; ++i) s += weight[i] * log_ratio[index[i]];
  } else {
    std::vector<size_t> index;
    std::vector<double> weight;
    corners(x, index, weight);
    for (size_t i = 0; i < index.size(); ++i) s += weight[i] * log_ratio[index[i]];
  }
  return std::exp(s);
}

nlohmann::json ShapeGrid::to_json() const {
  return {{"features", features}, {"knots", knots}, {"log_ratio", log_ratio}, {"training_rows", training_rows}};
}

ShapeGrid ShapeGrid::from_json(const nlohmann::json& j, const std::string& where) {
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key)) throw ConfigError(fmt::format("{}: field '{}' is missing", where, key));
    return j.at(key);
  };
  ShapeGrid g;
  const nlohmann::json& features = need("features");
  const nlohmann::json& knots = need("knots");
  const nlohmann::json& values = need("log_ratio");
  if (!features.is_array() || !knots.is_array() || features.size() != knots.size() || knots.empty() ||
      knots.size() > 6) {
    throw ConfigError(fmt::format("{}: features and knots must be arrays of the same length (1 to 6 axes)", where));
  }
  for (const nlohmann::json& f : features) {
    if (!f.is_string()) throw ConfigError(fmt::format("{}: features must be strings", where));
    g.features.push_back(f.get<std::string>());
  }
  for (size_t d = 0; d < knots.size(); ++d) {
    const nlohmann::json& axis = knots[d];
    if (!axis.is_array() || axis.empty() || axis.size() > 4096) {
      throw ConfigError(fmt::format("{}: knots[{}] must be a non-empty array of at most 4096 numbers", where, d));
    }
    std::vector<double> k;
    for (const nlohmann::json& v : axis) {
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        throw ConfigError(fmt::format("{}: knots[{}] must hold finite numbers", where, d));
      }
      if (!k.empty() && !(v.get<double>() > k.back())) {
        throw ConfigError(fmt::format("{}: knots[{}] must be strictly ascending", where, d));
      }
      k.push_back(v.get<double>());
    }
    g.knots.push_back(std::move(k));
  }
  if (!values.is_array() || values.size() != g.size()) {
    throw ConfigError(fmt::format("{}: log_ratio must hold {} values (the product of the knot counts)", where, g.size()));
  }
  for (const nlohmann::json& v : values) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || std::fabs(v.get<double>()) > 20) {
      throw ConfigError(fmt::format("{}: log_ratio values must be finite numbers in [-20, 20]", where));
    }
    g.log_ratio.push_back(v.get<double>());
  }
  if (j.contains("training_rows") && j.at("training_rows").is_number_integer()) {
    g.training_rows = j.at("training_rows").get<int64_t>();
  }
  return g;
}

}  // namespace kvplan
