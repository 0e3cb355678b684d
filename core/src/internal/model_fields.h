// Shared readers for the model families (core/src/model_family_*.cpp). Each family parser takes
// the config's fields and a ModelConfig with id/name/source/model_type filled in, and returns it
// with every layer's kind, window and MLP set.
//
//   ModelConfig parse_llama_like(const JsonFields& f, ModelConfig m, bool qkv_bias);
#pragma once

#include <string_view>

#include "internal/json_fields.h"
#include "kvplan/core/model_config.h"

namespace kvplan::internal {

// Throws ConfigError "<what>: <small_key>=<small> must divide <big_key>=<big>".
void require_divides(const JsonFields& f, std::string_view small_key, int small, std::string_view big_key, int big);

// hidden_size, vocab_size, the layer count, max_position_embeddings and the checkpoint dtype.
// An empty `layers_key`: the caller sizes m.layers itself.
void read_common(const JsonFields& f, ModelConfig& m, std::string_view layers_key = "num_hidden_layers");

// Softmax attention heads of Llama-like models: heads, KV heads, head_dim, biases, partial RoPE.
// `default_qkv_bias` is the family's default when attention_bias is absent; `o_bias_follows`
// says whether attention_bias also puts a bias on o_proj (Llama, Granite, gpt-oss: yes;
// Qwen2: q/k/v only).
void read_attention(const JsonFields& f, ModelConfig& m, bool default_qkv_bias, bool o_bias_follows = true);

void set_dense_mlp(ModelConfig& m, int intermediate, MlpKind kind = MlpKind::kGated);

// Resets `mlp` to a routed MoE of `experts` experts of `width`, `top_k` per token.
void set_moe(MlpShape& mlp, int experts, int top_k, int width);

// Applies a `layer_types` list ("full_attention", "sliding_attention", "chunked_attention",
// "linear_attention") if present; sliding layers get `window`, chunked layers `chunk`.
// Returns whether the list was present. Unknown entries throw, naming the index and value.
bool apply_layer_types(const JsonFields& f, ModelConfig& m, int window, int chunk);

// A list of layer indices (e.g. mlp_only_layers, no_rope_layers); every entry must be an integer.
std::vector<int> int_list(const JsonFields& f, std::string_view key);

// num_nextn_predict_layers: multi-token-prediction layers the checkpoint carries but engines load
// only for speculative decoding; noted in m.warnings.
void read_mtp_layers(const JsonFields& f, ModelConfig& m);

// Every size the family parser read, against the bounds of limits.h (ConfigError naming the field).
void check_bounds(const JsonFields& f, const ModelConfig& m);

// Reads `quantization_config` (if any) into m.quantization.
void read_quantization(const JsonFields& f, ModelConfig& m);

// Family parsers (one file per family group).
ModelConfig parse_llama_like(const JsonFields& f, ModelConfig m, bool qkv_bias);
ModelConfig parse_qwen3(const JsonFields& f, ModelConfig m);
ModelConfig parse_granite(const JsonFields& f, ModelConfig m);
ModelConfig parse_phi3(const JsonFields& f, ModelConfig m);
ModelConfig parse_gemma(const JsonFields& f, ModelConfig m);
ModelConfig parse_gemma2(const JsonFields& f, ModelConfig m);
ModelConfig parse_gemma3_text(const JsonFields& f, ModelConfig m);
ModelConfig parse_falcon(const JsonFields& f, ModelConfig m);
ModelConfig parse_gemma4_text(const JsonFields& f, ModelConfig m);

ModelConfig parse_mixtral(const JsonFields& f, ModelConfig m);
ModelConfig parse_qwen_moe(const JsonFields& f, ModelConfig m);
ModelConfig parse_granitemoe(const JsonFields& f, ModelConfig m);
ModelConfig parse_gpt_oss(const JsonFields& f, ModelConfig m);
ModelConfig parse_glm4_moe(const JsonFields& f, ModelConfig m);
ModelConfig parse_llama4_text(const JsonFields& f, ModelConfig m);
void apply_qwen_moe(const JsonFields& f, ModelConfig& m);

ModelConfig parse_deepseek(const JsonFields& f, ModelConfig m);
ModelConfig parse_deepseek_v4(const JsonFields& f, ModelConfig m);
// DeepSeek-V4's quantization_config (e8m0 block scales) and expert_dtype (MXFP4 experts).
void read_deepseek_v4_quantization(const JsonFields& f, ModelConfig& m);

ModelConfig parse_jamba(const JsonFields& f, ModelConfig m);
ModelConfig parse_mamba2(const JsonFields& f, ModelConfig m);
ModelConfig parse_qwen3_next(const JsonFields& f, ModelConfig m);
ModelConfig parse_minimax(const JsonFields& f, ModelConfig m);
ModelConfig parse_minimax_m2(const JsonFields& f, ModelConfig m);
ModelConfig parse_minimax_m3(const JsonFields& f, ModelConfig m);
ModelConfig parse_qwen3_5_text(const JsonFields& f, ModelConfig m);
ModelConfig parse_nemotron_h(const JsonFields& f, ModelConfig m);
ModelConfig parse_kimi_linear(const JsonFields& f, ModelConfig m);

// Multimodal wrappers: read the language model (top level or text_config) with its own family
// parser, then the vision encoder's shape.
ModelConfig parse_qwen2_vl(const JsonFields& f, ModelConfig m);
ModelConfig parse_gemma3(const JsonFields& f, ModelConfig m);
ModelConfig parse_gemma4(const JsonFields& f, ModelConfig m);
ModelConfig parse_llama4(const JsonFields& f, ModelConfig m);
ModelConfig parse_mistral3(const JsonFields& f, ModelConfig m);
ModelConfig parse_llava(const JsonFields& f, ModelConfig m);
ModelConfig parse_qwen3_5(const JsonFields& f, ModelConfig m);
ModelConfig parse_qwen3_vl(const JsonFields& f, ModelConfig m);
ModelConfig parse_kimi_k25(const JsonFields& f, ModelConfig m);
ModelConfig parse_kimi_k3(const JsonFields& f, ModelConfig m);

}  // namespace kvplan::internal
