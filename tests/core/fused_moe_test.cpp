// The fused MoE routing load and operator (core/fused_moe.h).
#include "kvplan/core/fused_moe.h"

#include <gtest/gtest.h>

#include "kvplan/core/error.h"
#include "kvplan/core/step_ops.h"

namespace kvplan {
namespace {

TEST(FusedMoe, PowerLawStragglerCarriesMoreThanTheMean) {
  // DeepSeek-V3 routing at EP 8: 1024 tokens x top-8 = 8192 pairs, a mean of 1024 per rank.
  for (MoeRouting r : {MoeRouting::kPowerLaw101, MoeRouting::kPowerLaw12}) {
    const MoeRankLoad l = moe_rank_load(256, 8, 1024, 8, r);
    EXPECT_DOUBLE_EQ(l.mean_rows, 1024.0);
    EXPECT_GT(l.rows, l.mean_rows) << moe_routing_name(r);
    EXPECT_GT(l.straggler(), 1.0);
    EXPECT_LE(l.rows, 8192.0);               // never more than every pair
    EXPECT_LE(l.experts_touched, 32.0);      // 256 / 8 experts per rank
  }
}

TEST(FusedMoe, BalancedRoutingGivesEveryRankTheMean) {
  const MoeRankLoad l = moe_rank_load(256, 8, 1024, 8, MoeRouting::kBalanced);
  EXPECT_DOUBLE_EQ(l.rows, 1024.0);         // 8192 / 8
  EXPECT_DOUBLE_EQ(l.experts_touched, 32.0);
  EXPECT_DOUBLE_EQ(l.straggler(), 1.0);
  // 3 pairs over 2 ranks: the straggler has ceil(1.5) = 2
  EXPECT_DOUBLE_EQ(moe_rank_load(8, 3, 1, 2, MoeRouting::kBalanced).rows, 2.0);
}

TEST(FusedMoe, OneTokenTouchesExactlyItsTopKExperts) {
  // No expert serves a token twice, so one token's 8 pairs reach 8 experts under every routing.
  for (MoeRouting r : {MoeRouting::kBalanced, MoeRouting::kPowerLaw101, MoeRouting::kPowerLaw12}) {
    const MoeRankLoad l = moe_rank_load(256, 8, 1, 1, r);
    EXPECT_DOUBLE_EQ(l.experts_touched, 8.0) << moe_routing_name(r);
    EXPECT_DOUBLE_EQ(l.rows, 8.0);
  }
}

TEST(FusedMoe, OpReadsTheTouchedExpertsWeights) {
  FusedMoeShape s;
  s.tokens = 1;
  s.hidden = 7168;
  s.width = 2048;
  s.experts = 256;
  s.top_k = 8;
  s.expert_weight_bytes = 3.0 * 7168 * 2048 * moe_format_bytes_per_weight(MoeFormat::kFp8Block);
  s.format = MoeFormat::kFp8Block;
  s.compute = DType::kFp8E4M3;
  s.routing = MoeRouting::kPowerLaw101;
  const StepOp op = fused_moe_op(s);
  // 8 experts x 3·7168·2048 fp8 weights (+ one fp32 scale per 128x128 block): 8 x 44,040,192 x (1 + 4/16384)
  const double weights = 8.0 * 44040192 * (1.0 + 4.0 / 16384);
  EXPECT_DOUBLE_EQ(op.bytes, weights + 2.0 * 7168 * 2 + 8.0 * (2 * 7168 + 6 * 2048) * 2);
  EXPECT_DOUBLE_EQ(op.flops, 2.0 * 8 * 7168 * (2 * 2048 + 2048));
  EXPECT_STREQ(op.grid_variant, "fp8_block/power_law_1.01");
  EXPECT_EQ(op.moe_experts, 256);
  EXPECT_EQ(op.moe_top_k, 8);
}

TEST(FusedMoe, RoutingNamesParseAndBadOnesAreRefused) {
  EXPECT_EQ(parse_moe_routing("power-law-1.01", "t"), MoeRouting::kPowerLaw101);
  EXPECT_EQ(parse_moe_routing("power_law_1.2", "t"), MoeRouting::kPowerLaw12);
  EXPECT_EQ(parse_moe_routing("balanced", "t"), MoeRouting::kBalanced);
  EXPECT_THROW(parse_moe_routing("zipf", "t"), ConfigError);
  MoeFormat f{};
  EXPECT_TRUE(parse_moe_table_dtype("w4a16_mxfp4", f));
  EXPECT_EQ(f, MoeFormat::kMxfp4);
  EXPECT_FALSE(parse_moe_table_dtype("int8", f));
}

TEST(FusedMoe, LoadIsDeterministic) {
  const MoeRankLoad a = moe_rank_load(128, 8, 333, 4, MoeRouting::kPowerLaw12);
  const MoeRankLoad b = moe_rank_load(128, 8, 333, 4, MoeRouting::kPowerLaw12);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.experts_touched, b.experts_touched);
}

}  // namespace
}  // namespace kvplan
