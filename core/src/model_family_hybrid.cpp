// DeepSeek MLA models and the hybrid / recurrent families: DeepSeek-V2/V3/R1, Kimi-K2 (the
// DeepSeek-V3 layout), Jamba, Mamba-2, Qwen3-Next and MiniMax (lightning attention).
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"
#include "kvplan/core/error.h"
#include "kvplan/core/limits.h"

namespace kvplan::internal {

using nlohmann::json;

ModelConfig parse_deepseek(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  MlaShape& a = m.mla;
  a.num_heads = f.positive_int("num_attention_heads");
  a.q_lora_rank = f.non_negative_int_or("q_lora_rank", 0);
  a.kv_lora_rank = f.positive_int("kv_lora_rank");
  a.qk_nope_head_dim = f.positive_int("qk_nope_head_dim");
  a.qk_rope_head_dim = f.positive_int("qk_rope_head_dim");
  a.v_head_dim = f.positive_int("v_head_dim");
  m.rotary_dim = a.qk_rope_head_dim;
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  int first_dense = f.non_negative_int_or("first_k_dense_replace", 0);
  int freq = f.positive_int_or("moe_layer_freq", 1);
  int routed = f.non_negative_int_or("n_routed_experts", 0);
  bool router_bias = f.string_or("topk_method", "") == "noaux_tc";
  for (int i = 0; i < m.num_layers(); ++i) {
    LayerSpec& l = m.layers[static_cast<size_t>(i)];
    l.kind = LayerKind::kMla;
    bool moe = routed > 0 && i >= first_dense && i % freq == 0;
    if (!moe) {
      l.mlp.kind = MlpKind::kGated;
      l.mlp.intermediate_size = f.positive_int("intermediate_size");
      continue;
    }
    l.mlp.kind = MlpKind::kMoe;
    l.mlp.num_experts = routed;
    l.mlp.experts_per_token = f.positive_int("num_experts_per_tok");
    if (l.mlp.experts_per_token > routed) {
      f.fail("num_experts_per_tok", std::to_string(l.mlp.experts_per_token),
             fmt::format("must not exceed n_routed_experts={}", routed));
    }
    l.mlp.expert_intermediate_size = f.positive_int("moe_intermediate_size");
    l.mlp.num_shared_experts = f.non_negative_int_or("n_shared_experts", 0);
    l.mlp.shared_intermediate_size = l.mlp.num_shared_experts * l.mlp.expert_intermediate_size;
    l.mlp.router_bias = router_bias;
  }
  read_mtp_layers(f, m);
  return m;
}

ModelConfig parse_jamba(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  m.rotary_dim = 0;  // Jamba attention layers use no positional encoding
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  int attn_period = f.positive_int("attn_layer_period");
  int attn_offset = f.non_negative_int_or("attn_layer_offset", 0);
  int expert_period = f.positive_int("expert_layer_period");
  int expert_offset = f.non_negative_int_or("expert_layer_offset", 0);
  MambaShape& s = m.mamba;
  s.d_state = f.positive_int("mamba_d_state");
  s.d_conv = f.positive_int("mamba_d_conv");
  s.d_inner = f.positive_int("mamba_expand") * m.hidden_size;
  s.dt_rank = f.raw("mamba_dt_rank").is_string()
                  ? (m.hidden_size + 15) / 16  // "auto": ceil(hidden_size / 16)
                  : f.positive_int("mamba_dt_rank");
  s.conv_bias = f.bool_or("mamba_conv_bias", true);
  s.proj_bias = f.bool_or("mamba_proj_bias", false);
  s.inner_layernorms = true;
  int intermediate = f.positive_int("intermediate_size");
  for (int i = 0; i < m.num_layers(); ++i) {
    LayerSpec& l = m.layers[static_cast<size_t>(i)];
    l.kind = i % attn_period == attn_offset ? LayerKind::kFullAttention : LayerKind::kMamba1;
    if (i % expert_period == expert_offset && f.positive_int("num_experts") > 1) {
      l.mlp.kind = MlpKind::kMoe;
      l.mlp.num_experts = f.positive_int("num_experts");
      l.mlp.experts_per_token = f.positive_int("num_experts_per_tok");
      l.mlp.expert_intermediate_size = intermediate;
    } else {
      l.mlp.kind = MlpKind::kGated;
      l.mlp.intermediate_size = intermediate;
    }
  }
  return m;
}

// Mamba-2 in the transformers format (model_type "mamba2") or the state-spaces original
// (d_model / n_layer / ssm_cfg), which pads the vocabulary to pad_vocab_size_multiple.
ModelConfig parse_mamba2(const JsonFields& f, ModelConfig m) {
  MambaShape& s = m.mamba;
  if (f.has("d_model")) {
    m.hidden_size = f.positive_int("d_model");
    const int n = f.positive_int("n_layer");
    if (n > kMaxLayers) f.fail("n_layer", std::to_string(n), fmt::format("is beyond any model kvplan plans for (at most {})", kMaxLayers));
    m.layers.assign(static_cast<size_t>(n), LayerSpec{});
    int vocab = f.positive_int("vocab_size");
    int pad = f.positive_int_or("pad_vocab_size_multiple", 1);
    m.vocab_size = (vocab + pad - 1) / pad * pad;
    json cfg = f.has("ssm_cfg") ? f.raw("ssm_cfg") : json::object();
    JsonFields c(cfg, f.what() + " ssm_cfg");
    s.d_state = c.positive_int_or("d_state", 128);
    s.d_conv = c.positive_int_or("d_conv", 4);
    s.d_inner = c.positive_int_or("expand", 2) * m.hidden_size;
    s.head_dim = c.positive_int_or("headdim", 64);
    s.n_groups = c.positive_int_or("ngroups", 1);
    s.conv_bias = c.bool_or("conv_bias", true);
    s.proj_bias = c.bool_or("bias", false);
    m.tie_word_embeddings = f.bool_or("tie_embeddings", true);
  } else {
    read_common(f, m);
    s.d_state = f.positive_int("state_size");
    s.d_conv = f.positive_int("conv_kernel");
    s.d_inner = static_cast<int>(std::lround(f.positive_number("expand") * m.hidden_size));
    s.head_dim = f.positive_int("head_dim");
    s.n_groups = f.positive_int_or("n_groups", 1);
    s.conv_bias = f.bool_or("use_conv_bias", true);
    s.proj_bias = f.bool_or("use_bias", false);
    m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  }
  if (s.d_inner % s.head_dim != 0) {
    throw ConfigError(fmt::format("{}: head_dim={} must divide d_inner={}", f.what(), s.head_dim, s.d_inner));
  }
  s.num_heads = s.d_inner / s.head_dim;
  for (LayerSpec& l : m.layers) {
    l.kind = LayerKind::kMamba2;
    l.mlp.kind = MlpKind::kGated;
    l.mlp.intermediate_size = 0;  // Mamba-2 blocks have no MLP
  }
  m.norms_per_layer = 1;
  return m;
}

ModelConfig parse_qwen3_next(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false, false);
  m.attention.output_gate = true;
  m.attention.qk_norm = true;
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  LinearAttentionShape& s = m.linear;
  s.num_key_heads = f.positive_int("linear_num_key_heads");
  s.num_value_heads = f.positive_int("linear_num_value_heads");
  s.key_head_dim = f.positive_int("linear_key_head_dim");
  s.value_head_dim = f.positive_int("linear_value_head_dim");
  s.conv_kernel = f.positive_int("linear_conv_kernel_dim");
  if (!apply_layer_types(f, m, 0, 0)) {
    int interval = f.positive_int_or("full_attention_interval", 4);
    for (int i = 0; i < m.num_layers(); ++i) {
      m.layers[static_cast<size_t>(i)].kind =
          (i + 1) % interval == 0 ? LayerKind::kFullAttention : LayerKind::kLinearAttention;
    }
  }
  for (LayerSpec& l : m.layers) l.mlp.intermediate_size = f.positive_int_or("intermediate_size", 0);
  apply_qwen_moe(f, m);
  return m;
}

// MiniMax-Text-01 / MiniMax-M1: lightning (linear) attention layers with a few softmax layers
// (attn_type_list: 0 linear, 1 softmax; or layer_types), MoE on every layer.
ModelConfig parse_minimax(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  if (f.has("rotary_dim")) m.rotary_dim = f.positive_int("rotary_dim");
  LinearAttentionShape& s = m.linear;
  s.kind = LinearAttentionKind::kLightning;
  s.num_key_heads = s.num_value_heads = m.attention.num_q_heads;
  s.key_head_dim = s.value_head_dim = m.attention.head_dim;
  s.conv_kernel = 0;
  if (!apply_layer_types(f, m, 0, 0)) {
    const std::vector<int> types = int_list(f, "attn_type_list");
    if (static_cast<int>(types.size()) != m.num_layers()) {
      f.fail("attn_type_list", fmt::format("{} entries", types.size()),
             fmt::format("must list {} layers (0 lightning, 1 softmax)", m.num_layers()));
    }
    for (int i = 0; i < m.num_layers(); ++i) {
      const int t = types[static_cast<size_t>(i)];
      if (t != 0 && t != 1) f.fail(fmt::format("attn_type_list[{}]", i), std::to_string(t), "must be 0 or 1");
      m.layers[static_cast<size_t>(i)].kind = t == 1 ? LayerKind::kFullAttention : LayerKind::kLinearAttention;
    }
  }
  const int experts = f.positive_int("num_local_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  if (top_k > experts) f.fail("num_experts_per_tok", std::to_string(top_k), "must not exceed num_local_experts");
  const int width = f.positive_int("intermediate_size");
  const int shared = f.non_negative_int_or("shared_intermediate_size", 0);
  for (LayerSpec& l : m.layers) {
    l.mlp = MlpShape{};
    l.mlp.kind = MlpKind::kMoe;
    l.mlp.num_experts = experts;
    l.mlp.experts_per_token = top_k;
    l.mlp.expert_intermediate_size = width;
    l.mlp.shared_intermediate_size = shared;
    l.mlp.num_shared_experts = shared > 0 ? 1 : 0;
  }
  return m;
}

}  // namespace kvplan::internal
