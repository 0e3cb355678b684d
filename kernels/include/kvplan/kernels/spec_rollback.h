// kvplan/kernels/spec_rollback.h — KV rollback after speculative verification: the cache held every
// draft token, some were rejected; truncate the sequence and free the blocks past its new end.
// Host-only (no CUDA): block tables live on the host and are uploaded each step.
//
//   SpecRollback r = spec_rollback(table, /*cached_len=*/ctx + k + 1, /*num_draft=*/k, /*num_accepted=*/a, 16);
//   if (!r.problem.empty()) ...;  free(r.freed_blocks);  table.resize(r.kept_blocks);  len = r.new_len;
//
// With spec_verify.h's positions: before rollback the cache holds cached_len = context_len + k + 1
// tokens (context, the last sampled token, k drafts); accepting a drafts keeps the first
// cached_len - (k - a) of them. Rejected K/V left inside the last kept block need no clearing: they
// are past new_len, so no kernel reads them, and the next write overwrites them. Only whole blocks
// past the new end are freed, so a rollback never touches a block the sequence still uses
// (important with prefix sharing: kept blocks are never freed here, whatever their reference count).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvplan::kernels {

struct SpecRollback {
  std::string problem;                // empty when the inputs were valid; otherwise why (nothing else is set)
  int new_len = 0;                    // cached_len - (num_draft - num_accepted)
  int kept_blocks = 0;                // ceil(new_len / tokens_per_block): the table's new length
  std::vector<int32_t> freed_blocks;  // block_table[kept_blocks .. ceil(cached_len / tokens_per_block)), in table order
};

// block_table holds at least ceil(cached_len / tokens_per_block) entries (more are ignored: the
// table's allocated-but-unused tail is the caller's business). Requires tokens_per_block >= 1,
// 0 <= num_accepted <= num_draft <= cached_len.
SpecRollback spec_rollback(std::span<const int32_t> block_table, int cached_len, int num_draft, int num_accepted,
                           int tokens_per_block);

}  // namespace kvplan::kernels
