// The benchmark-run readers (calibration/serving_run.h): every format gives the same record for the
// same run (nerdalert line 1 and the hand-written schema files, tests/data/runs/SOURCES.md), with
// the fields checked by hand against the files; per-request arrays; refusals that name the field.
#include <gtest/gtest.h>

#include "kvplan/calibration/serving_run.h"
#include "kvplan/core/error.h"

namespace {

using kvplan::calibration::parse_serving_runs;
using kvplan::calibration::read_serving_runs;
using kvplan::calibration::RunLoad;
using kvplan::calibration::ServingRun;

const std::string kRuns = std::string(KVPLAN_SOURCE_DIR) + "/tests/data/runs/";

// nerdalert results.json line 1 (vLLM 0.8.3, rate 1): the numbers as the file prints them.
void expect_nerdalert_line_1(const ServingRun& r) {
  SCOPED_TRACE(r.format);
  EXPECT_EQ(r.load, RunLoad::kRate);
  EXPECT_DOUBLE_EQ(r.rate_per_s, 1.0);
  EXPECT_DOUBLE_EQ(r.arrival_cv, 1.0);
  EXPECT_EQ(r.completed, 120);
  EXPECT_DOUBLE_EQ(r.mean_input_tokens, 1000.0);  // 120000 / 120
  EXPECT_DOUBLE_EQ(r.mean_output_tokens, 100.0);  // 12000 / 120
  ASSERT_TRUE(r.ttft.mean_ms && r.ttft.median_ms);
  EXPECT_NEAR(*r.ttft.mean_ms, 45.037437366166465, 1e-9);
  EXPECT_NEAR(*r.ttft.median_ms, 44.61679351516068, 1e-9);
  ASSERT_TRUE(r.tpot.mean_ms);
  EXPECT_NEAR(*r.tpot.mean_ms, 8.564716330980287, 1e-9);
  EXPECT_NEAR(r.request_throughput_per_s, 1.2081006055190666, 1e-12);
  EXPECT_NEAR(r.output_throughput_tokens_per_s, 120.81006055190667, 1e-9);
  EXPECT_EQ(r.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(r.load_text(), "rate 1 req/s (Poisson)");
}

TEST(ServingRun, EveryFormatGivesTheSameRecord) {
  const std::vector<ServingRun> vllm = read_serving_runs(kRuns + "nerdalert_h100_llama31_8b_results.jsonl");
  ASSERT_EQ(vllm.size(), 12u);  // one object per line
  EXPECT_EQ(vllm[0].format, "vllm bench serve");
  EXPECT_EQ(vllm[0].id, kRuns + "nerdalert_h100_llama31_8b_results.jsonl #1");
  EXPECT_EQ(vllm[0].date, "20250414-165148");
  EXPECT_EQ(vllm[0].fields.at("framework"), "vllm");
  EXPECT_EQ(vllm[6].fields.at("framework"), "sgl");
  EXPECT_TRUE(vllm[0].engine.empty());  // "backend": "vllm" is the client's API, not the server
  expect_nerdalert_line_1(vllm[0]);
  // The ITL the vLLM file adds (the others do not all have it).
  ASSERT_TRUE(vllm[0].itl.mean_ms);
  EXPECT_NEAR(*vllm[0].itl.mean_ms, 8.564720096506386, 1e-9);

  for (const char* file : {"schema_genai_perf.json", "schema_aiperf.json", "schema_guidellm.json"}) {
    const std::vector<ServingRun> r = read_serving_runs(kRuns + file);
    ASSERT_EQ(r.size(), 1u) << file;
    expect_nerdalert_line_1(r[0]);
    ASSERT_TRUE(r[0].e2e.mean_ms) << file;
    EXPECT_NEAR(*r[0].e2e.mean_ms, 892.944, 1e-9) << file;  // GuideLLM's is in seconds
  }
  EXPECT_EQ(read_serving_runs(kRuns + "schema_genai_perf.json")[0].format, "genai-perf");
  EXPECT_EQ(read_serving_runs(kRuns + "schema_aiperf.json")[0].format, "aiperf");
  EXPECT_EQ(read_serving_runs(kRuns + "schema_guidellm.json")[0].date, "2025-04-14T15:51:48Z");
}

TEST(ServingRun, VllmInfRateIsABurstWithItsFailures) {
  const ServingRun r = read_serving_runs(kRuns + "nerdalert_h100_llama31_8b_results.jsonl")[5];
  EXPECT_EQ(r.load, RunLoad::kBurst);
  EXPECT_EQ(r.num_prompts, 2000);
  EXPECT_EQ(r.completed, 1015);
  EXPECT_EQ(r.load_text(), "burst of 2000");
}

TEST(ServingRun, VllmDetailedArrays) {
  const std::vector<ServingRun> runs = read_serving_runs(kRuns + "surajssd_a100_llama33_70b_tp8_qps_04.json");
  ASSERT_EQ(runs.size(), 1u);
  const ServingRun& r = runs[0];
  EXPECT_TRUE(r.per_request);
  ASSERT_EQ(r.input_lens.size(), 200u);
  EXPECT_EQ(r.input_lens[0], 13);
  EXPECT_EQ(r.output_lens[0], 120);
  // Every request succeeded: the array means equal the file's totals over 200 requests.
  EXPECT_NEAR(r.mean_input_tokens, 42659.0 / 200, 1e-9);
  EXPECT_NEAR(r.mean_output_tokens, 42449.0 / 200, 1e-9);
  EXPECT_NEAR(*r.ttft.mean_ms, 50.32546663501307, 1e-9);
  EXPECT_DOUBLE_EQ(r.rate_per_s, 4.0);
}

TEST(ServingRun, SglangJsonlWithMediansOnly) {
  const std::vector<ServingRun> runs = read_serving_runs(kRuns + "datacrunch_h200_llama33_70b_sglang_online.jsonl");
  ASSERT_EQ(runs.size(), 7u);
  const ServingRun& r = runs[0];
  EXPECT_EQ(r.format, "sglang bench_serving");
  EXPECT_EQ(r.engine, "sglang");  // the native backend: only SGLang serves /generate
  EXPECT_EQ(r.load, RunLoad::kRate);
  EXPECT_DOUBLE_EQ(r.rate_per_s, 1.0);
  EXPECT_EQ(r.completed, 300);
  EXPECT_EQ(r.num_prompts, 300);  // not written by this version: the completed count
  EXPECT_NEAR(r.mean_input_tokens, 152612.0 / 300, 1e-9);
  EXPECT_NEAR(r.mean_output_tokens, 160347.0 / 300, 1e-9);
  EXPECT_FALSE(r.ttft.mean_ms);
  EXPECT_NEAR(*r.ttft.median_ms, 85.74514742940664, 1e-9);
  EXPECT_NEAR(*r.itl.median_ms, 13.638956006616354, 1e-9);
  EXPECT_NEAR(*r.e2e.mean_ms, 7840.616212638561, 1e-9);  // SGLang's "e2e_latency" name
  EXPECT_NEAR(r.request_throughput_per_s, 300 / 298.3675805060193, 1e-12);  // completed / duration
}

TEST(ServingRun, RefusalsNameTheRunAndTheField) {
  auto message = [](const std::string& text) {
    try {
      parse_serving_runs(text, "x.json");
    } catch (const kvplan::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message(R"({"mean_ttft_ms": 5, "num_prompts": 10, "completed": 10})").find("'request_rate'"), std::string::npos);
  EXPECT_NE(message(R"({"mean_ttft_ms": 5, "mean_tpot_ms": 1, "num_prompts": 10, "completed": 10, "request_rate": 2})")
                .find("'total_input_tokens'"),
            std::string::npos);
  EXPECT_NE(message(R"({"mean_ttft_ms": 5, "num_prompts": 1, "completed": 1, "request_rate": 2, "max_concurrency": 4,
                       "total_input_tokens": 1, "total_output_tokens": 1})")
                .find("max_concurrency 4 together"),
            std::string::npos);
  EXPECT_NE(message(R"({"hello": 1})").find("none of the formats"), std::string::npos);
  EXPECT_NE(message(R"({"benchmarks": [{"args": {"strategy": {"type_": "throughput"}}, "metrics": {}}]})")
                .find("throughput runs state no load"),
            std::string::npos);
  EXPECT_NE(message(R"({"time_to_first_token": {"unit": "parsec", "avg": 1}, "input_config": {"concurrency": 2}})")
                .find("'parsec'"),
            std::string::npos);
}

}  // namespace
