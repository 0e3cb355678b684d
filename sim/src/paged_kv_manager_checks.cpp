// PagedKvManager's self-check (kv_manager.h check_invariants): every reference count, free list,
// prefix-tree node and sequence table agrees with the others. Tests and runs with
// SimulationConfig::check_invariants only; never on the simulator's hot path.
#include <string>
#include <vector>

#include "kvplan/sim/paged_kv_manager.h"

namespace kvplan::sim {

void PagedKvManager::corrupt_refcount_for_test(int64_t pool, int32_t block, int32_t delta) {
  pools_[static_cast<size_t>(pool)].blocks[static_cast<size_t>(block)].refcount += delta;
}

void PagedKvManager::check_invariants() const {
  const int64_t b = tokens_per_block_;
  std::vector<std::vector<int32_t>> holders(pools_.size());
  for (size_t p = 0; p < pools_.size(); ++p) holders[p].assign(pools_[p].blocks.size(), 0);
  // Sequences: each table is exactly the span its length implies, and every held block's fill is
  // what this sequence wrote there (copy-on-write keeps holders of one block in agreement).
  int64_t live = 0;
  for (size_t index = 0; index < seqs_.size(); ++index) {
    const Seq& seq = seqs_[index];
    if (!seq.live) continue;
    live += 1;
    if (seq_index_.find(0, static_cast<uint64_t>(seq.id)) != static_cast<int32_t>(index)) {
      fail("sequence index of " + std::to_string(seq.id));
    }
    if (max_model_len_ > 0 && seq.tokens > max_model_len_) fail("sequence past max_model_len");
    for (size_t p = 0; p < pools_.size(); ++p) {
      const Pool& pool = pools_[p];
      const std::vector<int32_t>& table = seq.tables[p];
      Span s = span(pool, seq.first[p], seq.tokens);
      if (s.lo != seq.first[p] || s.hi != static_cast<int64_t>(table.size())) {
        fail("sequence " + std::to_string(seq.id) + " pool " + std::to_string(p) + " holds blocks [" +
             std::to_string(seq.first[p]) + ", " + std::to_string(table.size()) + ") at " + std::to_string(seq.tokens) +
             " tokens, span is [" + std::to_string(s.lo) + ", " + std::to_string(s.hi) + ")");
      }
      for (int64_t i = 0; i < s.hi; ++i) {
        int32_t id = table[static_cast<size_t>(i)];
        if (i < s.lo) {
          if (id != -1) fail("block before the window still in the table");
          continue;
        }
        if (id < 0 || static_cast<size_t>(id) >= pool.blocks.size()) fail("block id out of range");
        holders[p][static_cast<size_t>(id)] += 1;
        if (pool.blocks[static_cast<size_t>(id)].fill != view_fill(s, i)) {
          fail("sequence " + std::to_string(seq.id) + " block " + std::to_string(i) + " fill " +
               std::to_string(pool.blocks[static_cast<size_t>(id)].fill) + " != " + std::to_string(view_fill(s, i)));
        }
      }
    }
  }
  if (live != static_cast<int64_t>(seq_index_.size()) || live != live_slots_) fail("live sequence count");
  // Prefix tree: every node's blocks point back at it, are full, and their reference count agrees.
  std::vector<std::vector<int32_t>> in_tree(pools_.size());
  for (size_t p = 0; p < pools_.size(); ++p) in_tree[p].assign(pools_[p].blocks.size(), 0);
  if (tree_) {
    tree_->check_invariants();
    tree_->for_each_node([&](PrefixTree::Node node, std::span<const int32_t> ids) {
      const size_t per_pool = ids.size() / pools_.size();
      int32_t referenced = 0;
      for (size_t k = 0; k < ids.size(); ++k) {
        size_t p = k / per_pool;
        const Block& block = pools_[p].blocks[static_cast<size_t>(ids[k])];
        if (block.node != node) {
          fail("block of node (" + std::to_string(node.run) + ", " + std::to_string(node.depth) + ") points elsewhere");
        }
        if (block.fill != b) fail("cached block not full");
        in_tree[p][static_cast<size_t>(ids[k])] += 1;
        if (block.refcount > 0) referenced += 1;
      }
      if (referenced != tree_->referenced_blocks(node)) {
        fail("referenced_blocks of node (" + std::to_string(node.run) + ", " + std::to_string(node.depth) + ")");
      }
    });
  }
  // Blocks: refcount == number of holding tables; free list == exactly the blocks no table and
  // no node holds, each once; counters match; bytes tile the capacity.
  int64_t used_bytes = live_slots_ * slot_bytes_;
  for (size_t p = 0; p < pools_.size(); ++p) {
    const Pool& pool = pools_[p];
    std::vector<int32_t> listed(pool.blocks.size(), 0);
    for (int32_t id : pool.free_ids) {
      if (id < 0 || static_cast<size_t>(id) >= pool.blocks.size()) fail("free id out of range");
      if (++listed[static_cast<size_t>(id)] > 1) fail("block " + std::to_string(id) + " twice on the free list");
    }
    int64_t held = 0;
    int64_t cached = 0;
    int64_t filled = 0;
    for (size_t id = 0; id < pool.blocks.size(); ++id) {
      const Block& block = pool.blocks[id];
      if (block.refcount != holders[p][id]) {
        fail("pool " + std::to_string(p) + " block " + std::to_string(id) + " refcount " + std::to_string(block.refcount) +
             " but " + std::to_string(holders[p][id]) + " holders");
      }
      if (in_tree[p][id] != (block.node.run != PrefixTree::kNoNode ? 1 : 0)) fail("block node field vs tree");
      bool is_free = block.refcount == 0 && block.node.run == PrefixTree::kNoNode;
      if (is_free != (listed[id] == 1)) fail("block " + std::to_string(id) + (is_free ? " free but not listed" : " listed but held"));
      if (block.fill < 0 || block.fill > b || (is_free && block.fill != 0)) fail("block fill out of range");
      if (block.refcount > 0) {
        held += 1;
        filled += block.fill;
      } else if (!is_free) {
        cached += 1;
      }
    }
    if (held != pool.held_blocks || cached != pool.cached_blocks || filled != pool.filled_slots) {
      fail("pool " + std::to_string(p) + " counters");
    }
    if (pool.max_blocks > 0) {
      for (const Seq& seq : seqs_) {
        if (seq.live && static_cast<int64_t>(seq.tables[p].size()) > pool.max_blocks) fail("eviction cap exceeded");
      }
    }
    used_bytes += (held + cached) * pool.block_bytes;
  }
  if (free_bytes_ < 0) fail("negative free bytes");
  if (used_bytes + free_bytes_ != capacity_bytes_) {
    fail("bytes: used " + std::to_string(used_bytes) + " + free " + std::to_string(free_bytes_) + " != capacity " +
         std::to_string(capacity_bytes_));
  }
}

}  // namespace kvplan::sim
