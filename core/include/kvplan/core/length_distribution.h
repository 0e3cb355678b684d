// kvplan/core/length_distribution.h — request lengths (prompt + output tokens) as a distribution.
//
//   LengthDistribution d = parse_length_distribution("lognormal:7.0,0.8");
//   double m = d.mean();  int64_t p99 = d.quantile(0.99);
//   double e = d.expect([](int64_t L) { return double(blocks(L)); });   // E[f(L)]
//
// Specs: fixed:N | uniform:A,B | normal:MEAN,SD | lognormal:MU,SIGMA | empirical (from a list of
// observed lengths, e.g. a trace). Lengths are whole tokens >= 1; parametric distributions are
// truncated below at 1 token. Expectations use 4,096 equal-probability quantile points (exact for
// empirical), so they are deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan {

class LengthDistribution {
 public:
  enum class Kind { kFixed, kUniform, kNormal, kLognormal, kEmpirical };

  static LengthDistribution fixed(int64_t tokens);
  static LengthDistribution uniform(int64_t low, int64_t high);
  static LengthDistribution normal(double mean, double stddev);
  static LengthDistribution lognormal(double mu, double sigma);
  static LengthDistribution empirical(std::vector<int64_t> samples, std::string label);

  Kind kind() const { return kind_; }
  int64_t quantile(double p) const;  // p in [0, 1]
  double mean() const;
  double expect(const std::function<double(int64_t)>& f) const;
  // Caps lengths at `max_tokens` (an engine refuses longer requests).
  LengthDistribution clamped(int64_t max_tokens) const;
  std::string describe() const;

 private:
  Kind kind_ = Kind::kFixed;
  double a_ = 0;
  double b_ = 0;
  int64_t cap_ = 0;  // 0: no cap
  std::vector<int64_t> sorted_;  // empirical samples, ascending
  std::string label_;
};

// Parses fixed:N, uniform:A,B, normal:MEAN,SD, lognormal:MU,SIGMA. `field` names the flag.
LengthDistribution parse_length_distribution(std::string_view spec, std::string_view field);

}  // namespace kvplan
