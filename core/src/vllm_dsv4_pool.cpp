// vLLM's DeepSeek-V4 KV pool (vllm_dsv4_pool.h): specs per layer cache, groups, packed stride and
// the concurrency vLLM prints.
#include "kvplan/core/vllm_dsv4_pool.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

namespace {

constexpr int64_t kAlignment = 576;  // FlashMLA: "requires 576B alignment"
constexpr int kWindowBlock = 64;     // sparse_swa.py: the latent window's block (256 / 4 compressed rows)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t align(int64_t bytes) { return ceil_div(bytes, kAlignment) * kAlignment; }

struct Spec {
  bool full = false;
  int block = 0;
  int window = 0;
  int64_t page = 0;  // before a sliding page is raised to a full page size
};

// The state caches' blocks are fixed in deepseek_compressor.py: 4 for the r = 4 compressors (window
// 8), 8 for r = 128 (window 128).
int state_block(const KvLayerGroup& g) {
  if (g.window_tokens == 8) return 4;
  if (g.window_tokens == 128) return 8;
  throw ConfigError(fmt::format("vLLM DeepSeek-V4 pool: a compressor state over {} tokens has no known block",
                                g.window_tokens));
}

// d in [lower, max] padding the counts least (ties: the larger d), as vLLM's _approximate_gcd.
int approximate_gcd(const std::vector<int>& counts, int lower) {
  const int top = *std::max_element(counts.begin(), counts.end());
  int best = lower;
  int64_t best_pad = -1;
  for (int d = std::max(1, lower); d <= top; ++d) {
    int64_t pad = 0;
    for (int x : counts) pad += (d - x % d) % d;
    if (best_pad < 0 || pad <= best_pad) {
      best = d;
      best_pad = pad;
    }
  }
  return best;
}

// The count of the most common page size among `pages`.
int most_common_count(const std::vector<int64_t>& pages) {
  std::map<int64_t, int> n;
  int best = 0;
  for (int64_t p : pages) best = std::max(best, ++n[p]);
  return best;
}

}  // namespace

VllmDsv4Pool vllm_dsv4_pool(const KvLayout& layout, int block_tokens, int64_t max_model_len,
                            int64_t max_num_batched_tokens, int draft_window_layers) {
  if (block_tokens <= 0 || block_tokens % 128 != 0) {
    throw ConfigError(fmt::format(
        "block-size={} must be a multiple of 128 for DeepSeek-V4 in vLLM (a block holds whole 128-token compressed "
        "entries)",
        block_tokens));
  }
  std::vector<Spec> specs;
  for (const KvLayerGroup& g : layout.groups()) {
    Spec s;
    if (g.kind == LayerKind::kCompressedAttention) {
      s.full = true;
      s.block = block_tokens;
      s.page = align(block_tokens / g.compress_ratio * g.entry_bytes());
    } else if (g.kind == LayerKind::kSlidingAttention && g.part == KvCachePart::kKv) {
      s.block = kWindowBlock;
      s.window = g.window_tokens;
      s.page = align(kWindowBlock * g.entry_bytes());
    } else if (g.kind == LayerKind::kSlidingAttention) {
      s.block = state_block(g);
      s.window = g.window_tokens;
      s.page = align(s.block * g.entry_bytes());
    } else {
      throw ConfigError(fmt::format("vLLM DeepSeek-V4 pool: layer group {} is not a DeepSeek-V4 cache", g.name));
    }
    const int layers = g.num_layers + (g.kind == LayerKind::kSlidingAttention && g.part == KvCachePart::kKv
                                           ? draft_window_layers
                                           : 0);
    for (int i = 0; i < layers; ++i) specs.push_back(s);
  }

  VllmDsv4Pool pool;
  pool.block_tokens = block_tokens;
  VllmDsv4Pool::Group full;
  full.full = true;
  full.block_tokens = block_tokens;
  for (const Spec& s : specs) {
    if (s.full) full.pages.push_back(s.page);
  }
  if (full.pages.empty()) throw ConfigError("vLLM DeepSeek-V4 pool: no compressed cache on this pipeline stage");
  std::vector<int64_t> full_sizes = full.pages;
  std::sort(full_sizes.begin(), full_sizes.end());
  full_sizes.erase(std::unique(full_sizes.begin(), full_sizes.end()), full_sizes.end());
  auto raised = [&](int64_t page) {
    auto it = std::lower_bound(full_sizes.begin(), full_sizes.end(), page);
    if (it == full_sizes.end()) {
      throw ConfigError(fmt::format("vLLM DeepSeek-V4 pool: a sliding page of {} B is larger than every full page", page));
    }
    return *it;
  };

  // Sliding buckets by (block, window), in order of first appearance; within a bucket, the layers of
  // each raised page size.
  std::vector<std::pair<std::pair<int, int>, std::map<int64_t, int>>> buckets;
  for (const Spec& s : specs) {
    if (s.full) continue;
    const std::pair<int, int> key{s.block, s.window};
    auto it = std::find_if(buckets.begin(), buckets.end(), [&](const auto& b) { return b.first == key; });
    if (it == buckets.end()) it = buckets.insert(buckets.end(), {key, {}});
    ++it->second[raised(s.page)];
  }
  std::vector<int> counts{most_common_count(full.pages)};
  for (const auto& [key, sizes] : buckets) {
    int most = 0;
    for (const auto& [page, n] : sizes) most = std::max(most, n);
    counts.push_back(most);
  }
  pool.group_size = approximate_gcd(counts, counts.front());
  pool.groups.push_back(std::move(full));
  for (const auto& [key, sizes] : buckets) {
    const int n = sizes.begin()->second;
    for (const auto& [page, count] : sizes) {
      if (count != n) {
        throw ConfigError(fmt::format(
            "vLLM DeepSeek-V4 pool: the sliding caches of block {} and window {} have {} and {} layers per page size; "
            "vLLM groups only equal counts",
            key.first, key.second, n, count));
      }
    }
    const int64_t num_groups = ceil_div(n, pool.group_size);
    for (int64_t i = 0; i < num_groups; ++i) {
      VllmDsv4Pool::Group g;
      g.block_tokens = key.first;
      g.window_tokens = key.second;
      const int tuples = static_cast<int>((n - i + num_groups - 1) / num_groups);  // tuples i, i + ng, ...
      for (const auto& [page, count] : sizes) g.pages.insert(g.pages.end(), static_cast<size_t>(tuples), page);
      pool.groups.push_back(std::move(g));
    }
  }

  // Packed layout: per page size, the most pages any one group has.
  std::map<int64_t, int64_t> slots;
  for (const VllmDsv4Pool::Group& g : pool.groups) {
    std::map<int64_t, int64_t> n;
    for (int64_t p : g.pages) ++n[p];
    for (const auto& [page, count] : n) slots[page] = std::max(slots[page], count);
  }
  for (const auto& [page, count] : slots) pool.block_stride_bytes += page * count;

  // Concurrency: each group's pages weighed by its page bytes, over group 0's.
  int64_t weighted = 0;
  for (VllmDsv4Pool::Group& g : pool.groups) {
    g.pages_per_request =
        g.full ? ceil_div(max_model_len, g.block_tokens)
               : ceil_div(std::min<int64_t>(g.window_tokens - 1 + max_num_batched_tokens, max_model_len), g.block_tokens) + 1;
    int64_t bytes = 0;
    for (int64_t p : g.pages) bytes += p;
    weighted += g.pages_per_request * bytes;
  }
  int64_t first = 0;
  for (int64_t p : pool.groups.front().pages) first += p;
  pool.blocks_per_request = ceil_div(weighted, first);
  return pool;
}

}  // namespace kvplan
