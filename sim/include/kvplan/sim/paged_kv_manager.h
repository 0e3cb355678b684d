// kvplan/sim/paged_kv_manager.h — paged KV blocks per layer group from one shared byte pool, with
// reference counts, copy-on-write, an admission watermark, sliding-window freeing, recurrent state
// slots, eviction caps and an optional prefix cache (vLLM V1 block pool + hybrid allocator,
// SGLang radix cache).
//
//   PagedKvManager kv(KvManagerConfig{.capacity_bytes = c, .layout = &layout, .max_model_len = 32768,
//                                     .watermark = 0.01, .prefix_caching = true});
//   AdmitResult a = kv.admit(request, request.prompt_tokens);   // a.cached_tokens from the cache
//
// Pools: one per layer group that stores per-token KV on this GPU. A block is tokens_per_block
// token slots across all of the group's layers; its bytes (block_bytes) are
// num_layers * ceil(bytes_per_token * tokens_per_block), as KvLayout::request_allocated_bytes sizes
// them. All pools and the per-sequence slots draw from ONE byte capacity, so how many blocks of
// each group exist is not fixed: a block's bytes return to the shared pool when its last holder
// lets go (its id goes to the group's LIFO free list for reuse).
// Per sequence and group the block table holds:
//  - full / MLA groups: ceil(held/tpb) blocks, held = layout.held_tokens(group, tokens) (H2O and
//    StreamingLLM caps: the kernel compacts the kept tokens into the first blocks);
//  - sliding groups (no eviction): the blocks the window [tokens - window, tokens) touches;
//    blocks that leave the window are freed at the call that crosses their boundary.
// A per-sequence slot (allocated at admit) holds the recurrent state of linear/Mamba groups
// (state_bytes_per_request * num_layers) and, for KIVI, the 16-bit residual window
// (kivi_residual_tokens * bytes_per_token_16bit * num_layers); KIVI blocks hold tokens at the
// steady-state 2-bit rate with key metadata amortized (conservative by the residual's 2-bit copy).
//
// Copy-on-write: fork() shares every block of a sequence with a new one (parallel sampling,
// beam search). A block is writable only by its sole holder and only when the prefix cache does
// not hold it; the first write to a block that is not writable (grow into a shared partial last
// block, or truncate into a shared block) copies it to a fresh block.
//
// Prefix cache: see docs/kv-managers.md. Disabled (name() says so) when the layout has sliding or
// recurrent groups or uses token eviction, since then a prompt's blocks do not identify its state.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/prefix_tree.h"

namespace kvplan {
struct KvLayerGroup;
}

namespace kvplan::sim {

class PagedKvManager final : public KvManager {
 public:
  // capacity_tokens when nothing will change however long the sequence grows.
  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

  // Throws ConfigError (capacity_bytes <= 0, no layout, tokens_per_block <= 0, watermark not in [0, 1)).
  explicit PagedKvManager(const KvManagerConfig& config);

  std::string_view name() const override { return name_; }
  // Whole hash blocks cached along `hashes`, in tokens. Not capped at prompt - 1 (admit is).
  // 0 when the cache is off or hash_block_tokens is not a positive multiple of tokens_per_block.
  int64_t match_prefix(int32_t hash_block_tokens, std::span<const uint64_t> hashes) const override;
  AdmitResult admit(const SeqKvRequest& request, int64_t initial_tokens) override;
  int64_t grow(SeqId seq, int64_t tokens) override;
  // -1 (unchanged) when the new last block must be copied (shared or cached) and memory is short.
  int64_t truncate(SeqId seq, int64_t tokens) override;
  void release(SeqId seq, bool cache_prefix) override;
  void publish_prefix(SeqId seq) override;
  // Bytes of the blocks the sequence holds (shared ones included) plus its slot: what a swap moves.
  int64_t sequence_bytes(SeqId seq) const override;
  bool can_admit(int64_t tokens) const override;
  KvUsage usage() const override;
  void check_invariants() const override;

  // Starts `child` as a copy of `parent` sharing all its blocks (reference counts + 1); only the
  // child's slot is new. False (unchanged) when that slot does not fit.
  bool fork(SeqId parent, SeqId child);

  bool prefix_caching_enabled() const { return tree_.has_value(); }
  int64_t num_pools() const { return static_cast<int64_t>(pools_.size()); }
  int64_t block_bytes(int64_t pool) const { return pools_[static_cast<size_t>(pool)].block_bytes; }
  // Blocks of pool `pool` held by live sequences (each physical block once) / cached only.
  int64_t held_blocks(int64_t pool) const { return pools_[static_cast<size_t>(pool)].held_blocks; }
  int64_t cached_blocks(int64_t pool) const { return pools_[static_cast<size_t>(pool)].cached_blocks; }
  // Blocks in the sequence's table for pool `pool`.
  int64_t sequence_blocks(SeqId seq, int64_t pool) const;
  int64_t slot_bytes() const { return slot_bytes_; }
  int64_t cow_copies() const { return cow_copies_; }
  int64_t evicted_nodes() const { return evicted_nodes_; }
  const PrefixTree* prefix_tree() const { return tree_ ? &*tree_ : nullptr; }
  // Test hook: changes one block's reference count so a test can see check_invariants() fail.
  void corrupt_refcount_for_test(int64_t pool, int32_t block, int32_t delta);

 private:
  struct Block {
    int32_t refcount = 0;  // live sequences whose table holds it
    int32_t fill = 0;      // token slots written, 0..tokens_per_block
    PrefixTree::Node node;  // the prefix-cache node holding it; run == kNoNode when none
  };
  struct Pool {
    const KvLayerGroup* group = nullptr;
    bool windowed = false;      // sliding group without eviction: the table is a moving window
    int64_t window_tokens = 0;
    int64_t block_bytes = 0;
    int64_t max_blocks = 0;     // capped groups: blocks at the cap (0: no cap)
    std::vector<Block> blocks;
    std::vector<int32_t> free_ids;  // LIFO: ids with refcount 0 that no tree node holds
    int64_t held_blocks = 0;    // refcount > 0
    int64_t cached_blocks = 0;  // refcount 0, held by a tree node
    int64_t filled_slots = 0;   // sum of fill over held blocks
  };
  struct Seq {
    SeqId id = 0;
    bool live = false;
    int64_t tokens = 0;
    int64_t prompt_tokens = 0;
    int64_t prefix_valid_tokens = 0;  // prompt tokens never truncated away (safe to cache)
    int32_t hash_block_tokens = 0;   // 0 when the sequence has no usable prefix identity
    std::vector<uint64_t> hashes;    // whole prompt hash blocks
    std::vector<std::vector<int32_t>> tables;  // [pool][logical block]; -1 before first
    std::vector<int64_t> first;      // [pool] first held logical block (windowed pools)
  };
  // Logical block range [lo, hi) a pool holds at `tokens`, and slots written (`written`).
  struct Span {
    int64_t lo = 0;
    int64_t hi = 0;
    int64_t written = 0;
  };

  Span span(const Pool& pool, int64_t first, int64_t tokens) const;
  int64_t view_fill(const Span& s, int64_t index) const;
  bool writable(const Block& block) const { return block.refcount == 1 && block.node.run == PrefixTree::kNoNode; }
  int64_t capacity_tokens(const Seq& seq) const;
  // Bytes that can be made free now: free + every unreferenced prefix node.
  int64_t obtainable_bytes() const;
  // Evicts LRU leaves until free_bytes_ >= bytes; the caller has checked obtainable_bytes().
  void make_free(int64_t bytes);
  int32_t allocate_block(size_t pool, int32_t fill);
  void add_ref(size_t pool, int32_t id);
  void drop_ref(size_t pool, int32_t id);
  // Bytes a resize of `seq` to `tokens` needs beyond what it frees; the plan only.
  int64_t resize_need(const Seq& seq, int64_t tokens, int64_t* freed) const;
  void resize(Seq& seq, int64_t tokens);
  // The same, with `need` = resize_need(seq, tokens, ...) already computed by the caller (grow and
  // truncate check it first; computing it twice was 2% of a simulation).
  void resize(Seq& seq, int64_t tokens, int64_t need);
  int32_t slot_of(SeqId seq) const;  // throws std::logic_error for an unknown sequence
  bool known(SeqId seq) const;       // a live sequence of this manager
  // std::logic_error "PagedKvManager invariant broken: <what>" (paged_kv_manager_checks.cpp too).
  [[noreturn]] static void fail(const std::string& what);
  Seq& find(SeqId seq);
  const Seq& find(SeqId seq) const;
  Seq& new_seq(SeqId id);
  // Hangs the sequence's whole prompt hash blocks in the tree. `releasing`: the sequence lets go of
  // its blocks right after (release), else it stays live (publish_prefix).
  void insert_prefix(Seq& seq, bool releasing);
  // The sequence's first `hash_blocks` hash blocks, all cached, become the cached blocks: its own
  // copies are let go (freed unless a fork holds them). Fill is unchanged: both are full.
  void adopt_cached_path(Seq& seq, size_t hash_blocks);
  // PrefixTree::make_last, renaming the blocks of a run it splits off; returns `node` afterwards.
  PrefixTree::Node make_last(PrefixTree::Node node);
  int64_t blocks_at(const Pool& pool, int64_t tokens) const;

  int64_t capacity_bytes_;
  const KvLayout* layout_;
  int64_t max_model_len_;
  int64_t tokens_per_block_;
  int64_t watermark_bytes_;
  int64_t slot_bytes_ = 0;  // per sequence: recurrent state + KIVI residual window
  std::string name_;
  std::vector<Pool> pools_;
  std::optional<PrefixTree> tree_;
  std::vector<Seq> seqs_;               // slots, reused (their vectors keep capacity)
  std::vector<int32_t> free_seq_slots_;
  // (0, sequence id) -> slot in seqs_: the prefix tree's open-addressing table, here with one
  // "parent"; std::unordered_map's bucket division and node chase were 3% of a default run.
  EdgeTable seq_index_;
  int64_t free_bytes_ = 0;
  int64_t live_slots_ = 0;
  uint64_t clock_ = 0;  // logical: one tick per admit/grow/truncate/release/fork
  int64_t cow_copies_ = 0;
  int64_t evicted_nodes_ = 0;
  int64_t prefix_lookup_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  std::vector<int32_t> scratch_;       // node blocks being inserted
  std::vector<PrefixTree::Node> match_nodes_;  // nodes matched by admit
};

}  // namespace kvplan::sim
