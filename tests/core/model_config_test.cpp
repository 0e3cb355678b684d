// Parsing Hugging Face config.json into per-layer shapes (model_config.h): families and bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/presets.h"

namespace kvplan {
namespace {

using nlohmann::json;

// A minimal valid Llama config.
json llama_json() {
  return json{{"model_type", "llama"},         {"hidden_size", 4096},       {"num_attention_heads", 32},
              {"num_key_value_heads", 8},      {"intermediate_size", 14336}, {"num_hidden_layers", 32},
              {"vocab_size", 128256},          {"max_position_embeddings", 8192},
              {"torch_dtype", "bfloat16"}};
}

// Expects parse_model_config to throw ConfigError whose message contains every needle.
void expect_config_error(const json& config, std::initializer_list<std::string> needles) {
  try {
    parse_model_config(config, "bad-model");
    FAIL() << "no ConfigError for " << config.dump();
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

TEST(ModelConfig, MinimalLlamaParses) {
  ModelConfig m = parse_model_config(llama_json(), "mini");
  EXPECT_EQ(m.id, "mini");
  EXPECT_EQ(m.num_layers(), 32);
  EXPECT_EQ(m.attention.num_q_heads, 32);
  EXPECT_EQ(m.attention.num_kv_heads, 8);
  EXPECT_EQ(m.attention.head_dim, 128);  // 4096 / 32
  EXPECT_EQ(m.rotary_dim, 128);          // partial_rotary_factor defaults to 1
  EXPECT_EQ(m.dtype, DType::kBF16);
  EXPECT_EQ(m.count_layers(LayerKind::kFullAttention), 32);
  EXPECT_FALSE(m.has_moe());
  EXPECT_TRUE(m.warnings.empty());
}

TEST(ModelConfig, KvHeadsDefaultToQueryHeads) {
  json j = llama_json();
  j.erase("num_key_value_heads");
  EXPECT_EQ(parse_model_config(j, "mha").attention.num_kv_heads, 32);
}

TEST(ModelConfig, Gemma2AlternatesSlidingAndFull) {
  ModelConfig m = resolve_model("gemma-2-9b");
  ASSERT_EQ(m.num_layers(), 42);
  for (int i = 0; i < m.num_layers(); ++i) {
    const LayerSpec& l = m.layers[static_cast<size_t>(i)];
    if (i % 2 == 0) {
      EXPECT_EQ(l.kind, LayerKind::kSlidingAttention) << i;
      EXPECT_EQ(l.window_tokens, 4096) << i;
    } else {
      EXPECT_EQ(l.kind, LayerKind::kFullAttention) << i;
    }
  }
  EXPECT_EQ(m.norms_per_layer, 4);
  EXPECT_EQ(m.attention.head_dim, 256);
  EXPECT_TRUE(m.tie_word_embeddings);
  EXPECT_EQ(m.dtype, DType::kF32);  // the checkpoint's torch_dtype is float32
}

TEST(ModelConfig, DeepseekV3DenseThenMoe) {
  ModelConfig m = resolve_model("deepseek-v3");
  ASSERT_EQ(m.num_layers(), 61);
  for (int i = 0; i < m.num_layers(); ++i) {
    const LayerSpec& l = m.layers[static_cast<size_t>(i)];
    EXPECT_EQ(l.kind, LayerKind::kMla) << i;
    if (i < 3) {
      EXPECT_EQ(l.mlp.kind, MlpKind::kGated) << i;
      EXPECT_EQ(l.mlp.intermediate_size, 18432) << i;
    } else {
      EXPECT_EQ(l.mlp.kind, MlpKind::kMoe) << i;
      EXPECT_EQ(l.mlp.num_experts, 256) << i;
      EXPECT_EQ(l.mlp.num_shared_experts, 1) << i;
      EXPECT_EQ(l.mlp.experts_per_token, 8) << i;
      EXPECT_EQ(l.mlp.expert_intermediate_size, 2048) << i;
      EXPECT_TRUE(l.mlp.router_bias) << i;
    }
  }
  EXPECT_EQ(m.mla.kv_lora_rank, 512);
  EXPECT_EQ(m.mla.qk_rope_head_dim, 64);
  EXPECT_EQ(m.mla.q_lora_rank, 1536);
  // the multi-token-prediction layer is reported, not counted
  EXPECT_FALSE(m.warnings.empty());
}

TEST(ModelConfig, JambaAttentionAndMoePeriods) {
  ModelConfig m = resolve_model("jamba-v0.1");
  ASSERT_EQ(m.num_layers(), 32);
  for (int i = 0; i < m.num_layers(); ++i) {
    const LayerSpec& l = m.layers[static_cast<size_t>(i)];
    EXPECT_EQ(l.kind, i % 8 == 4 ? LayerKind::kFullAttention : LayerKind::kMamba1) << i;
    EXPECT_EQ(l.mlp.kind, i % 2 == 1 ? MlpKind::kMoe : MlpKind::kGated) << i;
    if (i % 2 == 1) {
      EXPECT_EQ(l.mlp.num_experts, 16) << i;
    }
  }
  // 32 / 8 = 4 attention layers
  EXPECT_EQ(m.count_layers(LayerKind::kFullAttention), 4);
  EXPECT_EQ(m.mamba.d_inner, 8192);  // expand 2 * 4096
  EXPECT_EQ(m.rotary_dim, 0);
}

TEST(ModelConfig, Qwen2HasQkvBiasAndNoSlidingWindow) {
  ModelConfig m = resolve_model("qwen2-7b");
  EXPECT_TRUE(m.attention.qkv_bias);
  // use_sliding_window is false: every layer is full attention
  EXPECT_EQ(m.count_layers(LayerKind::kFullAttention), 28);
}

TEST(ModelConfig, LlamaHasNoQkvBias) {
  EXPECT_FALSE(resolve_model("llama-3.1-8b").attention.qkv_bias);
}

TEST(ModelConfig, MistralAllSliding4096) {
  ModelConfig m = resolve_model("mistral-7b-v0.1");
  ASSERT_EQ(m.num_layers(), 32);
  EXPECT_EQ(m.count_layers(LayerKind::kSlidingAttention), 32);
  for (const LayerSpec& l : m.layers) EXPECT_EQ(l.window_tokens, 4096);
}

TEST(ModelConfig, Qwen3NextEveryFourthLayerFull) {
  ModelConfig m = resolve_model("qwen3-next-80b-a3b");
  ASSERT_EQ(m.num_layers(), 48);
  for (int i = 0; i < m.num_layers(); ++i) {
    EXPECT_EQ(m.layers[static_cast<size_t>(i)].kind,
              (i + 1) % 4 == 0 ? LayerKind::kFullAttention : LayerKind::kLinearAttention)
        << i;
  }
  // head_dim 256 * partial_rotary_factor 0.25 = 64
  EXPECT_EQ(m.rotary_dim, 64);
}

TEST(ModelConfig, Mamba2Shapes) {
  ModelConfig m = resolve_model("mamba2-2.7b");
  EXPECT_EQ(m.count_layers(LayerKind::kMamba2), 64);
  EXPECT_EQ(m.mamba.d_inner, 5120);    // expand 2 * 2560
  EXPECT_EQ(m.mamba.num_heads, 80);    // 5120 / 64
  EXPECT_EQ(m.mamba.d_state, 128);
  EXPECT_EQ(m.dtype, DType::kBF16);    // no torch_dtype: default bf16
}

TEST(ModelConfig, MixtralExperts) {
  ModelConfig m = resolve_model("mixtral-8x7b");
  EXPECT_TRUE(m.has_moe());
  for (const LayerSpec& l : m.layers) {
    EXPECT_EQ(l.mlp.kind, MlpKind::kMoe);
    EXPECT_EQ(l.mlp.num_experts, 8);
    EXPECT_EQ(l.mlp.experts_per_token, 2);
  }
}

// ---------------------------------------------------------------------------------------------
// Bad input.

TEST(ModelConfigErrors, MissingField) {
  json j = llama_json();
  j.erase("hidden_size");
  expect_config_error(j, {"hidden_size", "bad-model"});
}

TEST(ModelConfigErrors, KvHeadsMustDivideQueryHeads) {
  json j = llama_json();
  j["num_key_value_heads"] = 5;
  // 32 % 5 != 0
  expect_config_error(j, {"num_key_value_heads", "5", "32"});
}

TEST(ModelConfigErrors, ZeroLayers) {
  json j = llama_json();
  j["num_hidden_layers"] = 0;
  expect_config_error(j, {"num_hidden_layers", "0"});
}

TEST(ModelConfigErrors, NegativeHiddenSize) {
  json j = llama_json();
  j["hidden_size"] = -1;
  expect_config_error(j, {"hidden_size", "-1"});
}

TEST(ModelConfigErrors, UnknownDtype) {
  json j = llama_json();
  j["torch_dtype"] = "float13";
  expect_config_error(j, {"torch_dtype", "float13"});
}

TEST(ModelConfigErrors, WrongTypeIsRejected) {
  json j = llama_json();
  j["num_attention_heads"] = "thirty-two";
  expect_config_error(j, {"num_attention_heads", "thirty-two"});
}

TEST(ModelConfigErrors, MalformedJsonFile) {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("kvplan_malformed_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".json");
  {
    std::ofstream out(path);
    out << R"({"model_type": "llama",)";
  }
  try {
    load_model_config_file(path.string());
    ADD_FAILURE() << "no ConfigError for a truncated file";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(ModelConfigErrors, MissingFile) {
  EXPECT_THROW(load_model_config_file("/nonexistent/kvplan/config.json"), ConfigError);
}

TEST(ModelConfig, LoadFileUsesStemAsId) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "kvplan_stem_test.json";
  {
    std::ofstream out(path);
    out << llama_json().dump();
  }
  ModelConfig m = load_model_config_file(path.string());
  EXPECT_EQ(m.id, "kvplan_stem_test");
  EXPECT_EQ(m.source, path.string());  // no _kvplan_source: the path
  EXPECT_EQ(m.num_layers(), 32);
  std::filesystem::remove(path);
}

TEST(ModelConfig, UnknownTypeWithStandardFieldsIsGeneric) {
  json j = llama_json();
  j["model_type"] = "my_new_decoder";
  ModelConfig m = parse_model_config(j, "new");
  EXPECT_EQ(m.num_layers(), 32);
  EXPECT_EQ(m.attention.num_kv_heads, 8);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("my_new_decoder"), std::string::npos) << m.warnings[0];
}

TEST(ModelConfigErrors, UnknownTypeWithoutStandardFieldsThrows) {
  json j{{"model_type", "something_else"}, {"d_model", 512}, {"n_layers", 4}};
  EXPECT_THROW(parse_model_config(j, "odd"), ConfigError);
}

TEST(ModelConfigErrors, NotAnObject) {
  EXPECT_THROW(parse_model_config(json::array({1, 2}), "arr"), ConfigError);
}

}  // namespace
}  // namespace kvplan
