// Reading Hugging Face config.json files into ModelConfig: the family table, the refusal of
// unknown architectures, and file loading. Family parsers live in model_family_*.cpp.
#include "kvplan/core/model_config.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"
#include "kvplan/core/error.h"

namespace kvplan {

using internal::JsonFields;
using nlohmann::json;

std::string_view layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::kFullAttention: return "full_attention";
    case LayerKind::kSlidingAttention: return "sliding_attention";
    case LayerKind::kChunkedAttention: return "chunked_attention";
    case LayerKind::kMla: return "mla";
    case LayerKind::kLinearAttention: return "linear_attention";
    case LayerKind::kMamba1: return "mamba";
    case LayerKind::kMamba2: return "mamba2";
    case LayerKind::kNoMixer: return "mlp_only";
    case LayerKind::kCompressedAttention: return "compressed_attention";
  }
  return "?";
}

bool holds_kv_per_token(LayerKind kind) {
  return kind == LayerKind::kFullAttention || kind == LayerKind::kSlidingAttention ||
         kind == LayerKind::kChunkedAttention || kind == LayerKind::kMla || kind == LayerKind::kCompressedAttention;
}

std::string_view vision_kind_name(VisionKind kind) {
  switch (kind) {
    case VisionKind::kNone: return "none";
    case VisionKind::kQwen2Vl: return "Qwen2-VL ViT";
    case VisionKind::kQwen25Vl: return "Qwen2.5-VL ViT";
    case VisionKind::kSiglip: return "SigLIP";
    case VisionKind::kPixtral: return "Pixtral";
    case VisionKind::kLlama4: return "Llama-4 ViT";
    case VisionKind::kQwen3Vl: return "Qwen3-VL ViT";
    case VisionKind::kMoonVit: return "MoonViT";
    case VisionKind::kMoonVit2: return "MoonViT-V2";
    case VisionKind::kGemma4: return "Gemma-4 ViT";
    case VisionKind::kGemma4Audio: return "Gemma-4 audio conformer";
  }
  return "?";
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

using Parser = ModelConfig (*)(const JsonFields&, ModelConfig);

ModelConfig parse_llama(const JsonFields& f, ModelConfig m) { return internal::parse_llama_like(f, std::move(m), false); }
ModelConfig parse_qwen2(const JsonFields& f, ModelConfig m) { return internal::parse_llama_like(f, std::move(m), true); }

// `mamba_ssm_dtype`, from text_config when that declares it, else from the top level (the order
// SGLang's configs/mamba_utils.py mamba2_state_dtype reads them; vLLM reads the text config).
void read_declared_state_dtype(const JsonFields& f, ModelConfig& m) {
  std::string field = "mamba_ssm_dtype";
  json value;
  if (m.model_type == "nemotron_h") {
    // Nemotron-H names it mamba_ssm_cache_dtype (read by vLLM's NemotronH config hook).
    field = "mamba_ssm_cache_dtype";
    if (!f.has(field) || f.raw(field).is_null()) return;
    value = f.raw(field);
  } else if (f.has("text_config") && f.raw("text_config").is_object() && f.raw("text_config").contains(field) &&
      !f.raw("text_config")[field].is_null()) {
    value = f.raw("text_config")[field];
    field = "text_config.mamba_ssm_dtype";
  } else if (f.has(field)) {
    value = f.raw(field);
  } else {
    return;
  }
  const std::string text = internal::json_value_text(value);
  if (text == "float32") {
    m.declared_state_dtype = DType::kF32;
  } else if (text == "bfloat16") {
    m.declared_state_dtype = DType::kBF16;
  } else if (text == "float16") {
    m.declared_state_dtype = DType::kF16;
  } else {
    f.fail(field, text, "must be float32, bfloat16 or float16 (the recurrent state dtypes the engines accept)");
  }
  m.declared_state_dtype_field = field;
}

// model_type -> parser. Every entry is a family whose parameter layout kvplan enumerates exactly.
const std::vector<std::pair<std::string, Parser>>& families() {
  static const std::vector<std::pair<std::string, Parser>> table = {
      {"deepseek_v2", internal::parse_deepseek},
      {"deepseek_v3", internal::parse_deepseek},
      {"deepseek_v32", internal::parse_deepseek},
      {"deepseek_v4", internal::parse_deepseek_v4},
      {"falcon", internal::parse_falcon},
      {"gemma", internal::parse_gemma},
      {"gemma2", internal::parse_gemma2},
      {"gemma3", internal::parse_gemma3},
      {"gemma3_text", internal::parse_gemma3_text},
      {"gemma4", internal::parse_gemma4},
      {"gemma4_text", internal::parse_gemma4_text},
      {"glm4_moe", internal::parse_glm4_moe},
      {"glm_moe_dsa", internal::parse_deepseek},
      {"gpt_oss", internal::parse_gpt_oss},
      {"granite", internal::parse_granite},
      {"granitemoe", internal::parse_granitemoe},
      {"jamba", internal::parse_jamba},
      {"kimi_k2", internal::parse_deepseek},
      {"kimi_k25", internal::parse_kimi_k25},
      {"kimi_k3", internal::parse_kimi_k3},
      {"kimi_linear", internal::parse_kimi_linear},
      {"llama", parse_llama},
      {"llama4", internal::parse_llama4},
      {"llama4_text", internal::parse_llama4_text},
      {"llava", internal::parse_llava},
      {"mamba2", internal::parse_mamba2},
      {"minimax", internal::parse_minimax},
      {"minimax_m1", internal::parse_minimax},
      {"minimax_m2", internal::parse_minimax_m2},
      {"minimax_m3", internal::parse_minimax_m3},
      {"nemotron_h", internal::parse_nemotron_h},
      {"minimax_text_01", internal::parse_minimax},
      {"mistral", parse_llama},
      {"mistral3", internal::parse_mistral3},
      {"mixtral", internal::parse_mixtral},
      {"phi3", internal::parse_phi3},
      {"qwen2", parse_qwen2},
      {"qwen2_5_vl", internal::parse_qwen2_vl},
      {"qwen2_moe", internal::parse_qwen_moe},
      {"qwen2_vl", internal::parse_qwen2_vl},
      {"qwen3", internal::parse_qwen3},
      {"qwen3_moe", internal::parse_qwen_moe},
      {"qwen3_5", internal::parse_qwen3_5},
      {"qwen3_5_moe", internal::parse_qwen3_5},
      {"qwen3_5_moe_text", internal::parse_qwen3_5_text},
      {"qwen3_5_text", internal::parse_qwen3_5_text},
      {"qwen3_next", internal::parse_qwen3_next},
      {"qwen3_vl", internal::parse_qwen3_vl},
      {"qwen3_vl_moe", internal::parse_qwen3_vl},
      {"RefinedWeb", internal::parse_falcon},
      {"RefinedWebModel", internal::parse_falcon},
  };
  return table;
}

// Families kvplan knows of but does not model yet, with what is missing: their refusal says it, so
// nobody mistakes them for a typo. Reading them as a generic dense decoder would be wrong in the
// very part that makes them new (the cache layout), so they are refused even with
// --allow-unknown-architecture.
const char* not_yet_modelled(std::string_view type) {
  static const std::vector<std::pair<std::string_view, const char*>> table = {
      {"minimax_m3_vl", "MiniMax-M3's vision tower (vision_config, multi_modal_projector, patch_merge_mlp) is not "
                        "enumerated yet; its language model is: give text_config alone (model_type minimax_m3, the "
                        "minimax-m3 preset)"},
  };
  for (const auto& [name, why] : table) {
    if (name == type) return why;
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out;
    for (const auto& [type, parser] : families()) out.push_back(type);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return types;
}

ModelConfig parse_model_config(const json& config, std::string_view id, const ModelParseOptions& options) {
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
  const std::string type = m.model_type;
  for (const auto& [name, parser] : families()) {
    if (name == type) {
      m = parser(f, std::move(m));
      read_declared_state_dtype(f, m);
      internal::check_bounds(f, m);
      internal::read_quantization(f, m);
      return m;
    }
  }
  if (const char* why = not_yet_modelled(type)) {
    throw ConfigError(fmt::format(
        "model '{}': model_type={} is known but not supported yet: {}; kvplan refuses it rather than answer it as a "
        "neighbouring family (--allow-unknown-architecture does not apply)",
        id, type, why));
  }
  std::string supported;
  for (const std::string& t : supported_model_types()) supported += (supported.empty() ? "" : ", ") + t;
  if (!options.allow_unknown_architecture) {
    throw ConfigError(fmt::format(
        "model '{}': model_type={} is not an architecture kvplan understands, so its weights, KV cache "
        "and cost would be guesses; supported: {}. Pass --allow-unknown-architecture to read it as a "
        "generic dense Llama-like decoder anyway (every answer is then flagged)",
        id, type, supported));
  }
  m = internal::parse_llama_like(f, std::move(m), false);
  internal::check_bounds(f, m);
  internal::read_quantization(f, m);
  m.generic_architecture = true;
  m.warnings.push_back(fmt::format(
      "model '{}': model_type '{}' is not a supported architecture; read as a generic dense Llama-like "
      "decoder (gated MLP, RMSNorm, full attention) because --allow-unknown-architecture was given: "
      "weights, KV cache and step times may be wrong",
      id, type));
  return m;
}

ModelConfig load_model_config_file(const std::string& path, const ModelParseOptions& options) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("model file '{}': cannot be opened", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  json config = internal::parse_python_json(buffer.str(), fmt::format("model file '{}'", path));
  std::string stem = path;
  auto slash = stem.find_last_of('/');
  if (slash != std::string::npos) stem = stem.substr(slash + 1);
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem.resize(stem.size() - 5);
  ModelConfig m = parse_model_config(config, stem, options);
  if (m.source.empty()) m.source = path;
  return m;
}

}  // namespace kvplan
