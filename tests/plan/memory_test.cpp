// tests/plan/memory_test.cpp — the memory answer through the plan/ layer: a typed Scenario gives
// core's numbers (Llama-3.1-8B bf16: 131,072 B per token), the cost block prices the deployment's
// GPUs (given with --gpu-price, else the preset's), and bad input is a ConfigError naming the field.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/plan/memory.h"

namespace kvplan::plan {
namespace {

TEST(PlanMemory, TypedScenarioGivesCoresNumbers) {
  Scenario s;
  s.engine.max_model_len = 8192;
  const MemoryAnswer bf16 = answer_memory(s);
  EXPECT_EQ(bf16.kv_bytes_per_token, 131072);  // 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B
  EXPECT_EQ(bf16.plan.block_bytes, 16 * 131072);
  EXPECT_EQ(bf16.plan.kv_cache_tokens, bf16.plan.num_blocks * 16);
  s.kv_cache.dtype = DType::kFp8E4M3;
  const MemoryAnswer fp8 = answer_memory(s);
  EXPECT_EQ(fp8.kv_bytes_per_token, 65536);
  EXPECT_GT(fp8.plan.num_blocks, bf16.plan.num_blocks);
  const nlohmann::json j = memory_json(fp8);
  EXPECT_EQ(j.at("max_model_len"), 8192);
}

TEST(PlanMemory, CostPricesEveryGpuOfTheDeployment) {
  Scenario s;
  s.hardware.tensor_parallel_size = 2;
  s.hardware.data_parallel_size = 2;
  s.cost.usd_per_gpu_hour = 2.5;
  nlohmann::json cost = memory_json(answer_memory(s)).at("cost");
  EXPECT_DOUBLE_EQ(cost.at("usd_per_gpu_hour").get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(cost.at("usd_per_hour").get<double>(), 10.0);  // 4 GPUs
  EXPECT_EQ(cost.at("source"), "given (--gpu-price)");
  s.cost.usd_per_gpu_hour = 0;  // the preset's price, with its source
  cost = memory_json(answer_memory(s)).at("cost");
  EXPECT_GT(cost.at("usd_per_gpu_hour").get<double>(), 0);
  EXPECT_DOUBLE_EQ(cost.at("usd_per_hour").get<double>(), 4 * cost.at("usd_per_gpu_hour").get<double>());
  EXPECT_FALSE(cost.at("source").get<std::string>().empty());
}

TEST(PlanMemory, CrossFieldRulesNameTheFields) {
  Scenario s;
  s.kv_cache.h2o_budget_tokens = 64;
  s.kv_cache.streaming_window_tokens = 64;
  try {
    answer_memory(s);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--h2o-budget=64"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--streaming-window=64"), std::string::npos) << e.what();
  }
  s = Scenario{};
  s.model.id = "no-such-model";
  EXPECT_THROW(answer_memory(s), ConfigError);
}

TEST(PlanMemory, CompareVariesOneSetting) {
  const MemoryComparison c = compare_memory(Scenario{}, "kv-cache-dtype", {"auto", "fp8", "int4"});
  ASSERT_EQ(c.answers.size(), 3u);
  EXPECT_EQ(c.setting, "kv-cache-dtype");
  EXPECT_GT(c.answers[1].plan.num_blocks, c.answers[0].plan.num_blocks);
  EXPECT_GT(c.answers[2].plan.num_blocks, c.answers[1].plan.num_blocks);
  EXPECT_THROW(compare_memory(Scenario{}, "users", {"4"}), ConfigError);  // not a memory setting
  EXPECT_THROW(compare_memory(Scenario{}, "kv-cache-dtype", {"fp9"}), ConfigError);
}

TEST(PlanMemory, SaysWhenMaxNumSeqsBindsBeforeTheKvHeadline) {
  Scenario s;
  s.kv_cache.fit_lengths = "fixed:1000";  // Llama-3.1-8B on an H100: thousands of these fit in KV
  s.engine.max_num_seqs = 64;
  const MemoryAnswer a = answer_memory(s);
  ASSERT_GT(a.fit->requests_at_mean, 64);
  EXPECT_NE(memory_text(a).find("but max_num_seqs=64 binds first"), std::string::npos) << memory_text(a);
  s.engine.max_num_seqs = 100000;  // more than fit: the KV count is the limit, nothing said
  EXPECT_EQ(memory_text(answer_memory(s)).find("binds first"), std::string::npos);
}

// The KV line once ended "(2 per block)": a bare MiB figure without its unit (issue 27). A block
// of Llama-3.1-8B bf16 is 16 tokens x 131,072 B = 2,097,152 B = 2.00 MiB over all 32 layers.
TEST(PlanMemory, KvLineNamesTheBlockBytesWithTheirUnit) {
  Scenario s;
  s.engine.max_model_len = 8192;
  const std::string text = memory_text(answer_memory(s));
  EXPECT_NE(text.find("(2,097,152 B = 2.00 MiB per block, all KV layers)"), std::string::npos) << text;
  EXPECT_EQ(text.find("(2 per block)"), std::string::npos) << text;
}

}  // namespace
}  // namespace kvplan::plan
