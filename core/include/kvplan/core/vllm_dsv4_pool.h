// kvplan/core/vllm_dsv4_pool.h — vLLM's KV pool for DeepSeek-V4 (v0.25 / v0.26 allocator rules).
//
//   VllmDsv4Pool pool = vllm_dsv4_pool(layout, 256, 1048576, 4096);
//   int64_t blocks = budget / pool.block_stride_bytes;                 // vLLM's num_blocks
//   double concurrency = double(blocks) / pool.blocks_per_request;     // "Maximum concurrency"
//
// Every DeepSeek-V4 layer registers several caches (deepseek_v4_attention.py, sparse_swa.py,
// deepseek_compressor.py); kvplan's layout has them as groups (kv_layout.h compressed_attention):
//   - "full" caches, block B tokens (--block-size; DeepSeek-V4's preferred 256): the compressed
//     latents, (B / r) x 584 B per page, and the indexer keys, (B / 4) x 132 B;
//   - sliding-window caches: the latent window, block 64, window 128, 64 x 584 B per page; each
//     compressor's fp32 state, block 4 (r = 4) or 8 (r = 128), over coff x r tokens;
//   - every page rounded up to a multiple of 576 B (FlashMLA's alignment), a sliding-window page
//     then up to the smallest full page that holds it.
// Grouping (kv_cache_utils.py, the uniform-groups rule): all full caches form group 0; the
// sliding-window caches are bucketed by (block, window), each bucket cut into ceil(n / T) groups,
// where n is its layers per page size and T the approximate common divisor of every group's count
// (the d >= group 0's count that pads least, the larger on ties). One block id takes, per page size,
// as many pages as the group with the most of them (the packed layout): the stride. A request of L
// tokens takes ceil(L / B) pages in a full group and ceil(min(window - 1 + max_num_batched_tokens,
// L) / block) + 1 in a sliding one; vLLM weighs each group's pages by its page bytes and divides by
// group 0's (get_max_concurrency_for_kv_cache_config): blocks_per_request.
// Reproduces two published logs exactly (docs/benchmarks.md, start-up logs): vLLM 0.25.0 on 2 x RTX
// PRO 6000 (10,631 blocks, 1.90x, 1,993,100 tokens at 1,048,576) and 0.26.0 on 2 x H20 (1.11x,
// 1,009,661 tokens at 912,128). Newer vLLM changed both the stride and the concurrency rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/kv_layout.h"

namespace kvplan {

struct VllmDsv4Pool {
  struct Group {
    bool full = false;
    int block_tokens = 0;
    int window_tokens = 0;           // sliding groups
    std::vector<int64_t> pages;      // one padded page per layer cache in the group
    int64_t pages_per_request = 0;   // at max_model_len
  };
  int block_tokens = 0;   // the full caches' block (B)
  int group_size = 0;     // T
  std::vector<Group> groups;
  int64_t block_stride_bytes = 0;   // bytes of one block id across every group
  int64_t blocks_per_request = 0;   // one request of max_model_len, in group-0 blocks
};

// `draft_window_layers`: extra latent-window caches of MTP draft layers (vLLM registers one per
// MTP layer when speculative decoding uses it; 0 otherwise). Throws ConfigError for a layout that is
// not DeepSeek-V4's or whose buckets vLLM could not group.
VllmDsv4Pool vllm_dsv4_pool(const KvLayout& layout, int block_tokens, int64_t max_model_len,
                            int64_t max_num_batched_tokens, int draft_window_layers = 0);

}  // namespace kvplan
