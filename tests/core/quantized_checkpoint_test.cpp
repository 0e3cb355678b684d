// Quantized checkpoints (weight_quant.h, param_count.h): kvplan's bytes against the exact sizes of
// real public checkpoints (data/quantized/README.md gives each total, where it was read and the
// tensor rules), plus quantization_config parsing and its errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan {
namespace {

using nlohmann::json;

int64_t checkpoint_bytes(const ModelConfig& m, const QuantizationConfig& q) {
  return weight_bytes_total(m, WeightFormat{m.dtype, q});
}

int64_t checkpoint_bytes(const char* preset, const json& quantization_config) {
  return checkpoint_bytes(resolve_model(preset), parse_quantization_config(quantization_config, preset));
}

// A compressed-tensors config with one group, as llm-compressor writes it.
json compressed_tensors(int bits, const char* type, const char* strategy, bool activations, int group = 0,
                        bool actorder = false) {
  json weights = {{"num_bits", bits}, {"type", type}, {"strategy", strategy}, {"symmetric", true}};
  if (group > 0) weights["group_size"] = group;
  if (actorder) weights["actorder"] = "group";
  json g = {{"targets", {"Linear"}}, {"weights", weights}};
  if (activations) g["input_activations"] = {{"num_bits", bits}, {"type", type}, {"strategy", "token"}, {"dynamic", true}};
  return {{"quant_method", "compressed-tensors"}, {"config_groups", {{"group_0", g}}}, {"ignore", {"lm_head"}}};
}

TEST(QuantizedCheckpoint, GptOssMxfp4ExpertsFromItsOwnConfig) {
  // model.safetensors.index.json total_size of openai/gpt-oss-20b and the tensor bytes of gpt-oss-120b:
  // experts at 17 bytes per 32 weights, everything else (attention, sinks, router, biases) bf16
  const ModelConfig small = resolve_model("gpt-oss-20b");
  ASSERT_EQ(small.quantization.method, QuantMethod::kMxfp4);
  EXPECT_EQ(checkpoint_bytes(small, small.quantization), 13761264768);
  const ModelConfig big = resolve_model("gpt-oss-120b");
  EXPECT_EQ(checkpoint_bytes(big, big.quantization), 65248815744);
  // the 116.8B published parameters, within 0.5% (here exactly)
  EXPECT_NEAR(static_cast<double>(count_parameters(big).total()), 116.8e9, 0.005 * 116.8e9);
}

TEST(QuantizedCheckpoint, CompressedTensorsFp8Dynamic) {
  // RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic: F8 weights + 16-bit [out, 1] scales
  EXPECT_EQ(checkpoint_bytes("llama-3.1-8b", compressed_tensors(8, "float", "channel", true)), 9083953152);
  // RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic
  EXPECT_EQ(checkpoint_bytes("llama-3.3-70b", compressed_tensors(8, "float", "channel", true)), 72669806592);
}

TEST(QuantizedCheckpoint, CompressedTensorsPackedInt4WithActOrder) {
  // RedHatAI/Llama-3.3-70B-Instruct-quantized.w4a16: int32-packed weights, bf16 group scales,
  // an int64 weight_shape and an int32 g_idx per layer
  EXPECT_EQ(checkpoint_bytes("llama-3.3-70b", compressed_tensors(4, "int", "group", false, 128, true)), 39525311232);
}

TEST(QuantizedCheckpoint, GptqWithZeroBiases) {
  // RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 (AutoGPTQ layout, a zero fp16 bias per layer)
  json gptq = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"sym", true}, {"desc_act", false}};
  EXPECT_EQ(checkpoint_bytes("llama-3.1-8b", gptq), 5735587840);
}

TEST(QuantizedCheckpoint, AwqGemm) {
  // Qwen/Qwen2.5-7B-Instruct-AWQ (same shapes as the qwen2-7b preset); q/k/v biases stay fp16
  json awq = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}, {"version", "gemm"}};
  EXPECT_EQ(checkpoint_bytes("qwen2-7b", awq), 5570747392);
}

TEST(QuantizedCheckpoint, ModelOptNvfp4) {
  // nvidia/Llama-3.3-70B-Instruct-FP4: packed e2m1, fp8 scale per 16, two fp32 scalars per layer
  json nvfp4 = {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}, {"group_size", 16}, {"exclude_modules", {"lm_head"}}};
  EXPECT_EQ(checkpoint_bytes("llama-3.3-70b", nvfp4), 42709045632);
}

TEST(QuantizedCheckpoint, BitsAndBytesNf4WithinItsJsonBlobs) {
  // unsloth/Llama-3.2-1B-Instruct-bnb-4bit: 1,027,594,033 bytes; each of the 112 layers also stores a
  // JSON quant_state blob of varying length (~172 B, counted as 172), so kvplan is exact to a few bytes.
  json cfg = {{"model_type", "llama"},       {"hidden_size", 2048},        {"intermediate_size", 8192},
              {"num_hidden_layers", 16},     {"num_attention_heads", 32},  {"num_key_value_heads", 8},
              {"head_dim", 64},              {"vocab_size", 128256},       {"tie_word_embeddings", true},
              {"torch_dtype", "bfloat16"}};
  json bnb = {{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}, {"bnb_4bit_quant_type", "nf4"},
              {"bnb_4bit_use_double_quant", true}, {"llm_int8_skip_modules", {"lm_head"}}};
  const ModelConfig m = parse_model_config(cfg, "llama-3.2-1b");
  EXPECT_NEAR(static_cast<double>(checkpoint_bytes(m, parse_quantization_config(bnb, "x"))), 1027594033.0, 1024.0);
}

TEST(QuantizedCheckpoint, DeepSeekV3PlannedFp8FromItsOwnConfig) {
  // The preset's quantization_config: fp8 blocks of 128x128 with fp32 scales. Main model only (the
  // MTP layer is not loaded): 1 byte per linear weight plus scales, about half of bf16.
  const ModelConfig m = resolve_model("deepseek-v3");
  ASSERT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  const double fp8 = static_cast<double>(checkpoint_bytes(m, m.quantization));
  const double bf16 = static_cast<double>(weight_bytes_total(m, WeightFormat{}));
  EXPECT_LT(fp8, 0.52 * bf16);
  EXPECT_GT(fp8, 0.50 * bf16);
}

TEST(QuantizationConfig, IgnoreListsMatchWholeModuleNames) {
  // Qwen3-MoE FP8: modules_to_not_convert lists routers ("model.layers.0.mlp.gate"); the dense
  // "mlp.gate_proj" must stay quantized
  QuantizationConfig q = parse_quantization_config(
      json{{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}, {"modules_to_not_convert", {"model.layers.0.mlp.gate"}}},
      "m");
  EXPECT_FALSE(is_quantized_module(q, "model.layers.0.mlp.gate"));
  EXPECT_TRUE(is_quantized_module(q, "model.layers.0.mlp.gate_proj"));
  EXPECT_TRUE(is_quantized_module(q, "model.layers.10.mlp.gate"));
  // a literal name matches whole components anywhere: a parent module, or a later occurrence when
  // the first one is not on a boundary ("xmodel.layers.0.mlp.gate.model.layers.0.mlp.gate.weight")
  EXPECT_FALSE(is_quantized_module(q, "model.layers.0.mlp.gate.weight"));
  EXPECT_FALSE(is_quantized_module(q, "language_model.model.layers.0.mlp.gate"));
  EXPECT_FALSE(is_quantized_module(q, "xmodel.layers.0.mlp.gate.model.layers.0.mlp.gate.weight"));
  EXPECT_TRUE(is_quantized_module(q, "xmodel.layers.0.mlp.gate"));
  EXPECT_TRUE(is_quantized_module(q, "model.layers.0.mlp.gates"));
  // gpt-oss: wildcards over a parent module
  q = parse_quantization_config(json{{"quant_method", "mxfp4"}, {"modules_to_not_convert", {"model.layers.*.self_attn"}}}, "m");
  EXPECT_FALSE(is_quantized_module(q, "model.layers.3.self_attn.q_proj"));
  EXPECT_TRUE(is_quantized_module(q, "model.layers.3.mlp.experts.gate_up_proj"));
  // compressed-tensors regexes are anchored at the start
  q = parse_quantization_config(compressed_tensors(8, "int", "channel", true), "m");
  q.ignore = {"re:.*vision_tower.*", "lm_head"};
  EXPECT_FALSE(is_quantized_module(q, "vision_tower.blocks.0.attn.qkv"));
  EXPECT_FALSE(is_quantized_module(q, "lm_head"));
  EXPECT_TRUE(is_quantized_module(q, "model.layers.0.self_attn.q_proj"));
}

TEST(QuantizationConfig, UnknownMethodsAndBadFieldsAreRefused) {
  auto message = [](const json& j) {
    try {
      parse_quantization_config(j, "model 'x'");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  std::string m = message(json{{"quant_method", "hqq"}});
  EXPECT_NE(m.find("quant_method=hqq"), std::string::npos) << m;
  EXPECT_NE(m.find("--quantization"), std::string::npos) << m;
  m = message(json{{"quant_method", "gptq"}, {"bits", 5}});
  EXPECT_NE(m.find("bits=5"), std::string::npos) << m;
  m = message(json{{"quant_method", "fp8"}, {"weight_block_size", {128}}});
  EXPECT_NE(m.find("weight_block_size"), std::string::npos) << m;
  m = message(json{{"quant_method", "bitsandbytes"}});
  EXPECT_NE(m.find("load_in_4bit"), std::string::npos) << m;
  EXPECT_THROW(quantization_from_flag("int3", 128), ConfigError);
}

TEST(QuantizationConfig, FlagOverridesAreDescribed) {
  QuantizationConfig q = quantization_from_flag("fp8", 128);
  EXPECT_EQ(q.method, QuantMethod::kFp8);
  EXPECT_TRUE(q.activations_quantized);
  EXPECT_EQ(q.origin, "--quantization fp8");
  EXPECT_EQ(gemm_compute_dtype(q, true, true, false), DType::kFp8E4M3);
  EXPECT_EQ(gemm_compute_dtype(q, false, true, false), DType::kBF16);  // Ampere: fp8 weight-only (Marlin)
  EXPECT_EQ(gemm_compute_dtype(quantization_from_flag("awq", 128), true, true, true), DType::kBF16);
  EXPECT_EQ(gemm_compute_dtype(quantization_from_flag("nvfp4", 16), true, true, true), DType::kFp4E2M1);
}

}  // namespace
}  // namespace kvplan
