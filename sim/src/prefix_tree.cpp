// Radix tree over block hashes with LRU leaf eviction (see prefix_tree.h).
#include "kvplan/sim/prefix_tree.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvplan::sim {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("PrefixTree invariant broken: " + what); }

// find_child and lru_leaf pass the indexes' "nothing" through unchanged.
static_assert(EdgeTable::kAbsent == PrefixTree::kNoNode);
static_assert(LruQueue::kNone == PrefixTree::kNoNode);

}  // namespace

PrefixTree::PrefixTree(int32_t blocks_per_node, int64_t node_bytes)
    : blocks_per_node_(blocks_per_node), node_bytes_(node_bytes) {
  nodes_.push_back(Node{.in_use = true});
  node_blocks_.resize(static_cast<size_t>(blocks_per_node_), -1);
}

int32_t PrefixTree::find_child(int32_t parent, uint64_t hash) const {
  const Node& p = nodes_[static_cast<size_t>(parent)];
  int32_t in_table = p.num_children;
  if (p.first_child != kNoNode) {
    if (nodes_[static_cast<size_t>(p.first_child)].hash == hash) return p.first_child;
    in_table -= 1;
  }
  return in_table > 0 ? children_.find(parent, hash) : kNoNode;
}

std::span<const int32_t> PrefixTree::blocks(int32_t node) const {
  return std::span<const int32_t>(node_blocks_).subspan(static_cast<size_t>(node) * static_cast<size_t>(blocks_per_node_),
                                                       static_cast<size_t>(blocks_per_node_));
}

void PrefixTree::set_evictable_entry(int32_t id, bool present) {
  if (present) {
    evictable_.insert(id, nodes_[static_cast<size_t>(id)].last_access);
  } else {
    evictable_.erase(id);
  }
}

int32_t PrefixTree::add_child(int32_t parent, uint64_t hash, std::span<const int32_t> node_block_ids,
                              int32_t referenced_blocks, uint64_t clock) {
  int32_t id = 0;
  if (!free_nodes_.empty()) {
    id = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    id = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
    node_blocks_.resize(nodes_.size() * static_cast<size_t>(blocks_per_node_), -1);
  }
  Node& parent_node = nodes_[static_cast<size_t>(parent)];
  if (parent != kRoot && evictable(parent_node)) set_evictable_entry(parent, false);
  const bool first = parent_node.first_child == kNoNode;
  if (first) parent_node.first_child = id;
  parent_node.num_children += 1;
  Node& n = nodes_[static_cast<size_t>(id)];
  n = Node{.hash = hash, .parent = parent, .num_children = 0, .referenced_blocks = referenced_blocks,
           .last_access = clock, .in_use = true};
  std::copy(node_block_ids.begin(), node_block_ids.end(),
            node_blocks_.begin() + static_cast<std::ptrdiff_t>(id) * blocks_per_node_);
  if (!first) children_.insert(parent, hash, id);
  if (referenced_blocks == 0) {
    unreferenced_nodes_ += 1;
    set_evictable_entry(id, true);
  }
  return id;
}

void PrefixTree::touch(int32_t node, uint64_t clock) {
  Node& n = nodes_[static_cast<size_t>(node)];
  if (n.last_access == clock) return;
  bool listed = evictable(n);
  if (listed) set_evictable_entry(node, false);
  n.last_access = clock;
  if (listed) set_evictable_entry(node, true);
}

void PrefixTree::block_referenced(int32_t node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  if (n.referenced_blocks == 0) {
    unreferenced_nodes_ -= 1;
    if (n.num_children == 0) set_evictable_entry(node, false);
  }
  n.referenced_blocks += 1;
}

void PrefixTree::block_unreferenced(int32_t node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  n.referenced_blocks -= 1;
  if (n.referenced_blocks == 0) {
    unreferenced_nodes_ += 1;
    if (n.num_children == 0) set_evictable_entry(node, true);
  }
}

int32_t PrefixTree::lru_leaf() const { return evictable_.top(); }

void PrefixTree::remove_leaf(int32_t node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  if (node == kRoot || !n.in_use || !evictable(n)) {
    throw std::logic_error("PrefixTree: remove_leaf on a node that is not an evictable leaf");
  }
  set_evictable_entry(node, false);
  unreferenced_nodes_ -= 1;
  Node& parent = nodes_[static_cast<size_t>(n.parent)];
  if (parent.first_child == node) {
    parent.first_child = kNoNode;
  } else {
    children_.erase(n.parent, n.hash);
  }
  parent.num_children -= 1;
  if (n.parent != kRoot && evictable(parent)) set_evictable_entry(n.parent, true);
  n.in_use = false;
  free_nodes_.push_back(node);
}

void PrefixTree::check_invariants() const {
  // Every edge names a live node whose parent and hash match it; child counts equal the edges out
  // of a node; unreferenced counts and the LRU set are exactly what the nodes say.
  std::vector<int32_t> child_count(nodes_.size(), 0);
  children_.for_each([&](int32_t parent, uint64_t hash, int32_t id) {
    if (id <= 0 || static_cast<size_t>(id) >= nodes_.size() || !nodes_[static_cast<size_t>(id)].in_use) {
      fail("edge to a dead node " + std::to_string(id));
    }
    const Node& n = nodes_[static_cast<size_t>(id)];
    if (n.parent != parent || n.hash != hash) fail("edge key differs from node " + std::to_string(id));
    if (!nodes_[static_cast<size_t>(n.parent)].in_use) fail("node " + std::to_string(id) + " has a dead parent");
    child_count[static_cast<size_t>(n.parent)] += 1;
  });
  int64_t first_children = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const int32_t child = nodes_[i].first_child;
    if (!nodes_[i].in_use || child == kNoNode) continue;
    if (child <= 0 || static_cast<size_t>(child) >= nodes_.size() || !nodes_[static_cast<size_t>(child)].in_use ||
        nodes_[static_cast<size_t>(child)].parent != static_cast<int32_t>(i)) {
      fail("first_child of node " + std::to_string(i));
    }
    child_count[i] += 1;
    first_children += 1;
  }
  int64_t live = 0;
  int64_t unreferenced = 0;
  size_t evictable_count = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!n.in_use) continue;
    live += 1;
    if (find_child(n.parent, n.hash) != static_cast<int32_t>(i)) fail("node " + std::to_string(i) + " not reachable");
    if (n.num_children != child_count[i]) fail("child count of node " + std::to_string(i));
    if (n.referenced_blocks < 0 || n.referenced_blocks > blocks_per_node_) fail("referenced_blocks out of range");
    if (n.referenced_blocks == 0) unreferenced += 1;
    // References are closed under ancestors: a sequence holding a node's block holds its whole prefix.
    if (n.referenced_blocks > 0 && n.parent != kRoot && nodes_[static_cast<size_t>(n.parent)].referenced_blocks == 0) {
      fail("node " + std::to_string(i) + " referenced under an unreferenced parent");
    }
    const int32_t id = static_cast<int32_t>(i);
    bool listed = evictable_.listed(id) && evictable_.key(id) == n.last_access;
    if (listed != evictable(n)) fail("LRU set disagrees with node " + std::to_string(i));
    if (listed) evictable_count += 1;
  }
  if (nodes_[0].num_children != child_count[0]) fail("root child count");
  if (static_cast<int64_t>(children_.size()) + first_children != live) fail("edge count differs from live nodes");
  if (unreferenced != unreferenced_nodes_) fail("unreferenced node count");
  if (evictable_count != evictable_.size()) fail("LRU set holds dead entries");
  evictable_.check_invariants();
  if (live != num_nodes()) fail("free node list");
}

}  // namespace kvplan::sim
