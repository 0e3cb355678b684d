// Multimodal checkpoints: the language model is read with its own family parser (from the top
// level or from text_config), then the vision encoder's shape from vision_config so its weights
// are counted (param_count.cpp enumerates the encoder's tensors).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"
#include "kvplan/core/error.h"

namespace kvplan::internal {

using nlohmann::json;

namespace {

// The text_config object with the outer dtype filled in when the inner one has none, and with
// defaults of the language model's transformers config class for keys a published file omits.
json text_config(const JsonFields& f, const json& defaults) {
  json text = f.raw("text_config");
  if (!text.is_object()) f.fail("text_config", json_value_text(text), "must be an object");
  for (const auto& [key, value] : defaults.items()) {
    if (!text.contains(key) || text[key].is_null()) text[key] = value;
  }
  for (const char* k : {"torch_dtype", "dtype"}) {
    if ((!text.contains(k) || text[k].is_null()) && f.has(k)) text[k] = f.raw(k);
  }
  return text;
}

// Copies what the preset says about itself (id, name, source, repo ids, published total) from the
// wrapper into the language model parsed from text_config, and keeps the wrapper's warnings and
// notes ahead of the language model's own.
ModelConfig adopt(ModelConfig text, const ModelConfig& outer) {
  text.id = outer.id;
  text.name = outer.name;
  text.source = outer.source;
  text.hf_repos = outer.hf_repos;
  text.published_params = outer.published_params;
  text.published_params_source = outer.published_params_source;
  text.model_type = outer.model_type;
  text.warnings.insert(text.warnings.begin(), outer.warnings.begin(), outer.warnings.end());
  text.notes.insert(text.notes.begin(), outer.notes.begin(), outer.notes.end());
  return text;
}

ModelConfig text_model(const JsonFields& f, const ModelConfig& outer, const json& text,
                       ModelConfig (*parse)(const JsonFields&, ModelConfig), const std::string& text_type) {
  JsonFields t(text, f.what() + " text_config");
  ModelConfig inner;
  inner.id = outer.id;
  inner.model_type = text_type;
  return adopt(parse(t, std::move(inner)), outer);
}

// A wrapper's language model from text_config, keeping the wrapper's model_type and repo ids.
ModelConfig wrapped_text_model(const JsonFields& f, const ModelConfig& outer, const json& text,
                               ModelConfig (*parse)(const JsonFields&, ModelConfig), const std::string& text_type) {
  ModelConfig m = text_model(f, outer, text, parse, text_type);
  m.model_type = outer.model_type;
  return m;
}

ModelConfig parse_qwen2_text(const JsonFields& f, ModelConfig m) { return parse_llama_like(f, std::move(m), true); }
ModelConfig parse_mistral_text(const JsonFields& f, ModelConfig m) { return parse_llama_like(f, std::move(m), false); }

// The encoder fields SigLIP and the Llama-4 ViT share.
void read_vit(const JsonFields& v, VisionShape& s) {
  s.hidden_size = v.positive_int("hidden_size");
  s.intermediate_size = v.positive_int("intermediate_size");
  s.num_layers = v.positive_int("num_hidden_layers");
  s.num_heads = v.positive_int("num_attention_heads");
  s.patch_size = v.positive_int("patch_size");
  s.image_size = v.positive_int("image_size");
  s.in_channels = v.positive_int_or("num_channels", 3);
}

JsonFields vision_fields(const JsonFields& f, json& holder) {
  holder = f.raw("vision_config");
  return JsonFields(holder, f.what() + " vision_config");
}

}  // namespace

// Qwen2-VL and Qwen2.5-VL: the Qwen2 language model at the top level (or in text_config in newer
// transformers), the ViT in vision_config.
ModelConfig parse_qwen2_vl(const JsonFields& f, ModelConfig m) {
  const bool v25 = m.model_type == "qwen2_5_vl";
  const std::string outer_type = m.model_type;
  if (f.has("text_config") && !f.has("hidden_size")) {
    m = text_model(f, m, text_config(f, json::object()), parse_qwen2_text, "qwen2");
  } else {
    m.model_type = "qwen2";
    m = parse_llama_like(f, std::move(m), true);
  }
  m.model_type = outer_type;
  json holder;
  JsonFields v = vision_fields(f, holder);
  VisionShape& s = m.vision;
  s.kind = v25 ? VisionKind::kQwen25Vl : VisionKind::kQwen2Vl;
  s.num_layers = v.positive_int("depth");
  s.num_heads = v.positive_int("num_heads");
  s.patch_size = v.positive_int("patch_size");
  s.temporal_patch_size = v.positive_int_or("temporal_patch_size", 2);
  s.in_channels = v.has("in_channels") ? v.positive_int("in_channels") : v.positive_int_or("in_chans", 3);
  s.spatial_merge_size = v.positive_int_or("spatial_merge_size", 2);
  if (v25) {
    s.hidden_size = v.positive_int("hidden_size");
    s.intermediate_size = v.positive_int("intermediate_size");
    s.out_hidden_size = v.positive_int("out_hidden_size");
  } else {
    s.hidden_size = v.positive_int("embed_dim");
    s.intermediate_size = s.hidden_size * v.positive_int_or("mlp_ratio", 4);
    s.out_hidden_size = v.positive_int("hidden_size");
  }
  if (s.out_hidden_size != m.hidden_size) {
    v.fail(v25 ? "out_hidden_size" : "hidden_size", std::to_string(s.out_hidden_size),
           fmt::format("must equal the language model's hidden_size={}", m.hidden_size));
  }
  return m;
}

// Gemma-3: gemma3_text in text_config (keys a published file omits take Gemma3TextConfig's
// defaults), SigLIP in vision_config, and a projection into the text width.
ModelConfig parse_gemma3(const JsonFields& f, ModelConfig m) {
  // transformers Gemma3TextConfig defaults for keys the published 4B/12B/27B files leave out (the
  // 4B's text_config names neither its 8 / 4 heads nor its head_dim 256: they are the defaults).
  const json defaults = {{"vocab_size", 262208},     {"max_position_embeddings", 131072},
                         {"sliding_window_pattern", 6}, {"tie_word_embeddings", true},
                         {"num_attention_heads", 8},  {"num_key_value_heads", 4},
                         {"head_dim", 256}};
  const std::string outer_type = m.model_type;
  m = text_model(f, m, text_config(f, defaults), parse_gemma3_text, "gemma3_text");
  m.model_type = outer_type;
  json holder;
  JsonFields v = vision_fields(f, holder);
  VisionShape& s = m.vision;
  s.kind = VisionKind::kSiglip;
  read_vit(v, s);
  s.out_hidden_size = m.hidden_size;
  if (v.bool_or("vision_use_head", false)) {
    v.fail("vision_use_head", "true", "is not supported (Gemma-3 checkpoints have no pooling head)");
  }
  return m;
}

namespace {

// Gemma4ClippableLinear keeps four scalar clipping bounds per linear layer; HF's published totals
// leave them out (E2B: 5,123,178,051 without the 928 of them), and so does kvplan.
void clipped_linears_note(ModelConfig& m, const char* tower) {
  m.notes.push_back(fmt::format(
      "model '{}': the {} encoder's clipped linears carry four scalar bounds each, not counted (as in Hugging "
      "Face's published parameter totals)",
      m.id, tower));
}

// transformers Gemma4AudioModel (the E2B/E4B audio conformer), from audio_config.
void read_gemma4_audio(const JsonFields& f, ModelConfig& m) {
  const json& holder = f.raw("audio_config");
  JsonFields a(holder, f.what() + " audio_config");
  const std::string type = a.string_or("model_type", "gemma4_audio");
  if (type != "gemma4_audio") a.fail("model_type", type, "must be gemma4_audio");
  VisionShape& s = m.audio;
  s.kind = VisionKind::kGemma4Audio;
  s.hidden_size = a.positive_int("hidden_size");
  s.num_layers = a.positive_int("num_hidden_layers");
  s.num_heads = a.positive_int("num_attention_heads");
  require_divides(a, "num_attention_heads", s.num_heads, "hidden_size", s.hidden_size);
  s.head_dim = s.hidden_size / s.num_heads;
  s.conv_kernel = a.positive_int("conv_kernel_size");
  s.output_dim = a.positive_int_or("output_proj_dims", s.hidden_size);
  s.out_hidden_size = m.hidden_size;
  const json& ch = a.raw("subsampling_conv_channels");
  if (!ch.is_array() || ch.size() != 2 || !ch[0].is_number_integer() || !ch[1].is_number_integer() ||
      ch[0].get<int>() <= 0 || ch[1].get<int>() <= 0 || ch[0].get<int>() % 4 != 0) {
    a.fail("subsampling_conv_channels", json_value_text(ch), "must be two positive channel counts, the first a multiple of 4");
  }
  s.subsample_channels[0] = ch[0].get<int>();
  s.subsample_channels[1] = ch[1].get<int>();
  const std::string act = a.string_or("hidden_act", "silu");
  if (act != "silu") a.fail("hidden_act", act, "must be silu (the Gemma-4 audio conformer kvplan enumerates)");
  if (a.bool_or("use_clipped_linears", false)) clipped_linears_note(m, "audio");
}

}  // namespace

// Gemma-4 (gemma4): gemma4_text in text_config (model_family_gemma4.cpp), the Gemma-4 ViT in
// vision_config (transformers Gemma4VisionModel: a patch projection, x and y position tables of
// position_embedding_size rows, RMSNorm-sandwich blocks with q/k norms and a GeGLU MLP, std_bias /
// std_scale when standardize) and embed_vision's projection into the text width; the E2B/E4B audio
// conformer (audio_config, Gemma4AudioModel) and embed_audio's projection.
ModelConfig parse_gemma4(const JsonFields& f, ModelConfig m) {
  const json text = text_config(f, json::object());
  const std::string text_type = text.value("model_type", std::string("gemma4_text"));
  if (text_type != "gemma4_text") f.fail("text_config.model_type", text_type, "must be gemma4_text for model_type gemma4");
  m = wrapped_text_model(f, m, text, parse_gemma4_text, text_type);
  if (f.has("audio_config")) read_gemma4_audio(f, m);
  if (!f.has("vision_config")) return m;
  json holder;
  JsonFields v = vision_fields(f, holder);
  const std::string type = v.string_or("model_type", "gemma4_vision");
  if (type != "gemma4_vision") v.fail("model_type", type, "must be gemma4_vision");
  VisionShape& s = m.vision;
  s.kind = VisionKind::kGemma4;
  s.hidden_size = v.positive_int("hidden_size");
  s.intermediate_size = v.positive_int("intermediate_size");
  s.num_layers = v.positive_int("num_hidden_layers");
  s.num_heads = v.positive_int("num_attention_heads");
  s.head_dim = v.positive_int_or("head_dim", s.hidden_size / s.num_heads);
  s.patch_size = v.positive_int("patch_size");
  s.num_position_embeddings = v.positive_int("position_embedding_size");
  s.standardize = v.bool_or("standardize", false);
  s.out_hidden_size = m.hidden_size;
  if (v.positive_int_or("num_key_value_heads", s.num_heads) != s.num_heads || s.num_heads * s.head_dim != s.hidden_size) {
    v.fail("num_key_value_heads", std::to_string(v.positive_int_or("num_key_value_heads", s.num_heads)),
           fmt::format("must equal num_attention_heads={} with num_attention_heads x head_dim = hidden_size={} (the "
                       "encoder shape kvplan enumerates)",
                       s.num_heads, s.hidden_size));
  }
  if (v.bool_or("use_clipped_linears", false)) clipped_linears_note(m, "vision");
  return m;
}

// Llama-4: llama4_text in text_config, the Llama-4 ViT with its pixel-shuffle adapter in
// vision_config, and a linear projection into the text width.
ModelConfig parse_llama4(const JsonFields& f, ModelConfig m) {
  const std::string outer_type = m.model_type;
  m = text_model(f, m, text_config(f, json::object()), parse_llama4_text, "llama4_text");
  m.model_type = outer_type;
  json holder;
  JsonFields v = vision_fields(f, holder);
  VisionShape& s = m.vision;
  s.kind = VisionKind::kLlama4;
  read_vit(v, s);
  s.projector_input_dim = v.positive_int("projector_input_dim");
  s.projector_output_dim = v.positive_int("projector_output_dim");
  s.pixel_shuffle_ratio = v.positive_number("pixel_shuffle_ratio");
  s.out_hidden_size = v.positive_int("vision_output_dim");
  s.projector_bias = v.bool_or("multi_modal_projector_bias", false);
  return m;
}

namespace {

void read_pixtral(const JsonFields& v, VisionShape& s) {
  s.kind = VisionKind::kPixtral;
  s.hidden_size = v.positive_int("hidden_size");
  s.intermediate_size = v.positive_int("intermediate_size");
  s.num_layers = v.positive_int("num_hidden_layers");
  s.num_heads = v.positive_int("num_attention_heads");
  s.patch_size = v.positive_int("patch_size");
  s.in_channels = v.positive_int_or("num_channels", 3);
  const std::string type = v.string_or("model_type", "pixtral");
  if (type != "pixtral") v.fail("model_type", type, "must be pixtral (the only vision encoder kvplan reads here)");
}

}  // namespace

// Mistral-3 (Mistral-Small-3.1): a Mistral language model, the Pixtral encoder, and a projector with
// an RMSNorm, a patch merger (spatial_merge_size²) and two linear layers.
ModelConfig parse_mistral3(const JsonFields& f, ModelConfig m) {
  const std::string outer_type = m.model_type;
  m = text_model(f, m, text_config(f, json::object()), parse_mistral_text, "mistral");
  m.model_type = outer_type;
  json holder;
  JsonFields v = vision_fields(f, holder);
  read_pixtral(v, m.vision);
  m.vision.spatial_merge_size = f.positive_int_or("spatial_merge_size", 2);
  m.vision.has_patch_merger = true;
  m.vision.projector_bias = f.bool_or("multimodal_projector_bias", false);
  m.vision.out_hidden_size = m.hidden_size;
  return m;
}

// LLaVA-style checkpoints with a Pixtral encoder (mistral-community/pixtral-12b): Mistral language
// model, Pixtral encoder, two-layer projector. Other LLaVA vision towers are refused.
ModelConfig parse_llava(const JsonFields& f, ModelConfig m) {
  const std::string outer_type = m.model_type;
  json text = text_config(f, json::object());
  const std::string text_type = text.value("model_type", std::string("llama"));
  if (text_type != "mistral" && text_type != "llama") {
    f.fail("text_config.model_type", text_type, "must be mistral or llama for a LLaVA checkpoint");
  }
  m = text_model(f, m, text, parse_mistral_text, text_type);
  m.model_type = outer_type;
  json holder;
  JsonFields v = vision_fields(f, holder);
  read_pixtral(v, m.vision);
  m.vision.projector_bias = f.bool_or("multimodal_projector_bias", true);
  m.vision.out_hidden_size = m.hidden_size;
  return m;
}

namespace {

// The Qwen3-VL ViT in vision_config (Qwen3-VL and Qwen3.5): Conv3d patch embed, learned position
// table, LayerNorm blocks with a GELU MLP, the merger and one deepstack merger per
// deepstack_visual_indexes entry.
void read_qwen3_vl_vision(const JsonFields& f, ModelConfig& m) {
  json holder;
  JsonFields v = vision_fields(f, holder);
  VisionShape& s = m.vision;
  s.kind = VisionKind::kQwen3Vl;
  s.num_layers = v.positive_int("depth");
  s.hidden_size = v.positive_int("hidden_size");
  s.intermediate_size = v.positive_int("intermediate_size");
  s.num_heads = v.positive_int("num_heads");
  s.patch_size = v.positive_int("patch_size");
  s.temporal_patch_size = v.positive_int_or("temporal_patch_size", 2);
  s.in_channels = v.positive_int_or("in_channels", 3);
  s.spatial_merge_size = v.positive_int_or("spatial_merge_size", 2);
  s.out_hidden_size = v.positive_int("out_hidden_size");
  s.num_position_embeddings = v.positive_int("num_position_embeddings");
  s.deepstack_mergers = static_cast<int>(int_list(v, "deepstack_visual_indexes").size());
  const std::string act = v.string_or("hidden_act", "gelu_pytorch_tanh");
  if (act.rfind("gelu", 0) != 0) v.fail("hidden_act", act, "must be a GELU: the Qwen3-VL encoder MLP kvplan enumerates is fc1-GELU-fc2");
  if (s.out_hidden_size != m.hidden_size) {
    v.fail("out_hidden_size", std::to_string(s.out_hidden_size),
           fmt::format("must equal the language model's hidden_size={}", m.hidden_size));
  }
}

// The text_config of a wrapper whose language model type is its own plus "_text" (Qwen3.5,
// Qwen3-VL), with the wrapper's tie_word_embeddings when the text config states none.
json own_text_config(const JsonFields& f, const ModelConfig& m) {
  json text = text_config(f, json::object());
  const std::string want = m.model_type + "_text";
  const std::string text_type = text.value("model_type", want);
  if (text_type != want) f.fail("text_config.model_type", text_type, fmt::format("must be {} for model_type {}", want, m.model_type));
  if (f.has("tie_word_embeddings") && !text.contains("tie_word_embeddings")) text["tie_word_embeddings"] = f.raw("tie_word_embeddings");
  return text;
}

}  // namespace

// Qwen3.5 (qwen3_5_moe, qwen3_5): the Qwen3.5 language model in text_config (a Gated DeltaNet +
// gated attention hybrid, model_family_hybrid.cpp) and the Qwen3-VL ViT in vision_config.
ModelConfig parse_qwen3_5(const JsonFields& f, ModelConfig m) {
  const json text = own_text_config(f, m);
  m = wrapped_text_model(f, m, text, parse_qwen3_5_text, m.model_type + "_text");
  read_qwen3_vl_vision(f, m);
  return m;
}

// Qwen3-VL (qwen3_vl, qwen3_vl_moe): a Qwen3 (or Qwen3-MoE) language model in text_config, whose
// multimodal RoPE sections and deepstack feature injection hold no parameters, and the Qwen3-VL ViT.
ModelConfig parse_qwen3_vl(const JsonFields& f, ModelConfig m) {
  const json text = own_text_config(f, m);
  const bool moe = m.model_type == "qwen3_vl_moe";
  m = wrapped_text_model(f, m, text, moe ? parse_qwen_moe : parse_qwen3, moe ? "qwen3_moe" : "qwen3");
  read_qwen3_vl_vision(f, m);
  return m;
}

namespace {

// The MoonViT fields Kimi-K2.5 and Kimi-K3 share: the encoder's size, the square learned position
// grid, the square merge kernel, and a projector into the language model's width.
void read_moonvit(const JsonFields& v, const ModelConfig& m, VisionShape& s) {
  s.hidden_size = v.positive_int("vt_hidden_size");
  s.intermediate_size = v.positive_int("vt_intermediate_size");
  s.num_layers = v.positive_int("vt_num_hidden_layers");
  s.num_heads = v.positive_int("vt_num_attention_heads");
  s.patch_size = v.positive_int("patch_size");
  s.image_size = v.positive_int_or("init_pos_emb_height", 64);
  if (v.positive_int_or("init_pos_emb_width", 64) != s.image_size) {
    v.fail("init_pos_emb_width", std::to_string(v.positive_int("init_pos_emb_width")),
           fmt::format("must equal init_pos_emb_height={} (the square position grid kvplan enumerates)", s.image_size));
  }
  const std::string pos = v.string_or("pos_emb_type", "divided_fixed");
  if (pos != "divided_fixed") v.fail("pos_emb_type", pos, "must be divided_fixed (learned 2D grid + fixed temporal table)");
  const json merge = v.has("merge_kernel_size") ? v.raw("merge_kernel_size") : json::array({2, 2});
  if (!merge.is_array() || merge.size() != 2 || !merge[0].is_number_integer() || merge[0] != merge[1] ||
      merge[0].get<int>() <= 0) {
    v.fail("merge_kernel_size", json_value_text(merge), "must be a square kernel [k, k]");
  }
  s.spatial_merge_size = merge[0].get<int>();
  const int mm_hidden = v.positive_int_or("mm_hidden_size", s.hidden_size);
  if (mm_hidden != s.hidden_size) {
    v.fail("mm_hidden_size", std::to_string(mm_hidden), fmt::format("must equal vt_hidden_size={}", s.hidden_size));
  }
  s.out_hidden_size = v.positive_int_or("text_hidden_size", m.hidden_size);
  if (s.out_hidden_size != m.hidden_size) {
    v.fail("text_hidden_size", std::to_string(s.out_hidden_size),
           fmt::format("must equal the language model's hidden_size={}", m.hidden_size));
  }
}

// MoonViT-V2 (Kimi-K3): the attention width qkv_hidden_size, RMSNorm, no biases, patchmergerv2.
void read_moonvit2_encoder(const JsonFields& v, VisionShape& s) {
  s.qkv_hidden_size = v.positive_int("qkv_hidden_size");
  if (s.qkv_hidden_size % s.num_heads != 0) {
    v.fail("qkv_hidden_size", std::to_string(s.qkv_hidden_size),
           fmt::format("must be a multiple of vt_num_attention_heads={}", s.num_heads));
  }
  auto require = [&](std::string_view key, std::string_view want, std::string_view why) {
    const std::string got = v.string_or(key, std::string(want));
    if (got != want) v.fail(key, got, fmt::format("must be {} ({})", want, why));
  };
  require("mm_projector_type", "patchmergerv2", "the Kimi-K3 projector kvplan enumerates");
  require("norm_type", "rmsnorm", "MoonViT-V2's norms are RMSNorm, weight only");
  require("mlp_type", "mlp2", "fc0-GELU-fc1");
  for (const char* key : {"attn_bias", "linear_bias", "patch_embed_proj_bias"}) {
    if (v.bool_or(key, false)) v.fail(key, "true", "must be false: the Kimi-K3 checkpoint's encoder has no biases");
  }
}

// A Kimi wrapper: the language model from text_config with its own quantization_config, and the
// MoonViT fields of vision_config; `encoder` reads what the encoder of that generation adds.
template <class Encoder>
ModelConfig kimi_wrapper(const JsonFields& f, ModelConfig m, const json& text,
                         ModelConfig (*parse)(const JsonFields&, ModelConfig), const std::string& text_type,
                         VisionKind kind, Encoder encoder) {
  JsonFields t(text, f.what() + " text_config");
  m = wrapped_text_model(f, m, text, parse, text_type);
  read_quantization(t, m);
  json holder;
  JsonFields v = vision_fields(f, holder);
  m.vision.kind = kind;
  read_moonvit(v, m, m.vision);
  encoder(v, m.vision);
  return m;
}

}  // namespace

// Kimi-K2.5 (kimi_k25): the DeepSeek-V3 language model (kimi_k2) in text_config, with its own
// quantization_config (int4 compressed-tensors experts), and the MoonViT encoder (vision_tower.*)
// with its patch-merger projector (mm_projector.*) in vision_config.
ModelConfig parse_kimi_k25(const JsonFields& f, ModelConfig m) {
  json text = text_config(f, json::object());
  const std::string text_type = text.value("model_type", std::string("kimi_k2"));
  if (text_type != "kimi_k2" && text_type != "deepseek_v3") {
    f.fail("text_config.model_type", text_type, "must be kimi_k2 or deepseek_v3 for a Kimi-K2.5 checkpoint");
  }
  return kimi_wrapper(f, std::move(m), text, parse_deepseek, text_type, VisionKind::kMoonVit,
                      [](const JsonFields& v, VisionShape&) {
                        const std::string projector = v.string_or("mm_projector_type", "patchmerger");
                        if (projector != "patchmerger") v.fail("mm_projector_type", projector, "must be patchmerger");
                      });
}

// Kimi-K3 (kimi_k3, KimiK3ForConditionalGeneration): the Kimi-Linear language model with Kimi-K3's
// additions (model_family_kimi_linear.cpp) in text_config, with its own quantization_config (MXFP4
// routed experts, compressed-tensors mxfp4-pack-quantized), and MoonViT-V2 in vision_config: RMSNorm
// blocks without biases whose attention is qkv_hidden_size wide, and the patchmergerv2 projector
// (proj.0, proj.2 without biases, then post_norm RMSNorm over the text width; no pre_norm).
ModelConfig parse_kimi_k3(const JsonFields& f, ModelConfig m) {
  json text = text_config(f, json::object());
  const std::string text_type = text.value("model_type", std::string("kimi_linear"));
  if (text_type != "kimi_linear") f.fail("text_config.model_type", text_type, "must be kimi_linear for a Kimi-K3 checkpoint");
  if (f.has("tie_word_embeddings") && !text.contains("tie_word_embeddings")) text["tie_word_embeddings"] = f.raw("tie_word_embeddings");
  return kimi_wrapper(f, std::move(m), text, parse_kimi_linear, text_type, VisionKind::kMoonVit2, read_moonvit2_encoder);
}

}  // namespace kvplan::internal
