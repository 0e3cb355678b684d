// Dense decoder families: Llama, Mistral, Qwen2/Qwen3, Granite, Phi-3/Phi-4, Gemma (v1),
// Gemma-2/Gemma-3 text, Falcon.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"
#include "kvplan/core/error.h"

namespace kvplan::internal {

ModelConfig parse_llama_like(const JsonFields& f, ModelConfig m, bool qkv_bias) {
  read_common(f, m);
  // Keys of these families that add tensors kvplan does not enumerate: refused by name when set,
  // rather than answered without them (transformers' LlamaConfig mlp_bias, Phi-3's lm_head_bias).
  for (const char* key : {"mlp_bias", "lm_head_bias"}) {
    if (f.bool_or(key, false)) {
      f.fail(key, "true",
             fmt::format("adds bias tensors that kvplan does not count for model_type={}; refused rather than "
                         "answered without them",
                         m.model_type));
    }
  }
  // Phi-4-mini's full_attn_mod: 1 means every layer attends to the full context; another period
  // would mix layer kinds kvplan does not read from this key.
  if (f.has("full_attn_mod") && f.raw("full_attn_mod") != 1) {
    f.fail("full_attn_mod", json_value_text(f.raw("full_attn_mod")),
           "must be 1 (every layer full attention): another period interleaves attention kinds kvplan does not read "
           "from this key");
  }
  // Qwen2/Qwen3 put biases on q/k/v only; Llama-family attention_bias covers o_proj too.
  const bool qwen = m.model_type.rfind("qwen", 0) == 0;
  read_attention(f, m, qkv_bias, !qwen);
  set_dense_mlp(m, f.positive_int("intermediate_size"));
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  const int window = f.has("sliding_window") ? f.positive_int("sliding_window") : 0;
  // An explicit layer_types list wins; otherwise Mistral-7B-v0.1 uses its window on every layer
  // and Qwen2/Qwen3 only when use_sliding_window (from max_window_layers on).
  const bool listed = apply_layer_types(f, m, window, 0);
  const bool sliding = !listed && window > 0 && f.bool_or("use_sliding_window", !qwen);
  if (sliding) {
    int first = qwen ? f.non_negative_int_or("max_window_layers", 0) : 0;
    for (int i = first; i < m.num_layers(); ++i) {
      m.layers[static_cast<size_t>(i)].kind = LayerKind::kSlidingAttention;
      m.layers[static_cast<size_t>(i)].window_tokens = window;
    }
  }
  return m;
}

ModelConfig parse_qwen3(const JsonFields& f, ModelConfig m) {
  m = parse_llama_like(f, std::move(m), false);
  m.attention.qk_norm = true;
  return m;
}

// Granite: Llama shapes plus scalar multipliers (embedding, residual, attention, logits) that hold
// no parameters.
ModelConfig parse_granite(const JsonFields& f, ModelConfig m) { return parse_llama_like(f, std::move(m), false); }

// Phi-3 / Phi-4: fused qkv_proj and gate_up_proj with Llama's parameter shapes, no biases.
ModelConfig parse_phi3(const JsonFields& f, ModelConfig m) { return parse_llama_like(f, std::move(m), false); }

// Gemma (v1, model_type "gemma"): Llama's parameter layout — q/k/v/o without biases, a gated MLP
// (GeGLU: gate_proj, up_proj, down_proj; the activation holds no parameters), two RMSNorms per
// layer and a final norm — with head_dim read from the config (256 for gemma-7b, which is not
// hidden/heads) and tied embeddings by default (Hugging Face GemmaConfig tie_word_embeddings=True).
// The embedding scale by sqrt(hidden) holds no parameter.
ModelConfig parse_gemma(const JsonFields& f, ModelConfig m) {
  m = parse_llama_like(f, std::move(m), false);
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  return m;
}

ModelConfig parse_gemma2(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  set_dense_mlp(m, f.positive_int("intermediate_size"));
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  m.norms_per_layer = 4;
  int window = f.positive_int("sliding_window");
  if (!apply_layer_types(f, m, window, 0)) {
    // Gemma-2 alternates: even layers use the sliding window, odd layers are global.
    for (int i = 0; i < m.num_layers(); i += 2) {
      m.layers[static_cast<size_t>(i)].kind = LayerKind::kSlidingAttention;
      m.layers[static_cast<size_t>(i)].window_tokens = window;
    }
  }
  return m;
}

// Gemma-3 language model: Gemma-2's four norms per layer plus q/k RMSNorms; every
// sliding_window_pattern-th layer is global, the rest use the local window (or layer_types).
ModelConfig parse_gemma3_text(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  m.attention.qk_norm = true;
  set_dense_mlp(m, f.positive_int("intermediate_size"));
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  m.norms_per_layer = 4;
  const int window = f.positive_int("sliding_window");
  if (!apply_layer_types(f, m, window, 0)) {
    const int pattern = f.positive_int_or("sliding_window_pattern", 6);
    for (int i = 0; i < m.num_layers(); ++i) {
      if ((i + 1) % pattern == 0) continue;
      m.layers[static_cast<size_t>(i)].kind = LayerKind::kSlidingAttention;
      m.layers[static_cast<size_t>(i)].window_tokens = window;
    }
  }
  return m;
}

ModelConfig parse_falcon(const JsonFields& f, ModelConfig m) {
  read_common(f, m, f.has("num_hidden_layers") ? "num_hidden_layers" : "n_layer");
  AttentionShape& a = m.attention;
  a.num_q_heads = f.positive_int(f.has("num_attention_heads") ? "num_attention_heads" : "n_head");
  bool new_arch = f.bool_or("new_decoder_architecture", false);
  if (new_arch) {
    a.num_kv_heads = f.positive_int("num_kv_heads");
  } else {
    a.num_kv_heads = f.bool_or("multi_query", true) ? 1 : a.num_q_heads;
  }
  require_divides(f, "num_kv_heads", a.num_kv_heads, "num_attention_heads", a.num_q_heads);
  require_divides(f, "num_attention_heads", a.num_q_heads, "hidden_size", m.hidden_size);
  a.head_dim = a.v_head_dim = m.hidden_size / a.num_q_heads;
  a.qkv_bias = a.o_bias = f.bool_or("bias", false);
  m.rotary_dim = f.bool_or("alibi", false) ? 0 : a.head_dim;
  m.norm = NormKind::kLayerNorm;
  m.parallel_block = f.bool_or("parallel_attn", true);
  // New architecture: separate ln_attn and ln_mlp; old 7B style: one input_layernorm.
  m.norms_per_layer = new_arch ? 2 : 1;
  set_dense_mlp(m, f.positive_int_or("ffn_hidden_size", 4 * m.hidden_size), MlpKind::kPlain);
  for (LayerSpec& l : m.layers) l.mlp.bias = a.qkv_bias;
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  if (m.max_position_embeddings == 0) m.max_position_embeddings = 2048;
  return m;
}

}  // namespace kvplan::internal
