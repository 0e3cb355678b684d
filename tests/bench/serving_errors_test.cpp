// Refused runs are misses in the validation statistics (bench/serving_errors.h).
#include "serving_errors.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace kvplan::bench {
namespace {

TEST(ServingErrors, RefusedRunsRankAboveEveryAnswerInMedianAndP90) {
  // Answered |e|: 0.10, 0.20, 0.30 (signed -0.1, +0.2, +0.3). Without misses: median 0.20.
  const std::vector<double> errors = {-0.10, 0.20, 0.30};
  const Stats none = stats(errors);
  EXPECT_EQ(none.n, 3u);
  EXPECT_DOUBLE_EQ(none.med_abs, 0.20);
  // One refused run: |e| sorted 0.1, 0.2, 0.3, inf -> median (0.2 + 0.3) / 2 = 0.25; p90 nearest
  // rank ceil(0.9 x 4) = 4 -> the miss.
  const Stats one = stats(errors, 1);
  EXPECT_EQ(one.n, 3u);
  EXPECT_EQ(one.refused, 1u);
  EXPECT_DOUBLE_EQ(one.med_abs, 0.25);
  EXPECT_TRUE(std::isinf(one.p90_abs));
  EXPECT_DOUBLE_EQ(one.bias, 0.20);  // over the answered runs only
  // Two refused: 0.1, 0.2, 0.3, inf, inf -> median 0.3.
  EXPECT_DOUBLE_EQ(stats(errors, 2).med_abs, 0.30);
  // Three refused of six: the middle pair is (0.3, inf) -> a miss.
  EXPECT_TRUE(std::isinf(stats(errors, 3).med_abs));
  EXPECT_EQ(upc(stats(errors, 3).med_abs), "miss");
  EXPECT_EQ(upc(0.25), "25%");
}

TEST(ServingErrors, P90IsTheNearestRank) {
  // Ten answered runs 0.1 .. 1.0: p90 is rank ceil(0.9 x 10) = 9 -> 0.9; median (0.5 + 0.6) / 2.
  std::vector<double> errors;
  for (int i = 1; i <= 10; ++i) errors.push_back(i / 10.0);
  const Stats s = stats(errors);
  EXPECT_NEAR(s.p90_abs, 0.9, 1e-12);
  EXPECT_NEAR(s.med_abs, 0.55, 1e-12);
  // With one miss (11 runs), nearest rank ceil(9.9) = 10 -> 1.0; median the 6th -> 0.6.
  const Stats m = stats(errors, 1);
  EXPECT_NEAR(m.p90_abs, 1.0, 1e-12);
  EXPECT_NEAR(m.med_abs, 0.6, 1e-12);
}

TEST(ServingErrors, ReasonGroupCutsAtTheFirstNumberAfterFortyCharacters) {
  EXPECT_EQ(reason_group("no kvplan model preset for zhipuai/GLM-5"), "no kvplan model preset for zhipuai/GLM-5");
  // A digit inside a name does not cut it; a number that starts a word does.
  EXPECT_EQ(reason_group("no kvplan model preset for deepseek-ai/DeepSeek-V3"),
            "no kvplan model preset for deepseek-ai/DeepSeek-V3");
  // Numbers in the first 40 characters stay: "tp 8 x ep 8" and "tp 2 x ep 2" are listed apart.
  EXPECT_EQ(reason_group("MoE split tp 8 x ep 8 (kvplan's EP spreads whole experts)"),
            "MoE split tp 8 x ep 8 (kvplan's EP spreads whole experts)");
  EXPECT_EQ(reason_group("kvplan refuses the run: moe intermediate per GPU 192 must be a multiple of 128"),
            "kvplan refuses the run: moe intermediate per GPU");
}

}  // namespace
}  // namespace kvplan::bench
