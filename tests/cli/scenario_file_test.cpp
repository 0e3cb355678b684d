// tests/cli/scenario_file_test.cpp — the scenario JSON format: round trip, strict errors that name
// the field, and `--scenario FILE` giving the same answers as the same flags typed.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "memory_options.h"
#include "run_cli.h"
#include "scenario_file.h"
#include "sim_options.h"

namespace kvplan::cli {
namespace {

using kvplan::testing::run_cli;

const std::string kSource = KVPLAN_SOURCE_DIR;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kvplan_scenario_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

// The ConfigError message for `text`, or "" if it parsed.
std::string error_of(const std::string& text) {
  try {
    parse_scenario_json(text, "t.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& text, std::initializer_list<std::string> fragments) {
  std::string msg = error_of(text);
  ASSERT_FALSE(msg.empty()) << "parsed: " << text;
  EXPECT_NE(msg.find("t.json"), std::string::npos) << msg;
  for (const std::string& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
}

TEST(ScenarioFile, RoundTripKeepsEveryField) {
  ScenarioFile s;
  s.name = "chat, \"quoted\"";
  s.memory_flags = {{"model", "llama-3.1-8b"}, {"kv-cache-dtype", "fp8"}, {"gpu-memory-utilization", "0.85"}};
  s.sim_flags = {{"users", "16"}, {"slo-ttft-ms", "2000"}};
  s.compare = {{{"kv-cache-dtype", "auto"}}, {{"kv-cache-dtype", "int4"}, {"block-size", "32"}}, {}};
  std::string path = temp_path("roundtrip.json");
  save_scenario_file(path, s);
  ScenarioFile back = load_scenario_file(path);
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(back.memory_flags, s.memory_flags);
  EXPECT_EQ(back.sim_flags, s.sim_flags);
  EXPECT_EQ(back.compare, s.compare);
  // Stable text: saving what was loaded gives the same bytes, keys sorted.
  EXPECT_EQ(scenario_json(back), scenario_json(s));
  std::string text = scenario_json(s);
  EXPECT_LT(text.find("\"compare\""), text.find("\"kvplan_scenario\""));
  EXPECT_LT(text.find("\"kvplan_scenario\""), text.find("\"memory\""));
  EXPECT_LT(text.find("\"memory\""), text.find("\"name\""));
  EXPECT_LT(text.find("\"name\""), text.find("\"simulate\""));
  EXPECT_LT(text.find("\"gpu-memory-utilization\""), text.find("\"model\""));
  std::remove(path.c_str());
}

TEST(ScenarioFile, NumbersAndBooleansBecomeFlagText) {
  ScenarioFile s = parse_scenario_json(
      R"({"kvplan_scenario": 1, "memory": {"max-model-len": 8192, "gpu-memory-utilization": 0.9,
          "enforce-eager": true}, "simulate": {"users": 64, "think-time": 2.5}})",
      "t.json");
  EXPECT_EQ(s.memory_flags.at("max-model-len"), "8192");
  EXPECT_EQ(s.memory_flags.at("gpu-memory-utilization"), "0.9");
  EXPECT_EQ(s.memory_flags.at("enforce-eager"), "true");
  EXPECT_EQ(s.sim_flags.at("users"), "64");
  EXPECT_EQ(s.sim_flags.at("think-time"), "2.5");
  EXPECT_TRUE(s.compare.empty());
  EXPECT_TRUE(s.name.empty());
}

TEST(ScenarioFile, EveryErrorNamesTheFieldValueAndRule) {
  expect_error("not json", {"not valid JSON"});
  expect_error("[1, 2]", {"must be a JSON object"});
  expect_error(R"({"memory": {}})", {"kvplan_scenario", "missing", "must be 1"});
  expect_error(R"({"kvplan_scenario": 2})", {"kvplan_scenario=2", "must be 1"});
  expect_error(R"({"kvplan_scenario": "1"})", {"kvplan_scenario=\"1\"", "must be 1"});
  expect_error(R"({"kvplan_scenario": 1, "nmae": "x"})", {"nmae=\"x\"", "unknown key"});
  expect_error(R"({"kvplan_scenario": 1, "name": 5})", {"name=5", "must be a string"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"modle": "x"}})", {"memory.modle=\"x\"", "unknown key"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"users": "4"}})", {"memory.users", "not a flag of `kvplan memory`"});
  expect_error(R"({"kvplan_scenario": 1, "simulate": {"model": "x"}})", {"simulate.model", "not a flag of `kvplan simulate`"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"gpu": ["a"]}})", {"memory.gpu=[\"a\"]", "must be a string, a number"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"gpu": null}})", {"memory.gpu=null"});
  expect_error(R"({"kvplan_scenario": 1, "memory": []})", {"memory=[]", "must be an object"});
  expect_error(R"({"kvplan_scenario": 1, "compare": {}})", {"compare={}", "must be an array"});
  expect_error(R"({"kvplan_scenario": 1, "compare": [{}, {"kv-dtype": "fp8"}]})", {"compare[1].kv-dtype=\"fp8\"", "unknown key"});
  expect_error(R"({"kvplan_scenario": 1, "compare": [5]})", {"compare[0]=5", "must be an object"});
}

TEST(ScenarioFile, MissingFileNamesThePath) {
  try {
    load_scenario_file("/nonexistent/kvplan.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/kvplan.json"), std::string::npos) << e.what();
  }
}

TEST(ScenarioFile, ShippedExampleLoadsAndBuilds) {
  ScenarioFile s = load_scenario_file(kSource + "/data/scenarios/chat-h100.json");
  EXPECT_EQ(s.compare.size(), 3u);
  Scenario hw = build_scenario(s.memory_flags);
  EXPECT_EQ(hw.model.id, "llama-3.1-8b");
  std::filesystem::current_path(kSource);  // its trace paths are relative to the repository root
  sim::SimulationConfig cfg = build_simulation(hw, s.sim_flags);
  EXPECT_EQ(cfg.workload.kind, sim::WorkloadKind::kClosedLoop);
  EXPECT_EQ(cfg.workload.closed.num_users, 64);
  for (const FlagValues& scheme : s.compare) {
    FlagValues flags = s.memory_flags;
    for (const auto& [k, v] : scheme) flags[k] = v;
    EXPECT_NO_THROW(build_scenario(flags)) << scheme.begin()->second;
  }
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

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(ScenarioCli, MemoryScenarioEqualsTypedFlags) {
  std::string path = temp_path("memory.json");
  write_file(path, R"({"kvplan_scenario": 1, "memory": {"kv-cache-dtype": "fp8", "max-model-len": 8192,
                       "gpu-memory-utilization": "0.8"}})");
  auto typed = run_cli("memory --json --kv-cache-dtype fp8 --max-model-len 8192 --gpu-memory-utilization 0.8");
  auto file = run_cli("memory --json --scenario " + path);
  ASSERT_EQ(typed.status, 0) << typed.out;
  ASSERT_EQ(file.status, 0) << file.out;
  EXPECT_EQ(file.out, typed.out);
  // A typed flag overrides the file's.
  auto over = run_cli("memory --json --scenario " + path + " --max-model-len 4096");
  auto typed_over = run_cli("memory --json --kv-cache-dtype fp8 --max-model-len 4096 --gpu-memory-utilization 0.8");
  ASSERT_EQ(over.status, 0) << over.out;
  EXPECT_EQ(over.out, typed_over.out);
  EXPECT_EQ(nlohmann::json::parse(over.out).at("max_model_len"), 4096);
  std::remove(path.c_str());
}

TEST(ScenarioCli, SimulateAndCapacityScenarioEqualTypedFlags) {
  std::string path = temp_path("sim.json");
  write_file(path, R"({"kvplan_scenario": 1, "memory": {"max-model-len": 4096},
      "simulate": {"rate": 4, "num-requests": 60, "prompt-lengths": "fixed:512", "output-lengths": "fixed:64",
                   "seed": 3, "slo-ttft-ms": 2000}})");
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
  std::string path = temp_path("bad.json");
  write_file(path, R"({"kvplan_scenario": 1, "memory": {"kv-cache-dtyp": "fp8"}})");
  kvplan::testing::expect_bad_input("memory --scenario " + path, {path, "memory.kv-cache-dtyp", "unknown key"});
  kvplan::testing::expect_bad_input("simulate --scenario /nonexistent.json", {"/nonexistent.json"});
  std::remove(path.c_str());
}

TEST(ScenarioCli, SectionsACommandDoesNotUseAreValidatedToo) {
  // `memory` reads only the memory section, but a bad simulate or compare section is still an
  // error (issue 16: they used to be accepted silently until another command read them).
  std::string path = temp_path("unused.json");
  write_file(path, R"({"kvplan_scenario": 1, "memory": {"max-model-len": 4096}, "simulate": {"rate": "-3"}})");
  kvplan::testing::expect_bad_input("memory --scenario " + path, {path, "simulate", "--rate=-3"});
  write_file(path, R"({"kvplan_scenario": 1, "compare": [{"kv-cache-dtype": "fp7"}]})");
  kvplan::testing::expect_bad_input("simulate --scenario " + path, {path, "compare[0]", "fp7"});
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kvplan::cli
