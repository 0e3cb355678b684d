// CPU references of block copy and swap against hand-written caches: which bytes move, that nothing
// else changes, and which ids are rejected.
#include "kvplan/kernels/reference/block_copy_ref.h"

#include <numeric>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace kvplan::kernels {
namespace {

// num_kv_heads 1, tokens_per_block 2, head_dim 2: 4 elements per block.
std::vector<uint16_t> iota_cache(int blocks, uint16_t first) {
  std::vector<uint16_t> c(static_cast<size_t>(blocks) * 4);
  std::iota(c.begin(), c.end(), first);
  return c;
}

TEST(BlockCopyRef, TwoPairsByHand) {
  std::vector<uint16_t> k = iota_cache(4, 0);    // blocks: [0..3] [4..7] [8..11] [12..15]
  std::vector<uint16_t> v = iota_cache(4, 100);  // blocks: [100..103] ...
  const std::vector<int64_t> pairs = {0, 2, 1, 3};  // 0 -> 2, 1 -> 3
  BlockCopyParams p;
  p.k_cache = k.data();
  p.v_cache = v.data();
  p.block_pairs = pairs.data();
  p.num_pairs = 2;
  p.num_blocks = 4;
  p.num_kv_heads = 1;
  p.tokens_per_block = 2;
  p.head_dim = 2;
  const CacheBytes r = block_copy_ref(p);
  EXPECT_EQ(r.k_cache, (std::vector<uint16_t>{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(r.v_cache, (std::vector<uint16_t>{100, 101, 102, 103, 104, 105, 106, 107, 100, 101, 102, 103, 104, 105,
                                              106, 107}));
  EXPECT_EQ(k, iota_cache(4, 0));  // inputs untouched
}

TEST(BlockCopyRef, KOnlyCacheAndNoPairs) {
  std::vector<uint16_t> k = iota_cache(3, 0);
  const std::vector<int64_t> pairs = {2, 0};
  BlockCopyParams p;
  p.k_cache = k.data();
  p.block_pairs = pairs.data();
  p.num_pairs = 1;
  p.num_blocks = 3;
  p.num_kv_heads = 1;
  p.tokens_per_block = 2;
  p.head_dim = 2;
  CacheBytes r = block_copy_ref(p);
  EXPECT_EQ(r.k_cache, (std::vector<uint16_t>{8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(r.v_cache.empty());
  p.num_pairs = 0;
  EXPECT_EQ(block_copy_ref(p).k_cache, k);
}

TEST(BlockCopyRef, RejectsIdsOutsideTheCache) {
  std::vector<uint16_t> k = iota_cache(2, 0);
  BlockCopyParams p;
  p.k_cache = k.data();
  p.num_pairs = 1;
  p.num_blocks = 2;
  p.num_kv_heads = 1;
  p.tokens_per_block = 2;
  p.head_dim = 2;
  for (const std::vector<int64_t>& pair : {std::vector<int64_t>{2, 0}, {0, 2}, {-1, 0}, {0, -1}}) {
    p.block_pairs = pair.data();
    EXPECT_THROW(block_copy_ref(p), std::out_of_range) << pair[0] << " -> " << pair[1];
  }
  p.block_pairs = nullptr;
  EXPECT_THROW(block_copy_ref(p), std::invalid_argument);
}

BlockSwapParams swap_params(std::vector<uint16_t>& dk, std::vector<uint16_t>& dv, std::vector<uint16_t>& hk,
                            std::vector<uint16_t>& hv, const std::vector<int64_t>& pairs) {
  BlockSwapParams p;
  p.device_k_cache = dk.data();
  p.device_v_cache = dv.data();
  p.host_k_cache = hk.data();
  p.host_v_cache = hv.data();
  p.block_pairs = pairs.data();
  p.num_pairs = static_cast<int64_t>(pairs.size() / 2);
  p.num_device_blocks = static_cast<int>(dk.size() / 4);
  p.num_host_blocks = static_cast<int>(hk.size() / 4);
  p.num_kv_heads = 1;
  p.tokens_per_block = 2;
  p.head_dim = 2;
  return p;
}

TEST(BlockSwapRef, SwapOutByHand) {
  std::vector<uint16_t> dk = iota_cache(2, 0), dv = iota_cache(2, 100);
  std::vector<uint16_t> hk = iota_cache(3, 50), hv = iota_cache(3, 150);
  const std::vector<int64_t> pairs = {1, 0, 0, 2};  // device 1 -> host 0, device 0 -> host 2
  const CacheBytes r = swap_out_ref(swap_params(dk, dv, hk, hv, pairs));
  EXPECT_EQ(r.k_cache, (std::vector<uint16_t>{4, 5, 6, 7, 54, 55, 56, 57, 0, 1, 2, 3}));
  EXPECT_EQ(r.v_cache, (std::vector<uint16_t>{104, 105, 106, 107, 154, 155, 156, 157, 100, 101, 102, 103}));
}

TEST(BlockSwapRef, SwapInByHand) {
  std::vector<uint16_t> dk = iota_cache(2, 0), dv = iota_cache(2, 100);
  std::vector<uint16_t> hk = iota_cache(3, 50), hv = iota_cache(3, 150);
  const std::vector<int64_t> pairs = {2, 0};  // host 2 -> device 0
  const CacheBytes r = swap_in_ref(swap_params(dk, dv, hk, hv, pairs));
  EXPECT_EQ(r.k_cache, (std::vector<uint16_t>{58, 59, 60, 61, 4, 5, 6, 7}));
  EXPECT_EQ(r.v_cache, (std::vector<uint16_t>{158, 159, 160, 161, 104, 105, 106, 107}));
}

TEST(BlockSwapRef, RejectsIdsOnTheWrongSide) {
  std::vector<uint16_t> dk = iota_cache(2, 0), dv = iota_cache(2, 100);
  std::vector<uint16_t> hk = iota_cache(3, 50), hv = iota_cache(3, 150);
  const std::vector<int64_t> pairs = {2, 0};  // valid as host 2 -> device 0, not as device 2 -> host 0
  EXPECT_NO_THROW(swap_in_ref(swap_params(dk, dv, hk, hv, pairs)));
  EXPECT_THROW(swap_out_ref(swap_params(dk, dv, hk, hv, pairs)), std::invalid_argument);
  BlockSwapParams p = swap_params(dk, dv, hk, hv, pairs);
  p.host_v_cache = nullptr;  // v on one side only
  EXPECT_THROW(swap_in_ref(p), std::invalid_argument);
}

}  // namespace
}  // namespace kvplan::kernels
