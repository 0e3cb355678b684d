// kvplan/sim/request.h — one request as a workload or trace describes it (before it is served).
//
//   RequestSpec r{.id = 0, .arrival_ns = 0, .prompt_tokens = 374, .output_tokens = 44};
//   r.prefix_hashes = {11, 12};  r.hash_block_tokens = 512;   // first 1024 prompt tokens shareable
//
// Prefix identity: prefix_hashes[i] names the content of prompt tokens
// [i * hash_block_tokens, (i + 1) * hash_block_tokens). Two requests whose lists agree on the first
// k entries share their first k * hash_block_tokens prompt tokens (Mooncake's hash_ids, with 512
// tokens per hash block; synthetic multi-turn conversations use the same convention). Only whole
// hash blocks are listed, so the list holds at most identity_tokens / hash_block_tokens entries.
// identity_tokens is how far the content identity reaches: the prompt for traces, the prompt and the
// answer for a conversation turn (its answer is part of the next turn's prompt, so the engine's
// cached KV of the answer is reusable, as vLLM's and SGLang's caches reuse it).
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/sim/time.h"

namespace kvplan::sim {

struct RequestSpec {
  int64_t id = 0;              // unique; open-loop sources number requests in arrival order
  TimeNs arrival_ns = 0;
  int32_t prompt_tokens = 1;   // >= 1
  int32_t output_tokens = 1;   // >= 1 (tokens generated, the first one included)
  int32_t user = -1;           // closed-loop user / conversation, -1 for open-loop requests
  int32_t turn = 0;            // turn within a conversation
  int32_t hash_block_tokens = 0;       // 0: no prefix identity
  std::vector<uint64_t> prefix_hashes;  // see above
  int64_t identity_tokens = 0;          // 0: prompt_tokens (see above)

  int64_t total_tokens() const { return int64_t{prompt_tokens} + output_tokens; }
};

}  // namespace kvplan::sim
