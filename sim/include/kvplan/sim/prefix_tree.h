// kvplan/sim/prefix_tree.h — the radix tree (trie over block hashes) behind the paged manager's
// prefix cache, with least-recently-used eviction of unreferenced leaves (SGLang RadixCache,
// vLLM's hash-to-block map).
//
//   PrefixTree tree(/*blocks_per_node=*/32, /*node_bytes=*/64 << 20);
//   int32_t node = tree.add_child(PrefixTree::kRoot, hash, blocks, /*clock=*/7);
//
// One node is one hash block: hash_block_tokens prompt tokens, i.e. blocks_per_node KV blocks
// (hash_block_tokens / tokens_per_block blocks of every layer group, stored group after group).
// An edge is (parent node, hash), so equal hashes under different prefixes are different nodes.
// The tree does not own blocks' reference counts: the paged manager tells it when one of a node's
// blocks becomes referenced by a live sequence or stops being referenced
// (block_referenced / block_unreferenced). A node whose blocks no live sequence references is
// "unreferenced"; an unreferenced node without children is "evictable". Sequences hold prefixes,
// so references are closed under ancestors and every unreferenced node can be evicted by
// repeatedly evicting leaves: evictable_bytes() counts all unreferenced nodes.
// Time is a logical clock supplied by the caller (one tick per manager operation), never wall time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kvplan/sim/prefix_tree_index.h"

namespace kvplan::sim {

class PrefixTree {
 public:
  static constexpr int32_t kRoot = 0;
  static constexpr int32_t kNoNode = -1;

  PrefixTree(int32_t blocks_per_node, int64_t node_bytes);

  int32_t blocks_per_node() const { return blocks_per_node_; }
  int64_t node_bytes() const { return node_bytes_; }
  // kNoNode when `parent` has no child with this hash.
  int32_t find_child(int32_t parent, uint64_t hash) const;
  // Adds a child holding `blocks` (blocks_per_node ids, referenced by the caller's sequence:
  // referenced_blocks starts at `referenced_blocks`). Returns the node id.
  int32_t add_child(int32_t parent, uint64_t hash, std::span<const int32_t> blocks, int32_t referenced_blocks,
                    uint64_t clock);
  std::span<const int32_t> blocks(int32_t node) const;
  uint64_t last_access(int32_t node) const { return nodes_[static_cast<size_t>(node)].last_access; }
  void touch(int32_t node, uint64_t clock);
  void block_referenced(int32_t node);
  void block_unreferenced(int32_t node);
  bool referenced(int32_t node) const { return nodes_[static_cast<size_t>(node)].referenced_blocks > 0; }
  int32_t referenced_blocks(int32_t node) const { return nodes_[static_cast<size_t>(node)].referenced_blocks; }

  // The least recently used evictable leaf (ties: lower node id), or kNoNode.
  int32_t lru_leaf() const;
  // Removes an evictable leaf; its blocks stay readable through blocks(node) until the next add_child.
  void remove_leaf(int32_t node);

  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size() - free_nodes_.size()) - 1; }
  int64_t evictable_bytes() const { return unreferenced_nodes_ * node_bytes_; }
  // Throws std::logic_error naming the broken invariant.
  void check_invariants() const;
  // Calls fn(node, blocks) for every node but the root (invariant checks across structures).
  template <typename Fn>
  void for_each_node(Fn&& fn) const {
    for (size_t i = 1; i < nodes_.size(); ++i) {
      if (nodes_[i].in_use) fn(static_cast<int32_t>(i), blocks(static_cast<int32_t>(i)));
    }
  }

 private:
  struct Node {
    uint64_t hash = 0;
    int32_t parent = kNoNode;
    int32_t num_children = 0;
    int32_t referenced_blocks = 0;  // blocks of this node with a live sequence holding them
    // One child kept out of children_ (the one added while this slot was empty): most nodes are
    // links of an unbranched chain (one request's prompt), so the lookup, insert and eviction of
    // such a link never touch the hash table. Other children are in children_.
    int32_t first_child = kNoNode;
    uint64_t last_access = 0;
    bool in_use = false;
  };
  bool evictable(const Node& node) const { return node.num_children == 0 && node.referenced_blocks == 0; }
  void set_evictable_entry(int32_t id, bool present);

  int32_t blocks_per_node_;
  int64_t node_bytes_;
  std::vector<Node> nodes_;           // [0] is the root (holds no blocks)
  std::vector<int32_t> node_blocks_;  // [num node slots, blocks_per_node]
  std::vector<int32_t> free_nodes_;   // LIFO of unused node slots
  EdgeTable children_;  // (parent, hash) -> node, for children other than their parent's first_child
  LruQueue evictable_;  // evictable leaves by (last_access, node)
  int64_t unreferenced_nodes_ = 0;
};

}  // namespace kvplan::sim
