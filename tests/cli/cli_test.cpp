// End-to-end tests of the `kvplan` command: output, JSON fields, and exit status 2 with a message
// naming the field, the value and the rule for every kind of bad input.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
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


// A GPU file under the test temp dir, unique per test and process, removed at the end.
class GpuFile {
 public:
  GpuFile(const std::string& tag, const std::string& fields)
      : path_(::testing::TempDir() + "kvplan_cli_gpu_" + tag + "_" + std::to_string(::getpid()) + ".json") {
    std::ofstream(path_) << "{" << fields << "}";
  }
  ~GpuFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const char* const kGpuFields = R"("id": "test-gpu", "name": "Test GPU 64GB", "architecture": "hopper",
    "memory_gb": 64, "usable_memory_gib": 62.5, "usable_memory_source": "test bench",
    "bf16_dense_tflops": 989, "num_sms": 132, "pcie_gb_s": 64, "source": "unit test")";

TEST(Cli, DefaultScenarioAnswers) {
  Result r = run("");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Llama-3.1-8B"), std::string::npos);
  EXPECT_NE(r.out.find("131,072 B"), std::string::npos);
  EXPECT_NE(r.out.find("KV cache budget"), std::string::npos);
  EXPECT_NE(r.out.find("concurrent users meet it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Azure LLM inference trace 2023"), std::string::npos);
  // the simulated answer says what its step times rest on, and how far that source was off
  EXPECT_NE(r.out.find("step times: published h100-sxm profile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency band: TTFT"), std::string::npos) << r.out;
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

TEST(Cli, MemoryUsesAGpuFile) {
  GpuFile gpu("file", std::string(kGpuFields) + R"(, "memory_bandwidth_gb_s": 3350)");
  Result r = run("memory --gpu " + gpu.path() + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu"], "test-gpu");
  EXPECT_EQ(j["gpu_total_bytes"], 67108864000);       // 62.5 * 2^30
  EXPECT_EQ(j["engine_budget_bytes"], 60397977600);   // 0.9 x
  EXPECT_EQ(j["sources"]["gpu_total"], "test bench");
}

TEST(Cli, MemoryUsesTheExampleGpuFile) {
  Result r = run(std::string("memory --gpu ") + KVPLAN_SOURCE_DIR + "/data/gpus/examples/custom-gpu.json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("NVIDIA A100 PCIe 80GB"), std::string::npos) << r.out;
}

// A version-1 scenario file used to be migrated without a word (issue 27): the CLI says so on
// stderr, once, and nothing on stdout (a --json answer stays parseable); a version-2 file: nothing.
TEST(Cli, VersionOneScenarioIsMigratedWithOneNoteOnStderr) {
  const std::string v1 = std::string(KVPLAN_SOURCE_DIR) + "/tests/plan/v1/chat-h100.json";
  Result r = run("memory --scenario " + v1);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string note = "note: scenario '" + v1 + "' is version 1; it was migrated to version 2";
  const size_t at = r.out.find(note);
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(note, at + 1), std::string::npos) << "said twice\n" << r.out;
  Result j = kvplan::testing::run_cli("memory --json --scenario " + v1, /*stderr_too=*/false);
  ASSERT_EQ(j.status, 0) << j.out;
  EXPECT_TRUE(nlohmann::json::accept(j.out)) << j.out;
  Result v2 = run(std::string("memory --scenario ") + KVPLAN_SOURCE_DIR + "/data/scenarios/chat-h100.json");
  ASSERT_EQ(v2.status, 0) << v2.out;
  EXPECT_EQ(v2.out.find("is version 1"), std::string::npos) << v2.out;
}

// The version stamp was taken when CMake configured, so an incremental build after a commit
// named an older commit ("kvplan 0.1.0 (9f69a62)"; issue 27). It is written at build time now:
// `kvplan --version` and a report name the commit the tree is at (this test runs after the build).
TEST(Cli, VersionStampNamesTheCommitThatBuiltIt) {
  const kvplan::testing::CliResult head =
      kvplan::testing::run_command(std::string("git -C ") + KVPLAN_SOURCE_DIR + " rev-parse --short HEAD 2>/dev/null");
  if (head.status != 0 || head.out.empty()) GTEST_SKIP() << "not a git checkout: the stamp says 'unknown'";
  const std::string commit = head.out.substr(0, head.out.find('\n'));
  Result v = run("--version");
  ASSERT_EQ(v.status, 0) << v.out;
  EXPECT_NE(v.out.find("(" + commit), std::string::npos) << "HEAD is " << commit << ", kvplan says " << v.out;
  const std::string scenario = temp_file("stamp_scenario.json", R"({"kvplan_scenario": 2, "model": {"id": "llama-3.1-8b"}})");
  const std::string out = ::testing::TempDir() + "stamp_report.json";
  Result r = run("report " + scenario + " --json " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_NE(j.at("kvplan_version").get<std::string>().find("(" + commit), std::string::npos) << j.at("kvplan_version");
}

TEST(Cli, GpuAliasModelRepoId) {
  Result r = run("memory --gpu h100 --model meta-llama/Llama-3.1-70B-Instruct -t 4 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu"], "h100-sxm");
  EXPECT_EQ(j["model"], "llama-3.1-70b");
}

TEST(Cli, GpuTotalMemoryChangesTheBudgetByUtilizationTimesDelta) {
  Result a = run("memory --gpu-total-memory 90 --json");
  Result b = run("memory --gpu-total-memory 80 --json");
  ASSERT_EQ(a.status, 0) << a.out;
  ASSERT_EQ(b.status, 0) << b.out;
  nlohmann::json ja = nlohmann::json::parse(a.out);
  nlohmann::json jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["gpu_total_bytes"], 96636764160);  // 90 * 2^30
  EXPECT_EQ(ja["sources"]["gpu_total"], "given with --gpu-total-memory");
  // 0.9 x 10 GiB = 9,663,676,416 B exactly (both totals >= 70 GiB: same batch defaults)
  EXPECT_EQ(ja["kv_budget_bytes"].get<int64_t>() - jb["kv_budget_bytes"].get<int64_t>(), 9663676416);
  Result text = run("memory --gpu-total-memory 79.19");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("total memory 79.19 GiB (given with --gpu-total-memory)"), std::string::npos) << text.out;
}

TEST(Cli, GpuMemoryInUseComparedForVllmV1) {
  // H100 79.19 GiB x 0.9 = 71.27 GiB requested: 4 GiB in use leaves enough, 8 GiB does not
  Result r = run("memory --compare gpu-memory-in-use=0,4,8 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  // vLLM 0.10 on H100: tests/core/engine_memory_test.cpp VllmDefaultAbsoluteFigures
  EXPECT_EQ(j[0]["kv_budget_bytes"], 58334192533);
  EXPECT_EQ(j[1]["kv_budget_bytes"], 58334192533);
  EXPECT_EQ(j[1]["gpu_memory_in_use_bytes"], 4294967296);
  EXPECT_TRUE(j[1]["fits"].get<bool>());
  EXPECT_FALSE(j[2]["fits"].get<bool>());
  EXPECT_NE(j[2]["problems"][0].get<std::string>().find("Free memory on device"), std::string::npos);
  Result text = run("memory --gpu-memory-in-use 8");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("DOES NOT FIT: vLLM refuses to start"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("8.00 GiB already in use by other processes"), std::string::npos) << text.out;
  Result table = run("memory --compare gpu-memory-in-use=0,8");
  ASSERT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("does not fit: vLLM refuses to start"), std::string::npos) << table.out;
}

TEST(Cli, GpusListShowsPricesEstimatesAndNames) {
  Result text = run("gpus");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("price $/h"), std::string::npos) << text.out;
  // h800 has no measured total: 80 * 0.99 GiB = 79.20, marked estimated
  EXPECT_NE(text.out.find("~79.20"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("~79.19"), std::string::npos) << text.out;  // h100-sxm: measured
  Result json = run("gpus --json");
  ASSERT_EQ(json.status, 0);
  bool found = false;
  for (const auto& g : nlohmann::json::parse(json.out)) {
    if (g["id"] != "h100-sxm") continue;
    found = true;
    EXPECT_EQ(g["aliases"][0], "h100");
    EXPECT_EQ(g["device_names"][0], "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g["usable_memory_bytes"], 85029615042);
    EXPECT_NE(g["usable_memory_source"].get<std::string>().find("vLLM 0.19.0"), std::string::npos);
    // data/gpus/PRICES.md: Lambda, 8x H100 SXM, $3.99 per GPU-hour
    EXPECT_DOUBLE_EQ(g["price_usd_per_gpu_hour"].get<double>(), 3.99);
    EXPECT_NE(g["price_source"].get<std::string>().find("Lambda"), std::string::npos);
  }
  EXPECT_TRUE(found);
}

TEST(Cli, ModelsListShowsReposAndPublishedParams) {
  Result r = run("models --json");
  ASSERT_EQ(r.status, 0);
  bool found = false;
  for (const auto& m : nlohmann::json::parse(r.out)) {
    if (m["id"] != "llama-3.1-8b") continue;
    found = true;
    EXPECT_EQ(m["hf_repos"][0], "meta-llama/Llama-3.1-8B");
    EXPECT_EQ(m["published_params"], 8030261248);
    EXPECT_FALSE(m["published_params_source"].get<std::string>().empty());
    EXPECT_NE(m["source"].get<std::string>().find("huggingface.co/meta-llama"), std::string::npos);
  }
  EXPECT_TRUE(found);
}

// The issue-24 presets are listed with their weight format, and the text columns fit the longest id.
TEST(Cli, ModelsListTheQuantizedCheckpointsWithTheirFormat) {
  Result j = run("models --json");
  ASSERT_EQ(j.status, 0);
  std::map<std::string, std::string> weights;
  for (const auto& m : nlohmann::json::parse(j.out)) weights[m["id"].get<std::string>()] = m["weights"].get<std::string>();
  EXPECT_EQ(weights.at("qwen3-14b"), "bf16");
  EXPECT_EQ(weights.at("qwen3-32b-fp8"), "fp8-block");
  EXPECT_EQ(weights.at("qwen3.5-397b-a17b-nvfp4"), "nvfp4");
  EXPECT_EQ(weights.at("llama-3.1-70b-fp8"), "fp8");
  Result t = run("models");
  ASSERT_EQ(t.status, 0);
  // the id column is as wide as the longest id ("llama-3.3-70b-fp8-dynamic", 25 characters), so
  // every id is followed by at least one space before its model_type
  EXPECT_TRUE(std::regex_search(t.out, std::regex("\nqwen3\\.5-397b-a17b-nvfp4 +qwen3_5_moe ")));
  EXPECT_TRUE(std::regex_search(t.out, std::regex("\nllama-3\\.3-70b-fp8-dynamic +llama ")));
  EXPECT_TRUE(std::regex_search(t.out, std::regex("\nphi-4-mini +phi3 ")));
}

TEST(CliBadInput, UnknownPreset) { expect_bad_input("memory --model no-such-model", {"model=no-such-model", "preset"}); }
TEST(CliBadInput, UnknownGpu) { expect_bad_input("memory --gpu tpu-v9", {"gpu=tpu-v9"}); }
TEST(CliBadInput, GpuTypoSuggests) {
  expect_bad_input("memory --gpu h10", {"gpu=h10", "did you mean h100-sxm (alias h100)?", "presets: "});
}
TEST(CliBadInput, ModelTypoSuggests) {
  expect_bad_input("memory --model llama-3.1-8c", {"model=llama-3.1-8c", "did you mean llama-3.1-8b?"});
  expect_bad_input("memory --model meta-llama/Llama-3.1-70B-Instruc",
                   {"no such file, and no preset for the Hugging Face repo meta-llama/Llama-3.1-70B-Instruc",
                    "did you mean meta-llama/Llama-3.1-70B-Instruct (preset llama-3.1-70b)?"});
}
TEST(CliBadInput, GpuFileUnknownKey) {
  GpuFile gpu("typo", std::string(kGpuFields) + R"(, "memory_bandwith_gb_s": 3350)");
  expect_bad_input("memory --gpu " + gpu.path(), {"unknown field 'memory_bandwith_gb_s'", "did you mean memory_bandwidth_gb_s?"});
}
TEST(CliBadInput, GpuFileNegativeBandwidth) {
  GpuFile gpu("negative", std::string(kGpuFields) + R"(, "memory_bandwidth_gb_s": -3350)");
  expect_bad_input("memory --gpu " + gpu.path(), {"gpu file '" + gpu.path() + "'", "memory_bandwidth_gb_s=-3350", "positive"});
}
TEST(CliBadInput, GpuMemoryFlags) {
  expect_bad_input("memory --gpu-total-memory 0", {"--gpu-total-memory=0", "positive number of GiB"});
  expect_bad_input("memory --gpu-total-memory lots", {"--gpu-total-memory=lots", "must be a number"});
  expect_bad_input("memory --gpu-memory-in-use -1", {"--gpu-memory-in-use=-1", "non-negative number of GiB"});
  expect_bad_input("memory --gpu-memory-in-use 80", {"--gpu-memory-in-use=80", "must be less than the GPU's total memory (79.19 GiB"});
  expect_bad_input("memory --gpu-total-memory 40 --gpu-memory-in-use 40",
                   {"--gpu-memory-in-use=40", "(40.00 GiB, given with --gpu-total-memory)"});
}
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
  expect_bad_input("memory --model " + path, {"is not valid JSON"});
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
// Issue 11: an architecture kvplan does not understand is refused (exit 2, the type and the
// supported list named); opting in answers it with the warning in every output.
TEST(CliBadInput, UnknownArchitectureIsRefused) {
  const std::string path = temp_file("kvplan_mystery.json",
                                     R"({"model_type": "mystery", "hidden_size": 1024, "num_attention_heads": 8,
                                         "intermediate_size": 4096, "num_hidden_layers": 4, "vocab_size": 32000})");
  expect_bad_input("memory --model " + path, {"model_type=mystery", "supported: ", "gpt_oss", "--allow-unknown-architecture"});
  expect_bad_input("capacity --users 4 --slo-tpot-ms 50 --model " + path, {"model_type=mystery"});
}

TEST(Cli, UnknownArchitectureOptInIsFlaggedEverywhere) {
  const std::string path = temp_file("kvplan_mystery2.json",
                                     R"({"model_type": "mystery", "hidden_size": 1024, "num_attention_heads": 8,
                                         "intermediate_size": 4096, "num_hidden_layers": 4, "vocab_size": 32000})");
  const std::string model = "--model " + path + " --allow-unknown-architecture";
  Result text = run("memory " + model);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_EQ(text.out.rfind("WARNING: ", 0), 0u) << text.out;  // first line
  EXPECT_NE(text.out.find("not a supported architecture"), std::string::npos) << text.out;
  // The workload kvplan's defaults were before the presets (fixed 1024/256, 5 s think time).
  const std::string users = " --users 2 --think-time 5 --prompt-lengths fixed:1024 --output-lengths fixed:256";
  for (const std::string& cmd : {"memory " + model + " --json",
                                 "simulate " + model + users + " --duration 5 --json",
                                 "capacity " + model + users + " --duration 5 --slo-tpot-ms 50 --json"}) {
    Result r = kvplan::testing::run_cli(cmd, false);
    ASSERT_EQ(r.status, 0) << cmd << "\n" << r.out;
    nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.contains("warnings")) << cmd;
    ASSERT_EQ(j["warnings"].size(), 1u) << cmd;
    EXPECT_NE(j["warnings"][0].get<std::string>().find("generic"), std::string::npos) << cmd;
  }
  // a supported model carries an empty list
  EXPECT_TRUE(nlohmann::json::parse(run("memory --json").out)["warnings"].empty());
}

TEST(Cli, DeepSeekV3FitsOnEightH200FromItsOwnFp8Config) {
  Result r = run("memory --model deepseek-v3 --gpu h200 -t 8 --max-model-len 32768 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_EQ(j["quantization"]["method"], "fp8-block");
  EXPECT_EQ(j["quantization"]["origin"], "config.json quantization_config");
  // about 671e9 / 8 bytes of fp8 weights per GPU (plus scales and bf16 embeddings), not 2 bytes each
  EXPECT_LT(j["weights_bytes_per_gpu"].get<double>(), 90e9);
  // --quantization overrides the file and the output says so
  r = run("memory --model deepseek-v3 --gpu h200 -t 8 --quantization none --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["fits"].get<bool>());
  ASSERT_FALSE(j["warnings"].empty());
  EXPECT_NE(j["warnings"][0].get<std::string>().find("overrides the checkpoint's quantization_config"), std::string::npos);
}

TEST(Cli, Fp8WeightsLowerSimulatedTpot) {
  auto tpot = [](const std::string& quant, const std::string& profile) {
    Result r = kvplan::testing::run_cli("simulate --model llama-3.1-70b --gpu h100 -t 4 --quantization " + quant +
                                        " --users 1 --think-time 5 --prompt-lengths fixed:1024 --output-lengths fixed:256"
                                        " --duration 30 --json --profile " + profile,
                                        false);
    EXPECT_EQ(r.status, 0) << r.out;
    return nlohmann::json::parse(r.out)["summary"]["tpot_ms"]["p50"].get<double>();
  };
  // Datasheet roofs: weight reads halve, fixed costs stay.
  const double bf16 = tpot("none", "datasheet");
  const double fp8 = tpot("fp8", "datasheet");
  EXPECT_LT(fp8, 0.65 * bf16) << bf16 << " vs " << fp8;
  EXPECT_LT(tpot("awq", "datasheet"), fp8);
  // The published H100 profile (vLLM's measured fp8 GEMMs, slower than the roofline at m = 1, and
  // the measured all-reduce floors): still lower, by less.
  const double bf16_published = tpot("none", "published");
  const double fp8_published = tpot("fp8", "published");
  EXPECT_LT(fp8_published, 0.9 * bf16_published) << bf16_published << " vs " << fp8_published;
}

TEST(Cli, ExpertAndDataParallelFlags) {
  Result r = run("memory --model qwen3-30b-a3b -t 2 --data-parallel-size 4 --enable-expert-parallel --json");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["expert_parallel_size"], 8);
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["total_kv_cache_tokens"].get<int64_t>(), 4 * j["kv_cache_tokens"].get<int64_t>());
  expect_bad_input("memory --model llama-3.1-8b --enable-expert-parallel", {"expert-parallel-size", "no experts"});
  expect_bad_input("memory --model qwen3-30b-a3b -t 2 --expert-parallel-size 3",
                   {"--expert-parallel-size=3", "tensor-parallel-size x data-parallel-size = 2"});
  expect_bad_input("memory --model qwen3-235b-a22b-fp8 --gpu h200 -t 8",
                   {"tensor-parallel-size=8", "block_n=128", "--enable-expert-parallel"});
  // MoE TP x EP: TensorRT-LLM and SGLang run a smaller EP size than tp x dp; vLLM has no such split.
  Result hybrid = run("memory --model qwen3-235b-a22b-fp8 --gpu h200 -t 4 --expert-parallel-size 2 --engine trtllm");
  ASSERT_EQ(hybrid.status, 0) << hybrid.out;
  EXPECT_NE(hybrid.out.find("routed experts spread over 2 groups of 2 GPUs, each expert split over its group's GPUs "
                            "(MoE TP 2 x EP 2)"),
            std::string::npos)
      << hybrid.out;
  expect_bad_input("memory --model qwen3-235b-a22b-fp8 --gpu h200 -t 4 --expert-parallel-size 2",
                   {"--expert-parallel-size=2", "tensor-parallel-size x data-parallel-size = 4", "vLLM"});
  expect_bad_input("memory --model qwen3-235b-a22b-fp8 --gpu h200 -t 4 --expert-parallel-size 3 --engine sglang",
                   {"--expert-parallel-size=3", "or divide it"});
  // Data-parallel ranks of a MoE model share the experts (each split over tp x dp GPUs), and say so.
  Result dp = run("memory --model qwen3-235b-a22b-fp8 --gpu h200 --data-parallel-size 2");
  ASSERT_EQ(dp.status, 0) << dp.out;
  EXPECT_NE(dp.out.find("each routed expert split over all 2 GPUs of tp 1 x dp 2"), std::string::npos) << dp.out;
  EXPECT_EQ(dp.out.find("DOES NOT FIT"), std::string::npos) << dp.out;
}

TEST(CliBadInput, UnreadableLog) { expect_bad_input("memory --from-vllm-log /nonexistent.log", {"cannot be opened"}); }

}  // namespace

namespace {

TEST(Cli, ExplainStepNamesEveryTermAndItsSource) {
  Result r = run("simulate --model llama-3.1-8b --explain-step 8,2048 --profile datasheet");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* s : {"8 decode sequence(s) of 2,048 tokens", "qkv_proj", "attention_decode(full_attention)",
                        "lm_head", "step time", "limit", "gemm: datasheet", "attention_decode: datasheet",
                        "engine step overhead", "step times: datasheet defaults for h100-sxm"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  // The default on an H100 is its published profile: grids, floors and their sources by name.
  Result d = run("simulate --model llama-3.1-8b --explain-step 8,2048");
  ASSERT_EQ(d.status, 0) << d.out;
  for (const char* s : {"gemm: published (aiconfigurator, vLLM 0.24.0", "attention_decode: published", "floor",
                        "shape grids", "step times: published h100-sxm profile"}) {
    EXPECT_NE(d.out.find(s), std::string::npos) << s << "\n" << d.out;
  }
  Result j = kvplan::testing::run_cli("simulate --model llama-3.1-8b --explain-step 1,100,512 --json", false);
  ASSERT_EQ(j.status, 0) << j.out;
  nlohmann::json e = nlohmann::json::parse(j.out);
  EXPECT_EQ(e["step"]["prefill_tokens"], 512);
  double sum = 0;
  for (const auto& op : e["ops"]) sum += op["time_ns"].get<double>();
  EXPECT_GT(e["total_ns"].get<double>(), 0);
  EXPECT_LE(e["total_ns"].get<double>(), sum + 1);  // the critical path never exceeds the sum of the ops
  expect_bad_input("simulate --explain-step 8", {"--explain-step=8", "BATCH,CONTEXT"});
  expect_bad_input("simulate --explain-step 0,10", {"no work"});
}

// Issue 24 item 3: a DeepSeek sparse-attention model is costed, not refused, and every DSA term says
// whose table prices it (the decode indexer and attention by their paged-decode stand-ins).
TEST(Cli, ExplainStepPricesDeepSeekSparseAttention) {
  Result r = run("simulate --model deepseek-v3.2 --gpu h200 --tensor-parallel-size 8 --engine sglang "
                 "--explain-step 4,8192,2048");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* s : {"dsa_indexer", "dsa_topk", "attention_decode_topk", "indexer_wq_b",
                        "dsa_attention: published (aiconfigurator, SGLang 0.5.14 kernels (GLM-5 DSA)",
                        "fp8_paged_mqa_logits", "top-k latents the DSA indexer selected"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("kv_b_proj"), std::string::npos) << r.out;  // absorbed: no decompression
}

TEST(Cli, ExplainStepTensorParallelUsesTheEngineCustomAllReduce) {
  // Llama-3.1-70B TP4 on SGLang, one decode sequence: 16 KiB per all-reduce, the engine's one-shot
  // kernel (6.36 us + 3 x 16384 B / (0.439 x 900 GB/s) = 6.48 us) instead of NCCL; the step-time
  // factor and the overhead of the engine follow the step. (vLLM: its own published all-reduce
  // table, below.)
  const std::string cmd = "simulate --model llama-3.1-70b -t 4 --engine sglang --explain-step 1,1000 --json";
  Result r = kvplan::testing::run_cli(cmd, false);
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json e = nlohmann::json::parse(r.out);
  int custom = 0;
  for (const auto& op : e["ops"]) {
    if (op["name"] == "attn_all_reduce" || op["name"] == "mlp_all_reduce") {
      EXPECT_EQ(op["limit"], "custom") << op.dump();
      EXPECT_NEAR(op["time_ns"].get<double>(), 80 * (6360 + 3.0 * 16384 / (0.439 * 900e9) * 1e9), 2.0) << op.dump();
      ++custom;
    }
  }
  EXPECT_EQ(custom, 2);
  EXPECT_DOUBLE_EQ(e["engine_step_time_factor"].get<double>(), 1.083);  // SGLang's fitted default
  EXPECT_EQ(e["step_with_overhead_ns"].get<int64_t>(),
            std::llround(1.083 * e["total_ns"].get<double>()) + e["engine_step_overhead_ns"].get<int64_t>());
  // vLLM on H100 (its profile has vLLM's all-reduce table): that variant, not the one-shot model.
  Result v = kvplan::testing::run_cli("simulate --model llama-3.1-70b -t 4 --explain-step 1,1000 --json", false);
  ASSERT_EQ(v.status, 0) << v.out;
  int vllm_table = 0;
  const nlohmann::json vj = nlohmann::json::parse(v.out);
  for (const auto& op : vj["ops"]) {
    if (op["name"] == "attn_all_reduce" || op["name"] == "mlp_all_reduce") {
      EXPECT_NE(op["limit"], "custom") << op.dump();
      EXPECT_EQ(op["detail"], "vLLM tensor_model_parallel_all_reduce table (custom kernel / NCCL by size)") << op.dump();
      ++vllm_table;
    }
  }
  EXPECT_EQ(vllm_table, 2);
  // A mixed step with its own prefill factor (vLLM): decodes alone x 1.073, the rest x 2.
  Result m = kvplan::testing::run_cli(
      "simulate --model llama-3.1-70b -t 4 --explain-step 1,1000,512 --prefill-time-factor 2 --json", false);
  ASSERT_EQ(m.status, 0) << m.out;
  nlohmann::json mj = nlohmann::json::parse(m.out);
  const double decodes = mj["decode_only_ns"].get<double>(), whole = mj["total_ns"].get<double>();
  EXPECT_GT(decodes, 0);
  EXPECT_LT(decodes, whole);
  EXPECT_EQ(mj["step_with_overhead_ns"].get<int64_t>(),
            std::llround(1.073 * decodes + 2 * (whole - decodes)) + mj["engine_step_overhead_ns"].get<int64_t>());
  // --disable-custom-all-reduce: every all-reduce through NCCL (the profile's collective class).
  Result n = kvplan::testing::run_cli(cmd + " --disable-custom-all-reduce true", false);
  ASSERT_EQ(n.status, 0) << n.out;
  nlohmann::json f = nlohmann::json::parse(n.out);
  EXPECT_GT(f["total_ns"].get<double>(), e["total_ns"].get<double>());
  for (const auto& op : f["ops"]) EXPECT_NE(op["limit"], "custom") << op.dump();
}

}  // namespace
