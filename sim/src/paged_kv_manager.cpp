// Paged KV blocks from one shared byte pool, with copy-on-write and a prefix cache
// (see paged_kv_manager.h and docs/kv-managers.md).
#include "kvplan/sim/paged_kv_manager.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"

namespace kvplan::sim {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kHuge = int64_t{1} << 60;  // a length past every cap

}  // namespace

void PagedKvManager::fail(const std::string& what) {
  throw std::logic_error("PagedKvManager invariant broken: " + what);
}

PagedKvManager::PagedKvManager(const KvManagerConfig& config)
    : capacity_bytes_(config.capacity_bytes),
      layout_(config.layout),
      max_model_len_(config.max_model_len),
      tokens_per_block_(0),
      watermark_bytes_(0) {
  if (capacity_bytes_ <= 0) {
    throw ConfigError("kv manager: capacity_bytes=" + std::to_string(capacity_bytes_) + " must be > 0");
  }
  if (layout_ == nullptr) throw ConfigError("kv manager: layout must be set");
  const KvScheme& scheme = layout_->scheme();
  tokens_per_block_ = scheme.tokens_per_block;
  if (tokens_per_block_ <= 0) {
    throw ConfigError("kv manager: tokens_per_block=" + std::to_string(tokens_per_block_) + " must be > 0");
  }
  if (!(config.watermark >= 0.0 && config.watermark < 1.0)) {
    throw ConfigError("kv manager: watermark=" + std::to_string(config.watermark) + " must be in [0, 1)");
  }
  // vLLM: watermark_blocks = int(watermark * num_blocks); in bytes, floored the same way.
  watermark_bytes_ = static_cast<int64_t>(std::floor(config.watermark * static_cast<double>(capacity_bytes_)));
  bool cacheable = scheme.eviction == Eviction::kNone;
  const bool kivi = scheme.kv_dtype == DType::kInt2;
  for (const KvLayerGroup& g : layout_->groups()) {
    if (g.num_layers == 0) continue;
    if (!holds_kv_per_token(g.kind)) {
      slot_bytes_ += g.num_layers * g.state_bytes_per_request;
      cacheable = false;
      continue;
    }
    Pool pool;
    pool.group = &g;
    pool.windowed = g.kind == LayerKind::kSlidingAttention && scheme.eviction == Eviction::kNone;
    if (g.kind == LayerKind::kSlidingAttention) cacheable = false;
    pool.window_tokens = g.window_tokens;
    pool.block_bytes =
        g.num_layers * static_cast<int64_t>(std::ceil(g.bytes_per_token * static_cast<double>(tokens_per_block_)));
    int64_t cap = layout_->held_tokens(g, kHuge);
    pool.max_blocks = (!pool.windowed && cap < kHuge) ? ceil_div(cap, tokens_per_block_) : 0;
    if (kivi) slot_bytes_ += g.num_layers * int64_t{scheme.kivi_residual_tokens} * g.bytes_per_token_16bit;
    pools_.push_back(std::move(pool));
  }
  name_ = "paged";
  if (config.prefix_caching) {
    if (cacheable && !pools_.empty()) {
      name_ = "paged+prefix";
      // A node's blocks_per_node depends on the request's hash_block_tokens; the tree is rebuilt
      // for the first granularity seen (see admit). Start with one block per pool.
      int64_t node_bytes = 0;
      for (const Pool& pool : pools_) node_bytes += pool.block_bytes;
      tree_.emplace(static_cast<int32_t>(pools_.size()), node_bytes);
    } else {
      name_ = "paged (prefix cache off: sliding, recurrent or evicting layers)";
    }
  }
  free_bytes_ = capacity_bytes_;
}

PagedKvManager::Span PagedKvManager::span(const Pool& pool, int64_t first, int64_t tokens) const {
  const int64_t b = tokens_per_block_;
  Span s;
  if (pool.windowed) {
    s.written = tokens;
    s.hi = ceil_div(tokens, b);
    int64_t natural = tokens > pool.window_tokens ? (tokens - pool.window_tokens) / b : 0;
    s.lo = std::min(std::max(first, natural), s.hi);
  } else {
    s.written = layout_->held_tokens(*pool.group, tokens);
    s.hi = ceil_div(s.written, b);
    s.lo = 0;
  }
  return s;
}

int64_t PagedKvManager::view_fill(const Span& s, int64_t index) const {
  return std::clamp<int64_t>(s.written - index * tokens_per_block_, 0, tokens_per_block_);
}

int64_t PagedKvManager::blocks_at(const Pool& pool, int64_t tokens) const {
  Span s = span(pool, 0, tokens);
  return s.hi - s.lo;
}

int64_t PagedKvManager::obtainable_bytes() const { return free_bytes_ + (tree_ ? tree_->evictable_bytes() : 0); }

void PagedKvManager::make_free(int64_t bytes) {
  while (free_bytes_ < bytes) {
    const PrefixTree::Node leaf = tree_ ? tree_->lru_leaf() : PrefixTree::Node{};
    if (leaf.run == PrefixTree::kNoNode) fail("make_free: no evictable prefix node left for a planned allocation");
    // Every node frees node_bytes. The unreferenced nodes at the end of the leaf's run are the next
    // least recently used leaves in turn (one clock per run): evict as many as are needed at once,
    // last first, each node's blocks group after group.
    const int32_t count =
        tree_->unreferenced_tail(leaf, ceil_div(bytes - free_bytes_, std::max<int64_t>(tree_->node_bytes(), 1)));
    const size_t per_node = static_cast<size_t>(tree_->blocks_per_node());
    const size_t per_pool = per_node / pools_.size();
    std::span<const int32_t> ids = tree_->run_blocks(leaf.run);
    for (size_t n = 1; n <= static_cast<size_t>(count); ++n) {
      const int32_t* node_ids = ids.data() + (ids.size() - n * per_node);  // [pools, per_pool]
      for (Pool& pool : pools_) {
        for (size_t j = 0; j < per_pool; ++j, ++node_ids) {
          Block& block = pool.blocks[static_cast<size_t>(*node_ids)];
          block.node = PrefixTree::Node{};
          block.fill = 0;
          pool.free_ids.push_back(*node_ids);
        }
        pool.cached_blocks -= static_cast<int64_t>(per_pool);
        free_bytes_ += static_cast<int64_t>(per_pool) * pool.block_bytes;
      }
    }
    tree_->remove_leaves(leaf, count);  // after reading their blocks
    evicted_nodes_ += count;
  }
}

int32_t PagedKvManager::allocate_block(size_t p, int32_t fill) {
  Pool& pool = pools_[p];
  int32_t id = 0;
  if (!pool.free_ids.empty()) {
    id = pool.free_ids.back();
    pool.free_ids.pop_back();
  } else {
    id = static_cast<int32_t>(pool.blocks.size());
    pool.blocks.emplace_back();
  }
  Block& block = pool.blocks[static_cast<size_t>(id)];
  block = Block{.refcount = 1, .fill = fill, .node = PrefixTree::Node{}};
  pool.held_blocks += 1;
  pool.filled_slots += fill;
  free_bytes_ -= pool.block_bytes;
  if (free_bytes_ < 0) fail("allocation past capacity");
  return id;
}

void PagedKvManager::add_ref(size_t p, int32_t id) {
  Pool& pool = pools_[p];
  Block& block = pool.blocks[static_cast<size_t>(id)];
  if (block.refcount == 0) {
    // Only a cached block can gain its first holder (free ones are handed out by allocate_block).
    tree_->block_referenced(block.node);
    pool.cached_blocks -= 1;
    pool.held_blocks += 1;
    pool.filled_slots += block.fill;
  }
  block.refcount += 1;
}

void PagedKvManager::drop_ref(size_t p, int32_t id) {
  Pool& pool = pools_[p];
  Block& block = pool.blocks[static_cast<size_t>(id)];
  block.refcount -= 1;
  if (block.refcount > 0) return;
  pool.held_blocks -= 1;
  pool.filled_slots -= block.fill;
  if (block.node.run != PrefixTree::kNoNode) {
    pool.cached_blocks += 1;  // stays in the prefix cache, evictable once its node is a leaf
    tree_->block_unreferenced(block.node);
  } else {
    block.fill = 0;
    pool.free_ids.push_back(id);
    free_bytes_ += pool.block_bytes;
  }
}

bool PagedKvManager::known(SeqId seq) const {
  return seq_index_.find(0, static_cast<uint64_t>(seq)) != EdgeTable::kAbsent;
}

int32_t PagedKvManager::slot_of(SeqId seq) const {
  const int32_t slot = seq_index_.find(0, static_cast<uint64_t>(seq));
  if (slot == EdgeTable::kAbsent) throw std::logic_error("PagedKvManager: unknown sequence " + std::to_string(seq));
  return slot;
}

PagedKvManager::Seq& PagedKvManager::find(SeqId seq) { return seqs_[static_cast<size_t>(slot_of(seq))]; }

const PagedKvManager::Seq& PagedKvManager::find(SeqId seq) const { return seqs_[static_cast<size_t>(slot_of(seq))]; }

PagedKvManager::Seq& PagedKvManager::new_seq(SeqId id) {
  int32_t index = 0;
  if (!free_seq_slots_.empty()) {
    index = free_seq_slots_.back();
    free_seq_slots_.pop_back();
  } else {
    index = static_cast<int32_t>(seqs_.size());
    seqs_.emplace_back();
  }
  seq_index_.insert(0, static_cast<uint64_t>(id), index);
  Seq& s = seqs_[static_cast<size_t>(index)];
  s.id = id;
  s.live = true;
  s.tokens = 0;
  s.prompt_tokens = 0;
  s.prefix_valid_tokens = 0;
  s.hash_block_tokens = 0;
  s.hashes.clear();
  s.tables.resize(pools_.size());
  for (auto& table : s.tables) table.clear();  // keeps capacity: no allocation in steady state
  s.first.assign(pools_.size(), 0);
  return s;
}

int64_t PagedKvManager::capacity_tokens(const Seq& seq) const {
  int64_t cap = kNoLimit;
  const int64_t b = tokens_per_block_;
  for (size_t p = 0; p < pools_.size(); ++p) {
    const Pool& pool = pools_[p];
    int64_t hi = static_cast<int64_t>(seq.tables[p].size());
    if (pool.windowed) {
      // Grow into a new block at hi*b + 1; the oldest block leaves the window at w + (first+1)*b.
      cap = std::min({cap, hi * b, pool.window_tokens + (seq.first[p] + 1) * b - 1});
    } else if (pool.max_blocks == 0 || hi < pool.max_blocks) {
      cap = std::min(cap, hi * b);
    }
  }
  if (max_model_len_ > 0) cap = std::min(cap, max_model_len_);
  return std::max(cap, seq.tokens);
}

int64_t PagedKvManager::resize_need(const Seq& seq, int64_t tokens, int64_t* freed) const {
  int64_t need = 0;
  *freed = 0;
  for (size_t p = 0; p < pools_.size(); ++p) {
    const Pool& pool = pools_[p];
    const std::vector<int32_t>& table = seq.tables[p];
    Span old_span = span(pool, seq.first[p], seq.tokens);
    Span new_span = span(pool, seq.first[p], tokens);
    int64_t added = std::max<int64_t>(0, new_span.hi - std::max(new_span.lo, old_span.hi));
    int64_t keep_lo = std::max(old_span.lo, new_span.lo);
    int64_t keep_hi = std::min(old_span.hi, new_span.hi);
    // Only the old and the new last block can change fill among kept blocks.
    for (int64_t c : {old_span.hi - 1, new_span.hi - 1}) {
      if (c >= keep_lo && c < keep_hi) {
        const Block& block = pool.blocks[static_cast<size_t>(table[static_cast<size_t>(c)])];
        if (view_fill(new_span, c) != block.fill && !writable(block)) added += 1;  // copy-on-write
      }
      if (old_span.hi == new_span.hi) break;  // the same index twice
    }
    need += added * pool.block_bytes;
    auto count_freed = [&](int64_t from, int64_t to) {
      for (int64_t i = from; i < to; ++i) {
        if (writable(pool.blocks[static_cast<size_t>(table[static_cast<size_t>(i)])])) *freed += pool.block_bytes;
      }
    };
    int64_t front_end = std::min(old_span.hi, std::max(old_span.lo, new_span.lo));
    count_freed(old_span.lo, front_end);
    count_freed(std::max(front_end, new_span.hi), old_span.hi);
  }
  return need;
}

void PagedKvManager::resize(Seq& seq, int64_t tokens) {
  int64_t freed = 0;
  resize(seq, tokens, resize_need(seq, tokens, &freed));
}

void PagedKvManager::resize(Seq& seq, int64_t tokens, int64_t need) {
  // Release first (blocks leaving the window or cut by a truncate), then evict, then allocate.
  for (size_t p = 0; p < pools_.size(); ++p) {
    std::vector<int32_t>& table = seq.tables[p];
    Span old_span = span(pools_[p], seq.first[p], seq.tokens);
    Span new_span = span(pools_[p], seq.first[p], tokens);
    int64_t front_end = std::min(old_span.hi, std::max(old_span.lo, new_span.lo));
    for (int64_t i = old_span.lo; i < front_end; ++i) {
      drop_ref(p, table[static_cast<size_t>(i)]);
      table[static_cast<size_t>(i)] = -1;
    }
    for (int64_t i = std::max(front_end, new_span.hi); i < old_span.hi; ++i) {
      drop_ref(p, table[static_cast<size_t>(i)]);
      table[static_cast<size_t>(i)] = -1;
    }
  }
  make_free(need);
  for (size_t p = 0; p < pools_.size(); ++p) {
    Pool& pool = pools_[p];
    std::vector<int32_t>& table = seq.tables[p];
    Span old_span = span(pool, seq.first[p], seq.tokens);
    Span new_span = span(pool, seq.first[p], tokens);
    int64_t keep_lo = std::max(old_span.lo, new_span.lo);
    int64_t keep_hi = std::min(old_span.hi, new_span.hi);
    for (int64_t c : {old_span.hi - 1, new_span.hi - 1}) {
      if (c >= keep_lo && c < keep_hi) {
        int32_t& id = table[static_cast<size_t>(c)];
        Block& block = pool.blocks[static_cast<size_t>(id)];
        int32_t fill = static_cast<int32_t>(view_fill(new_span, c));
        if (fill != block.fill) {
          if (writable(block)) {
            pool.filled_slots += fill - block.fill;
            block.fill = fill;
          } else {
            // Copy-on-write: this sequence writes (or forgets) slots another holder still reads.
            int32_t copy = allocate_block(p, fill);
            drop_ref(p, id);
            id = copy;
            cow_copies_ += 1;
          }
        }
      }
      if (old_span.hi == new_span.hi) break;
    }
    table.resize(static_cast<size_t>(new_span.hi), -1);
    for (int64_t i = std::max(new_span.lo, old_span.hi); i < new_span.hi; ++i) {
      table[static_cast<size_t>(i)] = allocate_block(p, static_cast<int32_t>(view_fill(new_span, i)));
    }
    seq.first[p] = new_span.lo;
  }
  seq.tokens = tokens;
}

int64_t PagedKvManager::match_prefix(int32_t hash_block_tokens, std::span<const uint64_t> hashes) const {
  if (!tree_ || hash_block_tokens <= 0 || hash_block_tokens % tokens_per_block_ != 0) return 0;
  if (tree_->blocks_per_node() != static_cast<int32_t>(pools_.size() * (hash_block_tokens / tokens_per_block_)) &&
      tree_->num_nodes() > 0) {
    return 0;  // a different hash granularity than the cached one: no shared identity
  }
  PrefixTree::Node node = PrefixTree::kRootNode;
  return tree_->match(&node, hashes) * hash_block_tokens;
}

AdmitResult PagedKvManager::admit(const SeqKvRequest& request, int64_t initial_tokens) {
  clock_ += 1;
  if (known(request.seq)) {
    throw std::logic_error("PagedKvManager: sequence " + std::to_string(request.seq) + " admitted twice");
  }
  if (initial_tokens < 0) throw std::logic_error("PagedKvManager: negative initial_tokens");
  if (max_model_len_ > 0 && initial_tokens > max_model_len_) return AdmitResult{};
  const int64_t b = tokens_per_block_;

  // Prefix identity: whole hash blocks of the prompt, at a granularity that is whole KV blocks.
  int32_t hbt = request.hash_block_tokens;
  bool identity = tree_ && hbt > 0 && hbt % b == 0;
  int64_t blocks_per_hash = identity ? hbt / b : 0;
  if (identity && tree_->blocks_per_node() != static_cast<int32_t>(blocks_per_hash * static_cast<int64_t>(pools_.size()))) {
    if (tree_->num_nodes() == 0) {
      tree_.emplace(static_cast<int32_t>(blocks_per_hash * static_cast<int64_t>(pools_.size())),
                    blocks_per_hash * [&] {
                      int64_t sum = 0;
                      for (const Pool& pool : pools_) sum += pool.block_bytes;
                      return sum;
                    }());
    } else {
      identity = false;  // one granularity per cache (a trace uses one); others get no sharing
    }
  }
  // Hashes may describe the answer too (a conversation turn): they are kept for caching at release,
  // while the lookup below is capped at the prompt.
  const int64_t identity_tokens = request.identity_tokens > 0 ? request.identity_tokens : request.prompt_tokens;
  int64_t num_hashes = identity ? std::min<int64_t>(static_cast<int64_t>(request.prefix_hashes.size()),
                                                    identity_tokens / hbt)
                                : 0;
  match_nodes_.clear();
  int64_t cached_blocks = 0;
  int64_t lost_evictable = 0;  // unreferenced nodes the hit will reference
  if (identity) {
    PrefixTree::Node node = PrefixTree::kRootNode;
    for (int64_t i = 0; i < num_hashes; ++i) {
      node = tree_->find_child(node, request.prefix_hashes[static_cast<size_t>(i)]);
      if (node.run == PrefixTree::kNoNode) break;
      match_nodes_.push_back(node);
    }
    // Engines recompute at least the last prompt token (its logits start decoding): whole blocks of
    // at most prompt - 1 tokens, and never past initial_tokens.
    cached_blocks = std::min({static_cast<int64_t>(match_nodes_.size()) * blocks_per_hash,
                              std::max<int64_t>(0, request.prompt_tokens - 1) / b, initial_tokens / b});
    match_nodes_.resize(static_cast<size_t>(ceil_div(cached_blocks, std::max<int64_t>(blocks_per_hash, 1))));
    for (const PrefixTree::Node& node_id : match_nodes_) {
      if (!tree_->referenced(node_id)) lost_evictable += tree_->node_bytes();
    }
  }
  int64_t need = slot_bytes_;
  for (const Pool& pool : pools_) need += (blocks_at(pool, initial_tokens) - cached_blocks) * pool.block_bytes;
  int64_t available = obtainable_bytes() - lost_evictable;
  if (need > available || available - need < watermark_bytes_) return AdmitResult{};

  Seq& seq = new_seq(request.seq);
  seq.prompt_tokens = request.prompt_tokens;
  seq.prefix_valid_tokens = identity_tokens;
  if (identity) {
    seq.hash_block_tokens = hbt;
    seq.hashes.assign(request.prefix_hashes.begin(), request.prefix_hashes.begin() + num_hashes);
  }
  for (size_t p = 0; p < pools_.size(); ++p) {
    for (int64_t j = 0; j < cached_blocks; ++j) {
      const PrefixTree::Node node = match_nodes_[static_cast<size_t>(j / blocks_per_hash)];
      int32_t id = tree_->blocks(node)[static_cast<size_t>(static_cast<int64_t>(p) * blocks_per_hash + j % blocks_per_hash)];
      add_ref(p, id);
      seq.tables[p].push_back(id);
    }
  }
  // The hit's path, root to its last node, was used now (a run that goes on past it is cut there).
  if (!match_nodes_.empty()) tree_->touch_path(make_last(match_nodes_.back()), clock_);
  seq.tokens = cached_blocks * b;
  make_free(need);  // after the hit took its references, so the hit is never evicted
  free_bytes_ -= slot_bytes_;
  live_slots_ += 1;
  resize(seq, std::max(initial_tokens, seq.tokens));
  if (tree_) {
    prefix_lookup_tokens_ += request.prompt_tokens;
    prefix_hit_tokens_ += cached_blocks * b;
  }
  return AdmitResult{.ok = true, .cached_tokens = cached_blocks * b, .capacity_tokens = capacity_tokens(seq)};
}

int64_t PagedKvManager::grow(SeqId id, int64_t tokens) {
  clock_ += 1;
  Seq& seq = find(id);
  if (tokens <= seq.tokens) return capacity_tokens(seq);
  if (max_model_len_ > 0 && tokens > max_model_len_) return -1;
  int64_t freed = 0;
  int64_t need = resize_need(seq, tokens, &freed);
  if (need > obtainable_bytes() + freed) return -1;
  resize(seq, tokens, need);
  return capacity_tokens(seq);
}

int64_t PagedKvManager::truncate(SeqId id, int64_t tokens) {
  clock_ += 1;
  Seq& seq = find(id);
  if (tokens < 0) throw std::logic_error("PagedKvManager: negative truncate length");
  if (tokens >= seq.tokens) return capacity_tokens(seq);
  int64_t freed = 0;
  int64_t need = resize_need(seq, tokens, &freed);
  if (need > obtainable_bytes() + freed) return -1;
  resize(seq, tokens, need);
  seq.prefix_valid_tokens = std::min(seq.prefix_valid_tokens, tokens);
  return capacity_tokens(seq);
}

PrefixTree::Node PagedKvManager::make_last(PrefixTree::Node node) {
  const int32_t run = tree_->make_last(node);
  if (run != node.run) {
    // The nodes up to `node` moved to a new run: their blocks name it now.
    const size_t per_pool = static_cast<size_t>(tree_->blocks_per_node()) / pools_.size();
    std::span<const int32_t> ids = tree_->run_blocks(run);
    for (size_t k = 0; k < ids.size(); ++k) {
      const size_t p = (k % static_cast<size_t>(tree_->blocks_per_node())) / per_pool;
      pools_[p].blocks[static_cast<size_t>(ids[k])].node.run = run;
    }
  }
  return PrefixTree::Node{run, node.depth};
}

void PagedKvManager::adopt_cached_path(Seq& seq, size_t hash_blocks) {
  const size_t bph = static_cast<size_t>(seq.hash_block_tokens / tokens_per_block_);
  PrefixTree::Node node = PrefixTree::kRootNode;
  for (size_t t = 0; t < hash_blocks; ++t) {
    node = tree_->find_child(node, seq.hashes[t]);
    if (node.run == PrefixTree::kNoNode) fail("adopt_cached_path: the matched path is not cached");
    const std::span<const int32_t> cached = tree_->blocks(node);  // [pools, blocks_per_hash]
    for (size_t p = 0; p < pools_.size(); ++p) {
      for (size_t j = 0; j < bph; ++j) {
        int32_t& id = seq.tables[p][t * bph + j];
        const int32_t want = cached[p * bph + j];
        if (id == want) continue;
        add_ref(p, want);  // the cached block becomes held (its node referenced)
        drop_ref(p, id);   // the copy is in no node: freed unless a fork holds it
        id = want;
      }
    }
  }
}

void PagedKvManager::insert_prefix(Seq& seq, bool releasing) {
  const int64_t blocks_per_hash = seq.hash_block_tokens / tokens_per_block_;
  const int64_t n = std::min<int64_t>(static_cast<int64_t>(seq.hashes.size()),
                                      std::min(seq.tokens, seq.prefix_valid_tokens) / seq.hash_block_tokens);
  const std::span<const uint64_t> hashes = std::span<const uint64_t>(seq.hashes).first(static_cast<size_t>(n));
  // The hash blocks already cached: the same content, so this sequence's copies are freed at
  // release; the path to them is touched.
  PrefixTree::Node node = PrefixTree::kRootNode;
  const int64_t cached = tree_->match(&node, hashes);
  if (node.run != PrefixTree::kRoot) {
    node = make_last(node);
    tree_->touch_path(node, clock_);
  }
  if (cached == n) return;
  // The rest hang below it as one chain, up to the first hash block with a block the tree already
  // holds (cannot happen; never hang a block twice).
  const auto bph = static_cast<size_t>(blocks_per_hash);
  const auto first = static_cast<size_t>(cached);
  size_t end = static_cast<size_t>(n);
  for (size_t p = 0; p < pools_.size(); ++p) {
    const std::vector<int32_t>& table = seq.tables[p];
    const std::vector<Block>& blocks = pools_[p].blocks;
    for (size_t k = first * bph; k < end * bph; ++k) {
      if (blocks[static_cast<size_t>(table[k])].node.run != PrefixTree::kNoNode) {
        end = k / bph;
        break;
      }
    }
  }
  if (end == first) return;
  // Keep references closed under ancestors (obtainable_bytes() relies on it: an unreferenced node
  // with a referenced child can never become a leaf): a new node's blocks must be held only by
  // sequences that hold the node it hangs under. When the cached path ends at another sequence's
  // copy of the same content (both prefilled it side by side), this sequence holds its own copies
  // of the path instead. Forks that share this sequence's first new blocks would hold them under
  // a path they do not hold: nothing is hung (release inserts them when it can). Else at release
  // the new nodes are unreferenced right after; at publish this sequence stays live holding them,
  // so it first trades its copies of the path for the cached blocks (SGLang's
  // RadixCache.cache_unfinished_req does the same: the request frees its duplicate KV indices and
  // takes the tree's), which frees its copies now rather than at release.
  if (node.run != PrefixTree::kRoot &&
      tree_->blocks(node)[0] != seq.tables[0][(first - 1) * bph]) {
    for (size_t p = 0; p < pools_.size(); ++p) {
      for (size_t k = first * bph; k < (first + 1) * bph; ++k) {
        if (pools_[p].blocks[static_cast<size_t>(seq.tables[p][k])].refcount != 1) return;  // not the sole holder
      }
    }
    if (!releasing) adopt_cached_path(seq, first);
  }
  // [end - first, pools, blocks_per_hash]
  const size_t per_node = pools_.size() * bph;
  scratch_.resize((end - first) * per_node);
  for (size_t p = 0; p < pools_.size(); ++p) {
    const int32_t* table = seq.tables[p].data();
    for (size_t t = first; t < end; ++t) {
      std::copy_n(table + t * bph, bph, scratch_.begin() + static_cast<std::ptrdiff_t>((t - first) * per_node + p * bph));
    }
  }
  const PrefixTree::Node last = tree_->add_chain(node, hashes.subspan(first, end - first), scratch_,
                                                 static_cast<int32_t>(per_node), clock_);
  for (size_t p = 0; p < pools_.size(); ++p) {
    const std::vector<int32_t>& table = seq.tables[p];
    std::vector<Block>& blocks = pools_[p].blocks;
    for (size_t t = first; t < end; ++t) {
      for (size_t k = t * bph; k < (t + 1) * bph; ++k) {
        blocks[static_cast<size_t>(table[k])].node = PrefixTree::Node{last.run, static_cast<int32_t>(t)};
      }
    }
  }
}

void PagedKvManager::release(SeqId id, bool cache_prefix) {
  clock_ += 1;
  const int32_t slot = slot_of(id);
  Seq& seq = seqs_[static_cast<size_t>(slot)];
  if (cache_prefix && tree_ && seq.hash_block_tokens > 0) insert_prefix(seq, /*releasing=*/true);
  for (size_t p = 0; p < pools_.size(); ++p) {
    std::vector<int32_t>& table = seq.tables[p];
    for (size_t i = static_cast<size_t>(seq.first[p]); i < table.size(); ++i) drop_ref(p, table[i]);
    table.clear();
  }
  free_bytes_ += slot_bytes_;
  live_slots_ -= 1;
  seq.live = false;
  free_seq_slots_.push_back(slot);
  seq_index_.erase(0, static_cast<uint64_t>(id));
}

void PagedKvManager::publish_prefix(SeqId id) {
  clock_ += 1;
  Seq& seq = find(id);
  // Idempotent: blocks already hung in the tree are only touched; release() inserts again the same way.
  if (tree_ && seq.hash_block_tokens > 0) insert_prefix(seq, /*releasing=*/false);
}

bool PagedKvManager::fork(SeqId parent_id, SeqId child_id) {
  clock_ += 1;
  if (known(child_id)) {
    throw std::logic_error("PagedKvManager: fork into existing sequence " + std::to_string(child_id));
  }
  find(parent_id);  // throws for an unknown parent
  if (slot_bytes_ > obtainable_bytes()) return false;
  make_free(slot_bytes_);
  Seq& child = new_seq(child_id);  // may move seqs_: look the parent up again
  free_bytes_ -= slot_bytes_;
  live_slots_ += 1;
  const Seq& parent = find(parent_id);
  child.tokens = parent.tokens;
  child.prompt_tokens = parent.prompt_tokens;
  child.prefix_valid_tokens = parent.prefix_valid_tokens;
  child.hash_block_tokens = parent.hash_block_tokens;
  child.hashes = parent.hashes;
  for (size_t p = 0; p < pools_.size(); ++p) {
    child.tables[p] = parent.tables[p];
    child.first[p] = parent.first[p];
    for (size_t i = static_cast<size_t>(child.first[p]); i < child.tables[p].size(); ++i) add_ref(p, child.tables[p][i]);
  }
  return true;
}

int64_t PagedKvManager::sequence_bytes(SeqId id) const {
  const Seq& seq = find(id);
  int64_t bytes = slot_bytes_;
  for (size_t p = 0; p < pools_.size(); ++p) {
    bytes += (static_cast<int64_t>(seq.tables[p].size()) - seq.first[p]) * pools_[p].block_bytes;
  }
  return bytes;
}

int64_t PagedKvManager::sequence_blocks(SeqId id, int64_t pool) const {
  const Seq& seq = find(id);
  return static_cast<int64_t>(seq.tables[static_cast<size_t>(pool)].size()) - seq.first[static_cast<size_t>(pool)];
}

bool PagedKvManager::can_admit(int64_t tokens) const {
  if (max_model_len_ > 0 && tokens > max_model_len_) return false;
  int64_t need = slot_bytes_;
  for (const Pool& pool : pools_) need += blocks_at(pool, tokens) * pool.block_bytes;
  int64_t available = obtainable_bytes();
  return need <= available && available - need >= watermark_bytes_;
}

KvUsage PagedKvManager::usage() const {
  KvUsage u;
  u.capacity_bytes = capacity_bytes_;
  int64_t held = live_slots_ * slot_bytes_;
  u.token_bytes = held;  // a live sequence's slot is state it uses
  for (const Pool& pool : pools_) {
    // Written slots at the pool's per-slot rate (exact: block_bytes / tokens_per_block is whole
    // for every dtype but KIVI, where the remainder counts as internal fragmentation).
    u.token_bytes += pool.filled_slots * pool.block_bytes / tokens_per_block_;
    held += pool.held_blocks * pool.block_bytes;
    u.cached_bytes += pool.cached_blocks * pool.block_bytes;
  }
  u.internal_fragmentation_bytes = held - u.token_bytes;
  u.free_bytes = free_bytes_;
  u.num_seqs = static_cast<int64_t>(seq_index_.size());
  u.prefix_lookup_tokens = prefix_lookup_tokens_;
  u.prefix_hit_tokens = prefix_hit_tokens_;
  return u;
}

}  // namespace kvplan::sim
