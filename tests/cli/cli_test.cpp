// End-to-end tests of the `kvplan` command: output, JSON fields, and exit status 2 with a message
// naming the field, the value and the rule for every kind of bad input.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "run_cli.h"
#include <nlohmann/json.hpp>

namespace {

using Result = kvplan::testing::CliResult;
using kvplan::testing::expect_bad_input;

Result run(const std::string& args) { return kvplan::testing::run_cli(args); }

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}


TEST(Cli, DefaultScenarioAnswers) {
  Result r = run("");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Llama-3.1-8B"), std::string::npos);
  EXPECT_NE(r.out.find("131,072 B"), std::string::npos);
  EXPECT_NE(r.out.find("KV cache budget"), std::string::npos);
  EXPECT_NE(r.out.find("concurrent users meet it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Azure LLM inference trace 2023"), std::string::npos);
}

TEST(Cli, MemoryJsonHasRequiredFields) {
  Result r = run("memory --model llama-2-7b --gpu a100-80gb --max-model-len 4096 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kv_bytes_per_token"], 524288);
  EXPECT_EQ(j["num_parameters"], 6738415616);
  EXPECT_EQ(j["weights_bytes"], 2 * 6738415616LL);
  int64_t budget = j["kv_budget_bytes"];
  int64_t blocks = j["num_blocks"];
  // Blocks of 16 tokens x 524,288 B; tokens = blocks x 16; concurrency = blocks / (4096 / 16).
  EXPECT_EQ(blocks, budget / (16 * 524288));
  EXPECT_EQ(j["kv_cache_tokens"], blocks * 16);
  EXPECT_DOUBLE_EQ(j["max_concurrency"].get<double>(), static_cast<double>(blocks) / 256.0);
}

TEST(Cli, DeepSeekV3LatentPerToken) {
  Result r = run("memory --model deepseek-v3 --gpu h200 -t 8 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kv_bytes_per_token"], 70272);
}

TEST(Cli, CompareKvDtypes) {
  Result r = run("memory --max-model-len 8192 --compare kv-cache-dtype=auto,fp8,int4 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["kv_bytes_per_token"], 131072);
  EXPECT_EQ(j[1]["kv_bytes_per_token"], 65536);
  // int4, group 64 asymmetric: 8 heads x 2 x (64 + 2 groups x 4 B) x 32 layers.
  EXPECT_EQ(j[2]["kv_bytes_per_token"], 8 * 2 * 72 * 32);
  EXPECT_GT(j[2]["kv_cache_tokens"].get<int64_t>(), j[1]["kv_cache_tokens"].get<int64_t>());
  EXPECT_GT(j[1]["kv_cache_tokens"].get<int64_t>(), j[0]["kv_cache_tokens"].get<int64_t>());
}

TEST(Cli, ListsPresets) {
  Result models = run("models --json");
  ASSERT_EQ(models.status, 0);
  EXPECT_GE(nlohmann::json::parse(models.out).size(), 16u);
  Result gpus = run("gpus --json");
  ASSERT_EQ(gpus.status, 0);
  for (const auto& g : nlohmann::json::parse(gpus.out)) EXPECT_FALSE(g["source"].get<std::string>().empty());
}

TEST(Cli, ReadsVllmLog) {
  Result r = run(std::string("memory --from-vllm-log ") + KVPLAN_SOURCE_DIR +
                 "/data/vllm_logs/16_llama31-8b_h100_v0190_16k.log --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& row : j["rows"]) {
    if (row["term"] == "GPU KV cache size") {
      found = true;
      EXPECT_EQ(row["printed"], 476016);
    }
  }
  EXPECT_TRUE(found);
}

TEST(CliBadInput, UnknownPreset) { expect_bad_input("memory --model no-such-model", {"model=no-such-model", "preset"}); }
TEST(CliBadInput, UnknownGpu) { expect_bad_input("memory --gpu tpu-v9", {"gpu=tpu-v9"}); }
TEST(CliBadInput, UnknownDtype) { expect_bad_input("memory --kv-cache-dtype fp7", {"kv-cache-dtype=fp7", "dtype"}); }
TEST(CliBadInput, ImpossibleParallelSplit) {
  expect_bad_input("memory --model llama-3.1-8b -t 3", {"tensor-parallel-size=3", "must divide"});
}
TEST(CliBadInput, TooManyPipelineStages) {
  expect_bad_input("memory --model llama-3.1-8b -p 40", {"pipeline-parallel-size=40", "32 layers"});
}
TEST(CliBadInput, ZeroOrNegativeSize) {
  expect_bad_input("memory --block-size 0", {"block-size=0"});
  expect_bad_input("memory --max-model-len -5", {"max-model-len=-5"});
  expect_bad_input("memory --gpu-memory-utilization 1.5", {"gpu-memory-utilization=1.5", "(0, 1]"});
}
TEST(CliBadInput, NotANumber) { expect_bad_input("memory --max-num-seqs lots", {"max-num-seqs=lots", "integer"}); }
TEST(CliBadInput, UnknownFlag) { expect_bad_input("memory --frobnicate 3", {"frobnicate"}); }
TEST(CliBadInput, BadCompare) { expect_bad_input("memory --compare kv-cache-dtype", {"--compare=kv-cache-dtype", "KEY=V1,V2"}); }
TEST(CliBadInput, MalformedJsonConfig) {
  std::string path = temp_file("kvplan_bad.json", "{\"model_type\": \"llama\", \"hidden_size\": ");
  expect_bad_input("memory --model " + path, {"malformed JSON"});
}
TEST(CliBadInput, MissingField) {
  std::string path = temp_file("kvplan_missing.json",
                               R"({"model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 4,
                                   "vocab_size": 1000, "intermediate_size": 256})");
  expect_bad_input("memory --model " + path, {"hidden_size", "missing"});
}
TEST(CliBadInput, HeadsDoNotDivide) {
  std::string path = temp_file("kvplan_heads.json",
                               R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                                   "num_key_value_heads": 5, "num_hidden_layers": 4, "vocab_size": 1000,
                                   "intermediate_size": 256})");
  expect_bad_input("memory --model " + path, {"num_key_value_heads=5", "must divide", "num_attention_heads=32"});
}
TEST(CliBadInput, NegativeSizeInConfig) {
  std::string path = temp_file("kvplan_neg.json",
                               R"({"model_type": "llama", "hidden_size": -4096, "num_attention_heads": 32,
                                   "num_hidden_layers": 4, "vocab_size": 1000, "intermediate_size": 256})");
  expect_bad_input("memory --model " + path, {"hidden_size=-4096", "positive"});
}
TEST(CliBadInput, UnreadableLog) { expect_bad_input("memory --from-vllm-log /nonexistent.log", {"cannot be opened"}); }

}  // namespace
