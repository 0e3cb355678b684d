// Serving overheads (serving_overheads.h): every default carries its source; without data a term
// is 0 and says "not modelled".
#include <gtest/gtest.h>

#include <string>

#include "kvplan/core/error.h"
#include "kvplan/sim/serving_overheads.h"

namespace kvplan::sim {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ServingOverheads, FittedDefaultsPerEngineNameTheirSource) {
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    const ServingOverheads o = default_serving_overheads(e, true);
    EXPECT_GT(o.request.ns, 0) << engine_name(e);
    EXPECT_GT(o.step.ns, 0) << engine_name(e);
    EXPECT_TRUE(contains(o.request.source, "aiconfigurator H100 e2e set")) << o.request.source;
    EXPECT_TRUE(contains(o.step.source, "fit half, in-sample")) << o.step.source;
  }
  // The numbers kvplan_validate_serving printed for the fit (docs/benchmarks-serving.md).
  EXPECT_EQ(default_serving_overheads(Engine::kTrtllm, true).request.ns, 176'619'000);
  EXPECT_EQ(default_serving_overheads(Engine::kVllm, true).step.ns, 1'181'000);
  EXPECT_EQ(default_serving_overheads(Engine::kSglang, true).request.ns, 136'203'000);
}

TEST(ServingOverheads, NoDataMeansNotModelled) {
  const ServingOverheads eager = default_serving_overheads(Engine::kVllm, false);
  EXPECT_EQ(eager.request.ns, 0);
  EXPECT_EQ(eager.step.ns, 0);
  EXPECT_TRUE(contains(eager.request.source, "not modelled")) << eager.request.source;
  const ServingOverheads hf = default_serving_overheads(Engine::kStatic, true);
  EXPECT_EQ(hf.request.ns + hf.step.ns, 0);
  EXPECT_EQ(hf.step.source, "not modelled");
  EXPECT_EQ(ServingOverheads{}.describe(), "per request 0.000 ms (not modelled); per step 0.000 ms (not modelled)");
}

TEST(ServingOverheads, MillisecondsToNanoseconds) {
  EXPECT_EQ(overhead_ms_to_ns(1.5, "--step-overhead-ms"), 1'500'000);
  EXPECT_EQ(overhead_ms_to_ns(0.0000004, "x"), 0);  // rounds to the nearest ns
  EXPECT_THROW(overhead_ms_to_ns(-1, "--request-overhead-ms"), ConfigError);
}

}  // namespace
}  // namespace kvplan::sim
