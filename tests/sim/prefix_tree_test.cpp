// Prefix cache of the paged manager: hits on hand-built hash lists, the prompt - 1 cap, LRU order.
#include <gtest/gtest.h>

#include <vector>

#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/paged_kv_manager.h"

namespace kvplan::sim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;  // a 16-token Llama-3.1-8B block is 2 MiB

KvLayout llama8b() { return build_kv_layout(resolve_model("llama-3.1-8b"), KvScheme{}, Parallelism{}); }

SeqKvRequest req(SeqId seq, int64_t prompt, int32_t hash_block_tokens, const std::vector<uint64_t>& hashes) {
  return SeqKvRequest{.seq = seq, .prompt_tokens = prompt, .final_tokens = prompt,
                      .hash_block_tokens = hash_block_tokens, .prefix_hashes = hashes};
}

TEST(KvPrefix, HitsSharedBlocksAndCountsThem) {
  KvLayout layout = llama8b();
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 100 * kMiB, .layout = &layout, .prefix_caching = true});
  ASSERT_TRUE(kv.prefix_caching_enabled());
  EXPECT_EQ(kv.name(), "paged+prefix");
  std::vector<uint64_t> abc{1, 2, 3};
  // 32 tokens per hash = 2 blocks per node. 100 prompt tokens: 7 blocks, 3 whole hash blocks.
  AdmitResult a = kv.admit(req(1, 100, 32, abc), 100);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 0);
  kv.check_invariants();
  kv.release(1, true);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 3);
  KvUsage u = kv.usage();
  EXPECT_EQ(u.cached_bytes, 6 * 2 * kMiB);  // the 7th (partial) block was freed
  EXPECT_EQ(u.free_bytes, 100 * kMiB - 12 * kMiB);
  EXPECT_EQ(kv.match_prefix(32, std::vector<uint64_t>{1, 2, 9}), 64);
  EXPECT_EQ(kv.match_prefix(32, std::vector<uint64_t>{2}), 0);      // same hash, different prefix
  EXPECT_EQ(kv.match_prefix(48, std::vector<uint64_t>{1}), 0);      // another granularity: no identity
  EXPECT_EQ(kv.match_prefix(24, std::vector<uint64_t>{1}), 0);      // not whole blocks: no identity

  // Sequence 2 shares the first two hash blocks: 64 tokens cached, 4 blocks referenced, 3 new.
  std::vector<uint64_t> ab9{1, 2, 9};
  a = kv.admit(req(2, 100, 32, ab9), 100);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 64);
  kv.check_invariants();
  u = kv.usage();
  EXPECT_EQ(u.cached_bytes, 2 * 2 * kMiB);  // node 3 stays cached only
  EXPECT_EQ(u.prefix_lookup_tokens, 200);
  EXPECT_EQ(u.prefix_hit_tokens, 64);
  EXPECT_EQ(kv.held_blocks(0), 7);

  // Sequence 3's prompt is exactly the three cached hash blocks: the hit stops one block short so
  // the last prompt token is recomputed ((96 - 1) / 16 = 5 blocks = 80 tokens).
  std::vector<uint64_t> abc_again{1, 2, 3};
  a = kv.admit(req(3, 96, 32, abc_again), 96);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 80);
  kv.check_invariants();
  kv.release(2, true);
  kv.release(3, true);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 4);  // 1 -> 2 -> {3, 9}
  EXPECT_EQ(kv.usage().prefix_hit_tokens, 144);
}

TEST(KvPrefix, EvictsLeastRecentlyUsedLeavesFirst) {
  KvLayout layout = llama8b();
  // 8 blocks; 16 tokens per hash: one block per node.
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 16 * kMiB, .layout = &layout, .prefix_caching = true});
  std::vector<uint64_t> h12{1, 2};
  std::vector<uint64_t> h56{5, 6};
  std::vector<uint64_t> h17{1, 7};
  ASSERT_TRUE(kv.admit(req(1, 33, 16, h12), 33).ok);
  kv.release(1, true);  // nodes 1, 2
  ASSERT_TRUE(kv.admit(req(2, 33, 16, h56), 33).ok);
  kv.release(2, true);  // nodes 5, 6
  AdmitResult a = kv.admit(req(3, 33, 16, h17), 33);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 16);
  kv.release(3, true);  // node 7 under 1; node 1 touched again
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 5);
  EXPECT_EQ(kv.usage().free_bytes, 3 * 2 * kMiB);
  // 100 tokens need 7 blocks: evict 4 nodes. Leaves by last use: 2, 6, 7; evicting 6 makes 5 a
  // leaf older than 7, so the order is 2, 6, 5, 7 and node 1 survives.
  ASSERT_TRUE(kv.admit(req(4, 100, 0, {}), 100).ok);
  kv.check_invariants();
  EXPECT_EQ(kv.evicted_nodes(), 4);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 7}), 16);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 2}), 16);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{5}), 0);
  // A hit protects its blocks: with one block cached and none free, a request that hits node 1
  // needs 2 more blocks and is refused without evicting what it would use.
  std::vector<uint64_t> h1{1};
  EXPECT_FALSE(kv.admit(req(5, 40, 16, h1), 40).ok);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 1);
}

TEST(KvPrefix, ReferencedNodesAreNeverEvicted) {
  KvLayout layout = llama8b();
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 8 * kMiB, .layout = &layout, .prefix_caching = true});
  std::vector<uint64_t> h12{1, 2};
  ASSERT_TRUE(kv.admit(req(1, 40, 16, h12), 40).ok);  // 3 blocks
  kv.release(1, true);                                 // 2 cached
  AdmitResult a = kv.admit(req(2, 40, 16, h12), 40);  // hits both nodes: 32 tokens, 1 new block
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 32);
  EXPECT_EQ(kv.usage().cached_bytes, 0);
  EXPECT_EQ(kv.grow(2, 64), 64);  // uses the last free block
  EXPECT_EQ(kv.grow(2, 65), -1);  // nothing evictable: both nodes are in use
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 2);
}

TEST(KvPrefix, ReleaseWithoutCachingFreesEverything) {
  KvLayout layout = llama8b();
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 16 * kMiB, .layout = &layout, .prefix_caching = true});
  std::vector<uint64_t> h12{1, 2};
  ASSERT_TRUE(kv.admit(req(1, 40, 16, h12), 40).ok);
  kv.release(1, false);
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 0);
  EXPECT_EQ(kv.usage().free_bytes, 16 * kMiB);
  kv.check_invariants();
}

}  // namespace
}  // namespace kvplan::sim
