// KV rollback after speculative verification (spec_rollback.h).
#include "kvplan/kernels/spec_rollback.h"

#include <cassert>

namespace kvplan::kernels {

SpecRollback spec_rollback(std::span<const int32_t> block_table, int cached_len, int num_draft, int num_accepted,
                           int tokens_per_block) {
  SpecRollback r;
  if (tokens_per_block < 1) {
    r.problem = "tokens_per_block=" + std::to_string(tokens_per_block) + " must be >= 1";
    return r;
  }
  if (num_accepted < 0 || num_accepted > num_draft || num_draft > cached_len) {
    r.problem = "need 0 <= num_accepted=" + std::to_string(num_accepted) + " <= num_draft=" + std::to_string(num_draft) +
                " <= cached_len=" + std::to_string(cached_len);
    return r;
  }
  const int64_t used_blocks = (int64_t{cached_len} + tokens_per_block - 1) / tokens_per_block;
  if (static_cast<int64_t>(block_table.size()) < used_blocks) {
    r.problem = "block_table has " + std::to_string(block_table.size()) + " entries, cached_len=" +
                std::to_string(cached_len) + " needs " + std::to_string(used_blocks);
    return r;
  }
  r.new_len = cached_len - (num_draft - num_accepted);
  r.kept_blocks = static_cast<int>((int64_t{r.new_len} + tokens_per_block - 1) / tokens_per_block);
  r.freed_blocks.assign(block_table.begin() + r.kept_blocks, block_table.begin() + used_blocks);
  // Invariants: the kept blocks hold new_len tokens with the last one non-empty (or none at all).
  assert(int64_t{r.kept_blocks} * tokens_per_block >= r.new_len);
  assert(r.kept_blocks == 0 || int64_t{r.kept_blocks - 1} * tokens_per_block < r.new_len);
  return r;
}

}  // namespace kvplan::kernels
