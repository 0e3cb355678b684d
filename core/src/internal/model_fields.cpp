// Readers every model family shares (internal/model_fields.h).
#include "internal/model_fields.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/limits.h"

namespace kvplan::internal {

using nlohmann::json;

void require_divides(const JsonFields& f, std::string_view small_key, int small, std::string_view big_key, int big) {
  if (big % small != 0) {
    throw ConfigError(fmt::format("{}: {}={} must divide {}={}", f.what(), small_key, small, big_key, big));
  }
}

int bounded(const JsonFields& f, std::string_view key, int value, int64_t max) {
  if (value > max) f.fail(key, std::to_string(value), fmt::format("is beyond any model kvplan plans for (at most {})", max));
  return value;
}

void read_common(const JsonFields& f, ModelConfig& m, std::string_view layers_key) {
  m.hidden_size = bounded(f, "hidden_size", f.positive_int("hidden_size"), kMaxHiddenSize);
  m.vocab_size = bounded(f, "vocab_size", f.positive_int("vocab_size"), kMaxVocabSize);
  // Bounded before the per-layer table is allocated (2^31 layers once asked for 85 GB).
  if (!layers_key.empty()) {
    int n = bounded(f, layers_key, f.positive_int(layers_key), kMaxLayers);
    m.layers.assign(static_cast<size_t>(n), LayerSpec{});
  }
  m.max_position_embeddings = f.has("max_position_embeddings") ? f.positive_int64("max_position_embeddings") : 0;
  if (m.max_position_embeddings > kMaxTokens) {
    f.fail("max_position_embeddings", std::to_string(m.max_position_embeddings),
           fmt::format("is beyond any context kvplan plans for (at most {} tokens)", kMaxTokens));
  }
  if (f.has("torch_dtype")) m.dtype = parse_dtype(f.string("torch_dtype"), f.what() + ": torch_dtype");
  else if (f.has("dtype")) m.dtype = parse_dtype(f.string("dtype"), f.what() + ": dtype");
  if (f.has("rope_scaling")) {
    const json& r = f.raw("rope_scaling");
    if (!r.is_object()) f.fail("rope_scaling", json_value_text(r), "must be an object or null");
    JsonFields rf(r, f.what() + ": rope_scaling");
    m.rope_scaling.type = rf.has("rope_type") ? rf.string("rope_type") : rf.string_or("type", "");
    m.rope_scaling.factor = rf.positive_number_or("factor", 1.0);
    if (rf.has("original_max_position_embeddings")) {
      m.rope_scaling.original_max_position_embeddings = rf.positive_int64("original_max_position_embeddings");
    }
  }
}

void read_attention(const JsonFields& f, ModelConfig& m, bool default_qkv_bias, bool o_bias_follows) {
  AttentionShape& a = m.attention;
  a.num_q_heads = f.positive_int("num_attention_heads");
  a.num_kv_heads = f.positive_int_or("num_key_value_heads", a.num_q_heads);
  require_divides(f, "num_key_value_heads", a.num_kv_heads, "num_attention_heads", a.num_q_heads);
  if (f.has("head_dim")) {
    a.head_dim = f.positive_int("head_dim");
  } else {
    require_divides(f, "num_attention_heads", a.num_q_heads, "hidden_size", m.hidden_size);
    a.head_dim = m.hidden_size / a.num_q_heads;
  }
  a.v_head_dim = a.head_dim;
  a.qkv_bias = f.bool_or("attention_bias", default_qkv_bias);
  a.o_bias = o_bias_follows && f.has("attention_bias") && f.bool_or("attention_bias", false);
  double partial = f.number_or("partial_rotary_factor", 1.0);
  if (partial <= 0 || partial > 1) f.fail("partial_rotary_factor", fmt::format("{}", partial), "must be in (0, 1]");
  m.rotary_dim = static_cast<int>(std::lround(a.head_dim * partial));
}

void set_dense_mlp(ModelConfig& m, int intermediate, MlpKind kind) {
  for (LayerSpec& l : m.layers) {
    l.mlp.kind = kind;
    l.mlp.intermediate_size = intermediate;
  }
}

void set_moe(MlpShape& mlp, int experts, int top_k, int width) {
  mlp = MlpShape{};
  mlp.kind = MlpKind::kMoe;
  mlp.num_experts = experts;
  mlp.experts_per_token = top_k;
  mlp.expert_intermediate_size = width;
}

bool apply_layer_types(const JsonFields& f, ModelConfig& m, int window, int chunk) {
  if (!f.has("layer_types")) return false;
  const json& types = f.raw("layer_types");
  if (!types.is_array() || static_cast<int>(types.size()) != m.num_layers()) {
    f.fail("layer_types", json_value_text(types), fmt::format("must list {} layer types", m.num_layers()));
  }
  for (int i = 0; i < m.num_layers(); ++i) {
    const json& t = types[static_cast<size_t>(i)];
    const std::string name = t.is_string() ? t.get<std::string>() : json_value_text(t);
    LayerSpec& l = m.layers[static_cast<size_t>(i)];
    if (name == "full_attention") {
      l.kind = LayerKind::kFullAttention;
    } else if (name == "sliding_attention") {
      if (window <= 0) f.fail("sliding_window", "missing", "is required when layer_types lists sliding_attention");
      l.kind = LayerKind::kSlidingAttention;
      l.window_tokens = window;
    } else if (name == "chunked_attention") {
      if (chunk <= 0) f.fail("attention_chunk_size", "missing", "is required when layer_types lists chunked_attention");
      l.kind = LayerKind::kChunkedAttention;
      l.window_tokens = chunk;
    } else if (name == "linear_attention") {
      l.kind = LayerKind::kLinearAttention;
    } else {
      f.fail(fmt::format("layer_types[{}]", i), name,
             "must be full_attention, sliding_attention, chunked_attention or linear_attention");
    }
  }
  return true;
}

std::vector<int> int_list(const JsonFields& f, std::string_view key) {
  std::vector<int> out;
  if (!f.has(key)) return out;
  const json& v = f.raw(key);
  if (!v.is_array()) f.fail(key, json_value_text(v), "must be a list of integers");
  for (const json& e : v) {
    if (!e.is_number_integer()) f.fail(key, json_value_text(e), "must list integers");
    out.push_back(e.get<int>());
  }
  return out;
}

void read_mtp_layers(const JsonFields& f, ModelConfig& m) {
  m.num_mtp_layers = f.non_negative_int_or("num_nextn_predict_layers", 0);
  if (m.num_mtp_layers > 0) {
    m.notes.push_back(fmt::format(
        "model '{}': the {} multi-token-prediction layer(s) are not counted (serving engines load them only "
        "for speculative decoding)",
        m.id, m.num_mtp_layers));
  }
}

void check_bounds(const JsonFields& f, const ModelConfig& m) {
  auto check = [&](std::string_view key, int64_t value, int64_t max) {
    if (value > max) f.fail(key, std::to_string(value), fmt::format("is beyond any model kvplan plans for (at most {})", max));
  };
  check("num_attention_heads", m.attention.num_q_heads, kMaxHeads);
  check("num_key_value_heads", m.attention.num_kv_heads, kMaxHeads);
  check("head_dim", std::max(m.attention.head_dim, m.attention.v_head_dim), kMaxHeadDim);
  check("num_attention_heads (MLA)", m.mla.num_heads, kMaxHeads);
  check("kv_lora_rank", std::max({m.mla.kv_lora_rank, m.mla.q_lora_rank, m.mla.qk_nope_head_dim,
                                  m.mla.qk_rope_head_dim, m.mla.v_head_dim}),
        kMaxHeadDim);
  check("linear attention heads", std::max(m.linear.num_key_heads, m.linear.num_value_heads), kMaxHeads);
  check("linear attention head dim", std::max(m.linear.key_head_dim, m.linear.value_head_dim), kMaxHeadDim);
  check("mamba d_inner", m.mamba.d_inner, kMaxIntermediateSize);
  check("mamba d_state / d_conv / groups",
        std::max({m.mamba.d_state, m.mamba.d_conv, m.mamba.n_groups, m.mamba.dt_rank}), kMaxHeadDim);
  check("vision hidden_size", m.vision.hidden_size, kMaxHiddenSize);
  check("vision intermediate_size", m.vision.intermediate_size, kMaxIntermediateSize);
  check("vision num_hidden_layers", m.vision.num_layers, kMaxLayers);
  check("vision image/patch/projector sizes",
        std::max({m.vision.image_size, m.vision.patch_size, m.vision.projector_input_dim, m.vision.projector_output_dim,
                  m.vision.out_hidden_size, m.vision.in_channels, m.vision.temporal_patch_size,
                  m.vision.spatial_merge_size}),
        kMaxHiddenSize);
  for (const LayerSpec& l : m.layers) {
    check("intermediate_size", std::max({l.mlp.intermediate_size, l.mlp.expert_intermediate_size,
                                         l.mlp.shared_intermediate_size}),
          kMaxIntermediateSize);
    check("num_experts", l.mlp.num_experts, kMaxExperts);
    check("window / chunk tokens", l.window_tokens, kMaxTokens);
    if (l.attention) {
      check("num_global_key_value_heads", l.attention->num_kv_heads, kMaxHeads);
      check("global_head_dim", std::max(l.attention->head_dim, l.attention->v_head_dim), kMaxHeadDim);
    }
  }
}

void read_quantization(const JsonFields& f, ModelConfig& m) {
  if (!f.has("quantization_config")) return;
  m.quantization = parse_quantization_config(f.raw("quantization_config"), fmt::format("model '{}'", m.id));
  // The config does not say the dtype of fp8 block scales: DeepSeek-V3/R1 (and Kimi-K2) store
  // fp32 weight_scale_inv, Qwen's FP8 checkpoints bf16 (data/quantized/README.md, rule 2).
  if (m.quantization.method == QuantMethod::kFp8Block && m.model_type.rfind("qwen", 0) == 0) {
    m.quantization.scale_bytes = 2;
  }
  if (m.model_type == "deepseek_v4") read_deepseek_v4_quantization(f, m);
}

}  // namespace kvplan::internal
