// kvplan/core/sglang_swa.h — SGLang's hybrid sliding-window KV pools.
//
//   std::string why;
//   if (sglang_uses_hybrid_swa(model, sm100, version, &why)) {
//     SglangSwaPools p = sglang_hybrid_swa_pools(layout, kv_budget_bytes, kSglangSwaFullTokensRatio);
//   }
//
// For the architectures on SGLang's allowlist (configs/model_config.py is_hybrid_swa_model: gpt-oss,
// Gemma-4, Llama-4's chunked layers, ...) SGLang keeps two token pools: one for the full-attention
// layers and one, `swa_full_tokens_ratio` (0.8) as large, for the sliding-window (or chunked) layers,
// whose out-of-window tokens it frees. model_executor/pool_configurator.py HybridSWAPoolConfigurator
// (after PR #18039, 2026-01-31):
//   cell = F·n_full + ratio·S·n_swa      (per-token bytes of one full and one sliding layer)
//   full = floor(kv_budget / cell),  swa = floor(full · ratio)
// and the scheduler's max_total_num_tokens ("#tokens") is `full`. Before that PR SGLang counted
// every layer at one size; the result is the same when full and sliding layers cost the same per
// token (gpt-oss, Llama-4). Sources and a public log: docs/benchmarks.md ("SGLang's hybrid SWA pools").
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

inline constexpr double kSglangSwaFullTokensRatio = 0.8;  // server_args.py swa_full_tokens_ratio default

// Whether this SGLang release splits the pool for `model` on a GPU of compute capability 10.x
// (`sm100`: B200, GB200, B300, GB300), with the reason either way in `why`:
//   - Gemma-4: always (on the allowlist from its first SGLang support);
//   - gpt-oss: from 0.5.9 (earlier server_args forced disable_hybrid_swa_memory), except on sm100
//     where its default attention backend, trtllm_mha, turns the split off;
//   - Llama-4 (chunked layers as the sliding ones): from 0.5.9 (the earliest release the allowlist is
//     confirmed for; earlier ones needed --hybrid-kvcache-ratio);
//   - every other model (Gemma-2/3, Mistral's sliding window, ...): no, one pool.
bool sglang_uses_hybrid_swa(const ModelConfig& model, bool sm100, const EngineVersion& version, std::string* why);

struct SglangSwaPools {
  int64_t cell_bytes = 0;        // F·n_full + ratio·S·n_swa, rounded down as SGLang's float product is
  int64_t full_tokens = 0;       // tokens of every full-attention layer (the printed #tokens)
  int64_t swa_tokens = 0;        // tokens of every sliding-window layer
  int64_t full_layer_bytes = 0;  // F·n_full: one token in all full-attention layers on this GPU
  int64_t swa_layer_bytes = 0;   // S·n_swa: one token in all sliding layers on this GPU
};
// The two pools for `kv_budget_bytes` (page size 1, SGLang's default). Sliding and chunked groups
// go to the SWA pool, every other per-token group to the full pool; recurrent state is not part of
// either (callers do not use this rule for such models).
SglangSwaPools sglang_hybrid_swa_pools(const KvLayout& layout, int64_t kv_budget_bytes, double ratio);

}  // namespace kvplan
