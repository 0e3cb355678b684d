// Regression tests for defects a mutation campaign found in kvplan's input readers (issue 16):
// each input used to crash, hang, blow up or answer wrongly with exit 0; now it is a ConfigError
// naming the input, or the right answer.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/length_distribution.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/vllm_log.h"

namespace kvplan {
namespace {

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

const char* kLlama = R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
  "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32, "vocab_size": 128256)";

std::string llama_with(const std::string& extra) { return std::string(kLlama) + ", " + extra + "}"; }

TEST(InputHardening, JsonNumberOutOfRangeIsAConfigError) {
  // nlohmann throws out_of_range (not parse_error) for 1e400: it used to escape and abort (exit 134)
  const std::string msg = error_of([] { parse_json_input(llama_with(R"("rope_theta": 1e400)"), "model 'x'"); });
  EXPECT_NE(msg.find("model 'x': is not valid JSON"), std::string::npos) << msg;
}

TEST(InputHardening, DeepNestingIsRefusedBeforeItIsWalked) {
  // 100,000 levels used to overflow the stack when the error message dumped the value
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string msg = error_of([&] { parse_json_input(deep, "scenario 'd.json'"); });
  EXPECT_NE(msg.find("nests deeper than 128 levels"), std::string::npos) << msg;
  EXPECT_NO_THROW(parse_json_input(std::string(100, '[') + std::string(100, ']'), "ok"));
}

TEST(InputHardening, DuplicateKeysAreRefused) {
  // last-one-wins used to drop the first value silently
  const std::string msg = error_of([] { parse_json_input(llama_with(R"("hidden_size": 8192)"), "model 'x'"); });
  EXPECT_NE(msg.find("\"hidden_size\" twice"), std::string::npos) << msg;
  // the same key in different objects is fine
  EXPECT_NO_THROW(parse_json_input(R"({"a": {"k": 1}, "b": {"k": 2}})", "ok"));
}

TEST(InputHardening, InvalidUtf8IsWrittenNotThrown) {
  // json::dump used to throw type_error.316 on a file name that is not UTF-8
  const nlohmann::json j = {{"source", std::string("model\xff\xfe.json")}};
  std::string text;
  EXPECT_NO_THROW(text = json_text(j));
  EXPECT_NE(text.find("model"), std::string::npos);
}

TEST(InputHardening, HugeSizesInAConfigAreRefusedByName) {
  // 2^53 + 1 positions overflowed KvLayout::request_allocated_bytes; 2^31 layers tried to allocate 85 GB
  std::string msg = error_of([] {
    parse_model_config(parse_json_input(llama_with(R"("max_position_embeddings": 9007199254740993)"), "m"), "m");
  });
  EXPECT_NE(msg.find("max_position_embeddings=9007199254740993"), std::string::npos) << msg;
  nlohmann::json j = parse_json_input(std::string(kLlama) + "}", "m");
  j["num_hidden_layers"] = 2147483647;
  msg = error_of([&] { parse_model_config(j, "m"); });
  EXPECT_NE(msg.find("num_hidden_layers=2147483647"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at most 10000"), std::string::npos) << msg;
  j["num_hidden_layers"] = 32;
  j["num_local_experts"] = 1;  // ignored by llama
  j["intermediate_size"] = 1 << 30;
  msg = error_of([&] { parse_model_config(j, "m"); });
  EXPECT_NE(msg.find("intermediate_size=1073741824"), std::string::npos) << msg;
}

TEST(InputHardening, HugeGpuMemoryIsRefusedByName) {
  // memory_gb 2.47e33 made 2.47e42 bytes, past int64 (UBSan; found by fuzz_gpu_file,
  // tests/fuzz/regressions/fuzz_gpu_file/memory_gb_2e33.json)
  nlohmann::json g = {{"id", "big"},           {"name", "Big"},          {"memory_gb", 2.46667e33},
                      {"memory_bandwidth_gb_s", 1000}, {"bf16_dense_tflops", 100}, {"num_sms", 100},
                      {"pcie_gb_s", 32},        {"architecture", "hopper"}, {"source", "test"}};
  const std::string msg = error_of([&] { parse_gpu_spec(g, "gpu file 'big.json'"); });
  EXPECT_NE(msg.find("memory_gb=2.46667e+33"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at most 1e+06"), std::string::npos) << msg;
  g["memory_gb"] = 141;
  EXPECT_EQ(parse_gpu_spec(g, "gpu file 'big.json'").memory_bytes, 141'000'000'000);
}

TEST(InputHardening, HugeMaxModelLenIsRefused) {
  // a max_model_len near INT64_MAX used to overflow blocks x block bytes and answer with exit 0
  ServingConfig c;
  c.max_model_len = INT64_MAX - 1;
  const std::string msg = error_of([&] {
    plan_memory(resolve_model("llama-3.1-8b"), resolve_gpu("h100"), KvScheme{}, Parallelism{}, c);
  });
  EXPECT_NE(msg.find("max-model-len=9223372036854775806"), std::string::npos) << msg;
}

TEST(InputHardening, LognormalLengthsBeyondInt64AreCappedNotWrapped) {
  // exp(50) tokens used to cast to garbage: "27,867 requests fit" instead of 3
  const LengthDistribution d = parse_length_distribution("lognormal:50,1", "--lengths").clamped(131072);
  EXPECT_EQ(d.quantile(0.5), 131072);
  EXPECT_EQ(d.quantile(0.01), 131072);
  EXPECT_DOUBLE_EQ(d.mean(), 131072.0);
}

TEST(InputHardening, LogNumbersThatDoNotParseAreConfigErrors) {
  // std::stoll(",") threw invalid_argument and 25 digits out_of_range; both aborted the program
  std::string msg = error_of([] { parse_vllm_log("INFO GPU KV cache size: , tokens\n", "a.log"); });
  EXPECT_NE(msg.find("engine log 'a.log' line 1: ','"), std::string::npos) << msg;
  msg = error_of([] { parse_vllm_log("x\nINFO # GPU blocks: 9999999999999999999999999\n", "b.log"); });
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  msg = error_of([] { parse_vllm_log("Maximum concurrency for 8192 tokens per request: 1.2.3x\n", "c.log"); });
  EXPECT_NE(msg.find("'1.2.3'"), std::string::npos) << msg;
}

TEST(InputHardening, HugeBlockCountsInALogAreConfigErrors) {
  // 3,333,333,333,333,333,333 blocks x 32 tokens overflowed int64 (UBSan; found by fuzz_engine_log,
  // tests/fuzz/regressions/fuzz_engine_log/trtllm-blocks-times-block-size-overflow.log)
  const std::string msg = error_of([] {
    parse_vllm_log("INFO Number of tokens per block: 32.\n"
                   "[TensorRT-LLM][INFO] Number of blocks in KV cache primary pool: 3333333333333333333\n",
                   "d.log");
  });
  EXPECT_NE(msg.find("engine log 'd.log': 3333333333333333333 KV blocks of"), std::string::npos) << msg;
  // A real count still gives its tokens.
  const VllmLog log = parse_vllm_log("INFO # GPU blocks: 27815\n", "e.log");
  ASSERT_TRUE(log.kv_cache_tokens.has_value());
  EXPECT_EQ(*log.kv_cache_tokens, 27815 * 16);
}

TEST(InputHardening, VeryLongLogLinesDoNotOverflowTheStack) {
  // std::regex recursed per character; a 50,000-character line overflowed the stack
  const std::string line = "INFO " + std::string(1'000'000, 'a') + " GPU KV cache size: 1000 tokens\n";
  VllmLog log;
  EXPECT_NO_THROW(log = parse_vllm_log(line + "INFO GPU KV cache size: 4,096 tokens\n", "long.log"));
  ASSERT_TRUE(log.kv_cache_tokens.has_value());
  EXPECT_EQ(*log.kv_cache_tokens, 4096);  // the figure on the long line is past the part read
}

}  // namespace
}  // namespace kvplan
