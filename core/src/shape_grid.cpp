// ShapeGrid: multilinear interpolation of ln(measured / roofline) over log2 shape axes.
#include "kvplan/core/shape_grid.h"

#include <algorithm>
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

void ShapeGrid::corners(std::span<const double> x, std::vector<size_t>& index, std::vector<double>& weight) const {
  const size_t dims = knots.size();
  index.assign(1, 0);
  weight.assign(1, 1.0);
  size_t stride = size();
  for (size_t d = 0; d < dims; ++d) {
    const std::vector<double>& k = knots[d];
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
    const size_t n = index.size();
    if (k.size() == 1) {
      continue;  // a single knot: every corner keeps offset 0 on this axis
    }
    for (size_t i = 0; i < n; ++i) {
      index.push_back(index[i] + (lo + 1) * stride);
      weight.push_back(weight[i] * t);
      index[i] += lo * stride;
      weight[i] *= 1 - t;
    }
  }
}

double ShapeGrid::factor(std::span<const double> x) const {
  if (empty()) return 1.0;
  std::vector<size_t> index;
  std::vector<double> weight;
  corners(x, index, weight);
  double s = 0;
  for (size_t i = 0; i < index.size(); ++i) s += weight[i] * log_ratio[index[i]];
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
