// kvplan/core/sglang_dsv4_pool.h — SGLang's KV pools for DeepSeek-V4 (DSV4PoolConfigurator).
//
//   SglangDsv4Shape shape = sglang_dsv4_shape(model, version, first_layer, last_layer);
//   SglangDsv4Pool pool = sglang_dsv4_pool(shape, kv_budget_bytes);
//   pool.full_tokens;   // max_total_num_tokens, what SGLang prints and admits requests against
//
// SGLang keeps one pool per kind of DeepSeek-V4 cache (mem_cache/deepseek_v4_memory_pool.py) and
// sizes them together from one "full token" count F (model_executor/pool_configurator.py
// DSV4PoolConfigurator): the latent windows of every layer in a sliding pool of r·F tokens
// (swa_full_tokens_ratio r, 0.1 for DeepSeek-V4: arg_groups/overrides.py), the compressed latents
// in F/4 (ratio-4 layers) and F/128 (ratio-128) entries, the indexer keys in F/4, and the
// compressors' ring states in per-window slots of the sliding pool. Each pool's bytes over F is
// `bytes_per_full_token` (logged as "DSV4 memory calculation: bytes_per_full_token=..."):
//   K = nope + 2 rope + 8 (584 B: fp8 nope, bf16 rope, scales), I = index_dim + index_dim/128 x 4 (132 B)
//   bpft = r K N + K N4/4 + K N128/128 + I N4/4
//        + r (ring4/window) (2 x 2 x head_dim + 2 x 2 x index_dim) s N4      (ratio-4 compressor states)
//        + [<= 0.5.12 only] r (ring128/window) (2 x head_dim) s N128        (ratio-128 compressor states)
// with s the state dtype's bytes (fp32; SGLANG_DSV4_COMPRESS_STATE_DTYPE=bf16 makes it 2 from 0.5.15),
// rings of 8 (ratio 4) and 128 (ratio 128) slots without speculative decoding. Then
//   F = floor(floor((budget - fixed) / bpft) / page) x page,  sliding pool = floor(floor(r F) / page) x page
// Two generations of the rule, each reproduced from published logs (docs/benchmarks.md):
//   - 0.5.12 and before: N counts every entry of compress_ratios (the MTP block's too: 44 for Flash,
//     62 for Pro) whatever the pipeline stage, and the ratio-128 states are a per-token term;
//   - 0.5.15 on: N counts the stage's layers (compress_ratios[start:end]), and the ratio-128 states
//     are a fixed term, rows = ceil128((max_running_requests + 1) x 128 + 129) of 2 x head_dim x s
//     per ratio-128 layer, with max_running_requests SGLang's estimate when none is given:
//     min(clamp(int(F0 / context_len x 512), 2048, 4096), F0 / 2), F0 = floor(budget / bpft).
// Releases between 0.5.12.post1 and 0.5.15 are not confirmed either way (kvplan uses the 0.5.15 rule).
#pragma once

#include <cstdint>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

inline constexpr double kSglangDsv4SwaRatio = 0.1;  // arg_groups/overrides.py: DeepSeek-V4's swa_full_tokens_ratio
inline constexpr int kSglangDsv4PageTokens = 256;   // server_args page_size for DeepSeek-V4

struct SglangDsv4Shape {
  int nope_dim = 0;
  int rope_dim = 0;
  int index_head_dim = 0;
  int window = 0;        // the latent window: one compressor-state slot per `window` sliding tokens
  int layers = 0;        // N, counted by the release's rule
  int layers_c4 = 0;     // N4
  int layers_c128 = 0;   // N128
  bool c128_state_fixed = true;  // from 0.5.15: the ratio-128 states are a fixed term
  double swa_ratio = kSglangDsv4SwaRatio;
  int state_bytes = 4;            // the compressor states' dtype
  int page_tokens = kSglangDsv4PageTokens;
  int64_t max_running_requests = 0;  // per worker; 0: SGLang's estimate (0.5.15 on)
  int64_t context_len = 0;           // the estimate's context length
};

struct SglangDsv4Pool {
  double bytes_per_full_token = 0;
  int64_t c128_state_fixed_bytes = 0;
  int64_t c128_state_requests = 0;  // the max_running_requests the fixed term was sized for
  int64_t full_tokens = 0;          // max_total_num_tokens
  int64_t swa_tokens = 0;
  int64_t c4_tokens = 0;
  int64_t c128_tokens = 0;
  int64_t c4_state_slots = 0;
};

// The shape of `model`'s pipeline-stage layers [first_layer, last_layer) under SGLang `version`.
// Throws ConfigError when the model has no compressed attention.
SglangDsv4Shape sglang_dsv4_shape(const ModelConfig& model, const EngineVersion& version, int first_layer,
                                  int last_layer);

SglangDsv4Pool sglang_dsv4_pool(const SglangDsv4Shape& shape, int64_t kv_budget_bytes);

// Sizes SGLang's pools for pipeline stage `stage` from `plan.kv_budget_bytes` (SGLang's
// available_bytes) and sets the plan's pool figures: tokens (F), blocks of `page_tokens`, the
// concurrency at max_model_len (F / max_model_len) and a note with every term.
void apply_sglang_dsv4_pool(const ModelConfig& model, const ServingConfig& config, const Parallelism& parallel,
                            int stage, int page_tokens, MemoryPlan& plan);

}  // namespace kvplan
