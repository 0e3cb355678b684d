// Gemma-4 language model (model_type gemma4_text; the gemma4 wrapper is in model_family_multimodal.cpp),
// read as transformers' modeling_gemma4.py builds it (Gemma4TextDecoderLayer, Gemma4TextAttention,
// Gemma4TextRouter) and checked against the published checkpoints' safetensors totals:
//   - sliding and full-attention layers (layer_types) of different shapes: sliding layers use head_dim
//     and num_key_value_heads; full layers global_head_dim and, with attention_k_eq_v,
//     num_global_key_value_heads and no v_proj (the key is the value). The full layers' shape is
//     LayerSpec::attention.
//   - q_norm and k_norm per head, a weightless v_norm, four RMSNorms per layer and a stored
//     layer_scalar; tied embeddings.
//   - enable_moe_block: the dense MLP (intermediate_size) runs beside 128 routed GeGLU experts
//     stored fused per layer, with three more RMSNorms; the router carries proj, scale [hidden] and
//     per_expert_scale [E]. The dense MLP is read as an always-active shared expert.
//   - the E2B/E4B sizes: Per-Layer Embeddings (hidden_size_per_layer_input: a second embedding table
//     of num_layers x width per token, its projection from the hidden state and norm, and per layer a
//     gate, a projection back and a norm), cross-layer KV sharing (the last num_kv_shared_layers
//     layers read the KV of the last earlier layer of their type and store none; their k/v weights
//     are still in the checkpoint) and, with use_double_wide_mlp, twice the MLP width on those layers.
// Refused: attention biases, an activation other than gelu_pytorch_tanh, and double-wide MLPs with
// the MoE block.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"

namespace kvplan::internal {

using nlohmann::json;

namespace {

// rope_parameters[layer_type] when it is an object, else nullptr.
const json* rope_entry(const JsonFields& f, const char* layer_type) {
  if (!f.has("rope_parameters")) return nullptr;
  const json& r = f.raw("rope_parameters");
  if (!r.is_object() || !r.contains(layer_type) || !r[layer_type].is_object()) return nullptr;
  return &r[layer_type];
}

// rope_parameters[layer_type].partial_rotary_factor, 1 when absent.
double partial_rotary(const JsonFields& f, const char* layer_type) {
  const json* r = rope_entry(f, layer_type);
  if (r == nullptr) return 1.0;
  JsonFields rf(*r, fmt::format("{}: rope_parameters.{}", f.what(), layer_type));
  const double partial = rf.number_or("partial_rotary_factor", 1.0);
  if (partial <= 0 || partial > 1) rf.fail("partial_rotary_factor", fmt::format("{}", partial), "must be in (0, 1]");
  return partial;
}

}  // namespace

ModelConfig parse_gemma4_text(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  m.per_layer_input_size = f.non_negative_int_or("hidden_size_per_layer_input", 0);
  if (m.per_layer_input_size > 0) {
    m.per_layer_input_vocab = f.positive_int_or("vocab_size_per_layer_input", m.vocab_size);
  }
  const int shared_layers = f.non_negative_int_or("num_kv_shared_layers", 0);
  if (shared_layers >= m.num_layers()) {
    f.fail("num_kv_shared_layers", std::to_string(shared_layers),
           fmt::format("must be less than num_hidden_layers={} (a shared layer reads an earlier layer's KV)",
                       m.num_layers()));
  }
  if (f.bool_or("attention_bias", false)) {
    f.fail("attention_bias", "true", "must be false: no Gemma-4 checkpoint with attention biases is known");
  }
  const std::string act = f.string_or("hidden_activation", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh") {
    f.fail("hidden_activation", act, "must be gelu_pytorch_tanh (vLLM's Gemma-4 accepts no other)");
  }
  read_attention(f, m, false);
  AttentionShape& a = m.attention;
  a.qk_norm = true;
  a.v_norm = true;
  m.rotary_dim = static_cast<int>(std::lround(a.head_dim * partial_rotary(f, "sliding_attention")));
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  m.norms_per_layer = 4;
  m.layer_scalar = true;
  const int window = f.positive_int("sliding_window");
  if (!apply_layer_types(f, m, window, 0)) {
    f.fail("layer_types", "missing", "is required: Gemma-4 names each layer's attention type");
  }

  // The full-attention layers' own shape.
  AttentionShape full = a;
  full.head_dim = full.v_head_dim = f.positive_int_or("global_head_dim", a.head_dim);
  full.k_eq_v = f.bool_or("attention_k_eq_v", false);
  if (full.k_eq_v) full.num_kv_heads = f.positive_int("num_global_key_value_heads");
  require_divides(f, full.k_eq_v ? "num_global_key_value_heads" : "num_key_value_heads", full.num_kv_heads,
                  "num_attention_heads", full.num_q_heads);
  // rope_type "proportional" (partial_rotary_factor 0.25): vLLM's Gemma4RotaryEmbedding rotates every
  // dim with zero frequencies outside the first quarter, so its cos/sin cache rows are the whole head
  // (get_rope; quoted in find_string ids 69089257871, 57653133870). Any other rope type: the partial width.
  const json* full_rope = rope_entry(f, "full_attention");
  const bool proportional = full_rope != nullptr && full_rope->value("rope_type", std::string()) == "proportional";
  full.rotary_dim = proportional ? full.head_dim
                                 : static_cast<int>(std::lround(full.head_dim * partial_rotary(f, "full_attention")));
  const bool full_differs = !(full == a) || full.rotary_dim != m.rotary_dim;

  MlpShape mlp;
  mlp.kind = MlpKind::kGated;
  mlp.intermediate_size = f.positive_int("intermediate_size");
  if (f.bool_or("enable_moe_block", false)) {
    const int width = f.has("moe_intermediate_size") ? f.positive_int("moe_intermediate_size")
                                                     : f.positive_int("expert_intermediate_size");
    set_moe(mlp, f.positive_int("num_experts"), f.positive_int("top_k_experts"), width);
    if (mlp.experts_per_token > mlp.num_experts) {
      f.fail("top_k_experts", std::to_string(mlp.experts_per_token),
             fmt::format("must not exceed num_experts={}", mlp.num_experts));
    }
    mlp.num_shared_experts = 1;
    mlp.shared_intermediate_size = f.positive_int("intermediate_size");
    mlp.router_scales = true;
    mlp.fused_gate_up = true;
    m.norms_per_layer = 7;  // post_feedforward_layernorm_1/_2 and pre_feedforward_layernorm_2
    m.notes.push_back(fmt::format(
        "model '{}': Gemma-4's dense MLP ({} wide) runs beside the {} routed experts on every token; it is "
        "counted and costed as an always-active shared expert",
        m.id, mlp.shared_intermediate_size, mlp.num_experts));
  }
  // modeling_gemma4.py: layers from num_hidden_layers - num_kv_shared_layers on reuse the KV of the
  // last earlier layer of their own type, and use_double_wide_mlp doubles their MLP.
  const int first_shared = m.num_layers() - shared_layers;
  const bool double_wide = f.bool_or("use_double_wide_mlp", false) && shared_layers > 0;
  if (double_wide && mlp.kind == MlpKind::kMoe) {
    f.fail("use_double_wide_mlp", "true", "must be false with enable_moe_block (no such checkpoint is known)");
  }
  for (int i = 0; i < m.num_layers(); ++i) {
    LayerSpec& l = m.layers[static_cast<size_t>(i)];
    l.mlp = mlp;
    if (l.kind == LayerKind::kFullAttention && full_differs) l.attention = full;
    if (i >= first_shared) {
      bool has_source = false;
      for (int j = 0; j < first_shared; ++j) has_source = has_source || m.layers[static_cast<size_t>(j)].kind == l.kind;
      if (!has_source) {
        f.fail("num_kv_shared_layers", std::to_string(shared_layers),
               fmt::format("leaves layer {} ({}) no earlier layer of its type to share", i, layer_kind_name(l.kind)));
      }
      l.kv_shared = true;
      if (double_wide) l.mlp.intermediate_size *= 2;
    }
  }
  return m;
}

}  // namespace kvplan::internal
