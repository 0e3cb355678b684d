// kvplan/core/minimax_m3_cache.h — the engines' pool rules for MiniMax-M3's sparse-attention caches.
//
//   apply_msa_engine_rules(model, serving, scheme, plan.notes);  // before the layout is built
//   round_msa_sglang_pool(model, serving, plan);                 // once the pool is sized
//
// MiniMax-M3 (ModelConfig::msa) caches K and V on every layer and one bf16 index key per token on
// each MSA layer (kv_layout.cpp, group "msa_index_keys"). vLLM (>= 0.24, models/minimax_m3) and
// SGLang (>= 0.5.16, MiniMaxSparseKVPool) page both caches with one block table, so a block costs
// the sum of every layer's page: vLLM's UniformTypeKVCacheSpecs (every spec a FullAttentionSpec of
// one block size) and SGLang's one token pool, whose cell is main K/V + index keys
// (pool_configurator.py). Both page them in blocks of sparse_block_size (128) tokens: vLLM's
// MiniMaxM3SparseBackend supports no other kernel block size, SGLang rounds its token count down to
// whole pages. TensorRT-LLM's MiniMaxM3KVCacheManagerV2 and Hugging Face generate are not modelled.
#pragma once

#include <string>
#include <vector>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

// Nothing for a model without MSA layers. Otherwise: refuses the engines whose M3 pool is not known
// (ConfigError naming the engine), sets the block to the model's sparse_block_size (with a note when
// it changes one the caller gave), and notes a vLLM release older than M3's first (0.24).
void apply_msa_engine_rules(const ModelConfig& model, const ServingConfig& serving, KvScheme& scheme,
                            std::vector<std::string>& notes);

// SGLang: max_total_num_tokens = available_bytes // cell_size // page_size * page_size
// (pool_configurator.py). kvplan sizes SGLang pools per token (page 1); this rounds the pool down to
// whole 128-token pages and recomputes the concurrency. Nothing for other engines or models.
void round_msa_sglang_pool(const ModelConfig& model, const ServingConfig& serving, MemoryPlan& plan);

}  // namespace kvplan
