// Serving overheads (serving_overheads.h): every default carries its source; without data a term
// is 0 and says "not modelled".
#include <gtest/gtest.h>

#include <string>

#include "kvplan/core/error.h"
#include "kvplan/sim/serving_overheads.h"

namespace kvplan::sim {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ServingOverheads, NoDataMeansNotModelled) {
  // Nothing is fitted yet: every engine, with or without CUDA graphs, says "not modelled".
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    for (bool graphs : {true, false}) {
      const ServingOverheads o = default_serving_overheads(e, graphs);
      EXPECT_EQ(o.request.ns + o.step.ns, 0);
      EXPECT_TRUE(contains(o.request.source, "not modelled")) << o.request.source;
    }
  }
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
