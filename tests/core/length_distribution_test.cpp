// Request-length distributions (length_distribution.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kvplan/core/error.h"
#include "kvplan/core/length_distribution.h"

namespace kvplan {
namespace {

TEST(LengthDistribution, FixedMeanAndQuantiles) {
  LengthDistribution d = LengthDistribution::fixed(1000);
  EXPECT_EQ(d.kind(), LengthDistribution::Kind::kFixed);
  EXPECT_DOUBLE_EQ(d.mean(), 1000.0);
  EXPECT_EQ(d.quantile(0.0), 1000);
  EXPECT_EQ(d.quantile(0.99), 1000);
  // E[2L + 1] = 2001
  EXPECT_DOUBLE_EQ(d.expect([](int64_t L) { return 2.0 * static_cast<double>(L) + 1; }), 2001.0);
}

TEST(LengthDistribution, UniformMean) {
  LengthDistribution d = LengthDistribution::uniform(1, 100);
  // (1 + 100) / 2 = 50.5
  EXPECT_NEAR(d.mean(), 50.5, 0.01);
  EXPECT_EQ(d.quantile(0.0), 1);
  EXPECT_EQ(d.quantile(1.0), 100);
  // floor(1 + 0.505 * 100) = 51
  EXPECT_EQ(d.quantile(0.505), 51);
}

TEST(LengthDistribution, EmpiricalExact) {
  LengthDistribution d = LengthDistribution::empirical({100, 3, 1, 4, 2}, "five");
  // (1 + 2 + 3 + 4 + 100) / 5 = 22
  EXPECT_DOUBLE_EQ(d.mean(), 22.0);
  // sorted {1,2,3,4,100}; quantile(p) = sorted[ceil(p*5) - 1], at least the first
  EXPECT_EQ(d.quantile(0.0), 1);
  EXPECT_EQ(d.quantile(0.5), 3);    // ceil(2.5) = 3 -> 3
  EXPECT_EQ(d.quantile(0.79), 4);   // ceil(3.95) = 4 -> 4
  EXPECT_EQ(d.quantile(0.81), 100); // ceil(4.05) = 5 -> 100
  EXPECT_EQ(d.quantile(1.0), 100);
  // E[L^2] = (1 + 4 + 9 + 16 + 10000) / 5 = 2006
  EXPECT_DOUBLE_EQ(d.expect([](int64_t L) { return static_cast<double>(L * L); }), 2006.0);
}

TEST(LengthDistribution, EmpiricalNeedsSamples) {
  EXPECT_THROW(LengthDistribution::empirical({}, "none"), ConfigError);
}

TEST(LengthDistribution, LognormalMedian) {
  LengthDistribution d = LengthDistribution::lognormal(7.0, 0.8);
  // median exp(7) = 1096.63 -> 1097
  EXPECT_EQ(d.quantile(0.5), 1097);
  EXPECT_EQ(d.quantile(0.5), std::lround(std::exp(7.0)));
  // quantiles are monotone
  EXPECT_LT(d.quantile(0.1), d.quantile(0.5));
  EXPECT_LT(d.quantile(0.5), d.quantile(0.99));
  // mean of a lognormal: exp(mu + sigma^2/2) = exp(7.32) = 1510.2; the 4096-point quadrature is close
  EXPECT_NEAR(d.mean(), std::exp(7.0 + 0.32), 0.02 * std::exp(7.32));
}

TEST(LengthDistribution, ClampedCapsQuantilesAndMean) {
  LengthDistribution d = LengthDistribution::lognormal(7.0, 0.8);
  // unclamped p99 = exp(7 + 0.8 * 2.3263) = 7052
  EXPECT_NEAR(static_cast<double>(d.quantile(0.99)), 7052.0, 1.0);
  LengthDistribution c = d.clamped(2000);
  EXPECT_EQ(c.quantile(0.99), 2000);
  EXPECT_EQ(c.quantile(0.5), 1097);  // below the cap: unchanged
  EXPECT_LE(c.mean(), 2000.0);
  EXPECT_LT(c.mean(), d.mean());
  // clamping twice keeps the tighter cap
  EXPECT_EQ(c.clamped(5000).quantile(0.99), 2000);
  EXPECT_EQ(c.clamped(1500).quantile(0.99), 1500);
  // empirical values above the cap are capped in expectations: {1,2,3,4,10} -> mean 4
  LengthDistribution e = LengthDistribution::empirical({1, 2, 3, 4, 100}, "e").clamped(10);
  EXPECT_DOUBLE_EQ(e.mean(), 4.0);
}

TEST(LengthDistribution, NormalTruncatedAtOneToken) {
  LengthDistribution d = LengthDistribution::normal(10, 100);
  // quantile(0.01) = round(10 - 232.6) < 1 -> 1
  EXPECT_EQ(d.quantile(0.01), 1);
  EXPECT_EQ(d.quantile(0.5), 10);
}

TEST(LengthDistribution, ParseSpecs) {
  EXPECT_DOUBLE_EQ(parse_length_distribution("fixed:512", "lengths").mean(), 512.0);
  LengthDistribution u = parse_length_distribution("uniform:1,100", "lengths");
  EXPECT_EQ(u.kind(), LengthDistribution::Kind::kUniform);
  EXPECT_NEAR(u.mean(), 50.5, 0.01);
  EXPECT_EQ(parse_length_distribution("lognormal:7,0.8", "lengths").quantile(0.5), 1097);
  EXPECT_EQ(parse_length_distribution("normal:1000,10", "lengths").quantile(0.5), 1000);
}

void expect_parse_error(const std::string& spec) {
  try {
    parse_length_distribution(spec, "--lengths");
    ADD_FAILURE() << "no ConfigError for " << spec;
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("--lengths"), std::string::npos) << msg;
    EXPECT_NE(msg.find(spec), std::string::npos) << msg;
  }
}

TEST(LengthDistribution, ParseErrors) {
  expect_parse_error("lognormal:abc");
  expect_parse_error("poisson:3");
  expect_parse_error("uniform:5,2");
  expect_parse_error("fixed");
  expect_parse_error("fixed:0");
  expect_parse_error("normal:100");
}

}  // namespace
}  // namespace kvplan
