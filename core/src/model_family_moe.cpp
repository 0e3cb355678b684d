// Mixture-of-experts families with softmax attention: Mixtral, Qwen2-MoE/Qwen3-MoE, Granite-MoE,
// gpt-oss, GLM-4.5 (glm4_moe) and the Llama-4 language model.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"
#include "kvplan/core/error.h"

namespace kvplan::internal {

namespace {

void check_top_k(const JsonFields& f, std::string_view key, int top_k, int experts) {
  if (top_k > experts) {
    f.fail(key, std::to_string(top_k), fmt::format("must not exceed the {} experts", experts));
  }
}

}  // namespace

ModelConfig parse_mixtral(const JsonFields& f, ModelConfig m) {
  m = parse_llama_like(f, std::move(m), false);
  const int experts = f.positive_int("num_local_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  check_top_k(f, "num_experts_per_tok", top_k, experts);
  for (LayerSpec& l : m.layers) set_moe(l.mlp, experts, top_k, f.positive_int("intermediate_size"));
  return m;
}

// Qwen2-MoE and Qwen3-MoE: MoE every decoder_sparse_step layers except mlp_only_layers.
void apply_qwen_moe(const JsonFields& f, ModelConfig& m) {
  const int step = f.positive_int_or("decoder_sparse_step", 1);
  const std::vector<int> dense_only = int_list(f, "mlp_only_layers");
  const int experts = f.positive_int("num_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  check_top_k(f, "num_experts_per_tok", top_k, experts);
  const int shared = f.non_negative_int_or("shared_expert_intermediate_size", 0);
  for (int i = 0; i < m.num_layers(); ++i) {
    MlpShape& mlp = m.layers[static_cast<size_t>(i)].mlp;
    bool is_dense = std::find(dense_only.begin(), dense_only.end(), i) != dense_only.end();
    if (is_dense || (i + 1) % step != 0) {
      if (mlp.intermediate_size <= 0) {
        f.fail("intermediate_size", "missing",
               fmt::format("is required: layer {} is a dense MLP (mlp_only_layers / decoder_sparse_step)", i));
      }
      continue;
    }
    set_moe(mlp, experts, top_k, f.positive_int("moe_intermediate_size"));
    mlp.shared_intermediate_size = shared;
    mlp.num_shared_experts = shared > 0 ? 1 : 0;
    mlp.shared_expert_gate = shared > 0;
  }
}

ModelConfig parse_qwen_moe(const JsonFields& f, ModelConfig m) {
  const bool qwen3 = m.model_type == "qwen3_moe";
  read_common(f, m);
  read_attention(f, m, !qwen3, false);
  m.attention.qk_norm = qwen3;
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  // intermediate_size only sizes the dense layers; Qwen3-MoE configs with every layer sparse may
  // leave it out.
  set_dense_mlp(m, f.positive_int_or("intermediate_size", 0));
  const int window = f.has("sliding_window") ? f.positive_int("sliding_window") : 0;
  if (!apply_layer_types(f, m, window, 0) && window > 0 && f.bool_or("use_sliding_window", false)) {
    for (int i = f.non_negative_int_or("max_window_layers", 0); i < m.num_layers(); ++i) {
      m.layers[static_cast<size_t>(i)].kind = LayerKind::kSlidingAttention;
      m.layers[static_cast<size_t>(i)].window_tokens = window;
    }
  }
  apply_qwen_moe(f, m);
  return m;
}

// Granite-MoE: Llama attention, every layer an MoE of num_local_experts gated experts of
// intermediate_size (input_linear [E, 2I, H], output_linear [E, H, I]), router without bias.
ModelConfig parse_granitemoe(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  const int experts = f.positive_int("num_local_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  check_top_k(f, "num_experts_per_tok", top_k, experts);
  const int width = f.positive_int("intermediate_size");
  for (LayerSpec& l : m.layers) set_moe(l.mlp, experts, top_k, width);
  const int shared = f.non_negative_int_or("shared_intermediate_size", 0);
  if (shared > 0) {
    for (LayerSpec& l : m.layers) {
      l.mlp.shared_intermediate_size = shared;
      l.mlp.num_shared_experts = 1;
    }
  }
  return m;
}

// gpt-oss: alternating sliding (128) and full attention from layer_types, biases on every
// attention projection, one learned sink per query head, MoE on every layer with router and
// expert biases.
ModelConfig parse_gpt_oss(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, true);
  m.attention.o_bias = m.attention.qkv_bias;
  m.attention.sinks = true;
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  const int window = f.positive_int("sliding_window");
  if (!apply_layer_types(f, m, window, 0)) {
    // transformers' GptOssConfig default: even layers sliding, odd layers full.
    for (int i = 0; i < m.num_layers(); i += 2) {
      m.layers[static_cast<size_t>(i)].kind = LayerKind::kSlidingAttention;
      m.layers[static_cast<size_t>(i)].window_tokens = window;
    }
  }
  const int experts = f.positive_int("num_local_experts");
  const int top_k = f.has("num_experts_per_tok") ? f.positive_int("num_experts_per_tok")
                                                 : f.positive_int("experts_per_token");
  check_top_k(f, "num_experts_per_tok", top_k, experts);
  const int width = f.positive_int("intermediate_size");
  for (LayerSpec& l : m.layers) {
    set_moe(l.mlp, experts, top_k, width);
    l.mlp.router_bias = true;
    l.mlp.expert_bias = true;
  }
  return m;
}

// GLM-4.5 (glm4_moe): GQA attention with q/k/v biases and optional q/k norms, partial RoPE; the
// first first_k_dense_replace layers dense, the rest MoE with shared experts and a score-correction
// bias on the router (DeepSeek-V3 routing).
ModelConfig parse_glm4_moe(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false, false);
  m.attention.qk_norm = f.bool_or("use_qk_norm", false);
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  const int first_dense = f.non_negative_int_or("first_k_dense_replace", 0);
  const int experts = f.positive_int("n_routed_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  check_top_k(f, "num_experts_per_tok", top_k, experts);
  const int width = f.positive_int("moe_intermediate_size");
  const int shared = f.non_negative_int_or("n_shared_experts", 0);
  for (int i = 0; i < m.num_layers(); ++i) {
    LayerSpec& l = m.layers[static_cast<size_t>(i)];
    if (i < first_dense) {
      l.mlp.kind = MlpKind::kGated;
      l.mlp.intermediate_size = f.positive_int("intermediate_size");
      continue;
    }
    set_moe(l.mlp, experts, top_k, width);
    l.mlp.num_shared_experts = shared;
    l.mlp.shared_intermediate_size = shared * width;
    l.mlp.router_bias = true;
  }
  read_mtp_layers(f, m);
  return m;
}

// Llama-4 language model (text_config): RoPE layers use chunked local attention
// (attention_chunk_size), every no_rope_layer_interval-th layer is a global NoPE layer; MoE layers
// (one shared expert of intermediate_size, routed experts of intermediate_size) every
// interleave_moe_layer_step layers, dense layers of intermediate_size_mlp in between. The q/k
// norm is a parameter-free L2 norm.
ModelConfig parse_llama4_text(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  const int n = m.num_layers();
  std::vector<int> rope = int_list(f, "no_rope_layers");  // 1: RoPE (chunked), 0: NoPE (global)
  if (rope.empty()) {
    const int interval = f.positive_int_or("no_rope_layer_interval", 4);
    for (int i = 0; i < n; ++i) rope.push_back((i + 1) % interval != 0 ? 1 : 0);
  }
  if (static_cast<int>(rope.size()) < n) {
    f.fail("no_rope_layers", fmt::format("{} entries", rope.size()), fmt::format("must list at least {} layers", n));
  }
  const int chunk = f.has("attention_chunk_size") ? f.positive_int("attention_chunk_size") : 0;
  std::vector<int> moe_layers = int_list(f, "moe_layers");
  if (moe_layers.empty()) {
    const int step = f.positive_int_or("interleave_moe_layer_step", 1);
    for (int i = step - 1; i < n; i += step) moe_layers.push_back(i);
  }
  const int experts = f.positive_int("num_local_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  check_top_k(f, "num_experts_per_tok", top_k, experts);
  const int width = f.positive_int("intermediate_size");
  for (int i = 0; i < n; ++i) {
    LayerSpec& l = m.layers[static_cast<size_t>(i)];
    if (rope[static_cast<size_t>(i)] != 0 && chunk > 0) {
      l.kind = LayerKind::kChunkedAttention;
      l.window_tokens = chunk;
    }
    if (std::find(moe_layers.begin(), moe_layers.end(), i) != moe_layers.end()) {
      set_moe(l.mlp, experts, top_k, width);
      l.mlp.num_shared_experts = 1;
      l.mlp.shared_intermediate_size = width;
    } else {
      l.mlp.kind = MlpKind::kGated;
      l.mlp.intermediate_size = f.positive_int("intermediate_size_mlp");
    }
  }
  return m;
}

}  // namespace kvplan::internal
