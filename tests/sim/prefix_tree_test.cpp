// Prefix cache of the paged manager: hits on hand-built hash lists, the prompt - 1 cap, LRU order;
// the tree's runs (one run per unshared prompt, cut where a branch or a touch ends inside one).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/paged_kv_manager.h"
#include "kvplan/sim/prefix_tree.h"

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

// mooncake_synthetic.jsonl stopped with "make_free: no evictable prefix node left": two requests
// with the same first hash blocks prefill side by side, so the second computes its own copies; the
// first publishes and finishes, and the second then published its third hash block under the
// first's nodes, which it did not hold. That node stayed referenced under unreferenced parents, so
// obtainable_bytes() counted the parents as evictable while no leaf could be evicted. Now the
// second trades its copies for the cached blocks first (SGLang's cache_unfinished_req).
// Blocks are 16 tokens (2 MiB), one per hash block; capacity 5 blocks.
TEST(KvPrefix, PublishOverAnotherSequencesCopyTakesTheCachedBlocks) {
  KvLayout layout = llama8b();
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 10 * kMiB, .layout = &layout, .prefix_caching = true});
  ASSERT_TRUE(kv.admit(req(1, 32, 16, {1, 2}), 32).ok);     // A0 A1: 2 blocks, 3 free
  ASSERT_TRUE(kv.admit(req(2, 48, 16, {1, 2, 3}), 48).ok);  // tree empty: B0 B1 B2, 0 free
  kv.publish_prefix(1);                                      // nodes 1 -> 2 on A0 A1
  kv.release(1, true);                                       // both cached, unreferenced
  EXPECT_EQ(kv.usage().cached_bytes, 4 * kMiB);
  EXPECT_EQ(kv.usage().free_bytes, 0);
  // Sequence 2 holds A0 A1 in place of B0 B1 (freed: 2 blocks) and node 3 (B2) hangs under node 2:
  // every node is referenced, nothing is evictable, and obtainable bytes are the 2 free blocks.
  kv.publish_prefix(2);
  ASSERT_NO_THROW(kv.check_invariants());
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 3);
  EXPECT_EQ(kv.prefix_tree()->evictable_bytes(), 0);
  EXPECT_EQ(kv.usage().cached_bytes, 0);
  EXPECT_EQ(kv.usage().free_bytes, 4 * kMiB);
  EXPECT_EQ(kv.sequence_blocks(2, 0), 3);
  // The first decode token takes block 4 from the free ones (4 blocks of 16 tokens: capacity 64).
  EXPECT_EQ(kv.grow(2, 49), 64);
  kv.check_invariants();
  EXPECT_EQ(kv.evicted_nodes(), 0);
  // A request arriving meanwhile hits all three nodes (48 of its 63 cacheable tokens) and needs
  // one new block for its 64 tokens: the last free one.
  AdmitResult a = kv.admit(req(3, 64, 16, {1, 2, 3, 4}), 64);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 48);
  EXPECT_EQ(kv.usage().free_bytes, 0);
  // Nothing left to obtain: growth is refused as a value, not an internal error.
  EXPECT_EQ(kv.grow(2, 65), -1);
  kv.check_invariants();
  kv.release(2, true);
  kv.release(3, true);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 4);  // 1 2 3 on A0 A1 B2, 4 on sequence 3's block
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

TEST(PrefixTreeRuns, ChainIsOneRunAndABranchCutsIt) {
  using Node = PrefixTree::Node;
  PrefixTree tree(/*blocks_per_node=*/1, /*node_bytes=*/100);
  const std::vector<int32_t> b10{10}, b11{11}, b12{12}, b13{13};
  // One prompt, created in one operation (clock 5): one run of three nodes, depths 0..2.
  Node a = tree.add_child(PrefixTree::kRootNode, 1, b10, 1, 5);
  Node b = tree.add_child(a, 2, b11, 1, 5);
  Node c = tree.add_child(b, 3, b12, 1, 5);
  tree.check_invariants();
  EXPECT_EQ(tree.num_runs(), 1);
  EXPECT_EQ(tree.num_nodes(), 3);
  EXPECT_EQ(b.run, a.run);
  EXPECT_EQ(c.run, a.run);
  EXPECT_EQ(c.depth, 2);
  EXPECT_EQ(tree.find_child(PrefixTree::kRootNode, 1), a);
  EXPECT_EQ(tree.find_child(a, 2), b);
  EXPECT_EQ(tree.find_child(a, 3).run, PrefixTree::kNoNode);  // 3 hangs under 2, not under 1
  EXPECT_EQ(tree.blocks(b)[0], 11);

  // A second prompt shares node 1 only: the run is cut after it. The front (node 1) is a new run in
  // the old one's place; nodes 2 and 3 keep their run id and depth.
  const int32_t front = tree.make_last(a);
  EXPECT_NE(front, a.run);
  a = Node{front, 0};
  tree.check_invariants();
  EXPECT_EQ(tree.num_runs(), 2);
  EXPECT_EQ(tree.find_child(PrefixTree::kRootNode, 1), a);
  EXPECT_EQ(tree.find_child(a, 2), b);
  EXPECT_EQ(tree.blocks(a)[0], 10);
  EXPECT_EQ(tree.make_last(c), c.run);  // already the last of its run: nothing to cut
  Node d = tree.add_child(a, 7, b13, 1, 6);  // node 1 has a child: node 7 starts a run
  tree.check_invariants();
  EXPECT_EQ(tree.num_runs(), 3);
  EXPECT_EQ(tree.num_nodes(), 4);
  EXPECT_EQ(d.depth, 1);
  EXPECT_EQ(tree.find_child(a, 7), d);

  // Nothing is evictable while referenced; unreferenced, leaves go least recently used first.
  EXPECT_EQ(tree.lru_leaf().run, PrefixTree::kNoNode);
  for (const Node& n : {c, b, d, a}) tree.block_unreferenced(n);
  tree.check_invariants();
  EXPECT_EQ(tree.evictable_bytes(), 4 * 100);
  // Leaves: 3 (clock 5) and 7 (clock 6). Evicting 3 then 2 empties their run; node 1 is not a leaf
  // while 7 hangs under it.
  std::vector<uint64_t> order;
  for (Node n = tree.lru_leaf(); n.run != PrefixTree::kNoNode; n = tree.lru_leaf()) {
    order.push_back(static_cast<uint64_t>(tree.blocks(n)[0]));
    tree.remove_leaf(n);
    tree.check_invariants();
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{12, 11, 13, 10}));
  EXPECT_EQ(tree.num_nodes(), 0);
  EXPECT_EQ(tree.num_runs(), 0);
}

TEST(KvPrefix, SharedHalfOfAPromptSplitsItsRun) {
  KvLayout layout = llama8b();
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 32 * kMiB, .layout = &layout, .prefix_caching = true});
  // 16 tokens per hash = one block per node. 65 tokens: 5 blocks, 4 whole hash blocks.
  ASSERT_TRUE(kv.admit(req(1, 65, 16, {1, 2, 3, 4}), 65).ok);
  kv.release(1, true);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 4);
  EXPECT_EQ(kv.prefix_tree()->num_runs(), 1);  // an unshared prompt is one run
  // The second prompt shares the first half: 32 tokens hit; at release the run is cut in two and
  // the new half hangs beside the old one.
  AdmitResult a = kv.admit(req(2, 65, 16, {1, 2, 7, 8}), 65);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 32);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_runs(), 2);  // the hit's touch cut {1, 2} from {3, 4}
  kv.release(2, true);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 6);
  EXPECT_EQ(kv.prefix_tree()->num_runs(), 3);  // {1, 2} -> {{3, 4}, {7, 8}}
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 2, 3, 4}), 64);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 2, 7, 8}), 64);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 2, 3, 8}), 48);
  EXPECT_EQ(kv.usage().cached_bytes, 6 * 2 * kMiB);
  // 16 blocks, 6 cached: 13 blocks need 3 evicted. Leaves by last use: 4 (request 1's release),
  // then 8 (request 2's); 4 and 3 go, then 8 (2 was touched with it but is not a leaf).
  ASSERT_TRUE(kv.admit(req(3, 13 * 16, 0, {}), 13 * 16).ok);
  kv.check_invariants();
  EXPECT_EQ(kv.evicted_nodes(), 3);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 2, 3}), 32);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 2, 7, 8}), 48);
}

TEST(KvPrefix, TouchEndingInsideARunKeepsTheRestOlder) {
  KvLayout layout = llama8b();
  // 8 blocks; one block per node.
  PagedKvManager kv(KvManagerConfig{.capacity_bytes = 16 * kMiB, .layout = &layout, .prefix_caching = true});
  ASSERT_TRUE(kv.admit(req(1, 49, 16, {1, 2, 3}), 49).ok);
  kv.release(1, true);  // one run {1, 2, 3}
  ASSERT_TRUE(kv.admit(req(2, 17, 16, {5}), 17).ok);
  kv.release(2, true);  // run {5}
  // Request 3 hits node 1 only ((17 - 1) / 16 = 1 block): 1 is used now, 2 and 3 are not.
  AdmitResult a = kv.admit(req(3, 17, 16, {1}), 17);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.cached_tokens, 16);
  kv.release(3, false);
  kv.check_invariants();
  EXPECT_EQ(kv.prefix_tree()->num_nodes(), 4);
  EXPECT_EQ(kv.usage().free_bytes, 4 * 2 * kMiB);
  // 6 blocks need 2 evicted: 3 and 2 (request 1's release), older than 5 (request 2's); had the
  // touch of 1 moved the whole run {1, 2, 3}, 5 would go first.
  ASSERT_TRUE(kv.admit(req(4, 6 * 16, 0, {}), 6 * 16).ok);
  kv.check_invariants();
  EXPECT_EQ(kv.evicted_nodes(), 2);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1, 2}), 16);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{5}), 16);
  // One more block: 5 (clock of request 2's release) before 1 (request 3's admission).
  EXPECT_EQ(kv.grow(4, 7 * 16), 7 * 16);
  kv.check_invariants();
  EXPECT_EQ(kv.evicted_nodes(), 3);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{5}), 0);
  EXPECT_EQ(kv.match_prefix(16, std::vector<uint64_t>{1}), 16);
}

// The tree of single nodes (one per hash block, LRU leaf = least (last_access, id)) whose answers
// the runs must give: a direct model of the rules in prefix_tree.h, small enough to read.
struct SingleNodeTree {
  struct N {
    int32_t parent = 0;
    uint64_t hash = 0;
    uint64_t last_access = 0;
    int32_t refs = 0;
    int32_t children = 0;
    int32_t block = 0;
  };
  std::map<int32_t, N> nodes;  // id -> node; the root (0) is not stored
  std::map<std::pair<int32_t, uint64_t>, int32_t> edges;
  int32_t next_id = 1;

  int32_t child(int32_t parent, uint64_t hash) const {
    auto it = edges.find({parent, hash});
    return it == edges.end() ? -1 : it->second;
  }
  int32_t add(int32_t parent, uint64_t hash, int32_t block, uint64_t clock) {
    const int32_t id = next_id++;
    nodes[id] = N{.parent = parent, .hash = hash, .last_access = clock, .block = block};
    edges[{parent, hash}] = id;
    if (parent != 0) nodes[parent].children += 1;
    return id;
  }
  int32_t lru_leaf() const {
    int32_t best = -1;
    for (const auto& [id, n] : nodes) {
      if (n.refs == 0 && n.children == 0 && (best < 0 || n.last_access < nodes.at(best).last_access)) best = id;
    }
    return best;
  }
  void remove(int32_t id) {
    const N n = nodes.at(id);
    edges.erase({n.parent, n.hash});
    if (n.parent != 0) nodes[n.parent].children -= 1;
    nodes.erase(id);
  }
  int64_t unreferenced() const {
    int64_t count = 0;
    for (const auto& [id, n] : nodes) count += n.refs == 0 ? 1 : 0;
    return count;
  }
};

// Random inserts (shared bases, branching at random depths), held paths, touches and evictions,
// driven the way the paged manager drives the tree (cut with make_last before touching or
// hanging a chain, rename the cut-off blocks); every eviction is compared with the model's.
TEST(PrefixTreeRuns, AnswersLikeOneNodePerHashBlock) {
  PrefixTree tree(/*blocks_per_node=*/1, /*node_bytes=*/1);
  SingleNodeTree model;
  std::map<int32_t, PrefixTree::Node> node_of;    // block -> node in the runs
  std::map<int32_t, int32_t> model_of;            // block -> model node id
  std::vector<std::vector<int32_t>> holders;      // blocks each holder references, root first
  std::mt19937_64 rng(27);
  auto pick = [&](uint64_t n) { return rng() % n; };
  int32_t next_block = 0;
  uint64_t clock = 0;
  int64_t evictions = 0;
  auto random_path = [&] {
    std::vector<uint64_t> hashes;
    const uint64_t base = pick(3) * 1000;
    const size_t length = 1 + pick(12);
    const size_t diverge = pick(2) == 0 ? pick(length) : length;
    for (size_t i = 0; i < length; ++i) hashes.push_back(i < diverge ? base + i : 100 + pick(3) + 10 * i);
    return hashes;
  };
  // Walks both trees along `hashes`; returns the model's nodes on the cached part.
  auto walk = [&](const std::vector<uint64_t>& hashes, PrefixTree::Node* at) {
    std::vector<int32_t> path;
    for (int32_t m = 0; path.size() < hashes.size();) {
      m = model.child(m, hashes[path.size()]);
      if (m < 0) break;
      path.push_back(m);
    }
    *at = PrefixTree::kRootNode;
    EXPECT_EQ(tree.match(at, hashes), static_cast<int64_t>(path.size()));
    return path;
  };
  auto make_last = [&](PrefixTree::Node at) {
    const int32_t run = tree.make_last(at);
    if (run != at.run) {
      for (int32_t block : tree.run_blocks(run)) node_of[block].run = run;
    }
    return PrefixTree::Node{run, at.depth};
  };
  for (int op = 0; op < 4000; ++op) {
    clock += 1;
    const uint64_t r = pick(100);
    if (r < 45) {  // insert (a release): touch the cached part, hang the rest as one chain
      const std::vector<uint64_t> hashes = random_path();
      PrefixTree::Node at;
      std::vector<int32_t> path = walk(hashes, &at);
      if (!path.empty()) {
        at = make_last(at);
        tree.touch_path(at, clock);
        for (int32_t m : path) model.nodes[m].last_access = clock;
      }
      if (path.size() == hashes.size()) continue;
      std::vector<int32_t> blocks;
      int32_t parent = path.empty() ? 0 : path.back();
      for (size_t i = path.size(); i < hashes.size(); ++i) {
        blocks.push_back(next_block);
        parent = model.add(parent, hashes[i], next_block, clock);
        model_of[next_block++] = parent;
      }
      const PrefixTree::Node last = tree.add_chain(
          at, std::span<const uint64_t>(hashes).subspan(path.size()), blocks, 0, clock);
      for (size_t k = 0; k < blocks.size(); ++k) {
        node_of[blocks[k]] = PrefixTree::Node{last.run, last.depth - static_cast<int32_t>(blocks.size() - 1 - k)};
      }
    } else if (r < 60) {  // a sequence takes the cached part of a path (an admission): touch, reference
      if (holders.size() >= 4) continue;  // few at a time, so shared nodes become evictable too
      PrefixTree::Node at;
      std::vector<int32_t> path = walk(random_path(), &at);
      if (path.empty()) continue;
      tree.touch_path(make_last(at), clock);
      std::vector<int32_t> held;
      for (int32_t m : path) {
        const int32_t block = model.nodes[m].block;
        model.nodes[m].last_access = clock;
        // The tree hears of a block's first holder and its last (the manager's refcounts).
        if (model.nodes[m].refs++ == 0) tree.block_referenced(node_of.at(block));
        held.push_back(block);
      }
      holders.push_back(held);
    } else if (r < 75) {  // a holder lets go, last block first
      if (holders.empty()) continue;
      const size_t h = pick(holders.size());
      for (auto it = holders[h].rbegin(); it != holders[h].rend(); ++it) {
        if (--model.nodes[model_of.at(*it)].refs == 0) tree.block_unreferenced(node_of.at(*it));
      }
      holders[h] = holders.back();
      holders.pop_back();
    } else {  // evict up to 6 leaves, as make_free does (a run's unreferenced tail at once)
      int64_t wanted = 1 + static_cast<int64_t>(pick(6));
      while (wanted > 0) {
        const PrefixTree::Node leaf = tree.lru_leaf();
        if (leaf.run == PrefixTree::kNoNode) {
          EXPECT_EQ(model.lru_leaf(), -1);
          break;
        }
        const int32_t count = tree.unreferenced_tail(leaf, wanted);
        ASSERT_GE(count, 1);
        std::span<const int32_t> ids = tree.run_blocks(leaf.run);
        for (int32_t n = 1; n <= count; ++n) {
          const int32_t m = model.lru_leaf();
          ASSERT_GE(m, 0);
          ASSERT_EQ(ids[ids.size() - static_cast<size_t>(n)], model.nodes[m].block) << "eviction " << evictions;
          model.remove(m);
          evictions += 1;
        }
        tree.remove_leaves(leaf, count);
        wanted -= count;
      }
    }
    tree.check_invariants();
    ASSERT_EQ(tree.num_nodes(), static_cast<int64_t>(model.nodes.size())) << "operation " << op;
    ASSERT_EQ(tree.evictable_bytes(), model.unreferenced()) << "operation " << op;
  }
  // The sequence reached what it is meant to test: splits, many runs, and many evictions.
  EXPECT_GT(evictions, 500);
  EXPECT_GT(tree.num_runs(), 10);
}

}  // namespace
}  // namespace kvplan::sim
