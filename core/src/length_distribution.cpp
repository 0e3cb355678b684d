#include "kvplan/core/length_distribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/limits.h"

namespace kvplan {

namespace {

constexpr int kQuadraturePoints = 4096;

// Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9).
double inverse_normal_cdf(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549671010336070e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  p = std::clamp(p, 1e-12, 1 - 1e-12);
  const double plow = 0.02425;
  if (p < plow) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - plow) {
    double q = std::sqrt(-2 * std::log(1 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  double q = p - 0.5;
  double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double parse_number(std::string_view text, std::string_view field, std::string_view spec) {
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) {
    throw ConfigError(fmt::format("{}={} has '{}' where a number is expected", field, spec, text));
  }
  return v;
}

}  // namespace

LengthDistribution LengthDistribution::fixed(int64_t tokens) {
  LengthDistribution d;
  d.kind_ = Kind::kFixed;
  d.a_ = static_cast<double>(tokens);
  return d;
}

LengthDistribution LengthDistribution::uniform(int64_t low, int64_t high) {
  LengthDistribution d;
  d.kind_ = Kind::kUniform;
  d.a_ = static_cast<double>(low);
  d.b_ = static_cast<double>(high);
  return d;
}

LengthDistribution LengthDistribution::normal(double mean, double stddev) {
  LengthDistribution d;
  d.kind_ = Kind::kNormal;
  d.a_ = mean;
  d.b_ = stddev;
  return d;
}

LengthDistribution LengthDistribution::lognormal(double mu, double sigma) {
  LengthDistribution d;
  d.kind_ = Kind::kLognormal;
  d.a_ = mu;
  d.b_ = sigma;
  return d;
}

LengthDistribution LengthDistribution::empirical(std::vector<int64_t> samples, std::string label) {
  if (samples.empty()) throw ConfigError(fmt::format("length distribution '{}': has no samples", label));
  LengthDistribution d;
  d.kind_ = Kind::kEmpirical;
  std::sort(samples.begin(), samples.end());
  d.sorted_ = std::move(samples);
  d.label_ = std::move(label);
  return d;
}

int64_t LengthDistribution::quantile(double p) const {
  p = std::clamp(p, 0.0, 1.0);
  double x = 0;
  switch (kind_) {
    case Kind::kFixed: x = a_; break;
    case Kind::kUniform: x = std::floor(a_ + p * (b_ - a_ + 1)); x = std::min(x, b_); break;
    case Kind::kNormal: x = std::round(a_ + b_ * inverse_normal_cdf(p)); break;
    case Kind::kLognormal: x = std::round(std::exp(a_ + b_ * inverse_normal_cdf(p))); break;
    case Kind::kEmpirical: {
      size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted_.size())));
      i = std::clamp<size_t>(i, 1, sorted_.size());
      x = static_cast<double>(sorted_[i - 1]);
      break;
    }
  }
  // Clamp in floating point first: exp() of a large mu is beyond int64 (lognormal:50,1 once cast
  // to garbage and answered "27,867 requests fit").
  if (!(x >= 1.0)) x = 1.0;
  if (x > static_cast<double>(kMaxTokens)) x = static_cast<double>(kMaxTokens);
  const int64_t tokens = static_cast<int64_t>(x);
  return cap_ > 0 ? std::min(tokens, cap_) : tokens;
}

double LengthDistribution::expect(const std::function<double(int64_t)>& f) const {
  if (kind_ == Kind::kEmpirical) {
    double sum = 0;
    for (int64_t v : sorted_) sum += f(cap_ > 0 ? std::min(v, cap_) : v);
    return sum / static_cast<double>(sorted_.size());
  }
  if (kind_ == Kind::kFixed) return f(quantile(0.5));
  double sum = 0;
  for (int i = 0; i < kQuadraturePoints; ++i) {
    sum += f(quantile((i + 0.5) / kQuadraturePoints));
  }
  return sum / kQuadraturePoints;
}

double LengthDistribution::mean() const {
  return expect([](int64_t v) { return static_cast<double>(v); });
}

LengthDistribution LengthDistribution::clamped(int64_t max_tokens) const {
  LengthDistribution d = *this;
  d.cap_ = cap_ > 0 ? std::min(cap_, max_tokens) : max_tokens;
  return d;
}

std::string LengthDistribution::describe() const {
  std::string s;
  switch (kind_) {
    case Kind::kFixed: s = fmt::format("fixed {} tokens", a_); break;
    case Kind::kUniform: s = fmt::format("uniform {}..{} tokens", a_, b_); break;
    case Kind::kNormal: s = fmt::format("normal mean {} sd {}", a_, b_); break;
    case Kind::kLognormal: s = fmt::format("lognormal mu {} sigma {}", a_, b_); break;
    case Kind::kEmpirical: s = fmt::format("empirical, {} samples from {}", sorted_.size(), label_); break;
  }
  if (cap_ > 0) s += fmt::format(", capped at {}", cap_);
  return s;
}

LengthDistribution parse_length_distribution(std::string_view spec, std::string_view field) {
  auto colon = spec.find(':');
  if (colon == std::string_view::npos) {
    throw ConfigError(fmt::format(
        "{}={} must look like fixed:N, uniform:A,B, normal:MEAN,SD or lognormal:MU,SIGMA", field, spec));
  }
  std::string_view kind = spec.substr(0, colon);
  std::vector<double> args;
  std::string_view rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    args.push_back(parse_number(rest.substr(0, comma), field, spec));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  auto need = [&](size_t n) {
    if (args.size() != n) {
      throw ConfigError(fmt::format("{}={}: '{}' takes {} number(s), got {}", field, spec, kind, n, args.size()));
    }
  };
  if (kind == "fixed") {
    need(1);
    if (args[0] < 1 || args[0] > static_cast<double>(kMaxTokens)) {
      throw ConfigError(fmt::format("{}={}: the length must be between 1 and {} tokens", field, spec, kMaxTokens));
    }
    return LengthDistribution::fixed(static_cast<int64_t>(args[0]));
  }
  if (kind == "uniform") {
    need(2);
    if (args[0] < 1 || args[1] < args[0] || args[1] > static_cast<double>(kMaxTokens)) {
      throw ConfigError(fmt::format("{}={}: needs 1 <= A <= B <= {}", field, spec, kMaxTokens));
    }
    return LengthDistribution::uniform(static_cast<int64_t>(args[0]), static_cast<int64_t>(args[1]));
  }
  if (kind == "normal") {
    need(2);
    if (args[0] < 1 || args[1] < 0 || args[0] > static_cast<double>(kMaxTokens) || args[1] > static_cast<double>(kMaxTokens)) {
      throw ConfigError(fmt::format("{}={}: needs 1 <= MEAN <= {} and 0 <= SD <= {}", field, spec, kMaxTokens, kMaxTokens));
    }
    return LengthDistribution::normal(args[0], args[1]);
  }
  if (kind == "lognormal") {
    need(2);
    if (args[1] < 0 || args[1] > 20 || args[0] < -100 || args[0] > 100) {
      throw ConfigError(fmt::format("{}={}: needs -100 <= MU <= 100 and 0 <= SIGMA <= 20 (of ln tokens)", field, spec));
    }
    return LengthDistribution::lognormal(args[0], args[1]);
  }
  throw ConfigError(fmt::format(
      "{}={}: unknown distribution '{}'; use fixed, uniform, normal or lognormal", field, spec, kind));
}

}  // namespace kvplan
