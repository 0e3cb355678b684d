// SGLang's DeepSeek-V4 pools (sglang_dsv4_pool.h): bytes per full token, the fixed ratio-128 state
// term and the pool sizes, in SGLang's order of operations (Python floats are doubles).
#include "kvplan/core/sglang_dsv4_pool.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/number_text.h"

namespace kvplan {

namespace {

constexpr int kRingC4 = 8;      // get_compress_state_ring_size(4), no speculative decoding
constexpr int kRingC128 = 128;  // get_compress_state_ring_size(128)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// DSV4PoolConfigurator._get_c128_state_fixed_bytes (not online compression, not disaggregated decode).
int64_t c128_state_fixed_bytes(const SglangDsv4Shape& s, int64_t max_running_requests) {
  if (s.layers_c128 == 0) return 0;
  const int64_t slots = max_running_requests + 1;
  const int64_t rows = ceil_div(slots * kRingC128 + kRingC128 + 1, 128) * 128;
  const int64_t head_dim = s.nope_dim + s.rope_dim;
  return rows * 2 * head_dim * s.state_bytes * s.layers_c128;
}

}  // namespace

SglangDsv4Shape sglang_dsv4_shape(const ModelConfig& m, const EngineVersion& v, int first_layer, int last_layer) {
  const CompressedAttentionShape& a = m.compressed;
  if (a.head_dim <= 0 || m.count_layers(LayerKind::kCompressedAttention) == 0) {
    throw ConfigError(fmt::format("model '{}': SGLang's DeepSeek-V4 pools need compressed-attention layers", m.id));
  }
  SglangDsv4Shape s;
  s.nope_dim = a.head_dim - a.rope_dim;
  s.rope_dim = a.rope_dim;
  s.index_head_dim = a.index_head_dim;
  s.window = a.window;
  s.c128_state_fixed = !(v.major == 0 && (v.minor < 5 || (v.minor == 5 && v.patch <= 12)));
  const int n = static_cast<int>(m.layers.size());
  // <= 0.5.12: every layer and every listed MTP entry (ratio 0); 0.5.15: the stage's slice.
  const int from = s.c128_state_fixed ? std::clamp(first_layer, 0, n) : 0;
  const int to = s.c128_state_fixed ? std::clamp(last_layer, from, n) : n;
  for (int i = from; i < to; ++i) {
    const LayerSpec& l = m.layers[static_cast<size_t>(i)];
    s.layers_c4 += l.kind == LayerKind::kCompressedAttention && l.compress_ratio == 4 ? 1 : 0;
    s.layers_c128 += l.kind == LayerKind::kCompressedAttention && l.compress_ratio == 128 ? 1 : 0;
  }
  s.layers = s.c128_state_fixed ? to - from : std::max(a.ratio_entries, n);
  return s;
}

SglangDsv4Pool sglang_dsv4_pool(const SglangDsv4Shape& s, int64_t kv_budget_bytes) {
  if (s.page_tokens <= 0 || s.page_tokens % 128 != 0) {
    throw ConfigError(fmt::format(
        "page size {} must be a multiple of 128 for DeepSeek-V4 in SGLang (\"page_size must be multiple of 128 for "
        "compressed attention\")",
        s.page_tokens));
  }
  if (s.window <= 0 || s.nope_dim <= 0) throw ConfigError("SGLang DeepSeek-V4 pool: no latent window in the shape");
  const double kv = s.nope_dim + s.rope_dim * 2 + 8;
  const double indexer = s.index_head_dim + s.index_head_dim / 128 * 4;
  const double head_dim = s.nope_dim + s.rope_dim;
  const double c4_state = 2.0 * 2 * head_dim * s.state_bytes;
  const double c128_state = 2.0 * 1 * head_dim * s.state_bytes;
  const double c4_indexer_state = 2.0 * 2 * s.index_head_dim * s.state_bytes;
  const double c4_ratio = static_cast<double>(kRingC4) / s.window;
  const double c128_ratio = s.c128_state_fixed ? 0.0 : static_cast<double>(kRingC128) / s.window;
  const double c4_frac = 1.0 / 4;

  SglangDsv4Pool pool;
  // The sum in _get_bytes_per_full_token's order, each product left to right.
  pool.bytes_per_full_token = s.swa_ratio * kv * s.layers + c4_frac * kv * s.layers_c4 +
                              1.0 / 128 * kv * s.layers_c128 + 1.0 / 4 * indexer * s.layers_c4 +
                              s.swa_ratio * c4_ratio * c4_state * s.layers_c4 +
                              (s.c128_state_fixed ? 0.0 : s.swa_ratio * c128_ratio * c128_state * s.layers_c128) +
                              s.swa_ratio * c4_ratio * c4_indexer_state * s.layers_c4;
  if (kv_budget_bytes <= 0) return pool;
  const double budget = static_cast<double>(kv_budget_bytes);
  if (s.c128_state_fixed) {
    int64_t requests = s.max_running_requests;
    if (requests <= 0) {
      // _get_c128_state_fixed_bytes_for_token_capacity: SGLang's estimate before it knows the limit.
      const auto first = static_cast<int64_t>(budget / pool.bytes_per_full_token);
      auto estimated = s.context_len > 0 ? static_cast<int64_t>(static_cast<double>(first) /
                                                               static_cast<double>(s.context_len) * 512)
                                         : 0;
      estimated = std::max<int64_t>(std::min<int64_t>(estimated, 4096), 2048);
      requests = std::min(estimated, first / 2);
    }
    pool.c128_state_requests = requests;
    pool.c128_state_fixed_bytes = c128_state_fixed_bytes(s, requests);
  }
  const double for_tokens = std::max(budget - static_cast<double>(pool.c128_state_fixed_bytes), 0.0);
  const auto full = static_cast<int64_t>(for_tokens / pool.bytes_per_full_token);
  pool.full_tokens = full / s.page_tokens * s.page_tokens;
  pool.swa_tokens =
      static_cast<int64_t>(static_cast<double>(pool.full_tokens) * s.swa_ratio) / s.page_tokens * s.page_tokens;
  pool.c4_tokens = pool.full_tokens / 4;
  pool.c128_tokens = pool.full_tokens / 128;
  pool.c4_state_slots = pool.swa_tokens / s.window * kRingC4;
  return pool;
}

void apply_sglang_dsv4_pool(const ModelConfig& m, const ServingConfig& c, const Parallelism& p, int stage,
                            int page_tokens, MemoryPlan& plan) {
  const auto [first, last] = pipeline_stage_layers(static_cast<int>(m.layers.size()), p.pipeline_parallel, stage);
  SglangDsv4Shape shape = sglang_dsv4_shape(m, c.version, first, last);
  shape.page_tokens = page_tokens;
  shape.max_running_requests = c.max_num_seqs;  // per worker: kvplan has no attention data parallelism here
  shape.context_len = plan.max_model_len;
  const SglangDsv4Pool pool = sglang_dsv4_pool(shape, plan.kv_budget_bytes);
  plan.tokens_per_block = page_tokens;
  plan.kv_cache_tokens = pool.full_tokens;
  plan.num_blocks = pool.full_tokens / page_tokens;
  plan.block_bytes = static_cast<int64_t>(std::llround(pool.bytes_per_full_token * page_tokens));
  plan.max_concurrency = plan.max_model_len > 0 ? static_cast<double>(pool.full_tokens) /
                                                      static_cast<double>(plan.max_model_len)
                                                : 0;
  plan.requests_at_max_len = plan.max_model_len > 0 ? pool.full_tokens / plan.max_model_len : 0;
  std::string fixed;
  if (shape.c128_state_fixed && shape.layers_c128 > 0) {
    fixed = fmt::format(
        "; minus the ratio-128 compressor states as a fixed {} B ({:.2f} GiB) for {} running requests ({}), before "
        "dividing",
        with_commas(pool.c128_state_fixed_bytes), static_cast<double>(pool.c128_state_fixed_bytes) / (1024.0 * 1024 * 1024),
        pool.c128_state_requests,
        shape.max_running_requests > 0 ? "--max-num-seqs"
                                       : "SGLang's estimate: no --max-num-seqs, SGLang's --max-running-requests, given");
  }
  plan.notes.push_back(fmt::format(
      "SGLang's DeepSeek-V4 pools (pool_configurator.py DSV4PoolConfigurator, the {} rule): bytes_per_full_token = "
      "{:.2f} over {} layers ({} ratio-4, {} ratio-128{}), with the latent windows in a sliding pool of "
      "swa_full_tokens_ratio {} and fp32 compressor states{}; max_total_num_tokens = {} (page {}), sliding pool {}, "
      "compressed {} (1/4) and {} (1/128). Speculative decoding (MTP) would scale the bytes per token by (N + 1) / N "
      "and double the ratio-4 rings: not counted here",
      shape.c128_state_fixed ? ">= 0.5.15" : "<= 0.5.12", pool.bytes_per_full_token, shape.layers, shape.layers_c4,
      shape.layers_c128,
      shape.c128_state_fixed ? "" : "; every compress_ratios entry, the MTP block's too, on every pipeline stage",
      shape.swa_ratio, fixed, with_commas(pool.full_tokens), page_tokens, with_commas(pool.swa_tokens),
      with_commas(pool.c4_tokens), with_commas(pool.c128_tokens)));
}

}  // namespace kvplan
