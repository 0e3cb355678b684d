// kvplan/core/vllm_profile.h — the rules vLLM follows, release by release, when it measures what
// is not KV cache before sizing the cache: the length it derives, the batch of its profiling pass,
// whether chunked prefill is on, the activation peak of that pass and the memory outside PyTorch.
//
//   VllmProfile prof = vllm_profile(model, gpu, parallel, serving, /*samples=*/true);
//   prof.batched_tokens;    // tokens of the profiling forward pass
//   prof.activation_bytes;  // the "PyTorch activation peak memory" vLLM subtracts
//
// Each rule names the vLLM source it comes from, or the public start-up logs (data/vllm_logs) it
// was read off; the latter are partly in-sample for the validation bench.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/parallelism.h"

namespace kvplan {

// vLLM's default max_model_len when none is given (config.py _get_and_verify_max_len):
// max_position_embeddings times rope_scaling.factor, except for rope types su/longrope/llama3 and
// Gemma-3 (whose length is already scaled); yarn starts from original_max_position_embeddings.
// E.g. deepseek-coder-6.7b: 16,384 x linear factor 4 = 65,536.
int64_t vllm_default_max_model_len(const ModelConfig& model);

// Per-token width (elements) of the widest intermediate of any layer on one tensor-parallel rank:
// gate_up plus its activation (3 I / tp), qkv plus the attention output, the fused-MoE caches
// (top_k x 3 I / tp plus the shared expert), or a recurrent mixer's projections.
int64_t widest_intermediate_elems(const ModelConfig& model, const Parallelism& parallel);
// One layer's MLP intermediates per token on one of tp GPUs: gated [2I + I], plain [I + I], MoE
// top_k experts' and the shared expert's (without a gate for non-gated experts).
int64_t mlp_intermediate_elems(const MlpShape& mlp, int64_t tp);
// DeepSeek-V4's attention intermediates per token on one of tp GPUs: the queries and the attention
// output (heads x head_dim each) and the grouped LoRA output.
int64_t compressed_attention_intermediate_elems(const CompressedAttentionShape& a, int64_t tp);

// vLLM V1's hybrid KV-cache allocator (>= 0.10, kv_cache_utils.py
// _get_kv_cache_groups_uniform_page_size): when layers of several attention types share one page
// size (full + sliding window, full + chunked local), each type's layers are cut into groups of
// `group_size` layers, the smallest type's count (the largest's when that is under 1.5 x the
// smallest), the last group of a type padded with empty layers ("Add N padding layers, may waste
// at most X% KV cache memory"). Every group takes a page per block, so one block costs
// page x (groups x group_size). Returns that padded layer count, or 0 when the rule does not apply
// (a single attention type, or page sizes that differ).
int vllm_v1_padded_kv_layers(const KvLayout& layout);

// vLLM V1's page rule for a model with both attention and recurrent-state layers
// (model_executor/models/config.py HybridAttentionMambaModelConfig, the path without prefix
// caching): the attention block is raised to the smallest multiple of the kernel alignment (16
// tokens; 64 for MLA, 128 from vLLM 0.27 (`mla_alignment`); 32 for head_dim 256 on Blackwell)
// whose page holds one layer's state, and the state is padded to that page. Zero block when the
// layout has not both kinds.
struct VllmHybridPages {
  int block_tokens = 0;       // the attention block size vLLM sets ("Setting attention block size to N tokens")
  int alignment = 16;         // tokens
  int64_t state_bytes = 0;    // one recurrent layer's state, per request, before padding
  int64_t page_bytes = 0;     // block_tokens x one attention layer's bytes per token
};
VllmHybridPages vllm_v1_hybrid_pages(const KvLayout& layout, bool blackwell, int user_block_tokens,
                                     int mla_alignment = 64);
// The MLA kernel alignment of a vLLM release: 128 from 0.27 (the Kimi-K3 change, vllm-project/vllm
// #50000, to platforms/interface.py: "TRTLLM/FlashInfer MLA decode kernels require ... multiple of
// 128"), 64 before.
int vllm_mla_block_alignment(const EngineVersion& version);

// vLLM V1's page unification for attention layers whose pages differ (kv_cache_utils.py
// unify_kv_cache_spec_page_size; Gemma-4's 512-wide full-attention heads beside 256-wide sliding
// ones): the block of every group whose page (block x bytes per token) is smaller than the largest
// is multiplied by largest / page, so every page is one size. vLLM raises NotImplementedError when
// a page does not divide the largest; so does this (ConfigError). Applies only to layouts of
// per-token attention groups alone; returns the common page, 0 when nothing was changed.
int64_t vllm_v1_unify_attention_pages(KvLayout& layout);

// The groups that rule builds: `group_size` layers per group and, per attention type, its window
// and how many groups it fills. Recurrent-state layers (Mamba, linear attention) form a type of
// their own when their state fills one attention page exactly (KvScheme::state_page_bytes).
// Empty `types` when the rule does not apply.
struct VllmKvGroups {
  struct Type {
    LayerKind kind = LayerKind::kFullAttention;
    int window_tokens = 0;  // sliding types
    int num_groups = 0;     // ceil(layers of the type / group_size)
    int block_tokens = 0;   // the type's block (KvLayout::block_tokens); 0 for recurrent state
  };
  int group_size = 0;
  std::vector<Type> types;
  int num_groups() const;
};
VllmKvGroups vllm_v1_kv_groups(const KvLayout& layout);

// vLLM V1's "Maximum concurrency for N tokens per request" under the hybrid allocator
// (kv_cache_utils.py get_max_concurrency_for_kv_cache_config): the pool's `vllm_blocks` (each a
// page of group_size layers) over the blocks one request of max_model_len takes in every group,
// where a full-attention or MLA group takes cdiv(max_model_len, block) and a sliding group (each with
// its own block, VllmKvGroups::Type::block_tokens, or `tokens_per_block`)
// cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block) + 1
// (SlidingWindowSpec.max_memory_usage_bytes: "+1 because the window may not start at a block
// boundary"), and a recurrent-state group one block (MambaSpec's block is max_model_len tokens).
// Returns 0 for any other type (chunked local attention keeps the plain rule).
double vllm_v1_hybrid_max_concurrency(const VllmKvGroups& groups, int64_t vllm_blocks, int tokens_per_block,
                                      int64_t max_model_len, int64_t max_num_batched_tokens);

// The profiling pass and the terms vLLM subtracts before the KV cache, for one GPU.
struct VllmProfile {
  bool v1 = true;
  bool chunked_prefill = false;
  std::string chunked_prefill_why;  // how the setting was decided
  int64_t batched_tokens = 0;       // tokens in the profiling forward pass
  int max_num_seqs = 0;             // sequences it samples
  bool samples = false;             // this rank runs the sampler
  int hidden_copies = 0;            // [tokens, hidden] tensors live beside the widest intermediate
  bool reserved_slack = false;      // V0 0.2.5-0.6.3: one more [tokens, hidden] block reserved, not allocated
  int64_t forward_bytes = 0;        // forward pass live set at its widest
  int64_t sampler_bytes = 0;        // sampler peak (0 on ranks that do not sample)
  int64_t activation_bytes = 0;     // max(forward, sampler): they run one after the other
  std::string activation_how;
  int64_t non_torch_bytes = 0;      // memory outside PyTorch's allocator that vLLM counts
  std::string non_torch_how;
};

// `samples`: this rank runs the sampler in the profile (the last pipeline stage; in V0 only the
// driver worker, TP rank 0, which is the rank with the fewest blocks and so the one that counts).
VllmProfile vllm_profile(const ModelConfig& model, const GpuSpec& gpu, const Parallelism& parallel,
                         const ServingConfig& config, int64_t max_model_len, bool samples);

}  // namespace kvplan
