// CPU references of block copy and swap: std::copy of whole blocks, pairs applied in order.
#include "kvplan/kernels/reference/block_copy_ref.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvplan::kernels {
namespace {

// Copies block src of `from` over block dst of `to` (both arrays of `block` elements per block).
void copy_block(const uint16_t* from, int64_t from_blocks, std::vector<uint16_t>& to, int64_t src, int64_t dst,
                int64_t block) {
  const int64_t to_blocks = static_cast<int64_t>(to.size()) / block;
  if (src < 0 || src >= from_blocks || dst < 0 || dst >= to_blocks)
    throw std::out_of_range("block pair (" + std::to_string(src) + ", " + std::to_string(dst) + ") outside [0, " +
                            std::to_string(from_blocks) + ") x [0, " + std::to_string(to_blocks) + ")");
  std::copy(from + src * block, from + (src + 1) * block, to.begin() + dst * block);
}

CacheBytes swap_ref(const BlockSwapParams& p, bool swap_out) {
  if (const std::string problem = block_swap_params_problem(p, swap_out); !problem.empty())
    throw std::invalid_argument(std::string(swap_out ? "swap_out_ref: " : "swap_in_ref: ") + problem);
  const int64_t block = block_elems(p.num_kv_heads, p.tokens_per_block, p.head_dim);
  const int64_t src_blocks = swap_out ? p.num_device_blocks : p.num_host_blocks;
  const int64_t dst_blocks = swap_out ? p.num_host_blocks : p.num_device_blocks;
  const uint16_t* src_k = swap_out ? p.device_k_cache : p.host_k_cache;
  const uint16_t* src_v = swap_out ? p.device_v_cache : p.host_v_cache;
  const uint16_t* dst_k = swap_out ? p.host_k_cache : p.device_k_cache;
  const uint16_t* dst_v = swap_out ? p.host_v_cache : p.device_v_cache;
  CacheBytes r;
  r.k_cache.assign(dst_k, dst_k + dst_blocks * block);
  if (dst_v) r.v_cache.assign(dst_v, dst_v + dst_blocks * block);
  for (int64_t i = 0; i < p.num_pairs; ++i) {
    copy_block(src_k, src_blocks, r.k_cache, p.block_pairs[2 * i], p.block_pairs[2 * i + 1], block);
    if (src_v) copy_block(src_v, src_blocks, r.v_cache, p.block_pairs[2 * i], p.block_pairs[2 * i + 1], block);
  }
  return r;
}

}  // namespace

CacheBytes block_copy_ref(const BlockCopyParams& p) {
  if (const std::string problem = block_copy_params_problem(p); !problem.empty())
    throw std::invalid_argument("block_copy_ref: " + problem);
  const int64_t block = block_elems(p.num_kv_heads, p.tokens_per_block, p.head_dim);
  const int64_t total = p.num_blocks * block;
  CacheBytes r;
  r.k_cache.assign(p.k_cache, p.k_cache + total);
  if (p.v_cache) r.v_cache.assign(p.v_cache, p.v_cache + total);
  // Reads the input caches, like the kernel: with the documented precondition (no dst is a src) this
  // equals applying the pairs one after another.
  for (int64_t i = 0; i < p.num_pairs; ++i) {
    const int64_t src = p.block_pairs[2 * i], dst = p.block_pairs[2 * i + 1];
    copy_block(p.k_cache, p.num_blocks, r.k_cache, src, dst, block);
    if (p.v_cache) copy_block(p.v_cache, p.num_blocks, r.v_cache, src, dst, block);
  }
  return r;
}

CacheBytes swap_out_ref(const BlockSwapParams& p) { return swap_ref(p, true); }
CacheBytes swap_in_ref(const BlockSwapParams& p) { return swap_ref(p, false); }

}  // namespace kvplan::kernels
