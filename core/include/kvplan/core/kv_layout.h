// kvplan/core/kv_layout.h — exact KV bytes per token and per request, per layer group and per GPU.
//
//   KvLayout layout = build_kv_layout(model, scheme, parallel);   // pipeline stage 0
//   int64_t bytes = layout.request_bytes(8192);                     // one request of 8192 tokens
//   int64_t blocks = layout.request_blocks(8192);                   // paged blocks it occupies
//
// Layers are grouped by what they store (full attention, one sliding window size, MLA latent,
// linear-attention state, Mamba state). Bytes are per GPU: KV heads split by tensor parallelism
// (ceil(H_kv/tp) per rank; one replicated head each when H_kv < tp), MLA latents replicated on every
// rank, recurrent state split by heads, layers split by pipeline stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

// What a group's layers cache. DeepSeek-V4's attention (LayerKind::kCompressedAttention) keeps
// several caches per layer, each a group of its own: its sliding window and compressed latents
// (kKv), the indexer's compressed keys, and the compressors' fp32 state over the tokens not yet
// pooled (a sliding window of coff x ratio tokens). MiniMax-M3's MSA layers cache an index key per
// token beside K and V: the group "msa_index_keys" (kFullAttention, kIndexerKeys).
enum class KvCachePart { kKv, kIndexerKeys, kCompressorState, kIndexerCompressorState };

struct KvLayerGroup {
  std::string name;          // e.g. "full_attention", "sliding_attention(4096)", "mla"
  LayerKind kind = LayerKind::kFullAttention;
  int num_layers = 0;        // layers of this group on this GPU that store KV
  int shared_layers = 0;     // layers that reuse another layer's KV (store nothing)
  int window_tokens = 0;     // sliding groups
  int heads_per_gpu = 0;     // KV heads (attention), 1 (MLA latent), state heads (recurrent)
  int elements_per_token = 0;  // per layer per GPU, K and V together (attention kinds)
  // Per layer, per GPU, at steady state (for KIVI the 2-bit rate with metadata amortized;
  // may be fractional only for KIVI when the group size does not divide 4 * head_dim).
  double bytes_per_token = 0;
  int64_t bytes_per_token_16bit = 0;  // the same token kept in 16-bit (KIVI residual window)
  int64_t kivi_token_bytes = 0;       // KIVI: one quantized token (2-bit data + value metadata)
  int64_t kivi_key_group_bytes = 0;   // KIVI: key scale + zero point per channel, per token group
  int64_t state_bytes_per_request = 0;  // per layer per GPU, recurrent kinds
  int64_t fixed_bytes = 0;              // per layer per GPU, e.g. fp8 per-tensor scales
  // DeepSeek sparse attention: the lightning indexer's key cache, part of bytes_per_token (one
  // block table pages both), per layer per token.
  int64_t indexer_bytes_per_token = 0;
  // DeepSeek sparse attention: latents each query's attention reads (index_topk; 0: dense).
  int64_t sparse_topk = 0;
  // Paged: this group's block in tokens when it differs from the scheme's tokens_per_block (vLLM
  // raises the block of a group whose page is smaller than the largest, so that every page is one
  // size: vllm_v1_unify_attention_pages). 0: the scheme's.
  int block_tokens = 0;
  // DeepSeek-V4 compressed caches: one entry per compress_ratio tokens (floor of the length: an
  // entry is written once its tokens are complete); bytes_per_token is then an entry's bytes divided
  // by the ratio. 0: one entry per token.
  int compress_ratio = 0;
  KvCachePart part = KvCachePart::kKv;
  // Bytes of one cached entry (a token's, or a compressed entry's), per layer.
  int64_t entry_bytes() const {
    return compress_ratio > 1 ? static_cast<int64_t>(bytes_per_token * compress_ratio + 0.5)
                              : static_cast<int64_t>(bytes_per_token);
  }
};

class KvLayout {
 public:
  KvLayout(KvScheme scheme, std::vector<KvLayerGroup> groups);

  const KvScheme& scheme() const { return scheme_; }
  const std::vector<KvLayerGroup>& groups() const { return groups_; }
  // Tokens per block of `group` (its own block_tokens, else the scheme's).
  int block_tokens(const KvLayerGroup& group) const {
    return group.block_tokens > 0 ? group.block_tokens : scheme_.tokens_per_block;
  }
  void set_block_tokens(size_t group, int tokens) { groups_.at(group).block_tokens = tokens; }

  // Tokens of a request of length `tokens` that a group holds (windows and eviction applied).
  int64_t held_tokens(const KvLayerGroup& group, int64_t tokens) const;
  // Bytes one layer of `group` holds for a request of length `tokens` (exact, metadata included).
  int64_t layer_bytes(const KvLayerGroup& group, int64_t tokens) const;
  // All layers on this GPU, one request of length `tokens`: exact bytes.
  int64_t request_bytes(int64_t tokens) const;
  // Paged: blocks (of tokens_per_block slots, one per attention layer group) a request occupies,
  // summed over groups. A sliding group holds only the blocks its window touches.
  int64_t request_blocks(int64_t tokens) const;
  // Paged: bytes of the blocks a request occupies plus its recurrent state.
  int64_t request_allocated_bytes(int64_t tokens) const;
  // Steady-state bytes per token on this GPU, summed over per-token layers.
  double bytes_per_token() const;
  // Bytes of one block (each group's block of slots) across all per-token layers on this GPU,
  // computed the way vLLM sizes pages: every attention layer as full-length, 16-bit residual ignored.
  int64_t engine_block_bytes() const;
  int64_t state_bytes_per_request() const;
  int64_t fixed_bytes() const;
  int num_kv_layers() const;

 private:
  KvScheme scheme_;
  std::vector<KvLayerGroup> groups_;
};

// Layer indices [first, last) of pipeline stage `stage`, split the way vLLM does: every stage gets
// n / pp layers and the remainder goes one each to the stages just before the last.
std::pair<int, int> pipeline_stage_layers(int num_layers, int pipeline_parallel, int stage);

KvLayout build_kv_layout(const ModelConfig& model, const KvScheme& scheme,
                         const Parallelism& parallel, int pipeline_stage = 0);

// Whole model, all layers, one copy, before parallel splitting: bytes per token (the figure
// DESIGN §3 quotes, e.g. 131,072 for Llama-3.1-8B in bf16).
double kv_bytes_per_token(const ModelConfig& model, const KvScheme& scheme);
// Whole model, all layers, one copy: exact bytes of one request of `tokens` tokens.
int64_t kv_bytes_per_request(const ModelConfig& model, const KvScheme& scheme, int64_t tokens);

}  // namespace kvplan
