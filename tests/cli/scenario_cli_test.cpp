// tests/cli/scenario_cli_test.cpp — `--scenario FILE` gives the same answers as the same flags typed
// (version 1 and version 2 files alike), bad files exit 2 naming the field, and `--help` documents
// every setting with its unit and default.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_cli.h"

namespace kvplan::cli {
namespace {

using kvplan::testing::run_cli;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kvplan_scenario_cli_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// The output without the timing lines ("... in 0.002 s wall ..."), which differ run to run.
std::string without_wall_clock(const std::string& out) {
  std::string kept, line;
  std::istringstream in(out);
  while (std::getline(in, line)) {
    if (line.find(" s wall") == std::string::npos) kept += line + "\n";
  }
  return kept;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ScenarioCli, MemoryScenarioEqualsTypedFlags) {
  const std::string v1 = temp_path("memory1.json"), v2 = temp_path("memory2.json");
  write_file(v1, R"({"kvplan_scenario": 1, "memory": {"kv-cache-dtype": "fp8", "max-model-len": 8192,
                       "gpu-memory-utilization": "0.8"}})");
  write_file(v2, R"({"kvplan_scenario": 2, "kv_cache": {"dtype": "fp8"},
                     "engine": {"max_model_len": 8192, "gpu_memory_utilization": 0.8}})");
  auto typed = run_cli("memory --json --kv-cache-dtype fp8 --max-model-len 8192 --gpu-memory-utilization 0.8");
  ASSERT_EQ(typed.status, 0) << typed.out;
  for (const std::string& path : {v1, v2}) {
    // stdout only: the version-1 file's migration note goes to stderr.
    auto file = run_cli("memory --json --scenario " + path, /*stderr_too=*/false);
    ASSERT_EQ(file.status, 0) << file.out;
    EXPECT_EQ(file.out, typed.out);
    // A typed flag overrides the file's.
    auto over = run_cli("memory --json --scenario " + path + " --max-model-len 4096", /*stderr_too=*/false);
    auto typed_over = run_cli("memory --json --kv-cache-dtype fp8 --max-model-len 4096 --gpu-memory-utilization 0.8");
    ASSERT_EQ(over.status, 0) << over.out;
    EXPECT_EQ(over.out, typed_over.out);
    EXPECT_EQ(nlohmann::json::parse(over.out).at("max_model_len"), 4096);
    std::remove(path.c_str());
  }
}

TEST(ScenarioCli, SimulateAndCapacityScenarioEqualTypedFlags) {
  const std::string path = temp_path("sim.json");
  write_file(path, R"({"kvplan_scenario": 2, "engine": {"max_model_len": 4096},
      "workload": {"rate": 4, "num_requests": 60, "prompt_lengths": "fixed:512", "output_lengths": "fixed:64",
                   "seed": 3}, "slo": {"ttft_ms": 2000}})");
  const std::string flags = " --max-model-len 4096 --rate 4 --num-requests 60 --prompt-lengths fixed:512 "
                            "--output-lengths fixed:64 --seed 3 --slo-ttft-ms 2000";
  auto typed = run_cli("simulate --json" + flags);
  auto file = run_cli("simulate --json --scenario " + path);
  ASSERT_EQ(typed.status, 0) << typed.out;
  EXPECT_EQ(without_wall_clock(file.out), without_wall_clock(typed.out));
  auto cap_typed = run_cli("capacity --json" + flags);
  auto cap_file = run_cli("capacity --json --scenario " + path);
  ASSERT_EQ(cap_typed.status, 0) << cap_typed.out;
  EXPECT_EQ(without_wall_clock(cap_file.out), without_wall_clock(cap_typed.out));
  std::remove(path.c_str());
}

TEST(ScenarioCli, BadScenarioExitsTwoNamingTheField) {
  const std::string path = temp_path("bad.json");
  write_file(path, R"({"kvplan_scenario": 1, "memory": {"kv-cache-dtyp": "fp8"}})");
  kvplan::testing::expect_bad_input("memory --scenario " + path, {path, "memory.kv-cache-dtyp", "unknown key"});
  write_file(path, R"({"kvplan_scenario": 2, "kv_cache": {"dtyp": "fp8"}})");
  kvplan::testing::expect_bad_input("memory --scenario " + path, {path, "kv_cache.dtyp", "unknown key"});
  write_file(path, R"({"kvplan_scenario": 2, "engine": {"max_model_len": "big"}})");
  kvplan::testing::expect_bad_input("memory --scenario " + path, {path, "engine.max_model_len=\"big\"", "integer"});
  kvplan::testing::expect_bad_input("simulate --scenario /nonexistent.json", {"/nonexistent.json"});
  std::remove(path.c_str());
}

TEST(ScenarioCli, SectionsACommandDoesNotUseAreValidatedToo) {
  // `memory` reads only the memory settings, but a bad workload or compare entry is still an
  // error (issue 16: they used to be accepted silently until another command read them).
  const std::string path = temp_path("unused.json");
  write_file(path, R"({"kvplan_scenario": 1, "memory": {"max-model-len": 4096}, "simulate": {"rate": "-3"}})");
  kvplan::testing::expect_bad_input("memory --scenario " + path, {path, "simulate", "--rate=-3"});
  write_file(path, R"({"kvplan_scenario": 1, "compare": [{"kv-cache-dtype": "fp7"}]})");
  kvplan::testing::expect_bad_input("simulate --scenario " + path, {path, "compare[0]", "fp7"});
  write_file(path, R"({"kvplan_scenario": 2, "workload": {"prompt_lengths": "trace:/nonexistent.csv"}})");
  kvplan::testing::expect_bad_input("memory --scenario " + path, {path, "workload", "/nonexistent.csv"});
  std::remove(path.c_str());
}

// Every option of every subcommand's --help has a description and a unit, and every setting its
// default; choices are listed and enforced by the parser.
TEST(ScenarioCli, HelpGivesEveryOptionADescriptionAndAUnit) {
  for (const char* cmd : {"memory", "simulate", "capacity", "report", "models", "gpus", "calibrate inspect",
                          "calibrate import", "calibrate import-published", "calibrate fit", "calibrate run"}) {
    auto r = run_cli(std::string(cmd) + " --help");
    ASSERT_EQ(r.status, 0) << r.out;
    // CLI11 puts an option's description on its line or the next one.
    std::istringstream in(r.out);
    std::string line, pending;
    int options = 0;
    while (std::getline(in, line)) {
      if (line.rfind("  -", 0) == 0) {
        EXPECT_TRUE(pending.empty()) << cmd << ": no description for " << pending;
        pending = line;
        ++options;
      }
      if (!pending.empty() && line.find("Unit: ") != std::string::npos) pending.clear();
    }
    EXPECT_TRUE(pending.empty()) << cmd << ": no description for " << pending;
    EXPECT_GT(options, std::string(cmd) == "memory" || std::string(cmd) == "simulate" ? 40 : 0) << cmd;
  }
  auto memory = run_cli("memory --help");
  EXPECT_NE(memory.out.find("--max-model-len INT"), std::string::npos);
  EXPECT_NE(memory.out.find("Unit: tokens. Default: 0; 0 means the engine's default"), std::string::npos);
  EXPECT_NE(memory.out.find("--engine {vllm,sglang,trtllm,static}"), std::string::npos);
  kvplan::testing::expect_bad_input("memory --engine vlm", {"--engine=vlm", "vllm, sglang, trtllm"});
  kvplan::testing::expect_bad_input("memory --max-model-len 12k", {"--max-model-len=12k"});
}

}  // namespace
}  // namespace kvplan::cli
