// kvplan/kernels/block_copy.h — moving whole blocks of a paged KV cache: copy-on-write copies between
// device blocks, and swapping blocks out to / in from pinned host memory (offload, swap preemption).
//
//   BlockCopyParams c;  c.k_cache = k;  c.v_cache = v;  c.block_pairs = pairs;  c.num_pairs = 2;  ...
//   Status s = launch_block_copy(c, stream);          // one kernel, 16-byte copies
//   Status t = launch_swap_out(swap, stream);          // cudaMemcpyAsync batch, device -> pinned host
//
// Pairs are always (src, dst) in the direction of the copy: for swap_out (device_block, host_block),
// for swap_in (host_block, device_block). The copy is bitwise, so the element type does not matter;
// the 16-bit element and the shape only size a block:
//   block_elems = num_kv_heads * tokens_per_block * head_dim.
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

struct BlockCopyParams {
  uint16_t* k_cache = nullptr;  // [num_blocks, num_kv_heads, tokens_per_block, head_dim] device
  uint16_t* v_cache = nullptr;  // [num_blocks, num_kv_heads, tokens_per_block, head_dim] device, or
                                // nullptr for a single-tensor cache (e.g. an MLA latent cache)
  const int64_t* block_pairs = nullptr;  // [num_pairs, 2] (src_block, dst_block), device memory
  int64_t num_pairs = 0;
  int num_blocks = 0;
  int num_kv_heads = 0;
  int tokens_per_block = 0;
  int head_dim = 0;
};

// Copies block src -> dst in k_cache (and v_cache) for every pair. Requirements: block_elems a
// multiple of 8 and the caches 16-byte aligned (16-byte copies); num_pairs <= 2^31 - 1. Preconditions
// on device data: no dst is also a src or another pair's dst in the same call (CoW targets are fresh
// blocks), otherwise the result depends on CTA order. A pair with an id outside [0, num_blocks) is
// skipped by the kernel rather than writing out of bounds; the block manager must not produce one.
Status launch_block_copy(const BlockCopyParams& p, Stream stream);

struct BlockSwapParams {
  uint16_t* device_k_cache = nullptr;  // [num_device_blocks, num_kv_heads, tokens_per_block, head_dim]
  uint16_t* device_v_cache = nullptr;  // same shape, or nullptr (then host_v_cache must be too)
  uint16_t* host_k_cache = nullptr;    // [num_host_blocks, num_kv_heads, tokens_per_block, head_dim] pinned host
  uint16_t* host_v_cache = nullptr;    // same shape, pinned host, or nullptr
  const int64_t* block_pairs = nullptr;  // [num_pairs, 2] (src_block, dst_block), HOST memory (read at call)
  int64_t num_pairs = 0;
  int num_device_blocks = 0;
  int num_host_blocks = 0;
  int num_kv_heads = 0;
  int tokens_per_block = 0;
  int head_dim = 0;
};

inline int64_t block_elems(int num_kv_heads, int tokens_per_block, int head_dim) {
  return static_cast<int64_t>(num_kv_heads) * tokens_per_block * head_dim;
}

// Host-checkable problems (empty string when none), shared by launchers and references. The kernel
// launcher additionally needs block_elems % 8 == 0 and 16-byte aligned caches.
inline std::string block_copy_params_problem(const BlockCopyParams& p) {
  if (!p.k_cache) return "k_cache must be non-null";
  if (p.num_pairs < 0) return "num_pairs=" + std::to_string(p.num_pairs) + " must be >= 0";
  if (p.num_pairs > 0 && !p.block_pairs) return "block_pairs must be non-null when num_pairs > 0";
  if (p.num_blocks < 1 || p.num_kv_heads < 1 || p.tokens_per_block < 1 || p.head_dim < 1)
    return "num_blocks, num_kv_heads, tokens_per_block and head_dim must be >= 1";
  return {};
}

// `swap_out` selects which side the src ids index. Also checks every id (block_pairs is host memory).
inline std::string block_swap_params_problem(const BlockSwapParams& p, bool swap_out) {
  if (!p.device_k_cache || !p.host_k_cache) return "device_k_cache and host_k_cache must be non-null";
  if ((p.device_v_cache == nullptr) != (p.host_v_cache == nullptr))
    return "device_v_cache and host_v_cache must be both null or both non-null";
  if (p.num_pairs < 0) return "num_pairs=" + std::to_string(p.num_pairs) + " must be >= 0";
  if (p.num_pairs > 0 && !p.block_pairs) return "block_pairs must be non-null when num_pairs > 0";
  if (p.num_device_blocks < 1 || p.num_host_blocks < 1 || p.num_kv_heads < 1 || p.tokens_per_block < 1 || p.head_dim < 1)
    return "num_device_blocks, num_host_blocks, num_kv_heads, tokens_per_block and head_dim must be >= 1";
  const int64_t src_limit = swap_out ? p.num_device_blocks : p.num_host_blocks;
  const int64_t dst_limit = swap_out ? p.num_host_blocks : p.num_device_blocks;
  for (int64_t i = 0; i < p.num_pairs; ++i) {
    const int64_t src = p.block_pairs[2 * i], dst = p.block_pairs[2 * i + 1];
    if (src < 0 || src >= src_limit || dst < 0 || dst >= dst_limit)
      return "pair " + std::to_string(i) + " (" + std::to_string(src) + ", " + std::to_string(dst) +
             ") outside [0, " + std::to_string(src_limit) + ") x [0, " + std::to_string(dst_limit) + ")";
  }
  return {};
}

// swap_out: pairs are (device_block, host_block); swap_in: (host_block, device_block). Issued as
// cudaMemcpyAsync calls on `stream`, one per run of consecutive src and dst ids per cache (so a
// sequence's contiguous blocks go as one copy); returns after enqueueing. Ids are checked on the host
// (params error, nothing enqueued). The host caches must be pinned (cudaHostAlloc/cudaHostRegister):
// a pageable buffer is rejected because the copy would silently become synchronous. Why copy engines
// and not a kernel reading mapped pinned memory: the DMA engines reach full PCIe/C2C bandwidth
// without occupying SMs, so a swap overlaps with attention running on another stream, which is what
// the step DAG models; a zero-copy kernel would compete with compute for SMs.
Status launch_swap_out(const BlockSwapParams& p, Stream stream);
Status launch_swap_in(const BlockSwapParams& p, Stream stream);

}  // namespace kvplan::kernels
