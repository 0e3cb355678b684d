// Paged manager: block counts at boundaries, watermark, copy-on-write, sliding windows, recurrent
// slots and eviction caps, computed by hand.
#include <gtest/gtest.h>

#include <stdexcept>

#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/paged_kv_manager.h"

namespace kvplan::sim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kTok = 131072;  // Llama-3.1-8B bf16 bytes per token; a 16-token block is 2 MiB

KvLayout layout_of(const char* model, KvScheme scheme = KvScheme{}) {
  return build_kv_layout(resolve_model(model), scheme, Parallelism{});
}

SeqKvRequest req(SeqId seq, int64_t prompt) {
  SeqKvRequest r;
  r.seq = seq;
  r.prompt_tokens = prompt;
  r.final_tokens = prompt;
  return r;
}

TEST(KvPaged, BlockCountsAtBoundaries) {
  KvLayout layout = layout_of("llama-3.1-8b");
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 20 * kMiB, .layout = &layout});
  ASSERT_EQ(kv.num_pools(), 1);
  EXPECT_EQ(kv.block_bytes(0), 2 * kMiB);
  AdmitResult a = kv.admit(req(1, 15), 15);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.capacity_tokens, 16);
  EXPECT_EQ(kv.sequence_blocks(1, 0), 1);
  a = kv.admit(req(2, 16), 16);
  EXPECT_EQ(a.capacity_tokens, 16);
  EXPECT_EQ(kv.sequence_blocks(2, 0), 1);
  a = kv.admit(req(3, 17), 17);
  EXPECT_EQ(a.capacity_tokens, 32);
  EXPECT_EQ(kv.sequence_blocks(3, 0), 2);
  kv.check_invariants();
  EXPECT_EQ(kv.grow(3, 32), 32);
  EXPECT_EQ(kv.sequence_blocks(3, 0), 2);
  EXPECT_EQ(kv.grow(3, 33), 48);
  EXPECT_EQ(kv.sequence_blocks(3, 0), 3);
  kv.check_invariants();
  KvUsage u = kv.usage();
  EXPECT_EQ(u.token_bytes, (15 + 16 + 33) * kTok);
  EXPECT_EQ(u.internal_fragmentation_bytes, 5 * 2 * kMiB - (15 + 16 + 33) * kTok);
  EXPECT_EQ(u.free_bytes, 5 * 2 * kMiB);
  EXPECT_EQ(u.reserved_bytes, 0);
  EXPECT_EQ(kv.sequence_bytes(3), 3 * 2 * kMiB);
  EXPECT_EQ(kv.truncate(3, 16), 16);  // rollback frees two blocks
  EXPECT_EQ(kv.sequence_blocks(3, 0), 1);
  EXPECT_EQ(kv.usage().free_bytes, 7 * 2 * kMiB);
  kv.check_invariants();
}

TEST(KvPaged, OutOfMemoryIsAValueAndLeavesStateUnchanged) {
  KvLayout layout = layout_of("llama-3.1-8b");
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 6 * kMiB, .layout = &layout});  // 3 blocks
  ASSERT_TRUE(kv.admit(req(1, 32), 32).ok);
  EXPECT_EQ(kv.grow(1, 48), 48);
  EXPECT_EQ(kv.grow(1, 49), -1);
  EXPECT_EQ(kv.sequence_blocks(1, 0), 3);
  EXPECT_FALSE(kv.admit(req(2, 1), 1).ok);
  kv.check_invariants();
  EXPECT_EQ(kv.usage().num_seqs, 1);
}

TEST(KvPaged, WatermarkRefusesAdmissionButNotGrowth) {
  KvLayout layout = layout_of("llama-3.1-8b");
  // 10 blocks; watermark 0.1 keeps 2 MiB (one block) free at admission.
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 20 * kMiB, .layout = &layout, .watermark = 0.1});
  ASSERT_TRUE(kv.admit(req(1, 144), 144).ok);  // 9 blocks, 1 left
  EXPECT_FALSE(kv.can_admit(1));
  EXPECT_FALSE(kv.admit(req(2, 1), 1).ok);     // would leave 0 < 1 block
  EXPECT_EQ(kv.grow(1, 160), 160);             // growth may use the watermark
  kv.check_invariants();
}

TEST(KvPaged, CopyOnWriteAfterFork) {
  KvLayout layout = layout_of("llama-3.1-8b");
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 40 * kMiB, .layout = &layout});
  ASSERT_TRUE(kv.admit(req(1, 20), 20).ok);  // blocks: full + 4 of 16 slots
  ASSERT_TRUE(kv.fork(1, 2));                // parallel sampling: both share both blocks
  kv.check_invariants();
  EXPECT_EQ(kv.held_blocks(0), 2);
  EXPECT_EQ(kv.usage().token_bytes, 20 * kTok);  // shared slots counted once
  EXPECT_EQ(kv.sequence_bytes(2), 4 * kMiB);
  EXPECT_EQ(kv.grow(2, 21), 32);  // the child writes slot 5 of a shared block: copy it
  EXPECT_EQ(kv.cow_copies(), 1);
  EXPECT_EQ(kv.held_blocks(0), 3);
  kv.check_invariants();
  EXPECT_EQ(kv.grow(1, 21), 32);  // the parent is now the block's only holder: no copy
  EXPECT_EQ(kv.cow_copies(), 1);
  EXPECT_EQ(kv.held_blocks(0), 3);
  EXPECT_EQ(kv.usage().token_bytes, (16 + 5 + 5) * kTok);
  kv.check_invariants();
  // Rolling the child back into the shared full block copies it too (the parent still reads it).
  EXPECT_EQ(kv.truncate(2, 10), 16);
  EXPECT_EQ(kv.cow_copies(), 2);
  kv.check_invariants();
  kv.release(1, false);
  kv.release(2, false);
  kv.check_invariants();
  EXPECT_EQ(kv.usage().free_bytes, 40 * kMiB);
}

TEST(KvPaged, SlidingWindowFreesBlocksThatLeaveIt) {
  KvLayout layout = layout_of("gemma-2-9b");
  ASSERT_EQ(layout.groups().size(), 2u);
  ASSERT_EQ(layout.groups()[1].kind, LayerKind::kSlidingAttention);
  const KvLayerGroup& sliding = layout.groups()[1];
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = int64_t{4} << 30, .layout = &layout, .prefix_caching = true});
  EXPECT_FALSE(kv.prefix_caching_enabled());
  EXPECT_EQ(kv.name(), "paged (prefix cache off: sliding, recurrent or evicting layers)");
  EXPECT_EQ(kv.block_bytes(0), 21 * 16 * 8192);
  EXPECT_EQ(kv.block_bytes(1), 21 * 16 * 8192);
  AdmitResult a = kv.admit(req(1, 5000), 5000);
  ASSERT_TRUE(a.ok);
  // Window [904, 5000): blocks 56..312 = 257; full: 313 (see kv_layout_test).
  EXPECT_EQ(kv.sequence_blocks(1, 0), 313);
  EXPECT_EQ(kv.sequence_blocks(1, 1), 257);
  // Next call: block 56 leaves the window at 4096 + 57 * 16 = 5008, so 5007 is the last length.
  EXPECT_EQ(a.capacity_tokens, 5007);
  EXPECT_EQ(kv.sequence_bytes(1), layout.request_allocated_bytes(5000));
  // Walk the call points to 6000: the sliding group always holds exactly the blocks the window touches.
  int64_t t = a.capacity_tokens + 1;
  int calls = 0;
  while (t <= 6000) {
    int64_t cap = kv.grow(1, t);
    ASSERT_GE(cap, t);
    int64_t first = (t - sliding.window_tokens) / 16;
    int64_t last = (t - 1) / 16;
    ASSERT_EQ(kv.sequence_blocks(1, 1), last - first + 1) << "t=" << t;
    ASSERT_EQ(kv.sequence_bytes(1), layout.request_allocated_bytes(t)) << "t=" << t;
    kv.check_invariants();
    t = cap + 1;
    ++calls;
  }
  // 16 | 4096: the window's two ends cross block boundaries one token apart, two calls a block.
  EXPECT_EQ(calls, 2 * (6000 - 5000) / 16);
}

TEST(KvPaged, JambaStateSlots) {
  KvLayout layout = layout_of("jamba-v0.1");
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = int64_t{1} << 30, .layout = &layout, .prefix_caching = true});
  EXPECT_FALSE(kv.prefix_caching_enabled());
  EXPECT_EQ(kv.slot_bytes(), 28 * 573440);
  EXPECT_EQ(kv.block_bytes(0), 4 * 16 * 4096);
  ASSERT_TRUE(kv.admit(req(1, 1000), 1000).ok);
  EXPECT_EQ(kv.sequence_blocks(1, 0), 63);
  EXPECT_EQ(kv.usage().token_bytes, layout.request_bytes(1000));
  EXPECT_EQ(kv.sequence_bytes(1), layout.request_allocated_bytes(1000));
  ASSERT_TRUE(kv.fork(1, 2));  // the child's recurrent state is its own slot
  EXPECT_EQ(kv.usage().token_bytes, layout.request_bytes(1000) + 28 * 573440);
  kv.check_invariants();
  kv.release(1, true);
  kv.release(2, true);
  EXPECT_EQ(kv.usage().free_bytes, int64_t{1} << 30);
  kv.check_invariants();
}

TEST(KvPaged, MambaOnlyModelNeverNeedsAnotherCall) {
  KvLayout layout = layout_of("mamba2-2.7b");
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = int64_t{1} << 30, .layout = &layout});
  EXPECT_EQ(kv.num_pools(), 0);
  AdmitResult a = kv.admit(req(1, 100), 100);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.capacity_tokens, PagedKvManager::kNoLimit);
  EXPECT_EQ(kv.usage().token_bytes, layout.request_bytes(100));
  kv.check_invariants();
}

TEST(KvPaged, H2OBudgetCapsBlocks) {
  KvScheme scheme;
  scheme.eviction = Eviction::kH2O;
  scheme.h2o_budget_tokens = 1000;  // ceil(1000 / 16) = 63 blocks at most
  KvLayout layout = layout_of("llama-3.1-8b", scheme);
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = int64_t{1} << 30, .layout = &layout});
  AdmitResult a = kv.admit(req(1, 990), 990);
  EXPECT_EQ(a.capacity_tokens, 992);
  EXPECT_EQ(kv.sequence_blocks(1, 0), 62);
  EXPECT_EQ(kv.grow(1, 993), PagedKvManager::kNoLimit);  // the 63rd block is the last
  EXPECT_EQ(kv.sequence_blocks(1, 0), 63);
  EXPECT_EQ(kv.usage().token_bytes, 993 * kTok);
  EXPECT_EQ(kv.grow(1, 5000), PagedKvManager::kNoLimit);
  EXPECT_EQ(kv.sequence_blocks(1, 0), 63);
  EXPECT_EQ(kv.usage().token_bytes, layout.request_bytes(5000));  // 1000 tokens held
  EXPECT_EQ(kv.usage().token_bytes, 1000 * kTok);
  kv.check_invariants();
}

TEST(KvPaged, CorruptedRefcountIsDetected) {
  KvLayout layout = layout_of("llama-3.1-8b");
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 20 * kMiB, .layout = &layout});
  ASSERT_TRUE(kv.admit(req(1, 20), 20).ok);
  EXPECT_NO_THROW(kv.check_invariants());
  kv.corrupt_refcount_for_test(0, 0, +1);
  EXPECT_THROW(kv.check_invariants(), std::logic_error);
}

}  // namespace
}  // namespace kvplan::sim
