// Exact KV bytes per layer group (DESIGN §3). Every figure is per layer and per GPU unless named
// otherwise; quantization metadata is always counted.
#include "kvplan/core/kv_layout.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

namespace {

constexpr int64_t kScaleBytes = 2;     // fp16 scale or zero point per quantization group
constexpr int64_t kFp8ScaleBytes = 4;  // fp32 scale per tensor or per head

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tokens a chunked-local-attention layer holds at length `tokens`: those of the current chunk.
int64_t chunk_held_tokens(int64_t tokens, int64_t chunk) { return tokens - (tokens - 1) / chunk * chunk; }

// One cached vector kind per token: `count` vectors of `dim` elements (e.g. K of every KV head).
struct VectorSet {
  int64_t count = 0;
  int64_t dim = 0;
  bool is_key = false;  // KIVI quantizes keys per channel, values per token
};

// Per-token bytes of one vector set under the scheme, excluding KIVI's per-channel key metadata.
int64_t vector_bytes_per_token(const VectorSet& v, const KvScheme& s) {
  DType t = s.kv_dtype;
  if (t == DType::kInt8 || t == DType::kInt4) {
    int64_t meta = ceil_div(v.dim, s.quant_group_size) * kScaleBytes * (s.quant_asymmetric ? 2 : 1);
    return v.count * (dtype_bytes_for(t, v.dim) + meta);
  }
  if (t == DType::kInt2) {
    int64_t data = dtype_bytes_for(t, v.dim);
    int64_t meta = v.is_key ? 0 : ceil_div(v.dim, s.quant_group_size) * kScaleBytes * 2;
    return v.count * (data + meta);
  }
  return v.count * dtype_bytes_for(t, v.dim);
}

int64_t vector_bytes_16bit(const VectorSet& v) { return v.count * v.dim * 2; }

// KIVI key metadata: a scale and zero point per channel for every group of g quantized tokens.
int64_t kivi_key_meta_per_group(const VectorSet& v) { return v.count * v.dim * kScaleBytes * 2; }

std::vector<VectorSet> vectors_of(const ModelConfig& m, const AttentionShape& a, const KvScheme& s, LayerKind kind,
                                  int heads) {
  if (kind == LayerKind::kMla) {
    if (s.mla_expanded_head_dim > 0) {
      // pre-MLA vLLM: K and V per head, zero-padded to one head size
      return {VectorSet{heads, s.mla_expanded_head_dim, true}, VectorSet{heads, s.mla_expanded_head_dim, false}};
    }
    return {VectorSet{1, m.mla.kv_lora_rank + m.mla.qk_rope_head_dim, false}};
  }
  int dk = s.low_rank > 0 ? s.low_rank : a.head_dim;
  int dv = s.low_rank > 0 ? s.low_rank : a.v_head_dim;
  return {VectorSet{heads, dk, true}, VectorSet{heads, dv, false}};
}

struct GroupKey {
  LayerKind kind;
  int window;
  int compress_ratio = 0;
  KvCachePart part = KvCachePart::kKv;
  bool operator<(const GroupKey& o) const {
    return std::tie(kind, window, compress_ratio, part) < std::tie(o.kind, o.window, o.compress_ratio, o.part);
  }
};

// DeepSeek-V4's caches of one layer with compression ratio r (0: its window alone), per token or
// entry, as vLLM (fp8_ds_mla, deepseek_v4_attention.py, deepseek_compressor.py) and SGLang
// (deepseek_v4_memory_pool.py) both allocate them (validate() requires the fp8 cache):
//   - the window and the compressed latents: head_dim - rope_dim NoPE dims in fp8, the RoPE dims in
//     bf16, one ue8m0 scale byte per 64 NoPE dims and one pad byte (584 B for head_dim 512, rope 64);
//   - the indexer's compressed keys (r = 4): index_head_dim fp8 + one fp32 scale per 128 (132 B);
//   - each compressor's state: kv and score rows of coff x its width in fp32 over the last coff x r
//     tokens (coff = 2 for r = 4, whose windows overlap; 1 otherwise).
struct CompressedCache {
  GroupKey key;
  const char* name;
  int64_t bytes;  // per token (window and states) or per entry (compressed)
  int elements;
};

std::vector<CompressedCache> compressed_attention_caches(const CompressedAttentionShape& a, int r) {
  const int64_t nope = a.head_dim - a.rope_dim;
  const int64_t latent = nope + int64_t{2} * a.rope_dim + nope / 64 + 1;
  std::vector<CompressedCache> out;
  out.push_back({{LayerKind::kSlidingAttention, a.window, 0, KvCachePart::kKv}, "latent_window", latent, a.head_dim});
  if (r == 0) return out;
  const int coff = r == 4 ? 2 : 1;
  const char* family = r == 4 ? "csa" : "hca";
  out.push_back({{LayerKind::kCompressedAttention, 0, r, KvCachePart::kKv}, family, latent, a.head_dim});
  out.push_back({{LayerKind::kSlidingAttention, coff * r, 0, KvCachePart::kCompressorState},
                 r == 4 ? "csa_compressor_state" : "hca_compressor_state", int64_t{2} * coff * a.head_dim * 4,
                 2 * coff * a.head_dim});
  if (r == 4) {
    out.push_back({{LayerKind::kCompressedAttention, 0, r, KvCachePart::kIndexerKeys}, "csa_indexer",
                   a.index_head_dim + a.index_head_dim / 128 * 4, a.index_head_dim});
    out.push_back({{LayerKind::kSlidingAttention, coff * r, 0, KvCachePart::kIndexerCompressorState},
                   "csa_indexer_compressor_state", int64_t{2} * coff * a.index_head_dim * 4, 2 * coff * a.index_head_dim});
  }
  return out;
}

// MiniMax-M3's index key cache (MsaShape), one more layer of the group "msa_index_keys": one key
// of index_head_dim per token per MSA layer, replicated on every tensor-parallel rank
// (MinimaxM3QKVParallelLinearWithIndexer), in bf16 whatever the KV dtype: vLLM's
// AttentionConfig.indexer_kv_dtype defaults to "bf16" and --kv-cache-dtype changes only K and V;
// SGLang builds MiniMaxSparseKVPool's index_k_pool with index_dtype = the model dtype. Both engines
// page it with K and V under one block table (vLLM UniformTypeKVCacheSpecs, SGLang one token
// pool), so a token's bytes simply add up: 57 x 128 x 2 = 14,592 B per token for M3.
void add_msa_index_keys(const ModelConfig& m, std::vector<std::pair<GroupKey, KvLayerGroup>>& groups,
                        std::vector<const AttentionShape*>& shapes) {
  const GroupKey key{LayerKind::kFullAttention, 0, 0, KvCachePart::kIndexerKeys};
  auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return !(e.first < key) && !(key < e.first); });
  if (it == groups.end()) {
    KvLayerGroup g;
    g.name = "msa_index_keys";
    g.kind = LayerKind::kFullAttention;
    g.part = KvCachePart::kIndexerKeys;
    g.heads_per_gpu = 1;
    g.elements_per_token = m.msa.index_head_dim;
    g.indexer_bytes_per_token = int64_t{m.msa.index_head_dim} * 2;
    g.bytes_per_token = static_cast<double>(g.indexer_bytes_per_token);
    g.bytes_per_token_16bit = g.indexer_bytes_per_token;
    it = groups.insert(groups.end(), {key, std::move(g)});
    shapes.push_back(&m.attention);
  }
  it->second.num_layers += 1;
}

}  // namespace

KvLayout::KvLayout(KvScheme scheme, std::vector<KvLayerGroup> groups)
    : scheme_(std::move(scheme)), groups_(std::move(groups)) {}

int64_t KvLayout::held_tokens(const KvLayerGroup& g, int64_t tokens) const {
  if (!holds_kv_per_token(g.kind)) return 0;
  int64_t held = tokens;
  if (g.kind == LayerKind::kSlidingAttention) held = std::min<int64_t>(held, g.window_tokens);
  if (g.kind == LayerKind::kChunkedAttention && held > 0) held = chunk_held_tokens(held, g.window_tokens);
  if (scheme_.eviction == Eviction::kH2O) held = std::min<int64_t>(held, scheme_.h2o_budget_tokens);
  if (scheme_.eviction == Eviction::kStreaming) {
    held = std::min<int64_t>(held, scheme_.sink_tokens + scheme_.streaming_window_tokens);
  }
  return held;
}

int64_t KvLayout::layer_bytes(const KvLayerGroup& g, int64_t tokens) const {
  if (!holds_kv_per_token(g.kind)) return g.state_bytes_per_request;
  int64_t held = held_tokens(g, tokens);
  if (g.compress_ratio > 1) return held / g.compress_ratio * g.entry_bytes();
  if (scheme_.kv_dtype != DType::kInt2) {
    return held * static_cast<int64_t>(g.bytes_per_token);
  }
  // KIVI: the last R tokens in 16-bit, the rest 2-bit; keys carry per-channel metadata per group
  // of g quantized tokens (a partial group still needs its scale and zero point).
  int64_t residual = std::min<int64_t>(held, scheme_.kivi_residual_tokens);
  int64_t quantized = held - residual;
  return residual * g.bytes_per_token_16bit + quantized * g.kivi_token_bytes +
         ceil_div(quantized, scheme_.quant_group_size) * g.kivi_key_group_bytes;
}

int64_t KvLayout::request_bytes(int64_t tokens) const {
  int64_t total = 0;
  for (const KvLayerGroup& g : groups_) total += g.num_layers * layer_bytes(g, tokens);
  return total;
}

namespace {

// Blocks one layer group holds for a request of `tokens` tokens (paged).
int64_t group_blocks(const KvLayout& layout, const KvLayerGroup& g, int64_t tokens) {
  const KvScheme& s = layout.scheme();
  const int64_t b = layout.block_tokens(g);
  if (!holds_kv_per_token(g.kind) || g.num_layers == 0 || tokens <= 0) return 0;
  if (g.kind == LayerKind::kSlidingAttention && tokens > g.window_tokens && s.eviction == Eviction::kNone) {
    // Blocks touched by the window [tokens - w, tokens): the first may be partial.
    int64_t first = (tokens - g.window_tokens) / b;
    int64_t last = (tokens - 1) / b;
    return last - first + 1;
  }
  if (g.kind == LayerKind::kChunkedAttention && tokens > g.window_tokens && s.eviction == Eviction::kNone) {
    // Blocks of the current chunk [chunk_start, tokens): earlier chunks' blocks are freed.
    int64_t chunk_start = (tokens - 1) / g.window_tokens * g.window_tokens;
    return (tokens - 1) / b - chunk_start / b + 1;
  }
  return ceil_div(layout.held_tokens(g, tokens), b);
}

}  // namespace

int64_t KvLayout::request_blocks(int64_t tokens) const {
  int64_t blocks = 0;
  for (const KvLayerGroup& g : groups_) blocks += group_blocks(*this, g, tokens);
  return blocks;
}

int64_t KvLayout::request_allocated_bytes(int64_t tokens) const {
  if (!scheme_.paged) return request_bytes(tokens);
  int64_t total = 0;
  for (const KvLayerGroup& g : groups_) {
    const int64_t b = block_tokens(g);
    if (!holds_kv_per_token(g.kind)) {
      total += g.num_layers * g.state_bytes_per_request;
      continue;
    }
    if (g.num_layers == 0 || tokens <= 0) continue;
    if (scheme_.kv_dtype == DType::kInt2) {
      // KIVI: blocks hold the 2-bit tokens; the 16-bit residual window and the per-group key
      // metadata live in side buffers sized by what they hold.
      int64_t held = held_tokens(g, tokens);
      int64_t residual = std::min<int64_t>(held, scheme_.kivi_residual_tokens);
      int64_t quantized = held - residual;
      total += g.num_layers * (ceil_div(quantized, b) * b * g.kivi_token_bytes +
                               ceil_div(quantized, scheme_.quant_group_size) * g.kivi_key_group_bytes +
                               residual * g.bytes_per_token_16bit);
      continue;
    }
    int64_t block_bytes = static_cast<int64_t>(std::ceil(g.bytes_per_token * static_cast<double>(b)));
    total += g.num_layers * group_blocks(*this, g, tokens) * block_bytes;
  }
  return total;
}

double KvLayout::bytes_per_token() const {
  double total = 0;
  for (const KvLayerGroup& g : groups_) total += g.num_layers * g.bytes_per_token;
  return total;
}

int64_t KvLayout::engine_block_bytes() const {
  int64_t total = 0;
  for (const KvLayerGroup& g : groups_) {
    if (!holds_kv_per_token(g.kind)) continue;
    total += g.num_layers * static_cast<int64_t>(std::ceil(g.bytes_per_token * block_tokens(g)));
  }
  return total;
}

int64_t KvLayout::state_bytes_per_request() const {
  int64_t total = 0;
  for (const KvLayerGroup& g : groups_) total += g.num_layers * g.state_bytes_per_request;
  return total;
}

int64_t KvLayout::fixed_bytes() const {
  int64_t total = 0;
  for (const KvLayerGroup& g : groups_) total += g.num_layers * g.fixed_bytes;
  return total;
}

int KvLayout::num_kv_layers() const {
  int n = 0;
  for (const KvLayerGroup& g : groups_) n += holds_kv_per_token(g.kind) ? g.num_layers : 0;
  return n;
}

std::pair<int, int> pipeline_stage_layers(int num_layers, int pp, int stage) {
  // n / pp layers each; the n % pp stages just before the last take one more (vLLM's split).
  // Arithmetic rather than a vector of sizes: every memory answer calls this several times.
  const int remaining = num_layers % pp;
  auto size = [&](int i) { return num_layers / pp + (i >= pp - 1 - remaining && i <= pp - 2 ? 1 : 0); };
  int first = 0;
  for (int i = 0; i < stage; ++i) first += size(i);
  return {first, first + size(stage)};
}

KvLayout build_kv_layout(const ModelConfig& m, const KvScheme& s, const Parallelism& p, int stage) {
  validate(s, p, m);
  const int tp = p.tensor_parallel;
  auto [first, last] = pipeline_stage_layers(m.num_layers(), p.pipeline_parallel, stage);
  const int64_t model_bytes = dtype_bits(m.dtype) / 8;
  const int64_t state_bytes = dtype_bits(s.state_dtype) / 8;

  // (key, group) in order of first appearance; sorted by key at the end. A model has a handful of
  // groups, so a linear search beats a std::map node per group on every memory answer.
  std::vector<std::pair<GroupKey, KvLayerGroup>> groups;
  std::vector<const AttentionShape*> shapes;  // per group: the softmax-attention shape of its layers
  int attention_index = 0;  // position among per-token layers, for cross-layer sharing
  for (int i = 0; i < m.num_layers(); ++i) {
    const LayerSpec& layer = m.layers[static_cast<size_t>(i)];
    if (layer.kind == LayerKind::kNoMixer) continue;  // an MLP alone keeps nothing per request
    if (layer.kind == LayerKind::kCompressedAttention) {
      if (i < first || i >= last) continue;
      for (const CompressedCache& c : compressed_attention_caches(m.compressed, layer.compress_ratio)) {
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& e) {
          return !(e.first < c.key) && !(c.key < e.first);
        });
        if (it == groups.end()) {
          KvLayerGroup g;
          g.kind = c.key.kind;
          g.window_tokens = c.key.window;
          g.compress_ratio = c.key.compress_ratio;
          g.part = c.key.part;
          g.name = g.compress_ratio > 1 ? fmt::format("{}(1/{})", c.name, g.compress_ratio)
                                        : fmt::format("{}({})", c.name, g.window_tokens);
          g.heads_per_gpu = 1;  // one latent, replicated on every tensor-parallel rank
          g.elements_per_token = c.elements;
          g.bytes_per_token = static_cast<double>(c.bytes) / std::max(1, g.compress_ratio);
          g.bytes_per_token_16bit = c.bytes;
          if (c.key.part == KvCachePart::kKv) g.sparse_topk = g.compress_ratio == 4 ? m.compressed.index_topk : 0;
          it = groups.insert(groups.end(), {c.key, std::move(g)});
          shapes.push_back(&m.attention);
        }
        it->second.num_layers += 1;
      }
      continue;
    }
    if (layer.msa_indexer && i >= first && i < last) add_msa_index_keys(m, groups, shapes);
    bool stores_per_token = holds_kv_per_token(layer.kind);
    // a layer reads another's KV under cross-layer sharing (the scheme) or by construction (Gemma-4's
    // kv-shared layers)
    bool shared = stores_per_token && ((attention_index++ % s.cross_layer_share) != 0 || layer.kv_shared);
    if (i < first || i >= last) continue;
    GroupKey key{layer.kind, layer.window_tokens};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& e) {
      return !(e.first < key) && !(key < e.first);
    });
    const bool inserted = it == groups.end();
    if (inserted) {
      it = groups.insert(groups.end(), {key, KvLayerGroup{}});
      shapes.push_back(&layer_attention(m, layer));
    } else if (const AttentionShape& seen = *shapes[static_cast<size_t>(it - groups.begin())];
               &seen != &layer_attention(m, layer) && !(seen == layer_attention(m, layer))) {
      throw ConfigError(fmt::format(
          "model '{}': layer {} is {} like an earlier layer but has another attention shape; kvplan keeps one shape "
          "per layer kind and window",
          m.id, i, layer_kind_name(layer.kind)));
    }
    KvLayerGroup& g = it->second;
    if (shared) {
      g.shared_layers += 1;
    } else {
      g.num_layers += 1;
    }
    if (!inserted) continue;
    g.kind = layer.kind;
    g.window_tokens = layer.window_tokens;
    g.name = layer.kind == LayerKind::kSlidingAttention || layer.kind == LayerKind::kChunkedAttention
                 ? fmt::format("{}({})", layer_kind_name(layer.kind), layer.window_tokens)
                 : std::string(layer_kind_name(layer.kind));
    switch (layer.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kSlidingAttention:
      case LayerKind::kChunkedAttention:
      case LayerKind::kMla: {
        int heads = 1;
        const AttentionShape& att = layer_attention(m, layer);
        if (layer.kind != LayerKind::kMla) {
          int kv = att.num_kv_heads;
          heads = kv >= tp ? static_cast<int>(ceil_div(kv, tp)) : 1;
        } else if (s.mla_expanded_head_dim > 0) {
          heads = m.mla.num_heads / tp;
        }
        g.heads_per_gpu = heads;
        int64_t per_token = 0;
        int64_t elements = 0;
        int64_t key_meta_per_group = 0;
        int64_t bytes16 = 0;
        for (const VectorSet& v : vectors_of(m, att, s, layer.kind, heads)) {
          per_token += vector_bytes_per_token(v, s);
          elements += v.count * v.dim;
          bytes16 += vector_bytes_16bit(v);
          if (s.kv_dtype == DType::kInt2 && v.is_key) key_meta_per_group += kivi_key_meta_per_group(v);
        }
        if (layer.kind == LayerKind::kMla && m.mla.index_head_dim > 0) {
          // DeepSeek sparse attention: both engines page the latent and the indexer key cache
          // with one block table (vLLM UniformTypeKVCacheSpecs; SGLang NSATokenToKVPool), so
          // they are one group here. fp8 latent: vLLM's fp8_ds_mla / SGLang's NSA fp8 layout,
          // r fp8 NoPE + one fp32 scale per 128 + R bf16 RoPE (656 B for r 512, R 64); 16-bit:
          // (r + R) * 2. Indexer key: index_head_dim fp8 + one fp32 scale per 128 (132 B),
          // whatever the latent's dtype.
          const MlaShape& a = m.mla;
          const int64_t latent = is_fp8(s.kv_dtype)
                                     ? a.kv_lora_rank + a.kv_lora_rank / 128 * 4 + int64_t{2} * a.qk_rope_head_dim
                                     : int64_t{2} * (a.kv_lora_rank + a.qk_rope_head_dim);
          g.indexer_bytes_per_token = a.index_head_dim + a.index_head_dim / 128 * 4;
          g.sparse_topk = a.index_topk;
          per_token = latent + g.indexer_bytes_per_token;
          bytes16 = per_token;
          g.name = "mla+dsa_indexer";
        }
        g.elements_per_token = static_cast<int>(elements);
        g.bytes_per_token = static_cast<double>(per_token) +
                            static_cast<double>(key_meta_per_group) / s.quant_group_size;
        g.bytes_per_token_16bit = bytes16;
        if (s.kv_dtype == DType::kInt2) {
          g.kivi_token_bytes = per_token;
          g.kivi_key_group_bytes = key_meta_per_group;
        }
        if (is_fp8(s.kv_dtype) && !(layer.kind == LayerKind::kMla && m.mla.index_head_dim > 0)) {
          int vectors = layer.kind == LayerKind::kMla && s.mla_expanded_head_dim == 0 ? 1 : 2;
          g.fixed_bytes = kFp8ScaleBytes * vectors * (s.fp8_scales == Fp8Scales::kPerHead ? heads : 1);
        }
        break;
      }
      case LayerKind::kMamba1: {
        const MambaShape& a = m.mamba;
        int64_t d_inner = a.d_inner / tp;
        g.heads_per_gpu = static_cast<int>(d_inner);
        g.state_bytes_per_request = (a.d_conv - 1) * d_inner * model_bytes + d_inner * a.d_state * state_bytes;
        break;
      }
      case LayerKind::kMamba2: {
        const MambaShape& a = m.mamba;
        int64_t groups_per_gpu = a.groups_per_gpu(tp);
        int64_t conv_channels = a.d_inner / tp + 2 * groups_per_gpu * a.d_state;
        int64_t heads = a.num_heads / tp;
        g.heads_per_gpu = static_cast<int>(heads);
        g.state_bytes_per_request = (a.d_conv - 1) * conv_channels * model_bytes +
                                    heads * a.head_dim * a.d_state * state_bytes;
        break;
      }
      case LayerKind::kLinearAttention: {
        const LinearAttentionShape& a = m.linear;
        int64_t key_heads = a.num_key_heads / tp;
        int64_t value_heads = a.num_value_heads / tp;
        int64_t conv_channels = 2 * key_heads * a.key_head_dim + value_heads * a.value_head_dim;
        g.heads_per_gpu = static_cast<int>(value_heads);
        const int64_t conv_state = a.conv_kernel > 0 ? (a.conv_kernel - 1) * conv_channels * model_bytes : 0;
        g.state_bytes_per_request = conv_state + value_heads * a.key_head_dim * a.value_head_dim * state_bytes;
        break;
      }
      case LayerKind::kNoMixer:
      case LayerKind::kCompressedAttention: break;  // handled above
    }
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<KvLayerGroup> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups) {
    // vLLM's hybrid allocator stores a recurrent layer's state in one attention-sized page.
    if (!holds_kv_per_token(g.kind)) g.state_bytes_per_request = std::max(g.state_bytes_per_request, s.state_page_bytes);
    out.push_back(std::move(g));
  }
  return KvLayout(s, std::move(out));
}

double kv_bytes_per_token(const ModelConfig& model, const KvScheme& scheme) {
  return build_kv_layout(model, scheme, Parallelism{}).bytes_per_token();
}

int64_t kv_bytes_per_request(const ModelConfig& model, const KvScheme& scheme, int64_t tokens) {
  return build_kv_layout(model, scheme, Parallelism{}).request_bytes(tokens);
}

}  // namespace kvplan
