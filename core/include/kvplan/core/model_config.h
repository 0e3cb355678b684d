// kvplan/core/model_config.h — a model's shapes, read from a Hugging Face config.json.
//
//   ModelConfig m = parse_model_config(nlohmann::json::parse(text), "llama-3.1-8b");
//   for (const LayerSpec& layer : m.layers) { ... layer.kind, layer.window_tokens ... }
//
// Every layer carries its attention kind (full, sliding window, MLA latent, linear attention,
// Mamba) and its MLP kind (gated, plain, MoE), because KV state, weights and cost are per layer.
// Parsing is strict: a missing or inconsistent field throws ConfigError naming model, field,
// value and rule. An unknown model_type with the standard Llama-like fields is read as a generic
// decoder, with a warning in `warnings`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvplan/core/dtype.h"

namespace kvplan {

enum class LayerKind {
  kFullAttention,     // softmax attention over all tokens (MHA/GQA/MQA)
  kSlidingAttention,  // softmax attention over the last window_tokens tokens
  kMla,               // DeepSeek multi-head latent attention: one latent per token
  kLinearAttention,   // recurrent state (Gated DeltaNet in Qwen3-Next)
  kMamba1,            // selective SSM (Jamba)
  kMamba2,            // SSD (Mamba-2)
};
std::string_view layer_kind_name(LayerKind kind);
bool holds_kv_per_token(LayerKind kind);  // true for attention kinds, false for recurrent state

// Softmax attention shapes (full and sliding layers).
struct AttentionShape {
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;    // query/key head dim
  int v_head_dim = 0;  // value head dim (equals head_dim except in a few models)
  bool qkv_bias = false;
  bool output_gate = false;  // Qwen3-Next: q_proj also emits a sigmoid gate per head
  bool qk_norm = false;      // per-head RMSNorm on q and k
};

// DeepSeek-V2/V3 multi-head latent attention.
struct MlaShape {
  int num_heads = 0;
  int q_lora_rank = 0;  // 0: plain q_proj
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

// Gated DeltaNet (Qwen3-Next linear attention).
struct LinearAttentionShape {
  int num_key_heads = 0;
  int num_value_heads = 0;
  int key_head_dim = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;
};

// Mamba-1 (Jamba) and Mamba-2 mixers.
struct MambaShape {
  int d_inner = 0;   // expand * hidden_size
  int d_state = 0;
  int d_conv = 0;
  int n_groups = 1;  // Mamba-2 B/C groups
  int num_heads = 0; // Mamba-2 heads (d_inner / head_dim)
  int head_dim = 0;  // Mamba-2
  int dt_rank = 0;   // Mamba-1
  bool conv_bias = true;
  bool proj_bias = false;
  bool inner_layernorms = false;  // Jamba: RMSNorm on dt, B and C
};

enum class MlpKind { kGated, kPlain, kMoe };

struct MlpShape {
  MlpKind kind = MlpKind::kGated;
  int intermediate_size = 0;        // dense MLP width
  int num_experts = 0;              // routed experts
  int experts_per_token = 0;
  int expert_intermediate_size = 0;
  int num_shared_experts = 0;
  int shared_intermediate_size = 0;  // total width of the shared expert(s)
  bool shared_expert_gate = false;   // Qwen-MoE: sigmoid gate on the shared expert
  bool router_bias = false;          // DeepSeek-V3: e_score_correction_bias
  bool bias = false;                 // dense MLP linear biases
};

struct LayerSpec {
  LayerKind kind = LayerKind::kFullAttention;
  int window_tokens = 0;  // sliding layers only
  MlpShape mlp;
};

enum class NormKind { kRmsNorm, kLayerNorm };

struct ModelConfig {
  std::string id;          // preset id or file stem
  std::string name;        // display name
  std::string model_type;  // Hugging Face model_type
  std::string source;      // where the config comes from
  std::vector<std::string> hf_repos;  // Hugging Face repo ids with these shapes ("_kvplan_hf_repos")
  int hidden_size = 0;
  int vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  NormKind norm = NormKind::kRmsNorm;
  int norms_per_layer = 2;     // pre-attention + pre-MLP (Gemma-2 has 4)
  bool parallel_block = false; // Falcon: attention and MLP read the same input
  int rotary_dim = 0;          // width of the RoPE cos/sin cache rows (0: no RoPE)
  DType dtype = DType::kBF16;  // torch_dtype of the checkpoint
  AttentionShape attention;
  MlaShape mla;
  LinearAttentionShape linear;
  MambaShape mamba;
  std::vector<LayerSpec> layers;
  std::optional<int64_t> published_params;  // exact count from the preset's source, if known
  std::string published_params_source;
  std::vector<std::string> warnings;

  int num_layers() const { return static_cast<int>(layers.size()); }
  int count_layers(LayerKind kind) const;
  bool has_moe() const;
};

// Parses a Hugging Face config.json object. `id` names the model in error messages.
ModelConfig parse_model_config(const nlohmann::json& config, std::string_view id);
// Reads and parses a config.json file; errors name the file.
ModelConfig load_model_config_file(const std::string& path);

}  // namespace kvplan
