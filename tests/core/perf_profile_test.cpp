// Efficiency curves, datasheet defaults, transfer labels and JSON of PerfProfile (perf_profile.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/presets.h"

namespace kvplan {
namespace {

std::string error_of(const nlohmann::json& j) {
  try {
    PerfProfile::from_json(j, "fit.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(PerfProfileCurve, SaturatingForm) {
  EfficiencyCurve c{0.8, 1000.0};
  EXPECT_DOUBLE_EQ(c.at(1000.0), 0.4);          // e_max / 2 at the half size
  EXPECT_DOUBLE_EQ(c.at(3000.0), 0.6);          // 0.8 · 3000 / 4000
  EXPECT_NEAR(c.at(1e12), 0.8, 1e-9);
  EfficiencyCurve flat{0.5, 0.0};
  EXPECT_DOUBLE_EQ(flat.at(1.0), 0.5);
  // The implied time is affine in size: s/(P·e(s)) = (s + half)/(P·e_max)
  const double peak = 100.0;
  EXPECT_DOUBLE_EQ(500.0 / (peak * c.at(500.0)), (500.0 + 1000.0) / (peak * 0.8));
}

TEST(PerfProfileDatasheet, LabelsAndNumbers) {
  GpuSpec h100 = resolve_gpu("h100-sxm");
  PerfProfile p = PerfProfile::datasheet_default(h100);
  EXPECT_EQ(p.gpu_id(), "h100-sxm");
  for (std::size_t i = 0; i < kNumOpClasses; ++i) {
    const OpClassProfile& c = p.at(static_cast<OpClass>(i));
    EXPECT_EQ(c.source, "datasheet");
    EXPECT_FALSE(c.note.empty());
    EXPECT_GT(c.memory.e_max, 0);
    EXPECT_LE(c.memory.e_max, 1);
  }
  EXPECT_DOUBLE_EQ(p.at(OpClass::kGemm).compute.e_max, 0.75);
  // 2 us fixed latency on the bf16 roof: half = 2e-6 · 989.4e12 · 0.75
  EXPECT_NEAR(p.at(OpClass::kGemm).compute.half_size, 2e-6 * 989.4e12 * 0.75, 1.0);
  EXPECT_DOUBLE_EQ(p.at(OpClass::kGemm).launch_overhead_ns, 4000.0);
  EXPECT_DOUBLE_EQ(p.at(OpClass::kCollective).memory.e_max, 0.41);
  PerfProfile ideal;
  EXPECT_EQ(ideal.at(OpClass::kGemm).source, "ideal");
  EXPECT_DOUBLE_EQ(ideal.at(OpClass::kGemm).compute.at(1.0), 1.0);
}

TEST(PerfProfileTransfer, RelabelsMeasuredClasses) {
  PerfProfile p = PerfProfile::datasheet_default(resolve_gpu("h100-sxm"));
  p.at(OpClass::kGemm).source = "measured";
  p.at(OpClass::kGemm).compute.e_max = 0.71;
  PerfProfile t = p.transferred_to(resolve_gpu("h200"));
  EXPECT_EQ(t.gpu_id(), "h200");
  EXPECT_EQ(t.at(OpClass::kGemm).source, "transferred (from h100-sxm)");
  EXPECT_DOUBLE_EQ(t.at(OpClass::kGemm).compute.e_max, 0.71);  // efficiencies kept
  EXPECT_EQ(t.at(OpClass::kSampling).source, "datasheet");
  // transferring again keeps naming the GPU that was measured
  PerfProfile t2 = t.transferred_to(resolve_gpu("a100-80gb"));
  EXPECT_EQ(t2.at(OpClass::kGemm).source, "transferred (from h100-sxm)");
}

TEST(PerfProfileJson, RoundTrip) {
  PerfProfile p = PerfProfile::datasheet_default(resolve_gpu("a100-80gb"));
  p.at(OpClass::kAttentionDecode).source = "measured";
  p.at(OpClass::kAttentionDecode).memory = EfficiencyCurve{0.77, 12345.5};
  PerfProfile q = PerfProfile::from_json(nlohmann::json::parse(p.to_json().dump()), "round trip");
  EXPECT_EQ(q.to_json(), p.to_json());
  EXPECT_EQ(q.gpu_id(), "a100-80gb");
  EXPECT_DOUBLE_EQ(q.at(OpClass::kAttentionDecode).memory.half_size, 12345.5);
  EXPECT_EQ(q.at(OpClass::kAttentionDecode).source, "measured");
  for (std::size_t i = 0; i < kNumOpClasses; ++i) {
    EXPECT_EQ(parse_op_class(op_class_name(static_cast<OpClass>(i)), "x"), static_cast<OpClass>(i));
  }
}

TEST(PerfProfileJson, MissingClassesStayIdealAndSaySo) {
  nlohmann::json j = {{"gpu", "h100-sxm"}, {"classes", nlohmann::json::object()}};
  PerfProfile p = PerfProfile::from_json(j, "partial");
  EXPECT_EQ(p.at(OpClass::kGemm).source, "ideal (not in file)");
}

TEST(PerfProfileJson, BadValuesNameFieldValueAndRule) {
  nlohmann::json good = PerfProfile::datasheet_default(resolve_gpu("h100-sxm")).to_json();
  nlohmann::json j = good;
  j["classes"]["gemm"]["compute"]["e_max"] = 1.5;
  EXPECT_EQ(error_of(j), "perf profile 'fit.json': classes.gemm.compute: e_max=1.5 must be in (0, 1]");
  j = good;
  j["classes"]["kv_write"]["memory"]["half_size"] = -3;
  EXPECT_EQ(error_of(j), "perf profile 'fit.json': classes.kv_write.memory: half_size=-3 must be >= 0");
  j = good;
  j["classes"]["gemm"].erase("launch_overhead_ns");
  EXPECT_EQ(error_of(j), "perf profile 'fit.json': classes.gemm: field 'launch_overhead_ns' is missing");
  j = good;
  j["classes"]["sampling"]["launch_overhead_ns"] = "fast";
  EXPECT_EQ(error_of(j), "perf profile 'fit.json': classes.sampling: launch_overhead_ns=\"fast\" must be a number");
  j = good;
  j["classes"]["warp_speed"] = j["classes"]["gemm"];
  EXPECT_NE(error_of(j).find("operator class 'warp_speed' is unknown"), std::string::npos);
  j = good;
  j.erase("gpu");
  EXPECT_EQ(error_of(j), "perf profile 'fit.json': field 'gpu' is missing");
  j = good;
  j["classes"]["gemm"]["source"] = "";
  EXPECT_EQ(error_of(j), "perf profile 'fit.json': classes.gemm: source=\"\" must be a non-empty string");
}

// A 2 x 3 grid over (log2 m, log2 n): knots m in {1, 4} (log2 0, 2), n in {8, 16, 64} (log2 3, 4, 6).
ShapeGrid small_grid() {
  ShapeGrid g;
  g.features = {"log2 m", "log2 n"};
  g.knots = {{0.0, 2.0}, {3.0, 4.0, 6.0}};
  // row-major, n fastest: (m=1: n=8,16,64), (m=4: n=8,16,64)
  g.log_ratio = {0.0, std::log(2.0), std::log(4.0), std::log(3.0), std::log(6.0), std::log(12.0)};
  return g;
}

TEST(ShapeGrid, InterpolatesLogRatiosMultilinearly) {
  const ShapeGrid g = small_grid();
  EXPECT_EQ(g.size(), 6u);
  const double at_knot[] = {2.0, 4.0};
  EXPECT_NEAR(g.factor(at_knot), 6.0, 1e-12);  // m = 4, n = 16
  // halfway along log2 m (m = 2) at n = 8: exp((ln 1 + ln 3) / 2) = sqrt(3)
  const double mid[] = {1.0, 3.0};
  EXPECT_NEAR(g.factor(mid), std::sqrt(3.0), 1e-12);
  // a quarter of the way from n = 16 to n = 64 (log2 n = 4.5) at m = 1: exp(0.75 ln 2 + 0.25 ln 4)
  const double quarter[] = {0.0, 4.5};
  EXPECT_NEAR(g.factor(quarter), std::exp(0.75 * std::log(2.0) + 0.25 * std::log(4.0)), 1e-12);
  // outside the table: clamped to the nearest edge
  const double outside[] = {10.0, -5.0};
  EXPECT_NEAR(g.factor(outside), 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(ShapeGrid{}.factor(at_knot), 1.0);  // no grid: no correction
}

TEST(ShapeGrid, JsonRoundTripAndErrors) {
  const ShapeGrid g = small_grid();
  const ShapeGrid back = ShapeGrid::from_json(g.to_json(), "grid");
  EXPECT_EQ(back.knots, g.knots);
  EXPECT_EQ(back.log_ratio, g.log_ratio);
  nlohmann::json j = g.to_json();
  j["log_ratio"].erase(0);
  EXPECT_THROW(ShapeGrid::from_json(j, "grid"), ConfigError);
  j = g.to_json();
  j["knots"][1] = {4.0, 3.0, 6.0};
  EXPECT_THROW(ShapeGrid::from_json(j, "grid"), ConfigError);
}

TEST(PerfProfileJson, GridsFloorsAndBandRoundTrip) {
  PerfProfile p = PerfProfile::datasheet_default(resolve_gpu("h100-sxm"));
  ShapeGrid g;
  g.features = grid_axes(OpClass::kGemm);
  g.knots = {{0.0, 10.0}, {10.0}, {10.0}};
  g.log_ratio = {0.1, 0.2};
  p.at(OpClass::kGemm).grids["fp8_e4m3"] = g;
  p.at(OpClass::kAttentionDecode).floor_ns = 13000;
  p.set_band(ProfileBand{0.12, 0.25, "unit test"});
  const PerfProfile back = PerfProfile::from_json(p.to_json(), "fit.json");
  ASSERT_EQ(back.at(OpClass::kGemm).grids.count("fp8_e4m3"), 1u);
  EXPECT_EQ(back.at(OpClass::kGemm).grids.at("fp8_e4m3").log_ratio, g.log_ratio);
  EXPECT_DOUBLE_EQ(back.at(OpClass::kAttentionDecode).floor_ns, 13000);
  EXPECT_DOUBLE_EQ(back.band().tpot_p90_rel_error, 0.12);
  // a grid whose axes are not the class's is refused
  nlohmann::json j = p.to_json();
  j["classes"]["gemm"]["grids"]["fp8_e4m3"]["features"] = {"log2 a", "log2 b", "log2 c"};
  EXPECT_NE(error_of(j).find("features must be the class's axes"), std::string::npos);
}

}  // namespace
}  // namespace kvplan
