// Reading Hugging Face config.json files into ModelConfig, one family at a time.
#include "kvplan/core/model_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/json_fields.h"
#include "kvplan/core/error.h"

namespace kvplan {

using internal::JsonFields;
using nlohmann::json;

std::string_view layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::kFullAttention: return "full_attention";
    case LayerKind::kSlidingAttention: return "sliding_attention";
    case LayerKind::kMla: return "mla";
    case LayerKind::kLinearAttention: return "linear_attention";
    case LayerKind::kMamba1: return "mamba";
    case LayerKind::kMamba2: return "mamba2";
  }
  return "?";
}

bool holds_kv_per_token(LayerKind kind) {
  return kind == LayerKind::kFullAttention || kind == LayerKind::kSlidingAttention ||
         kind == LayerKind::kMla;
}

int ModelConfig::count_layers(LayerKind kind) const {
  int n = 0;
  for (const LayerSpec& l : layers) n += l.kind == kind ? 1 : 0;
  return n;
}

bool ModelConfig::has_moe() const {
  for (const LayerSpec& l : layers) {
    if (l.mlp.kind == MlpKind::kMoe) return true;
  }
  return false;
}

namespace {

void require_divides(const JsonFields& f, std::string_view small_key, int small,
                     std::string_view big_key, int big) {
  if (big % small != 0) {
    throw ConfigError(fmt::format("{}: {}={} must divide {}={}", f.what(), small_key, small,
                                  big_key, big));
  }
}

// Fields every decoder shares.
void read_common(const JsonFields& f, ModelConfig& m, std::string_view layers_key = "num_hidden_layers") {
  m.hidden_size = f.positive_int("hidden_size");
  m.vocab_size = f.positive_int("vocab_size");
  int n = f.positive_int(layers_key);
  m.layers.assign(static_cast<size_t>(n), LayerSpec{});
  m.max_position_embeddings = f.has("max_position_embeddings")
                                  ? f.positive_int64("max_position_embeddings")
                                  : 0;
  if (f.has("torch_dtype")) m.dtype = parse_dtype(f.string("torch_dtype"), f.what() + ": torch_dtype");
  else if (f.has("dtype")) m.dtype = parse_dtype(f.string("dtype"), f.what() + ": dtype");
}

// Softmax attention heads of Llama-like models.
void read_attention(const JsonFields& f, ModelConfig& m, bool default_qkv_bias) {
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
  double partial = f.number_or("partial_rotary_factor", 1.0);
  if (partial <= 0 || partial > 1) f.fail("partial_rotary_factor", fmt::format("{}", partial), "must be in (0, 1]");
  m.rotary_dim = static_cast<int>(std::lround(a.head_dim * partial));
}

void set_dense_mlp(ModelConfig& m, int intermediate, MlpKind kind = MlpKind::kGated) {
  for (LayerSpec& l : m.layers) {
    l.mlp.kind = kind;
    l.mlp.intermediate_size = intermediate;
  }
}

ModelConfig parse_llama_like(const JsonFields& f, ModelConfig m, bool qkv_bias) {
  read_common(f, m);
  read_attention(f, m, qkv_bias);
  set_dense_mlp(m, f.positive_int("intermediate_size"));
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  // Mistral-7B-v0.1 uses a 4096-token window on every layer; Qwen2 only when use_sliding_window.
  bool sliding = f.has("sliding_window") && f.bool_or("use_sliding_window", m.model_type != "qwen2");
  if (sliding) {
    int window = f.positive_int("sliding_window");
    int first = m.model_type == "qwen2" ? f.non_negative_int_or("max_window_layers", 0) : 0;
    for (int i = first; i < m.num_layers(); ++i) {
      m.layers[static_cast<size_t>(i)].kind = LayerKind::kSlidingAttention;
      m.layers[static_cast<size_t>(i)].window_tokens = window;
    }
  }
  return m;
}

ModelConfig parse_mixtral(const JsonFields& f, ModelConfig m) {
  m = parse_llama_like(f, std::move(m), false);
  for (LayerSpec& l : m.layers) {
    l.mlp.kind = MlpKind::kMoe;
    l.mlp.num_experts = f.positive_int("num_local_experts");
    l.mlp.experts_per_token = f.positive_int("num_experts_per_tok");
    l.mlp.expert_intermediate_size = f.positive_int("intermediate_size");
    l.mlp.intermediate_size = 0;
  }
  return m;
}

// Qwen2-MoE and Qwen3-MoE: MoE every decoder_sparse_step layers except mlp_only_layers.
void apply_qwen_moe(const JsonFields& f, ModelConfig& m) {
  int step = f.positive_int_or("decoder_sparse_step", 1);
  std::vector<int> dense_only;
  if (f.has("mlp_only_layers")) {
    for (const json& v : f.raw("mlp_only_layers")) {
      if (!v.is_number_integer()) f.fail("mlp_only_layers", v.dump(), "must list layer indices");
      dense_only.push_back(v.get<int>());
    }
  }
  int experts = f.positive_int("num_experts");
  int shared = f.non_negative_int_or("shared_expert_intermediate_size", 0);
  for (int i = 0; i < m.num_layers(); ++i) {
    MlpShape& mlp = m.layers[static_cast<size_t>(i)].mlp;
    bool is_dense = std::find(dense_only.begin(), dense_only.end(), i) != dense_only.end();
    if (is_dense || (i + 1) % step != 0) continue;
    mlp.kind = MlpKind::kMoe;
    mlp.num_experts = experts;
    mlp.experts_per_token = f.positive_int("num_experts_per_tok");
    mlp.expert_intermediate_size = f.positive_int("moe_intermediate_size");
    mlp.shared_intermediate_size = shared;
    mlp.num_shared_experts = shared > 0 ? 1 : 0;
    mlp.shared_expert_gate = shared > 0;
  }
}

ModelConfig parse_qwen_moe(const JsonFields& f, ModelConfig m) {
  bool qwen3 = m.model_type == "qwen3_moe";
  m = parse_llama_like(f, std::move(m), !qwen3);
  m.attention.qk_norm = qwen3;
  apply_qwen_moe(f, m);
  return m;
}

ModelConfig parse_gemma2(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  set_dense_mlp(m, f.positive_int("intermediate_size"));
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", true);
  m.norms_per_layer = 4;
  int window = f.positive_int("sliding_window");
  // Gemma-2 alternates: even layers use the sliding window, odd layers are global.
  for (int i = 0; i < m.num_layers(); i += 2) {
    m.layers[static_cast<size_t>(i)].kind = LayerKind::kSlidingAttention;
    m.layers[static_cast<size_t>(i)].window_tokens = window;
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
  a.qkv_bias = f.bool_or("bias", false);
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
    l.mlp.expert_intermediate_size = f.positive_int("moe_intermediate_size");
    l.mlp.num_shared_experts = f.non_negative_int_or("n_shared_experts", 0);
    l.mlp.shared_intermediate_size = l.mlp.num_shared_experts * l.mlp.expert_intermediate_size;
    l.mlp.router_bias = router_bias;
  }
  if (f.non_negative_int_or("num_nextn_predict_layers", 0) > 0) {
    m.warnings.push_back(fmt::format(
        "model '{}': the {} multi-token-prediction layer(s) are not counted (serving engines load "
        "them only for speculative decoding)",
        m.id, f.non_negative_int_or("num_nextn_predict_layers", 0)));
  }
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
    m.layers.assign(static_cast<size_t>(f.positive_int("n_layer")), LayerSpec{});
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
  read_attention(f, m, false);
  m.attention.output_gate = true;
  m.attention.qk_norm = true;
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  LinearAttentionShape& s = m.linear;
  s.num_key_heads = f.positive_int("linear_num_key_heads");
  s.num_value_heads = f.positive_int("linear_num_value_heads");
  s.key_head_dim = f.positive_int("linear_key_head_dim");
  s.value_head_dim = f.positive_int("linear_value_head_dim");
  s.conv_kernel = f.positive_int("linear_conv_kernel_dim");
  if (f.has("layer_types")) {
    const json& types = f.raw("layer_types");
    if (!types.is_array() || static_cast<int>(types.size()) != m.num_layers()) {
      f.fail("layer_types", internal::json_value_text(types), fmt::format("must list {} layer types", m.num_layers()));
    }
  }
  int interval = f.positive_int_or("full_attention_interval", 4);
  for (int i = 0; i < m.num_layers(); ++i) {
    LayerKind kind = (i + 1) % interval == 0 ? LayerKind::kFullAttention : LayerKind::kLinearAttention;
    if (f.has("layer_types")) {
      std::string t = f.raw("layer_types")[static_cast<size_t>(i)].get<std::string>();
      kind = t == "full_attention" ? LayerKind::kFullAttention : LayerKind::kLinearAttention;
    }
    m.layers[static_cast<size_t>(i)].kind = kind;
    m.layers[static_cast<size_t>(i)].mlp.intermediate_size = f.positive_int_or("intermediate_size", 0);
  }
  apply_qwen_moe(f, m);
  return m;
}

}  // namespace

ModelConfig parse_model_config(const json& config, std::string_view id) {
  JsonFields f(config, fmt::format("model '{}'", id));
  ModelConfig m;
  m.id = std::string(id);
  m.name = f.string_or("_kvplan_name", m.id);
  m.source = f.string_or("_kvplan_source", "");
  m.hf_repos = f.string_list_or("_kvplan_hf_repos");
  if (f.has("_kvplan_published_params")) m.published_params = f.positive_int64("_kvplan_published_params");
  m.published_params_source = f.string_or("_kvplan_published_params_source", "");
  bool state_spaces_mamba = !f.has("model_type") && f.has("ssm_cfg");
  m.model_type = state_spaces_mamba ? "mamba2" : f.string("model_type");
  const std::string& t = m.model_type;
  if (t == "llama" || t == "mistral") return parse_llama_like(f, std::move(m), false);
  if (t == "qwen2") return parse_llama_like(f, std::move(m), true);
  if (t == "qwen3") {
    m = parse_llama_like(f, std::move(m), false);
    m.attention.qk_norm = true;
    return m;
  }
  if (t == "mixtral") return parse_mixtral(f, std::move(m));
  if (t == "qwen2_moe" || t == "qwen3_moe") return parse_qwen_moe(f, std::move(m));
  if (t == "gemma2") return parse_gemma2(f, std::move(m));
  if (t == "falcon" || t == "RefinedWeb" || t == "RefinedWebModel") return parse_falcon(f, std::move(m));
  if (t == "deepseek_v2" || t == "deepseek_v3") return parse_deepseek(f, std::move(m));
  if (t == "jamba") return parse_jamba(f, std::move(m));
  if (t == "mamba2") return parse_mamba2(f, std::move(m));
  if (t == "qwen3_next") return parse_qwen3_next(f, std::move(m));
  // Unknown family: read it as a Llama-like decoder if the standard fields are there.
  m = parse_llama_like(f, std::move(m), false);
  m.warnings.push_back(fmt::format(
      "model '{}': model_type '{}' is not a known family; read as a generic Llama-like decoder "
      "(gated MLP, RMSNorm, full attention)",
      id, t));
  return m;
}

ModelConfig load_model_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("model file '{}': cannot be opened", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  json config = internal::parse_python_json(buffer.str(), fmt::format("model file '{}'", path));
  std::string stem = path;
  auto slash = stem.find_last_of('/');
  if (slash != std::string::npos) stem = stem.substr(slash + 1);
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem.resize(stem.size() - 5);
  ModelConfig m = parse_model_config(config, stem);
  if (m.source.empty()) m.source = path;
  return m;
}

}  // namespace kvplan
