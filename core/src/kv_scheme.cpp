#include "kvplan/core/kv_scheme.h"

#include <array>
#include <cstddef>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/limits.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

std::string KvScheme::describe() const {
  std::string s(dtype_name(kv_dtype));
  if (kv_dtype == DType::kInt8 || kv_dtype == DType::kInt4) {
    s += fmt::format(" g{} {}", quant_group_size, quant_asymmetric ? "asym" : "sym");
  } else if (kv_dtype == DType::kInt2) {
    s = fmt::format("kivi-2 g{} residual {}", quant_group_size, kivi_residual_tokens);
  } else if (is_fp8(kv_dtype)) {
    s += fp8_scales == Fp8Scales::kPerHead ? " per-head scales" : " per-tensor scales";
  }
  s += paged ? fmt::format(", paged b{}", tokens_per_block) : std::string(", contiguous");
  if (eviction == Eviction::kH2O) s += fmt::format(", H2O budget {}", h2o_budget_tokens);
  if (eviction == Eviction::kStreaming) {
    s += fmt::format(", StreamingLLM {} sinks + {} window", sink_tokens, streaming_window_tokens);
  }
  if (low_rank > 0) s += fmt::format(", low-rank KV r{}", low_rank);
  if (cross_layer_share > 1) s += fmt::format(", KV shared by {} layers", cross_layer_share);
  return s;
}

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& value, const std::string& rule) {
  throw ConfigError(fmt::format("{}={} {}", field, value, rule));
}

}  // namespace

std::optional<DType> only_kv_dtype(const ModelConfig& m) {
  if (m.count_layers(LayerKind::kCompressedAttention) > 0) return DType::kFp8E4M3;
  return std::nullopt;
}

KvScheme listing_scheme(const ModelConfig& m) {
  KvScheme s;
  s.kv_dtype = only_kv_dtype(m).value_or(s.kv_dtype);
  return s;
}

void validate(const KvScheme& s, const Parallelism& p, const ModelConfig& m) {
  if (s.tokens_per_block <= 0 || s.tokens_per_block > (1 << 20)) {
    bad("block-size", std::to_string(s.tokens_per_block), "must be a positive number of tokens, at most 1048576");
  }
  if (s.quant_group_size > (1 << 16)) bad("kv-quant-group-size", std::to_string(s.quant_group_size), "must be at most 65536");
  if (s.kivi_residual_tokens > kMaxTokens || s.h2o_budget_tokens > kMaxTokens || s.streaming_window_tokens > kMaxTokens ||
      s.sink_tokens > kMaxTokens) {
    bad("kivi-residual / h2o-budget / streaming-window / streaming-sinks", "(too large)",
        fmt::format("must each be at most {} tokens", kMaxTokens));
  }
  if (s.low_rank > kMaxHeadDim) bad("low-rank", std::to_string(s.low_rank), fmt::format("must be at most {}", kMaxHeadDim));
  if (s.cross_layer_share > kMaxLayers) {
    bad("cross-layer-share", std::to_string(s.cross_layer_share), fmt::format("must be at most {}", kMaxLayers));
  }
  if (s.quant_group_size <= 0) bad("kv-quant-group-size", std::to_string(s.quant_group_size), "must be positive");
  if (s.kv_dtype == DType::kInt2 && s.kivi_residual_tokens < 0) {
    bad("kivi-residual", std::to_string(s.kivi_residual_tokens), "must be zero or positive");
  }
  if (s.eviction == Eviction::kH2O && s.h2o_budget_tokens <= 0) {
    bad("h2o-budget", std::to_string(s.h2o_budget_tokens), "must be a positive number of tokens");
  }
  if (s.eviction == Eviction::kStreaming && (s.streaming_window_tokens <= 0 || s.sink_tokens < 0)) {
    bad("streaming-window", std::to_string(s.streaming_window_tokens),
        "must be positive (and streaming-sinks non-negative)");
  }
  if (s.cross_layer_share <= 0) bad("cross-layer-share", std::to_string(s.cross_layer_share), "must be 1 or more");
  if (is_quantized_int(s.state_dtype) || is_fp8(s.state_dtype)) {
    bad("state-dtype", std::string(dtype_name(s.state_dtype)), "must be fp32, bf16 or fp16");
  }
  int tp = p.tensor_parallel;
  int pp = p.pipeline_parallel;
  if (tp <= 0) bad("tensor-parallel-size", std::to_string(tp), "must be a positive integer");
  if (pp <= 0) bad("pipeline-parallel-size", std::to_string(pp), "must be a positive integer");
  if (pp > m.num_layers()) {
    bad("pipeline-parallel-size", std::to_string(pp),
        fmt::format("must not exceed the model's {} layers", m.num_layers()));
  }
  // Layers of each kind, counted in one pass: build_kv_layout validates on every memory answer.
  std::array<int, static_cast<std::size_t>(kNumLayerKinds)> kinds{};
  for (const LayerSpec& l : m.layers) ++kinds[static_cast<std::size_t>(l.kind)];
  auto count = [&](LayerKind k) { return kinds[static_cast<std::size_t>(k)]; };
  bool has_attention = count(LayerKind::kFullAttention) + count(LayerKind::kSlidingAttention) > 0;
  // The model's attention shape and a layer shape of its own (Gemma-4's full-attention layers).
  for (const AttentionShape* shape : {&m.attention, own_attention_shape(m)}) {
    if (!has_attention || shape == nullptr) continue;
    const AttentionShape& a = *shape;
    if (a.num_q_heads % tp != 0) {
      bad("tensor-parallel-size", std::to_string(tp),
          fmt::format("must divide num_attention_heads={} of model '{}'", a.num_q_heads, m.id));
    }
    if (a.num_kv_heads >= tp ? a.num_kv_heads % tp != 0 : tp % a.num_kv_heads != 0) {
      bad("tensor-parallel-size", std::to_string(tp),
          fmt::format("must divide num_key_value_heads={} of model '{}' or be a multiple of it",
                      a.num_kv_heads, m.id));
    }
    if (s.low_rank > 0 && s.low_rank > a.head_dim) {
      bad("low-rank", std::to_string(s.low_rank), fmt::format("must not exceed head_dim={}", a.head_dim));
    }
    if (is_quantized_int(s.kv_dtype) && s.kv_dtype != DType::kInt2 && s.low_rank == 0 &&
        a.head_dim % s.quant_group_size != 0) {
      bad("kv-quant-group-size", std::to_string(s.quant_group_size),
          fmt::format("must divide head_dim={} of model '{}'", a.head_dim, m.id));
    }
  }
  if (count(LayerKind::kMla) > 0) {
    if (m.mla.num_heads % tp != 0) {
      bad("tensor-parallel-size", std::to_string(tp),
          fmt::format("must divide num_attention_heads={} of model '{}'", m.mla.num_heads, m.id));
    }
    if (s.low_rank > 0) bad("low-rank", std::to_string(s.low_rank), "does not apply to MLA, whose cache is already a latent");
    // DeepSeek sparse attention: the engines allocate a 16-bit latent or the packed fp8_ds_mla one
    // (kv_layout.cpp); other cache schemes have no DSA layout in any engine kvplan models.
    if (m.mla.index_topk > 0) {
      if (s.kv_dtype != DType::kBF16 && s.kv_dtype != DType::kF16 && s.kv_dtype != DType::kFp8E4M3) {
        bad("kv-dtype", std::string(dtype_name(s.kv_dtype)),
            fmt::format("must be bf16, fp16 or fp8 (e4m3) for the sparse-attention (DSA) model '{}'", m.id));
      }
      if (s.eviction != Eviction::kNone || s.mla_expanded_head_dim > 0 || s.cross_layer_share > 1) {
        bad("kv-scheme", "eviction / expanded MLA / cross-layer sharing",
            fmt::format("does not apply to the sparse-attention (DSA) model '{}'", m.id));
      }
    }
  }
  if (count(LayerKind::kCompressedAttention) > 0) {
    // DeepSeek-V4: every engine stores its caches in one fp8 layout (vLLM forces fp8_ds_mla and
    // asserts an fp8 cache; SGLang's DeepSeekV4 pools), so no other scheme has a layout to answer.
    const CompressedAttentionShape& a = m.compressed;
    if (s.kv_dtype != DType::kFp8E4M3) {
      bad("kv-cache-dtype", std::string(dtype_name(s.kv_dtype)),
          fmt::format("must be fp8 (e4m3) for the DeepSeek-V4 model '{}': the engines store its window, compressed "
                      "latents and indexer keys only in their fp8 layout (vLLM fp8_ds_mla)",
                      m.id));
    }
    if (s.eviction != Eviction::kNone || s.low_rank > 0 || s.cross_layer_share > 1 || s.mla_expanded_head_dim > 0) {
      bad("kv-scheme", "eviction / low-rank / cross-layer sharing / expanded MLA",
          fmt::format("does not apply to the DeepSeek-V4 model '{}', whose caches are already windowed and compressed",
                      m.id));
    }
    if ((a.head_dim - a.rope_dim) % 64 != 0) {
      bad("model", fmt::format("head_dim {} - qk_rope_head_dim {}", a.head_dim, a.rope_dim),
          "must be a multiple of 64 (the fp8 latent carries one scale byte per 64 NoPE dims)");
    }
    if (a.num_heads % tp != 0 || a.o_groups % tp != 0) {
      bad("tensor-parallel-size", std::to_string(tp),
          fmt::format("must divide num_attention_heads={} and o_groups={} of model '{}' (heads and output groups "
                      "are split whole)",
                      a.num_heads, a.o_groups, m.id));
    }
  }
  if (m.msa.index_head_dim > 0) {
    // MiniMax-M3: vLLM and SGLang keep its K and V in the model dtype or fp8 and its index keys in
    // bf16; kvplan's research schemes would change one cache and not the other, or drop tokens the
    // indexer scores, so no layout for them is known.
    if (s.kv_dtype != DType::kBF16 && s.kv_dtype != DType::kF16 && !is_fp8(s.kv_dtype)) {
      bad("kv-cache-dtype", std::string(dtype_name(s.kv_dtype)),
          fmt::format("must be bf16, fp16 or fp8 for the MiniMax-M3 model '{}': the engines serve its sparse attention "
                      "with those KV caches only (the index keys stay bf16)",
                      m.id));
    }
    if (s.eviction != Eviction::kNone || s.low_rank > 0 || s.cross_layer_share > 1) {
      bad("kv-scheme", "eviction / low-rank / cross-layer sharing",
          fmt::format("does not apply to the MiniMax-M3 model '{}': its indexer scores every cached token's index key "
                      "and no engine runs it with such a cache",
                      m.id));
    }
  }
  if (count(LayerKind::kMamba2) > 0 && m.mamba.num_heads % tp != 0) {
    bad("tensor-parallel-size", std::to_string(tp),
        fmt::format("must divide the {} Mamba-2 heads of model '{}'", m.mamba.num_heads, m.id));
  }
  if (count(LayerKind::kMamba2) > 0 && m.mamba.n_groups % tp != 0 && m.mamba.n_groups != 1) {
    // vLLM's MambaMixer2 asserts the same: groups are split whole, or a single group is replicated.
    bad("tensor-parallel-size", std::to_string(tp),
        fmt::format("must divide the {} Mamba-2 B/C groups (n_groups) of model '{}' (vLLM MambaMixer2 splits "
                    "groups whole unless there is one)",
                    m.mamba.n_groups, m.id));
  }
  if (count(LayerKind::kMamba1) > 0 && m.mamba.d_inner % tp != 0) {
    bad("tensor-parallel-size", std::to_string(tp),
        fmt::format("must divide the Mamba d_inner={} of model '{}'", m.mamba.d_inner, m.id));
  }
  if (count(LayerKind::kLinearAttention) > 0 &&
      (m.linear.num_value_heads % tp != 0 || m.linear.num_key_heads % tp != 0)) {
    bad("tensor-parallel-size", std::to_string(tp),
        fmt::format("must divide linear_num_key_heads={} and linear_num_value_heads={} of model '{}'",
                    m.linear.num_key_heads, m.linear.num_value_heads, m.id));
  }
}

}  // namespace kvplan
