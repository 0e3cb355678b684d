// spec_rollback by hand: accepting all, none, some; rollback crossing a block boundary; a rollback
// that frees several blocks; tokens_per_block 16 and 1; invalid inputs reported, not thrown.
#include "kvplan/kernels/spec_rollback.h"

#include <vector>

#include <gtest/gtest.h>

namespace kvplan::kernels {
namespace {

const std::vector<int32_t> kTable{40, 7, 23, 5, 99};

TEST(SpecRollback, AcceptAllKeepsEverything) {
  // 30 context + 1 + 4 drafts = 35 tokens in blocks of 16: 3 blocks; all 4 accepted.
  const SpecRollback r = spec_rollback(kTable, 35, 4, 4, 16);
  EXPECT_TRUE(r.problem.empty());
  EXPECT_EQ(r.new_len, 35);
  EXPECT_EQ(r.kept_blocks, 3);
  EXPECT_TRUE(r.freed_blocks.empty());
}

TEST(SpecRollback, RejectAllWithinOneBlock) {
  // 40 + 1 + 4 = 45 tokens (3 blocks); none accepted: 41 tokens, still 3 blocks (41 > 32).
  const SpecRollback r = spec_rollback(kTable, 45, 4, 0, 16);
  EXPECT_EQ(r.new_len, 41);
  EXPECT_EQ(r.kept_blocks, 3);
  EXPECT_TRUE(r.freed_blocks.empty());
}

TEST(SpecRollback, RollbackCrossingABlockBoundaryFreesTheLastBlock) {
  // 30 + 1 + 4 = 35 tokens: block 2 (id 23) holds tokens 32..34. Accept 1: 32 tokens, exactly two
  // full blocks; block 23 is freed.
  SpecRollback r = spec_rollback(kTable, 35, 4, 1, 16);
  EXPECT_EQ(r.new_len, 32);
  EXPECT_EQ(r.kept_blocks, 2);
  EXPECT_EQ(r.freed_blocks, std::vector<int32_t>{23});
  // Accept 2: 33 tokens, one token into block 23: nothing freed (boundary + 1).
  r = spec_rollback(kTable, 35, 4, 2, 16);
  EXPECT_EQ(r.new_len, 33);
  EXPECT_EQ(r.kept_blocks, 3);
  EXPECT_TRUE(r.freed_blocks.empty());
  // 28 + 1 + 4 = 33 tokens, none accepted: 29 tokens, block 23 freed (rollback from boundary + 1).
  r = spec_rollback(kTable, 33, 4, 0, 16);
  EXPECT_EQ(r.new_len, 29);
  EXPECT_EQ(r.kept_blocks, 2);
  EXPECT_EQ(r.freed_blocks, std::vector<int32_t>{23});
}

TEST(SpecRollback, OneTokenPerBlockFreesOneBlockPerRejectedToken) {
  // 0 context + 1 + 4 drafts = 5 tokens in 5 one-token blocks; accept 1: 2 tokens remain.
  SpecRollback r = spec_rollback(kTable, 5, 4, 1, 1);
  EXPECT_EQ(r.new_len, 2);
  EXPECT_EQ(r.kept_blocks, 2);
  EXPECT_EQ(r.freed_blocks, (std::vector<int32_t>{23, 5, 99}));
  r = spec_rollback(kTable, 5, 4, 4, 1);
  EXPECT_EQ(r.kept_blocks, 5);
  EXPECT_TRUE(r.freed_blocks.empty());
  r = spec_rollback(kTable, 4, 4, 0, 1);  // every cached token was a draft, all rejected
  EXPECT_EQ(r.new_len, 0);
  EXPECT_EQ(r.kept_blocks, 0);
  EXPECT_EQ(r.freed_blocks, (std::vector<int32_t>{40, 7, 23, 5}));
}

TEST(SpecRollback, IgnoresTheTablesUnusedTail) {
  // 20 tokens use 2 blocks of 16; entries 2.. are not the sequence's and are never freed.
  const SpecRollback r = spec_rollback(kTable, 20, 5, 0, 16);
  EXPECT_EQ(r.new_len, 15);
  EXPECT_EQ(r.kept_blocks, 1);
  EXPECT_EQ(r.freed_blocks, std::vector<int32_t>{7});
}

TEST(SpecRollback, ReportsInvalidInputs) {
  EXPECT_NE(spec_rollback(kTable, 35, 4, 5, 16).problem.find("num_accepted=5"), std::string::npos);
  EXPECT_FALSE(spec_rollback(kTable, 35, 4, -1, 16).problem.empty());
  EXPECT_FALSE(spec_rollback(kTable, 3, 4, 0, 16).problem.empty());  // more drafts than tokens
  EXPECT_NE(spec_rollback(kTable, 35, 4, 0, 0).problem.find("tokens_per_block=0"), std::string::npos);
  EXPECT_NE(spec_rollback(kTable, 81, 4, 0, 16).problem.find("needs 6"), std::string::npos);
}

}  // namespace
}  // namespace kvplan::kernels
