// kvplan/kernels/reference/block_copy_ref.h — CPU references of block copy and swap: the same Params
// with host pointers; the inputs are left unchanged and the expected destination caches are returned
// (every byte, untouched blocks included), so tests compare them with the device result exactly.
//
//   CacheBytes after = block_copy_ref(params);      // expected k_cache / v_cache after the copy
//   CacheBytes host_after = swap_out_ref(swap);      // expected host caches after swap_out
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/kernels/block_copy.h"

namespace kvplan::kernels {

struct CacheBytes {
  std::vector<uint16_t> k_cache;
  std::vector<uint16_t> v_cache;  // empty when the Params have no v cache
};

// Throw std::invalid_argument for whatever block_copy_params_problem / block_swap_params_problem
// report (for swaps that includes ids, which the launcher checks on the host too), and
// block_copy_ref throws std::out_of_range for a block id outside [0, num_blocks) (device data for the
// launcher, so only the reference can reject it). Sources are read from the unchanged inputs.
CacheBytes block_copy_ref(const BlockCopyParams& p);
CacheBytes swap_out_ref(const BlockSwapParams& p);  // returns the host caches
CacheBytes swap_in_ref(const BlockSwapParams& p);   // returns the device caches

}  // namespace kvplan::kernels
