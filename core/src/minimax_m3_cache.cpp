// The engines' pool rules for MiniMax-M3's sparse-attention caches (minimax_m3_cache.h).
#include "kvplan/core/minimax_m3_cache.h"

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

void apply_msa_engine_rules(const ModelConfig& m, const ServingConfig& c, KvScheme& s, std::vector<std::string>& notes) {
  if (m.msa.index_head_dim == 0) return;
  if (c.engine != Engine::kVllm && c.engine != Engine::kSglang) {
    throw ConfigError(fmt::format(
        "model '{}': the {} KV pool for MiniMax-M3's sparse attention (K / V plus the index-key cache) is not modelled "
        "yet; kvplan answers MiniMax-M3 under vLLM and SGLang only (--engine vllm or sglang)",
        m.id, engine_name(c.engine)));
  }
  const int block = m.msa.block_size;
  if (c.engine == Engine::kVllm && s.tokens_per_block != block) {
    notes.push_back(fmt::format(
        "vLLM pages MiniMax-M3's caches in blocks of {} tokens, its sparse_block_size, not {}: "
        "MiniMaxM3SparseBackend supports no other kernel block size (the vLLM recipe makes --block-size {} mandatory)",
        block, s.tokens_per_block, block));
    s.tokens_per_block = block;
  }
  if (c.engine == Engine::kVllm && !c.version.at_least(0, 24)) {
    notes.push_back(fmt::format(
        "vLLM {} predates MiniMax-M3 support (0.24.0); its pool is sized by this release's memory rules: pass "
        "--engine-version 0.24 or later for a release that runs it",
        c.version.text()));
  }
  int msa_layers = 0;
  for (const LayerSpec& l : m.layers) msa_layers += l.msa_indexer ? 1 : 0;
  notes.push_back(fmt::format(
      "MiniMax-M3: K / V on all {} layers and one {}-wide bf16 index key per token on the {} MSA layers share one block "
      "table ({}), so a block costs the sum of their pages; the index keys stay bf16 whatever --kv-cache-dtype",
      m.num_layers(), m.msa.index_head_dim, msa_layers,
      c.engine == Engine::kVllm ? "vLLM UniformTypeKVCacheSpecs" : "SGLang MiniMaxSparseKVPool, one token pool"));
}

void round_msa_sglang_pool(const ModelConfig& m, const ServingConfig& c, MemoryPlan& plan) {
  if (m.msa.index_head_dim == 0 || c.engine != Engine::kSglang) return;
  const int64_t page = m.msa.block_size;
  plan.kv_cache_tokens = plan.kv_cache_tokens / page * page;
  plan.num_blocks = plan.kv_cache_tokens;
  plan.max_concurrency =
      plan.max_model_len > 0 ? static_cast<double>(plan.kv_cache_tokens) / static_cast<double>(plan.max_model_len) : 0;
  plan.notes.push_back(fmt::format(
      "SGLang rounds MiniMax-M3's pool down to whole pages of {} tokens (pool_configurator.py: available_bytes // "
      "cell_size // page_size * page_size)",
      page));
}

}  // namespace kvplan
