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

namespace {

// DeepSeek sparse attention (deepseek_v32, glm_moe_dsa): the lightning indexer's shape. Any other
// MLA family that carries indexer or compressed-attention keys is refused, naming the key: it is
// a layout kvplan would otherwise cost as dense MLA.
void read_sparse_attention(const JsonFields& f, ModelConfig& m) {
  const bool dsa = m.model_type == "deepseek_v32" || m.model_type == "glm_moe_dsa";
  for (const char* key : {"index_topk", "index_n_heads", "index_head_dim"}) {
    if (!dsa && f.has(key)) {
      f.fail(key, json_value_text(f.raw(key)),
             fmt::format("is a sparse-attention (DSA) field that model_type={} does not define; kvplan would cost "
                         "the layers as dense MLA, so it refuses (DSA is read for deepseek_v32 and glm_moe_dsa)",
                         m.model_type));
    }
  }
  // DeepSeek-V4's compressed attention (CSA/HCA) and GLM-5.2's indexer every 4th layer change the
  // cache layout and the cost; kvplan does not model them yet.
  for (const char* key : {"compress_ratios", "index_topk_freq"}) {
    if (f.has(key) && !(std::string(key) == "index_topk_freq" && f.raw(key) == 1)) {
      f.fail(key, json_value_text(f.raw(key)),
             "is not understood by kvplan (compressed or interleaved sparse attention); refused rather than "
             "costed as every-layer DSA");
    }
  }
  if (!dsa) return;
  MlaShape& a = m.mla;
  a.index_num_heads = f.positive_int("index_n_heads");
  a.index_head_dim = f.positive_int("index_head_dim");
  a.index_topk = f.positive_int("index_topk");
  if (a.q_lora_rank == 0) f.fail("q_lora_rank", "0", "must be positive: the DSA indexer projects its queries from the q latent");
  if (a.index_head_dim % 128 != 0) {
    f.fail("index_head_dim", std::to_string(a.index_head_dim),
           "must be a multiple of 128 (the indexer key cache stores one fp32 scale per 128 fp8 elements)");
  }
  if (a.index_head_dim < a.qk_rope_head_dim) {
    f.fail("index_head_dim", std::to_string(a.index_head_dim),
           fmt::format("must be at least qk_rope_head_dim={} (the indexer applies RoPE to its first dims)",
                       a.qk_rope_head_dim));
  }
  m.notes.push_back(fmt::format(
      "model '{}': DeepSeek sparse attention: every layer caches its MLA latent plus the lightning indexer's fp8 "
      "key ({} B + one fp32 scale per 128) per token; attention reads the top {} tokens. Cache layout as vLLM "
      "(fp8_ds_mla + DeepseekV32IndexerCache) and SGLang (NSATokenToKVPool) allocate it: an fp8 KV cache is the "
      "packed latent with one fp32 scale per 128 elements, whatever --fp8-scales says; vLLM pages it in 64-token "
      "blocks (FlashMLA sparse), so pass --block-size 64 to reproduce its block count",
      m.id, a.index_head_dim, a.index_topk));
}

// Gated DeltaNet shapes (Qwen3-Next, Qwen3.5) and the layer pattern: layer_types if given, else
// full attention every full_attention_interval-th layer.
void read_gated_deltanet(const JsonFields& f, ModelConfig& m) {
  LinearAttentionShape& s = m.linear;
  s.num_key_heads = f.positive_int("linear_num_key_heads");
  s.num_value_heads = f.positive_int("linear_num_value_heads");
  s.key_head_dim = f.positive_int("linear_key_head_dim");
  s.value_head_dim = f.positive_int("linear_value_head_dim");
  s.conv_kernel = f.positive_int("linear_conv_kernel_dim");
  if (apply_layer_types(f, m, 0, 0)) return;
  const int interval = f.positive_int_or("full_attention_interval", 4);
  for (int i = 0; i < m.num_layers(); ++i) {
    m.layers[static_cast<size_t>(i)].kind =
        (i + 1) % interval == 0 ? LayerKind::kFullAttention : LayerKind::kLinearAttention;
  }
}

}  // namespace

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
  read_sparse_attention(f, m);
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
  read_gated_deltanet(f, m);
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
    set_moe(l.mlp, experts, top_k, width);
    l.mlp.shared_intermediate_size = shared;
    l.mlp.num_shared_experts = shared > 0 ? 1 : 0;
  }
  return m;
}

}  // namespace kvplan::internal

namespace kvplan::internal {

// MiniMax-M2 / M2.1 / M2.5 / M2.7 (vLLM minimax_m2.py, MiniMaxM2ForCausalLM): softmax GQA on every
// layer with partial RoPE (rotary_dim) and q/k RMSNorms over the full projected width, and a
// routed MoE of num_local_experts experts with a sigmoid router and its correction bias
// (use_routing_bias). The MTP modules the config describes are not loaded for plain serving.
ModelConfig parse_minimax_m2(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  if (f.has("rotary_dim")) m.rotary_dim = f.positive_int("rotary_dim");
  if (m.rotary_dim > m.attention.head_dim) {
    f.fail("rotary_dim", std::to_string(m.rotary_dim), fmt::format("must not exceed head_dim={}", m.attention.head_dim));
  }
  if (f.bool_or("use_qk_norm", false)) {
    const std::string norm = f.string_or("qk_norm_type", "per_layer");
    if (norm != "per_layer") {
      f.fail("qk_norm_type", norm, "must be per_layer (the only q/k norm layout kvplan enumerates for minimax_m2)");
    }
    m.attention.qk_norm_full_width = true;
  }
  if (f.has("sliding_window") && !f.raw("sliding_window").is_null()) {
    f.fail("sliding_window", json_value_text(f.raw("sliding_window")),
           "must be null: minimax_m2 has no windowed layers kvplan knows of");
  }
  // attn_type_list: 1 = softmax attention on every MiniMax-M2 layer; a 0 (lightning attention in
  // MiniMax-M1) is not part of this architecture, so it is refused rather than guessed.
  if (f.has("attn_type_list")) {
    const std::vector<int> types = int_list(f, "attn_type_list");
    if (static_cast<int>(types.size()) != m.num_layers()) {
      f.fail("attn_type_list", fmt::format("{} entries", types.size()), fmt::format("must list {} layers", m.num_layers()));
    }
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] != 1) {
        f.fail(fmt::format("attn_type_list[{}]", i), std::to_string(types[i]),
               "must be 1 (softmax attention): minimax_m2 layers of another attention type are not understood");
      }
    }
  }
  if (f.non_negative_int_or("shared_intermediate_size", 0) != 0) {
    f.fail("shared_intermediate_size", std::to_string(f.positive_int("shared_intermediate_size")),
           "must be 0: minimax_m2 has no shared expert kvplan knows the layout of");
  }
  const int experts = f.positive_int("num_local_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  if (top_k > experts) f.fail("num_experts_per_tok", std::to_string(top_k), "must not exceed num_local_experts");
  const int width = f.positive_int("intermediate_size");
  const bool router_bias = f.bool_or("use_routing_bias", false);
  for (LayerSpec& l : m.layers) {
    l.kind = LayerKind::kFullAttention;
    set_moe(l.mlp, experts, top_k, width);
    l.mlp.router_bias = router_bias;
  }
  if (f.bool_or("use_mtp", false) || f.non_negative_int_or("num_mtp_modules", 0) > 0) {
    m.num_mtp_layers = f.non_negative_int_or("num_mtp_modules", 0) * f.positive_int_or("mtp_transformer_layers", 1);
    m.notes.push_back(fmt::format(
        "model '{}': the {} multi-token-prediction module(s) the config describes are not counted (serving "
        "engines load them only for speculative decoding)",
        m.id, f.non_negative_int_or("num_mtp_modules", 0)));
  }
  return m;
}

// Qwen3.5 language model (qwen3_5_moe_text / qwen3_5_text, transformers Qwen3_5*TextModel): the
// Qwen3-Next hybrid of Gated DeltaNet and gated full attention (layer_types), with MoE
// (qwen3_5_moe) or a dense MLP (qwen3_5). RoPE settings sit in rope_parameters.
ModelConfig parse_qwen3_5_text(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false, false);
  if (!f.bool_or("attn_output_gate", true)) {
    f.fail("attn_output_gate", "false", "must be true: Qwen3.5 full-attention layers gate their output");
  }
  m.attention.output_gate = true;
  m.attention.qk_norm = true;
  if (f.has("rope_parameters") && f.raw("rope_parameters").is_object()) {
    const json& r = f.raw("rope_parameters");
    if (r.contains("partial_rotary_factor") && r["partial_rotary_factor"].is_number()) {
      const double partial = r["partial_rotary_factor"].get<double>();
      if (partial <= 0 || partial > 1) f.fail("rope_parameters.partial_rotary_factor", fmt::format("{}", partial), "must be in (0, 1]");
      m.rotary_dim = static_cast<int>(std::lround(m.attention.head_dim * partial));
    }
  }
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  read_gated_deltanet(f, m);
  require_divides(f, "linear_num_key_heads", m.linear.num_key_heads, "linear_num_value_heads", m.linear.num_value_heads);
  for (const LayerSpec& l : m.layers) {
    if (l.kind != LayerKind::kFullAttention && l.kind != LayerKind::kLinearAttention) {
      f.fail("layer_types", std::string(layer_kind_name(l.kind)),
             "must list only full_attention and linear_attention for Qwen3.5");
    }
  }
  const bool moe = f.has("num_experts");
  set_dense_mlp(m, f.positive_int_or("intermediate_size", 0));
  if (moe) {
    apply_qwen_moe(f, m);
  } else if (f.positive_int_or("intermediate_size", 0) == 0) {
    f.fail("intermediate_size", "missing", "is required for the dense Qwen3.5 (no num_experts)");
  }
  const int mtp = f.non_negative_int_or("mtp_num_hidden_layers", 0);
  if (mtp > 0) {
    m.num_mtp_layers = mtp;
    m.notes.push_back(fmt::format(
        "model '{}': the {} multi-token-prediction layer(s) (mtp_num_hidden_layers) are not counted (serving "
        "engines load them only for speculative decoding)",
        m.id, mtp));
  }
  return m;
}

}  // namespace kvplan::internal
