// Radix tree over block hashes, nodes stored in runs, with LRU leaf eviction (see prefix_tree.h).
#include "kvplan/sim/prefix_tree.h"

#include <stdexcept>
#include <string>

namespace kvplan::sim {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("PrefixTree invariant broken: " + what); }

// find_child and lru_leaf pass the indexes' "nothing" through unchanged.
static_assert(EdgeTable::kAbsent == PrefixTree::kNoNode);
static_assert(LruQueue::kNone == PrefixTree::kNoNode);

size_t at(int32_t i) { return static_cast<size_t>(i); }

}  // namespace

PrefixTree::PrefixTree(int32_t blocks_per_node, int64_t node_bytes)
    : blocks_per_node_(blocks_per_node), node_bytes_(node_bytes) {
  runs_.emplace_back();
  runs_[0].in_use = true;
}

PrefixTree::Node PrefixTree::find_child(Node parent, uint64_t hash) const {
  const Run& p = runs_[at(parent.run)];
  const size_t next = at(parent.depth - p.first_depth + 1);  // the root: 0 of no nodes
  if (next < p.hashes.size()) return p.hashes[next] == hash ? Node{parent.run, parent.depth + 1} : Node{};
  int32_t in_table = p.num_children;
  if (p.first_child != kNoNode) {
    if (runs_[at(p.first_child)].hashes.front() == hash) return Node{p.first_child, parent.depth + 1};
    in_table -= 1;
  }
  const int32_t child = in_table > 0 ? children_.find(parent.run, hash) : kNoNode;
  return child == kNoNode ? Node{} : Node{child, parent.depth + 1};
}

int64_t PrefixTree::match(Node* node, std::span<const uint64_t> hashes) const {
  Node cur = *node;
  size_t i = 0;
  while (i < hashes.size()) {
    const Run& r = runs_[at(cur.run)];
    const size_t len = r.hashes.size();
    size_t k = at(cur.depth - r.first_depth + 1);  // the next node in the run (the root: 0 of none)
    if (k < len) {
      const size_t start = k;
      while (k < len && i < hashes.size() && r.hashes[k] == hashes[i]) {
        k += 1;
        i += 1;
      }
      cur.depth += static_cast<int32_t>(k - start);
      if (k < len) break;  // a different hash inside the run (or none left)
      continue;            // at the run's last node: its children next
    }
    const Node child = find_child(cur, hashes[i]);
    if (child.run == kNoNode) break;
    cur = child;
    i += 1;
  }
  *node = cur;
  return static_cast<int64_t>(i);
}

std::span<const int32_t> PrefixTree::blocks(Node node) const {
  const Run& r = runs_[at(node.run)];
  return std::span<const int32_t>(r.blocks).subspan(at(node.depth - r.first_depth) * at(blocks_per_node_),
                                                    at(blocks_per_node_));
}

void PrefixTree::set_evictable_entry(int32_t run, bool present) {
  if (present) {
    evictable_.insert(run, runs_[at(run)].last_access);
  } else {
    evictable_.erase(run);
  }
}

int32_t PrefixTree::new_run() {
  int32_t id = 0;
  if (!free_runs_.empty()) {
    id = free_runs_.back();
    free_runs_.pop_back();
  } else {
    id = static_cast<int32_t>(runs_.size());
    runs_.emplace_back();
  }
  Run& r = runs_[at(id)];
  r.parent = kNoNode;
  r.num_children = 0;
  r.first_child = kNoNode;
  r.in_use = true;
  r.hashes.clear();
  r.referenced.clear();
  r.blocks.clear();
  return id;
}

void PrefixTree::free_run(int32_t run) {
  runs_[at(run)].in_use = false;
  free_runs_.push_back(run);
}

void PrefixTree::replace_child(int32_t parent, uint64_t hash, int32_t child, int32_t replacement) {
  Run& p = runs_[at(parent)];
  if (p.first_child == child) {
    p.first_child = replacement;
  } else {
    children_.erase(parent, hash);
    children_.insert(parent, hash, replacement);
  }
}

PrefixTree::Node PrefixTree::add_chain(Node parent, std::span<const uint64_t> hashes,
                                       std::span<const int32_t> node_block_ids, int32_t referenced_blocks,
                                       uint64_t clock) {
  if (hashes.empty() || node_block_ids.size() != hashes.size() * at(blocks_per_node_)) {
    throw std::logic_error("PrefixTree: add_chain needs blocks_per_node blocks for each of at least one hash");
  }
  int32_t id = parent.run;
  {
    Run& p = runs_[at(parent.run)];
    if (parent.depth - p.first_depth + 1 != static_cast<int32_t>(p.hashes.size())) {
      throw std::logic_error("PrefixTree: add_child under a node that is not the last of its run");
    }
    const bool listed = parent.run != kRoot && evictable(p);
    if (listed) set_evictable_entry(parent.run, false);
    if (parent.run == kRoot || p.num_children > 0 || p.last_access != clock) {
      id = new_run();  // may move runs_: `p` is not used below
      Run& q = runs_[at(parent.run)];
      const bool first = q.first_child == kNoNode;
      if (first) q.first_child = id;
      q.num_children += 1;
      if (!first) children_.insert(parent.run, hashes.front(), id);
      Run& r = runs_[at(id)];
      r.parent = parent.run;
      r.first_depth = parent.depth + 1;
      r.last_access = clock;
    }
  }
  Run& r = runs_[at(id)];
  r.hashes.insert(r.hashes.end(), hashes.begin(), hashes.end());
  r.referenced.insert(r.referenced.end(), hashes.size(), referenced_blocks);
  r.blocks.insert(r.blocks.end(), node_block_ids.begin(), node_block_ids.end());
  const auto added = static_cast<int32_t>(hashes.size());
  num_nodes_ += added;
  if (referenced_blocks == 0) {
    unreferenced_nodes_ += added;
    set_evictable_entry(id, true);
  }
  return Node{id, parent.depth + added};
}

int32_t PrefixTree::make_last(Node node) {
  const size_t keep = at(node.depth - runs_[at(node.run)].first_depth + 1);  // nodes up to `node`
  if (keep >= runs_[at(node.run)].hashes.size()) return node.run;
  const int32_t front = new_run();  // may move runs_
  Run& back = runs_[at(node.run)];
  Run& f = runs_[at(front)];
  const auto cut = static_cast<std::ptrdiff_t>(keep);
  const auto cut_blocks = cut * blocks_per_node_;
  f.parent = back.parent;
  f.first_depth = back.first_depth;
  f.last_access = back.last_access;
  f.hashes.assign(back.hashes.begin(), back.hashes.begin() + cut);
  f.referenced.assign(back.referenced.begin(), back.referenced.begin() + cut);
  f.blocks.assign(back.blocks.begin(), back.blocks.begin() + cut_blocks);
  back.hashes.erase(back.hashes.begin(), back.hashes.begin() + cut);
  back.referenced.erase(back.referenced.begin(), back.referenced.begin() + cut);
  back.blocks.erase(back.blocks.begin(), back.blocks.begin() + cut_blocks);
  back.first_depth = node.depth + 1;
  replace_child(f.parent, f.hashes.front(), node.run, front);
  back.parent = front;
  f.first_child = node.run;
  f.num_children = 1;
  // The back part keeps its last node and children, so its place in the LRU queue; the front part
  // has a child, so it is not a leaf.
  return front;
}

void PrefixTree::touch_path(Node node, uint64_t clock) {
  {
    const Run& r = runs_[at(node.run)];
    if (node.run != kRoot && node.depth - r.first_depth + 1 != static_cast<int32_t>(r.hashes.size())) {
      throw std::logic_error("PrefixTree: touch_path from a node that is not the last of its run");
    }
  }
  for (int32_t run = node.run; run != kRoot; run = runs_[at(run)].parent) {
    Run& r = runs_[at(run)];
    if (r.last_access == clock) continue;
    const bool listed = evictable(r);
    if (listed) set_evictable_entry(run, false);
    r.last_access = clock;
    if (listed) set_evictable_entry(run, true);
  }
}

PrefixTree::Node PrefixTree::lru_leaf() const {
  const int32_t run = evictable_.top();
  if (run == kNoNode) return Node{};
  const Run& r = runs_[at(run)];
  return Node{run, r.first_depth + static_cast<int32_t>(r.hashes.size()) - 1};
}

void PrefixTree::remove_leaf(Node node) { remove_leaves(node, 1); }

int32_t PrefixTree::unreferenced_tail(Node leaf, int64_t most) const {
  const std::vector<int32_t>& refs = runs_[at(leaf.run)].referenced;
  int32_t count = 0;
  for (size_t k = refs.size(); k > 0 && count < most && refs[k - 1] == 0; --k) count += 1;
  return count;
}

void PrefixTree::remove_leaves(Node node, int32_t count) {
  if (node.run == kRoot || node.run < 0 || at(node.run) >= runs_.size()) {
    throw std::logic_error("PrefixTree: remove_leaf on a node that is not an evictable leaf");
  }
  Run& r = runs_[at(node.run)];
  // The callers' count comes from unreferenced_tail: check its ends, not every node again.
  if (!r.in_use || !evictable(r) || node.depth - r.first_depth + 1 != static_cast<int32_t>(r.hashes.size()) ||
      count < 1 || at(count) > r.hashes.size() || r.referenced[r.hashes.size() - at(count)] != 0) {
    throw std::logic_error("PrefixTree: remove_leaf on a node that is not an evictable leaf");
  }
  unreferenced_nodes_ -= count;
  num_nodes_ -= count;
  const uint64_t first_hash = r.hashes.front();
  const size_t left = r.hashes.size() - at(count);
  r.hashes.resize(left);
  r.referenced.resize(left);
  r.blocks.resize(left * at(blocks_per_node_));
  // The node before them in the run has the same clock: the run stays listed under the same key
  // while that node is unreferenced.
  if (left > 0) {
    if (r.referenced.back() != 0) set_evictable_entry(node.run, false);
    return;
  }
  set_evictable_entry(node.run, false);
  const int32_t parent = r.parent;
  Run& p = runs_[at(parent)];
  if (p.first_child == node.run) {
    p.first_child = kNoNode;
  } else {
    children_.erase(parent, first_hash);
  }
  p.num_children -= 1;
  if (parent != kRoot && evictable(p)) set_evictable_entry(parent, true);
  free_run(node.run);
}

void PrefixTree::check_invariants() const {
  // Every edge names a live run whose parent and first hash match it; child counts equal the edges
  // out of a run; depths continue across edges; unreferenced counts and the LRU set are exactly
  // what the runs say.
  std::vector<int32_t> child_count(runs_.size(), 0);
  children_.for_each([&](int32_t parent, uint64_t hash, int32_t id) {
    if (id <= 0 || at(id) >= runs_.size() || !runs_[at(id)].in_use) fail("edge to a dead run " + std::to_string(id));
    const Run& r = runs_[at(id)];
    if (r.parent != parent || r.hashes.empty() || r.hashes.front() != hash) {
      fail("edge key differs from run " + std::to_string(id));
    }
    child_count[at(parent)] += 1;
  });
  int64_t first_children = 0;
  for (size_t i = 0; i < runs_.size(); ++i) {
    const int32_t child = runs_[i].first_child;
    if (!runs_[i].in_use || child == kNoNode) continue;
    if (child <= 0 || at(child) >= runs_.size() || !runs_[at(child)].in_use ||
        runs_[at(child)].parent != static_cast<int32_t>(i)) {
      fail("first_child of run " + std::to_string(i));
    }
    child_count[i] += 1;
    first_children += 1;
  }
  if (!runs_[0].hashes.empty() || runs_[0].first_depth != 0) fail("the root holds nodes");
  int64_t live = 0;
  int64_t nodes = 0;
  int64_t unreferenced = 0;
  size_t evictable_count = 0;
  for (size_t i = 1; i < runs_.size(); ++i) {
    const Run& r = runs_[i];
    if (!r.in_use) continue;
    live += 1;
    const std::string name = "run " + std::to_string(i);
    if (r.hashes.empty()) fail(name + " holds no nodes");
    if (r.referenced.size() != r.hashes.size() || r.blocks.size() != r.hashes.size() * at(blocks_per_node_)) {
      fail(name + " arrays differ in length");
    }
    if (r.parent < 0 || at(r.parent) >= runs_.size() || !runs_[at(r.parent)].in_use) fail(name + " has a dead parent");
    const Run& p = runs_[at(r.parent)];
    const int32_t parent_last = p.first_depth + static_cast<int32_t>(p.hashes.size()) - 1;
    if (r.first_depth != parent_last + 1) fail(name + " depth does not continue its parent's");
    if (find_child(Node{r.parent, parent_last}, r.hashes.front()) != Node{static_cast<int32_t>(i), r.first_depth}) {
      fail(name + " not reachable");
    }
    if (r.num_children != child_count[i]) fail("child count of " + name);
    for (size_t k = 0; k < r.hashes.size(); ++k) {
      const int32_t refs = r.referenced[k];
      if (refs < 0 || refs > blocks_per_node_) fail("referenced_blocks out of range in " + name);
      nodes += 1;
      if (refs == 0) unreferenced += 1;
      // References are closed under ancestors: a sequence holding a node's block holds its whole prefix.
      const int32_t parent_refs = k > 0 ? r.referenced[k - 1] : (r.parent == kRoot ? 1 : p.referenced.back());
      if (refs > 0 && parent_refs == 0) fail("node of " + name + " referenced under an unreferenced parent");
    }
    const int32_t id = static_cast<int32_t>(i);
    const bool listed = evictable_.listed(id) && evictable_.key(id) == r.last_access;
    if (listed != evictable(r)) fail("LRU set disagrees with " + name);
    if (listed) evictable_count += 1;
  }
  if (runs_[0].num_children != child_count[0]) fail("root child count");
  if (static_cast<int64_t>(children_.size()) + first_children != live) fail("edge count differs from live runs");
  if (nodes != num_nodes_) fail("node count");
  if (unreferenced != unreferenced_nodes_) fail("unreferenced node count");
  if (evictable_count != evictable_.size()) fail("LRU set holds dead entries");
  evictable_.check_invariants();
  if (live != num_runs()) fail("free run list");
}

}  // namespace kvplan::sim
