// Efficiency curves, datasheet defaults, transfer labels and JSON of PerfProfile (perf_profile.h).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kvplan
