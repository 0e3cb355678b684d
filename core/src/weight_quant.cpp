// Reading quantization_config and the exact on-disk bytes of each weight format (weight_quant.h;
// the rules and their sources are in docs/quantization.md).
#include "kvplan/core/weight_quant.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/json_fields.h"
#include "kvplan/core/error.h"

namespace kvplan {

using internal::JsonFields;
using nlohmann::json;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

const char* kSupportedMethods =
    "fp8, fbgemm_fp8, compressed-tensors (float8 tensor/channel/block, int8 channel, packed int4/int8 "
    "groups, nvfp4), awq, gptq, bitsandbytes (4-bit and 8-bit), mxfp4, modelopt (FP8, NVFP4)";

std::vector<std::string> string_list(const JsonFields& f, std::string_view key) {
  std::vector<std::string> out;
  if (!f.has(key)) return out;
  const json& v = f.raw(key);
  if (!v.is_array()) f.fail(key, internal::json_value_text(v), "must be a list of module names");
  for (const json& e : v) {
    if (!e.is_string()) f.fail(key, internal::json_value_text(e), "must list module names as strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

void require_bits(const JsonFields& f, std::string_view key, int bits, std::initializer_list<int> allowed) {
  if (std::find(allowed.begin(), allowed.end(), bits) == allowed.end()) {
    std::string list;
    for (int b : allowed) list += (list.empty() ? "" : ", ") + std::to_string(b);
    f.fail(key, std::to_string(bits), fmt::format("is not supported for this method (supported: {})", list));
  }
}

// HF modules_to_not_convert / ignored_layers style entries.
QuantizationConfig with_ignore(QuantizationConfig q, const JsonFields& f, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    for (std::string& s : string_list(f, k)) q.ignore.push_back(std::move(s));
  }
  return q;
}

QuantizationConfig parse_fp8(const JsonFields& f) {
  QuantizationConfig q;
  q.ignore_match = IgnoreMatch::kSubstring;
  q.activations_quantized = true;
  const std::string scheme = f.string_or("activation_scheme", "dynamic");
  if (scheme != "dynamic" && scheme != "static") {
    f.fail("activation_scheme", scheme, "must be dynamic or static");
  }
  q.static_input_scale = scheme == "static";
  if (f.has("weight_block_size")) {
    const json& b = f.raw("weight_block_size");
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
        b[0].get<int64_t>() <= 0 || b[1].get<int64_t>() <= 0) {
      f.fail("weight_block_size", internal::json_value_text(b), "must be two positive integers [n, k]");
    }
    q.method = QuantMethod::kFp8Block;
    q.block_n = b[0].get<int>();
    q.block_k = b[1].get<int>();
    q.scale_bytes = 4;  // fp32 weight_scale_inv (DeepSeek); Qwen checkpoints store bf16 (model_fields.cpp)
    q.description = fmt::format("fp8 e4m3, block {}x{} scales, {} activations", q.block_n, q.block_k, scheme);
  } else {
    q.method = QuantMethod::kFp8;
    q.description = fmt::format("fp8 e4m3, per-tensor scales, {} activations", scheme);
  }
  q.bits = 8;
  return with_ignore(q, f, {"ignored_layers", "modules_to_not_convert"});
}

QuantizationConfig parse_fbgemm_fp8(const JsonFields& f) {
  QuantizationConfig q;
  q.method = QuantMethod::kFp8Channel;
  q.bits = 8;
  q.scale_bytes = 4;  // fbgemm stores fp32 per-row scales
  q.activations_quantized = true;
  q.ignore_match = IgnoreMatch::kSubstring;
  q.description = "fp8 e4m3 (fbgemm), per-channel fp32 scales, dynamic per-token activations";
  return with_ignore(q, f, {"modules_to_not_convert"});
}

QuantizationConfig parse_awq(const JsonFields& f) {
  QuantizationConfig q;
  q.method = QuantMethod::kAwq;
  q.bits = f.has("w_bit") ? f.positive_int("w_bit") : f.positive_int_or("bits", 4);
  require_bits(f, "bits", q.bits, {4});
  q.group_size = f.has("q_group_size") ? f.positive_int("q_group_size") : f.positive_int_or("group_size", 128);
  q.symmetric = !f.bool_or("zero_point", true);
  q.ignore_match = IgnoreMatch::kSubstring;
  q.description = fmt::format("AWQ int{} group {} ({}), 16-bit activations", q.bits, q.group_size,
                              q.symmetric ? "symmetric" : "zero points");
  return with_ignore(q, f, {"modules_to_not_convert"});
}

QuantizationConfig parse_gptq(const JsonFields& f) {
  QuantizationConfig q;
  q.method = QuantMethod::kGptq;
  q.bits = f.positive_int_or("bits", 4);
  require_bits(f, "bits", q.bits, {2, 3, 4, 8});
  // group_size -1 means one group over the whole input dimension.
  const json& g = f.has("group_size") ? f.raw("group_size") : json(128);
  if (!g.is_number_integer() || (g.get<int64_t>() <= 0 && g.get<int64_t>() != -1)) {
    f.fail("group_size", internal::json_value_text(g), "must be a positive integer or -1");
  }
  q.group_size = g.get<int>() == -1 ? 0 : g.get<int>();
  q.desc_act = f.bool_or("desc_act", false);
  q.symmetric = f.bool_or("sym", true);
  q.quantize_lm_head = f.bool_or("lm_head", false);
  q.ignore_match = IgnoreMatch::kSubstring;
  q.description = fmt::format("GPTQ int{} group {}{}, 16-bit activations", q.bits,
                              q.group_size == 0 ? std::string("per-channel") : std::to_string(q.group_size),
                              q.desc_act ? ", act-order" : "");
  return with_ignore(q, f, {"modules_to_not_convert"});
}

QuantizationConfig parse_bnb(const JsonFields& f) {
  QuantizationConfig q;
  q.ignore_match = IgnoreMatch::kSubstring;
  const bool four = f.bool_or("load_in_4bit", false) || f.bool_or("_load_in_4bit", false);
  const bool eight = f.bool_or("load_in_8bit", false) || f.bool_or("_load_in_8bit", false);
  if (four == eight) {
    f.fail("load_in_4bit", four ? "true" : "false", "exactly one of load_in_4bit and load_in_8bit must be true");
  }
  if (four) {
    q.method = QuantMethod::kBnb4;
    q.bits = 4;
    q.double_quant = f.bool_or("bnb_4bit_use_double_quant", false);
    const std::string type = f.string_or("bnb_4bit_quant_type", "fp4");
    if (type != "nf4" && type != "fp4") f.fail("bnb_4bit_quant_type", type, "must be nf4 or fp4");
    q.description = fmt::format("bitsandbytes {} (blocks of 64{}), 16-bit activations", type,
                                q.double_quant ? ", double quantization" : "");
  } else {
    q.method = QuantMethod::kInt8Channel;
    q.bits = 8;
    q.scale_bytes = 4;  // LLM.int8: one fp32 SCB per row
    q.description = "bitsandbytes LLM.int8 (per-row fp32 scales), 16-bit activations";
  }
  return with_ignore(q, f, {"llm_int8_skip_modules"});
}

QuantizationConfig parse_mxfp4(const JsonFields& f) {
  QuantizationConfig q;
  q.method = QuantMethod::kMxfp4;
  q.bits = 4;
  q.group_size = 32;
  q.ignore_match = IgnoreMatch::kSubstring;
  q.description = "MXFP4 (e2m1 values, one e8m0 scale per 32)";
  return with_ignore(q, f, {"modules_to_not_convert"});
}

QuantizationConfig mxfp4_experts() {
  QuantizationConfig q;
  q.method = QuantMethod::kMxfp4;
  q.bits = 4;
  q.group_size = 32;
  q.description = "MXFP4 (e2m1 values, one e8m0 scale per 32)";
  return q;
}

QuantizationConfig parse_modelopt(const JsonFields& f) {
  QuantizationConfig q;
  q.ignore_match = IgnoreMatch::kGlob;
  const std::string algo = f.has("quant_algo") ? f.string("quant_algo") : std::string();
  if (algo == "FP8") {
    q.method = QuantMethod::kFp8;
    q.bits = 8;
    q.static_input_scale = true;
    q.activations_quantized = true;
    q.description = "fp8 e4m3 (ModelOpt), per-tensor weight and input scales";
  } else if (algo == "NVFP4") {
    q.method = QuantMethod::kNvfp4;
    q.bits = 4;
    q.group_size = f.positive_int_or("group_size", 16);
    if (q.group_size != 16) f.fail("group_size", std::to_string(q.group_size), "must be 16 for NVFP4");
    q.activations_quantized = true;
    q.description = "NVFP4 (ModelOpt): e2m1 values, fp8 scale per 16, fp32 global scale";
  } else {
    f.fail("quant_algo", algo.empty() ? "missing" : algo, "must be FP8 or NVFP4 for the modelopt method");
  }
  // Newer ModelOpt exports also describe the scheme as compressed-tensors-style config_groups. kvplan
  // reads quant_algo; a group that says something else (another width, int weights, a second
  // scheme) is refused by name rather than counted as quant_algo says.
  if (f.has("config_groups")) {
    const json& groups = f.raw("config_groups");
    if (!groups.is_object() || groups.size() != 1) {
      f.fail("config_groups", internal::json_value_text(groups),
             fmt::format("must hold exactly one group matching quant_algo={} (kvplan reads one scheme)", algo));
    }
    JsonFields g(groups.begin().value(), f.what() + " config_groups." + groups.begin().key());
    JsonFields w(g.raw("weights"), g.what() + ".weights");
    const int bits = w.positive_int("num_bits");
    const std::string type = w.string_or("type", "int");
    const int want_bits = algo == "NVFP4" ? 4 : 8;
    if (bits != want_bits || type != "float") {
      w.fail("num_bits", fmt::format("{} ({})", bits, type),
             fmt::format("must be {}-bit float to match quant_algo={}", want_bits, algo));
    }
    if (algo == "NVFP4" && w.positive_int_or("group_size", 16) != 16) {
      w.fail("group_size", std::to_string(w.positive_int("group_size")), "must be 16 for NVFP4");
    }
  }
  if (f.has("kv_cache_scheme")) {
    q.kv_cache_fp8 = true;
    q.notes.push_back("the checkpoint ships KV-cache quantization scales (kv_cache_scheme); kvplan uses the KV "
                      "dtype you choose with --kv-cache-dtype");
  }
  if (f.has("kv_cache_quant_algo")) {
    q.kv_cache_fp8 = internal::json_value_text(f.raw("kv_cache_quant_algo")) == "FP8";
    q.notes.push_back(fmt::format("the checkpoint ships {} KV-cache scales (kv_cache_quant_algo); kvplan "
                                  "uses the KV dtype you choose with --kv-cache-dtype",
                                  internal::json_value_text(f.raw("kv_cache_quant_algo"))));
  }
  return with_ignore(q, f, {"exclude_modules", "ignore"});
}

// compressed-tensors: one config group whose weights (and optionally input activations) describe
// the format; the `ignore` list names modules (or "re:" regexes) kept in 16-bit.
QuantizationConfig parse_compressed_tensors(const JsonFields& f) {
  QuantizationConfig q;
  q.ignore_match = IgnoreMatch::kNameOrRegex;
  const json& groups = f.raw("config_groups");
  if (!groups.is_object() || groups.empty()) {
    f.fail("config_groups", internal::json_value_text(groups), "must be a non-empty object of quantization groups");
  }
  if (groups.size() > 1) {
    f.fail("config_groups", fmt::format("{} groups", groups.size()),
           "holds several schemes (mixed precision); kvplan reads one scheme per checkpoint");
  }
  const json& group = groups.begin().value();
  JsonFields g(group, f.what() + " config_groups." + groups.begin().key());
  JsonFields w(g.raw("weights"), g.what() + ".weights");
  const int bits = w.positive_int("num_bits");
  const std::string type = w.string_or("type", "int");
  const std::string strategy = w.string_or("strategy", "tensor");
  q.symmetric = w.bool_or("symmetric", true);
  q.bits = bits;
  bool acts = g.has("input_activations");
  std::string act_text = "16-bit activations";
  if (acts) {
    JsonFields a(g.raw("input_activations"), g.what() + ".input_activations");
    q.static_input_scale = !a.bool_or("dynamic", false);
    act_text = fmt::format("{}-bit {} activations ({})", a.positive_int("num_bits"), a.string_or("type", "int"),
                           q.static_input_scale ? "static scales" : "dynamic");
  }
  q.activations_quantized = acts;
  if (type == "float" && bits == 8) {
    if (strategy == "tensor") {
      q.method = QuantMethod::kFp8;
    } else if (strategy == "channel") {
      q.method = QuantMethod::kFp8Channel;
    } else if (strategy == "block") {
      q.method = QuantMethod::kFp8Block;
      const json& b = w.raw("block_structure");
      if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer()) {
        w.fail("block_structure", internal::json_value_text(b), "must be two positive integers [n, k]");
      }
      q.block_n = b[0].get<int>();
      q.block_k = b[1].get<int>();
    } else {
      w.fail("strategy", strategy, "must be tensor, channel or block for 8-bit float weights");
    }
    q.description = fmt::format("fp8 e4m3 ({} scales), {}", strategy, act_text);
  } else if (type == "float" && bits == 4 && strategy == "group") {
    // MXFP4 (compressed-tensors format mxfp4-pack-quantized; Kimi-K3's experts): e2m1 values packed
    // two per byte, one uint8 (e8m0) scale per 32 weights, no global scale.
    if (w.positive_int("group_size") != 32) {
      w.fail("group_size", std::to_string(w.positive_int("group_size")), "must be 32 for MXFP4 (4-bit float, strategy group)");
    }
    const std::string scale = w.string_or("scale_dtype", "torch.uint8");
    if (scale != "torch.uint8") w.fail("scale_dtype", scale, "must be torch.uint8 (e8m0 scales) for MXFP4");
    q.method = QuantMethod::kMxfp4;
    q.group_size = 32;
    q.activations_quantized = false;
    if (acts) {
      g.fail("input_activations", "an object", "must be null for MXFP4 weights (kvplan models weight-only MXFP4)");
    }
    q.description = fmt::format("MXFP4 (compressed-tensors mxfp4-pack-quantized, e8m0 scale per 32), {}", act_text);
  } else if (type == "float" && bits == 4) {
    if (strategy != "tensor_group" || w.positive_int_or("group_size", 16) != 16) {
      w.fail("strategy", strategy, "4-bit float weights must be NVFP4 (strategy tensor_group, group_size 16) or MXFP4 (strategy group, group_size 32)");
    }
    q.method = QuantMethod::kNvfp4;
    q.group_size = 16;
    q.static_input_scale = acts;
    q.description = fmt::format("NVFP4 (compressed-tensors), {}", act_text);
  } else if (type == "int" && bits == 8 && (strategy == "channel" || strategy == "tensor") && acts) {
    q.method = QuantMethod::kInt8Channel;
    q.description = fmt::format("int8 {} scales, {}", strategy, act_text);
  } else if (type == "int" && (bits == 4 || bits == 8)) {
    if (strategy != "group" && strategy != "channel") {
      w.fail("strategy", strategy, "must be group or channel for packed integer weights");
    }
    q.method = QuantMethod::kPackedInt;
    q.group_size = strategy == "group" ? w.positive_int("group_size") : 0;
    q.desc_act = w.has("actorder") && !w.raw("actorder").is_boolean() ? true : w.bool_or("actorder", false);
    q.description = fmt::format("int{} packed, {} {}, {}", bits,
                                strategy == "group" ? fmt::format("group {}", q.group_size) : std::string("per-channel"),
                                q.symmetric ? "symmetric" : "zero points", act_text);
  } else {
    w.fail("num_bits", std::to_string(bits), fmt::format("with type {} is not a supported compressed-tensors weight format", type));
  }
  if (f.has("kv_cache_scheme")) {
    q.kv_cache_fp8 = true;
    q.notes.push_back("the checkpoint ships KV-cache quantization scales (kv_cache_scheme); kvplan uses the KV "
                      "dtype you choose with --kv-cache-dtype");
  }
  return with_ignore(q, f, {"ignore"});
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative '*' / '?' matcher.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// A pattern matches a module name when it covers whole dot-separated components: "mlp.gate"
// matches "model.layers.0.mlp.gate" but not "...mlp.gate_proj"; "visual" matches "visual.blocks.0";
// "model.layers.*.self_attn" matches "model.layers.3.self_attn.q_proj".
bool component_match(std::string_view pattern, std::string_view name) {
  if (pattern.find_first_of("*?") == std::string_view::npos) {
    // A literal name (most ignore lists): an occurrence bounded by dots or the ends. No allocation:
    // a 94-layer, 128-expert model checks ~36,000 tensors against every entry.
    for (size_t at = name.find(pattern); at != std::string_view::npos; at = name.find(pattern, at + 1)) {
      const size_t end = at + pattern.size();
      if ((at == 0 || name[at - 1] == '.') && (end == name.size() || name[end] == '.')) return true;
    }
    return false;
  }
  const std::string p(pattern);
  return glob_match(p, name) || glob_match(p + ".*", name) || glob_match("*." + p, name) ||
         glob_match("*." + p + ".*", name);
}

bool ignore_matches(const QuantizationConfig& q, std::string_view entry, std::string_view name) {
  if (q.ignore_match == IgnoreMatch::kNameOrRegex && entry.rfind("re:", 0) == 0) {
    // compressed-tensors: Python re.match, anchored at the start, not at the end.
    try {
      std::regex re(std::string(entry.substr(3)));
      return std::regex_search(name.begin(), name.end(), re, std::regex_constants::match_continuous);
    } catch (const std::regex_error&) {
      throw ConfigError(fmt::format("quantization_config ignore entry '{}' is not a valid regular expression", entry));
    }
  }
  // Names, parent modules and (ModelOpt, transformers) wildcards, always on component boundaries.
  return component_match(entry, name);
}

}  // namespace

std::string_view quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::kNone: return "none";
    case QuantMethod::kFp8: return "fp8";
    case QuantMethod::kFp8Channel: return "fp8-channel";
    case QuantMethod::kFp8Block: return "fp8-block";
    case QuantMethod::kInt8Channel: return "int8";
    case QuantMethod::kAwq: return "awq";
    case QuantMethod::kGptq: return "gptq";
    case QuantMethod::kPackedInt: return "packed-int";
    case QuantMethod::kBnb4: return "bitsandbytes-4bit";
    case QuantMethod::kMxfp4: return "mxfp4";
    case QuantMethod::kNvfp4: return "nvfp4";
  }
  return "?";
}

QuantizationConfig parse_quantization_config(const json& config, std::string_view what) {
  JsonFields f(config, fmt::format("{} quantization_config", what));
  const std::string method = lower(f.string("quant_method"));
  QuantizationConfig q;
  if (method == "fp8") q = parse_fp8(f);
  else if (method == "fbgemm_fp8") q = parse_fbgemm_fp8(f);
  else if (method == "awq" || method == "awq_marlin") q = parse_awq(f);
  else if (method == "gptq" || method == "gptq_marlin") q = parse_gptq(f);
  else if (method == "bitsandbytes") q = parse_bnb(f);
  else if (method == "mxfp4") q = parse_mxfp4(f);
  else if (method == "modelopt" || method == "modelopt_fp4") q = parse_modelopt(f);
  else if (method == "compressed-tensors") q = parse_compressed_tensors(f);
  else {
    f.fail("quant_method", method, fmt::format("is not a quantization method kvplan understands (supported: {}); "
                                               "pass --quantization to plan it as one of those",
                                               kSupportedMethods));
  }
  q.origin = "config.json quantization_config";
  return q;
}

const std::vector<std::string>& quantization_flag_choices() {
  static const std::vector<std::string> choices = {"auto", "none", "fp8", "fp8-block", "int8", "int4", "gptq",
                                                   "awq", "w4a16", "bitsandbytes", "mxfp4", "nvfp4"};
  return choices;
}

QuantizationConfig quantization_from_flag(std::string_view name, int group_size) {
  QuantizationConfig q;
  q.origin = fmt::format("--quantization {}", name);
  const std::string n = lower(name);
  if (group_size <= 0) {
    throw ConfigError(fmt::format("--weight-group-size={} must be a positive number of elements", group_size));
  }
  if (n == "none") {
    q.description = "16-bit weights";
  } else if (n == "fp8") {
    // vLLM's online fp8: per-tensor weight scale, dynamic per-tensor activation scales.
    q.method = QuantMethod::kFp8;
    q.bits = 8;
    q.activations_quantized = true;
    q.description = "fp8 e4m3, per-tensor scales, dynamic activations (vLLM online fp8)";
  } else if (n == "fp8-block") {
    q.method = QuantMethod::kFp8Block;
    q.bits = 8;
    q.block_n = q.block_k = 128;
    q.scale_bytes = 4;
    q.activations_quantized = true;
    q.description = "fp8 e4m3, block 128x128 scales, dynamic activations";
  } else if (n == "int8") {
    q.method = QuantMethod::kInt8Channel;
    q.bits = 8;
    q.activations_quantized = true;
    q.description = "int8 W8A8, per-channel scales";
  } else if (n == "int4" || n == "gptq") {
    q.method = QuantMethod::kGptq;
    q.bits = 4;
    q.group_size = group_size;
    q.description = fmt::format("GPTQ int4 group {}, 16-bit activations", group_size);
  } else if (n == "awq") {
    q.method = QuantMethod::kAwq;
    q.bits = 4;
    q.group_size = group_size;
    q.symmetric = false;
    q.description = fmt::format("AWQ int4 group {} (zero points), 16-bit activations", group_size);
  } else if (n == "w4a16") {
    q.method = QuantMethod::kPackedInt;
    q.bits = 4;
    q.group_size = group_size;
    q.description = fmt::format("int4 packed group {} (compressed-tensors W4A16), 16-bit activations", group_size);
  } else if (n == "bitsandbytes") {
    q.method = QuantMethod::kBnb4;
    q.bits = 4;
    q.double_quant = true;
    q.description = "bitsandbytes nf4 (blocks of 64, double quantization), 16-bit activations";
  } else if (n == "mxfp4") {
    q.method = QuantMethod::kMxfp4;
    q.bits = 4;
    q.group_size = 32;
    q.description = "MXFP4 (e2m1 values, one e8m0 scale per 32)";
  } else if (n == "nvfp4") {
    q.method = QuantMethod::kNvfp4;
    q.bits = 4;
    q.group_size = 16;
    q.activations_quantized = true;
    q.description = "NVFP4 (e2m1 values, fp8 scale per 16, fp32 global scale)";
  } else {
    std::string list;
    for (const std::string& c : quantization_flag_choices()) list += (list.empty() ? "" : ", ") + c;
    throw ConfigError(fmt::format("--quantization={} is not a known method; use one of {}", name, list));
  }
  return q;
}

QuantizationConfig expert_quantization(const QuantizationConfig& q) {
  if (q.expert_method == QuantMethod::kNone) return q;
  if (q.expert_method != QuantMethod::kMxfp4) {
    throw ConfigError(fmt::format("routed experts in {}: only MXFP4 experts beside another format are modelled",
                                  quant_method_name(q.expert_method)));
  }
  QuantizationConfig e = mxfp4_experts();
  e.activations_quantized = false;
  e.origin = q.origin;
  return e;
}

bool is_quantized_module(const QuantizationConfig& q, std::string_view name) {
  if (!q.quantized()) return false;
  for (const std::string& entry : q.ignore) {
    if (ignore_matches(q, entry, name)) return false;
  }
  return true;
}

int64_t quantized_linear_bytes(const QuantizationConfig& q, int64_t rows, int64_t cols, DType dtype16) {
  const int64_t n = rows * cols;
  const int64_t groups_per_row = q.group_size > 0 ? ceil_div(cols, q.group_size) : 1;
  switch (q.method) {
    case QuantMethod::kNone: return dtype_bytes_for(dtype16, n);
    case QuantMethod::kFp8: return n + 4 + (q.static_input_scale ? 4 : 0);
    case QuantMethod::kFp8Channel: return n + rows * q.scale_bytes + (q.static_input_scale ? 4 : 0);
    case QuantMethod::kFp8Block:
      return n + ceil_div(rows, q.block_n) * ceil_div(cols, q.block_k) * q.scale_bytes + (q.static_input_scale ? 4 : 0);
    case QuantMethod::kInt8Channel:
      return n + rows * q.scale_bytes * (q.symmetric ? 1 : 2) + (q.static_input_scale ? 4 : 0);
    case QuantMethod::kAwq: {
      // qweight int32 [in, out/8·bits/4]; qzeros int32 [in/g, out·bits/32]; scales fp16 [in/g, out]
      const int64_t packed_cols = ceil_div(rows * q.bits, 32);
      return cols * packed_cols * 4 + groups_per_row * packed_cols * 4 + groups_per_row * rows * 2;
    }
    case QuantMethod::kGptq: {
      // qweight int32 [in·bits/32, out]; qzeros int32 [in/g, out·bits/32]; scales fp16 [in/g, out];
      // g_idx int32 [in] (written by every GPTQ exporter, act-order or not); AutoGPTQ-style exports
      // also write an fp16 bias [out] for every quantized layer (zeros when the model has none),
      // which param_count adds for layers without a bias of their own.
      return ceil_div(cols * q.bits, 32) * rows * 4 + groups_per_row * ceil_div(rows * q.bits, 32) * 4 +
             groups_per_row * rows * 2 + cols * 4;
    }
    case QuantMethod::kPackedInt: {
      // weight_packed int32 [out, in·bits/32]; weight_scale [out, in/g]; weight_zero_point int32
      // [out·bits/32, in/g] when asymmetric; weight_shape int64 [2]; weight_g_idx int32 [in] with act-order
      int64_t bytes = rows * ceil_div(cols * q.bits, 32) * 4 + rows * groups_per_row * q.scale_bytes + 16;
      if (!q.symmetric) bytes += ceil_div(rows * q.bits, 32) * groups_per_row * 4;
      if (q.desc_act) bytes += cols * 4;
      return bytes;
    }
    case QuantMethod::kBnb4: {
      // packed uint8 [n/2]; quant_map fp32 [16]; absmax per block of 64: fp32, or (double
      // quantization) uint8 plus nested_absmax fp32 per 256 blocks and nested_quant_map fp32 [256]
      // Plus the quant_state JSON blob (uint8), whose length varies: ~172 B per layer in
      // unsloth/Llama-3.2-1B-Instruct-bnb-4bit (data/quantized/README.md); counted as 172 (estimate).
      const int64_t blocks = ceil_div(n, 64);
      int64_t bytes = ceil_div(n, 2) + 16 * 4 + 172;
      bytes += q.double_quant ? blocks + ceil_div(blocks, 256) * 4 + 256 * 4 : blocks * 4;
      return bytes;
    }
    case QuantMethod::kMxfp4: return ceil_div(n, 2) + rows * ceil_div(cols, 32);
    case QuantMethod::kNvfp4: return ceil_div(n, 2) + rows * ceil_div(cols, 16) + 4 + 4;
  }
  return dtype_bytes_for(dtype16, n);
}

DType gemm_compute_dtype(const QuantizationConfig& q, bool gpu_has_fp8, bool gpu_has_int8, bool gpu_has_fp4) {
  if (!q.activations_quantized) return DType::kBF16;
  switch (q.method) {
    case QuantMethod::kFp8:
    case QuantMethod::kFp8Channel:
    case QuantMethod::kFp8Block: return gpu_has_fp8 ? DType::kFp8E4M3 : DType::kBF16;
    case QuantMethod::kInt8Channel: return gpu_has_int8 ? DType::kInt8 : DType::kBF16;
    case QuantMethod::kNvfp4: return gpu_has_fp4 ? DType::kFp4E2M1 : DType::kBF16;
    default: return DType::kBF16;
  }
}

}  // namespace kvplan
