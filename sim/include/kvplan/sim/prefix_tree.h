// kvplan/sim/prefix_tree.h — the radix tree (trie over block hashes) behind the paged manager's
// prefix cache, with least-recently-used eviction of unreferenced leaves (SGLang RadixCache,
// vLLM's hash-to-block map).
//
//   PrefixTree tree(/*blocks_per_node=*/32, /*node_bytes=*/64 << 20);
//   PrefixTree::Node n = tree.add_child(PrefixTree::kRootNode, hash, blocks, /*referenced_blocks=*/32, /*clock=*/7);
//
// A node is one hash block: hash_block_tokens prompt tokens, i.e. blocks_per_node KV blocks
// (hash_block_tokens / tokens_per_block blocks of every layer group, stored group after group).
// An edge is (parent node, hash), so equal hashes under different prefixes are different nodes.
// Nodes are stored in runs (SGLang's radix tree keeps token runs per node): a run is a chain of
// nodes, each the only child of the one before it, whose children all hang at the run's last node.
// An unshared prompt is one run, so inserting it, walking it again and touching it cost one entry
// per node in contiguous arrays, not one scattered node each; a run is cut in two where a branch or
// a touch ends inside it. A node is named by its run and its depth (hash blocks from the root, the
// first is 0), and the depth of a node never changes, so a run cut in two renames only the nodes of
// its front part (the back part keeps its id).
// The tree does not own blocks' reference counts: the paged manager tells it when one of a node's
// blocks becomes referenced by a live sequence or stops being referenced
// (block_referenced / block_unreferenced). A node whose blocks no live sequence references is
// "unreferenced"; an unreferenced node without children is "evictable". Sequences hold prefixes,
// so references are closed under ancestors and every unreferenced node can be evicted by
// repeatedly evicting leaves: evictable_bytes() counts all unreferenced nodes.
// Recency is kept per run: every node of a run was last touched at the same clock (a touch that
// ends inside a run cuts it first), so the run's last node is a leaf exactly when the run has no
// children, and the least recently used leaf is the last node of the least recently used such run.
// Time is a logical clock supplied by the caller (one tick per manager operation), never wall time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kvplan/sim/prefix_tree_index.h"

namespace kvplan::sim {

class PrefixTree {
 public:
  static constexpr int32_t kRoot = 0;  // the root run: it holds no nodes
  static constexpr int32_t kNoNode = -1;

  // A node: the one at `depth` in run `run`. The root is {kRoot, -1}; "none" has run == kNoNode.
  struct Node {
    int32_t run = kNoNode;
    int32_t depth = -1;
    bool operator==(const Node&) const = default;
  };
  static constexpr Node kRootNode{kRoot, -1};

  PrefixTree(int32_t blocks_per_node, int64_t node_bytes);

  int32_t blocks_per_node() const { return blocks_per_node_; }
  int64_t node_bytes() const { return node_bytes_; }
  // The child of `parent` with this hash, or run == kNoNode.
  Node find_child(Node parent, uint64_t hash) const;
  // Follows `hashes` down from *node as far as they are cached: returns how many were, and leaves
  // *node at the last one reached (unchanged when none was).
  int64_t match(Node* node, std::span<const uint64_t> hashes) const;
  // Adds a child of `parent` holding `blocks` (blocks_per_node ids, referenced by the caller's
  // sequence: referenced_blocks starts at `referenced_blocks`). Precondition: `parent` is the last
  // node of its run (see make_last) and has no child with this hash. The child extends parent's run
  // when that run has no children and was last touched at `clock`; else it starts a run.
  Node add_child(Node parent, uint64_t hash, std::span<const int32_t> blocks, int32_t referenced_blocks, uint64_t clock) {
    return add_chain(parent, std::span<const uint64_t>(&hash, 1), blocks, referenced_blocks, clock);
  }
  // add_child for each hash in turn, each under the one before: `blocks` is
  // [hashes.size(), blocks_per_node]. Returns the last node added; all of them are in its run.
  Node add_chain(Node parent, std::span<const uint64_t> hashes, std::span<const int32_t> blocks,
                 int32_t referenced_blocks, uint64_t clock);
  // Makes `node` the last node of its run: when nodes follow it, the nodes up to it move to a new
  // run that takes the old run's place (the old run keeps the nodes after it, and its id). Returns
  // the run `node` is in afterwards; when that is a new run, the caller renames the blocks it holds.
  int32_t make_last(Node node);
  std::span<const int32_t> blocks(Node node) const;
  // [nodes of the run, blocks_per_node]
  std::span<const int32_t> run_blocks(int32_t run) const { return runs_[static_cast<size_t>(run)].blocks; }
  int32_t first_depth(int32_t run) const { return runs_[static_cast<size_t>(run)].first_depth; }
  uint64_t last_access(int32_t run) const { return runs_[static_cast<size_t>(run)].last_access; }
  // Touches `node` and all its ancestors at `clock`. Precondition: `node` is the last of its run.
  void touch_path(Node node, uint64_t clock);
  // Inline: the paged manager calls these once per block a sequence takes or lets go.
  void block_referenced(Node node) {
    Run& r = runs_[static_cast<size_t>(node.run)];
    const size_t k = static_cast<size_t>(node.depth - r.first_depth);
    if (r.referenced[k] == 0) {
      unreferenced_nodes_ -= 1;
      if (k + 1 == r.hashes.size() && r.num_children == 0) set_evictable_entry(node.run, false);
    }
    r.referenced[k] += 1;
  }
  void block_unreferenced(Node node) {
    Run& r = runs_[static_cast<size_t>(node.run)];
    const size_t k = static_cast<size_t>(node.depth - r.first_depth);
    r.referenced[k] -= 1;
    if (r.referenced[k] == 0) {
      unreferenced_nodes_ += 1;
      if (k + 1 == r.hashes.size() && r.num_children == 0) set_evictable_entry(node.run, true);
    }
  }
  bool referenced(Node node) const { return referenced_blocks(node) > 0; }
  int32_t referenced_blocks(Node node) const {
    const Run& r = runs_[static_cast<size_t>(node.run)];
    return r.referenced[static_cast<size_t>(node.depth - r.first_depth)];
  }

  // The least recently used evictable leaf (ties: lower run id; no two evictable leaves share a
  // clock, since one operation touches one path), or run == kNoNode.
  Node lru_leaf() const;
  // Removes an evictable leaf (the last node of its run); read its blocks first.
  void remove_leaf(Node node);
  // How many of the last nodes of `leaf`'s run (at most `most`) are unreferenced: evicting them
  // one by one, each is the least recently used leaf in turn (they share the run's clock).
  // Precondition: `leaf` is lru_leaf().
  int32_t unreferenced_tail(Node leaf, int64_t most) const;
  // remove_leaf `count` times from the end of `leaf`'s run (count <= unreferenced_tail).
  void remove_leaves(Node leaf, int32_t count);

  int64_t num_nodes() const { return num_nodes_; }
  int64_t num_runs() const { return static_cast<int64_t>(runs_.size() - free_runs_.size()) - 1; }
  int64_t evictable_bytes() const { return unreferenced_nodes_ * node_bytes_; }
  // Throws std::logic_error naming the broken invariant.
  void check_invariants() const;
  // Calls fn(node, blocks) for every node but the root (invariant checks across structures).
  template <typename Fn>
  void for_each_node(Fn&& fn) const {
    for (size_t i = 1; i < runs_.size(); ++i) {
      const Run& r = runs_[i];
      if (!r.in_use) continue;
      for (size_t k = 0; k < r.hashes.size(); ++k) {
        Node n{static_cast<int32_t>(i), r.first_depth + static_cast<int32_t>(k)};
        fn(n, blocks(n));
      }
    }
  }

 private:
  struct Run {
    int32_t parent = kNoNode;  // run whose last node is this run's first node's parent
    int32_t first_depth = 0;   // depth of the run's first node
    int32_t num_children = 0;  // runs hanging at this run's last node
    // One child kept out of children_ (the one added while this slot was empty): most runs have one
    // child or none, so their lookups never touch the hash table. Other children are in children_.
    int32_t first_child = kNoNode;
    uint64_t last_access = 0;  // of every node of the run
    bool in_use = false;
    std::vector<uint64_t> hashes;     // [nodes]
    std::vector<int32_t> referenced;  // [nodes] blocks of the node with a live sequence holding them
    std::vector<int32_t> blocks;      // [nodes, blocks_per_node]
  };
  // The run's last node is an evictable leaf.
  static bool evictable(const Run& r) { return r.num_children == 0 && !r.hashes.empty() && r.referenced.back() == 0; }
  void set_evictable_entry(int32_t run, bool present);
  int32_t new_run();
  void free_run(int32_t run);
  // Points the edge to `child` of `parent` (first hash `hash`) at `replacement`.
  void replace_child(int32_t parent, uint64_t hash, int32_t child, int32_t replacement);

  int32_t blocks_per_node_;
  int64_t node_bytes_;
  std::vector<Run> runs_;           // [0] is the root (holds no nodes)
  std::vector<int32_t> free_runs_;  // LIFO of unused run slots (they keep their arrays' capacity)
  EdgeTable children_;  // (parent run, first hash) -> run, for children other than their parent's first_child
  LruQueue evictable_;  // runs whose last node is an evictable leaf, by (last_access, run)
  int64_t num_nodes_ = 0;
  int64_t unreferenced_nodes_ = 0;
};

}  // namespace kvplan::sim
