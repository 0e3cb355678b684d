// The engines' custom all-reduce (custom_all_reduce.h): the shipped constants are the least-squares
// fit of the published points, the formula by hand, and which engine/GPU gets it.
#include <gtest/gtest.h>

#include <cmath>

#include "kvplan/core/custom_all_reduce.h"
#include "kvplan/core/presets.h"

namespace kvplan {
namespace {

TEST(CustomAllReduce, ShippedConstantsAreTheFitOfThePublishedPoints) {
  const GpuSpec h100 = resolve_gpu("h100-sxm");
  const CustomAllReduce fit = fit_custom_all_reduce(h100_custom_all_reduce_points(), h100);
  const std::optional<CustomAllReduce> shipped = engine_custom_all_reduce(Engine::kVllm, h100);
  ASSERT_TRUE(shipped.has_value());
  // Rounded to 0.01 us and 0.001 when shipped.
  EXPECT_NEAR(fit.fixed_ns, shipped->fixed_ns, 5.0);
  EXPECT_NEAR(fit.link_efficiency, shipped->link_efficiency, 0.0005);
  // Every published point within 1.2 us of the fitted line (they are printed to 1 us).
  for (const CustomAllReducePoint& p : h100_custom_all_reduce_points()) {
    EXPECT_NEAR(custom_all_reduce_ns(*shipped, h100, p.payload_bytes, p.ranks), p.time_ns, 1200.0)
        << p.ranks << " ranks, " << p.payload_bytes << " B";
  }
}

TEST(CustomAllReduce, OneShotReadsEveryPeerOverNvlink) {
  const GpuSpec h100 = resolve_gpu("h100-sxm");
  CustomAllReduce ar;
  ar.fixed_ns = 6000;
  ar.link_efficiency = 0.5;  // 450 GB/s of the 900 GB/s preset
  // TP4, 16 KiB per rank (1 token of hidden 8192 in bf16): 3 peers x 16384 B / 450 GB/s = 109.2 ns.
  EXPECT_NEAR(custom_all_reduce_ns(ar, h100, 16384, 4), 6000 + 3.0 * 16384 / 450e9 * 1e9, 1e-6);
  EXPECT_NEAR(custom_all_reduce_ns(ar, h100, 16384, 2), 6000 + 16384 / 450e9 * 1e9, 1e-6);
  EXPECT_EQ(custom_all_reduce_ns(ar, h100, 16384, 1), 6000);
}

TEST(CustomAllReduce, OnlyServingEnginesOnNvidiaNvlink) {
  const GpuSpec h100 = resolve_gpu("h100-sxm");
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    const auto ar = engine_custom_all_reduce(e, h100);
    ASSERT_TRUE(ar.has_value()) << engine_name(e);
    EXPECT_EQ(ar->max_payload_bytes, 8.0 * 1024 * 1024);  // vLLM CustomAllreduce max_size
    EXPECT_NE(ar->source.find("pull/24532"), std::string::npos) << ar->source;
  }
  EXPECT_FALSE(engine_custom_all_reduce(Engine::kStatic, h100).has_value());
  EXPECT_FALSE(engine_custom_all_reduce(Engine::kVllm, resolve_gpu("l40s")).has_value());    // PCIe only
  EXPECT_FALSE(engine_custom_all_reduce(Engine::kVllm, resolve_gpu("mi300x")).has_value());  // AMD
  // Another NVLink GPU gets the H100 figures on its own link, and says so.
  const auto a100 = engine_custom_all_reduce(Engine::kVllm, resolve_gpu("a100-80gb"));
  ASSERT_TRUE(a100.has_value());
  EXPECT_NE(a100->source.find("transferred to a100-80gb"), std::string::npos) << a100->source;
}

TEST(CustomAllReduce, FitNeedsTwoDistinctPoints) {
  const GpuSpec h100 = resolve_gpu("h100-sxm");
  EXPECT_THROW(fit_custom_all_reduce({{4, 1024, 7000, ""}}, h100), std::invalid_argument);
  EXPECT_THROW(fit_custom_all_reduce({{4, 1024, 7000, ""}, {4, 1024, 8000, ""}}, h100), std::invalid_argument);
}

}  // namespace
}  // namespace kvplan
