// tests/plan/scenario_file_test.cpp — the scenario JSON format (kvplan/plan/scenario_file.h):
// version 2 round trip, version 1 migrated to the same scenario, strict errors that name the file,
// the key with its place, the value and the rule, the shipped scenarios and the shipped JSON Schema.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::plan {
namespace {

const std::string kSource = KVPLAN_SOURCE_DIR;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("kvplan_scenario_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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
  const std::string msg = error_of(text);
  ASSERT_FALSE(msg.empty()) << "parsed: " << text;
  EXPECT_NE(msg.find("scenario 't.json'"), std::string::npos) << msg;
  for (const std::string& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
}

TEST(ScenarioFile, RoundTripKeepsEveryField) {
  ScenarioFile s;
  s.name = "chat, \"quoted\"";
  set_values(s.scenario, {{"kv-cache-dtype", "fp8"}, {"gpu-memory-utilization", "0.85"}, {"users", "16"},
                          {"slo-ttft-ms", "2000"}, {"enforce-eager", "true"}, {"gpu-total-memory", "79.5"}});
  s.simulate = true;
  s.compare = {{{"kv-cache-dtype", "auto"}}, {{"kv-cache-dtype", "int4"}, {"block-size", "32"}}, {}};
  const std::string path = temp_path("roundtrip.json");
  save_scenario_file(path, s);
  const ScenarioFile back = load_scenario_file(path);
  EXPECT_EQ(back.version_read, 2);
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(non_default_values(back.scenario), non_default_values(s.scenario));
  EXPECT_EQ(back.scenario.kv_cache.dtype, DType::kFp8E4M3);
  EXPECT_EQ(back.scenario.workload.users, 16);
  EXPECT_TRUE(back.scenario.engine.enforce_eager);
  EXPECT_EQ(back.scenario.hardware.gpu_total_memory_gib, 79.5);
  EXPECT_TRUE(back.simulate);
  EXPECT_EQ(back.compare, s.compare);
  // Stable text: saving what was loaded gives the same bytes, keys sorted, typed values.
  EXPECT_EQ(scenario_json(back), scenario_json(s));
  const nlohmann::json j = nlohmann::json::parse(read(path));
  EXPECT_EQ(j.at("kvplan_scenario"), 2);
  EXPECT_EQ(j.at("engine").at("gpu_memory_utilization"), 0.85);
  EXPECT_EQ(j.at("engine").at("enforce_eager"), true);
  EXPECT_EQ(j.at("workload").at("users"), 16);
  EXPECT_EQ(j.at("kv_cache").at("dtype"), "fp8");
  EXPECT_EQ(j.at("model").at("id"), "llama-3.1-8b");  // identity always written
  EXPECT_EQ(j.at("compare").at(1).at("kv_cache").at("block_size"), 32);
  EXPECT_FALSE(j.contains("cost"));  // nothing but defaults there
  std::remove(path.c_str());
}

TEST(ScenarioFile, V1MigratesToTheSameScenario) {
  const ScenarioFile v1 = parse_scenario_json(
      R"({"kvplan_scenario": 1, "name": "n", "memory": {"max-model-len": 8192, "gpu-memory-utilization": 0.9,
          "enforce-eager": true, "kv-cache-dtype": "fp8"}, "simulate": {"users": 64, "think-time": 2.5},
          "compare": [{"kv-cache-dtype": "int4"}]})",
      "t.json");
  const ScenarioFile v2 = parse_scenario_json(
      R"({"kvplan_scenario": 2, "name": "n", "engine": {"max_model_len": 8192, "gpu_memory_utilization": 0.9,
          "enforce_eager": true}, "kv_cache": {"dtype": "fp8"}, "workload": {"users": 64, "think_time_s": 2.5},
          "compare": [{"kv_cache": {"dtype": "int4"}}]})",
      "t.json");
  EXPECT_EQ(v1.version_read, 1);
  EXPECT_EQ(v2.version_read, 2);
  EXPECT_EQ(v1.scenario.engine.max_model_len, 8192);
  EXPECT_EQ(v1.scenario.workload.think_time_s, 2.5);
  EXPECT_TRUE(v1.simulate);
  EXPECT_EQ(scenario_json(v1), scenario_json(v2));  // migrated = written as v2
}

TEST(ScenarioFile, V1WithoutSimulateSectionDoesNotSimulate) {
  const ScenarioFile v1 = parse_scenario_json(R"({"kvplan_scenario": 1, "memory": {"max-model-len": 4096}})", "t.json");
  EXPECT_FALSE(v1.simulate);
  const ScenarioFile v2 = parse_scenario_json(R"({"kvplan_scenario": 2, "workload": {}})", "t.json");
  EXPECT_TRUE(v2.simulate);
}

// Every v1 file the tests and the fuzz corpus hold migrates, and the migrated form reads back the
// same; the shipped example's v1 original equals the shipped v2 file.
TEST(ScenarioFile, EveryV1TestFileMigrates) {
  int count = 0;
  for (const std::string& dir : {kSource + "/tests/plan/v1", kSource + "/tests/fuzz/corpus/fuzz_scenario"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      const std::string text = read(entry.path().string());
      if (nlohmann::json::parse(text).value("kvplan_scenario", 0) != 1) continue;
      const ScenarioFile v1 = parse_scenario_json(text, entry.path().string());
      EXPECT_EQ(v1.version_read, 1) << entry.path();
      const ScenarioFile again = parse_scenario_json(scenario_json(v1), "migrated");
      EXPECT_EQ(again.version_read, 2);
      EXPECT_EQ(scenario_json(again), scenario_json(v1)) << entry.path();
      ++count;
    }
  }
  EXPECT_GE(count, 2);
  const ScenarioFile old = load_scenario_file(kSource + "/tests/plan/v1/chat-h100.json");
  const ScenarioFile shipped = load_scenario_file(kSource + "/data/scenarios/chat-h100.json");
  EXPECT_EQ(scenario_json(old), scenario_json(shipped));
}

TEST(ScenarioFile, EveryErrorNamesTheFieldValueAndRule) {
  expect_error("not json", {"not valid JSON"});
  expect_error("[1, 2]", {"must be a JSON object"});
  expect_error(R"({"engine": {}})", {"kvplan_scenario", "missing", "must be 1 or 2"});
  expect_error(R"({"kvplan_scenario": 3})", {"kvplan_scenario=3", "must be 1 or 2"});
  expect_error(R"({"kvplan_scenario": "2"})", {"kvplan_scenario=\"2\"", "must be 1 or 2"});
  // Version 2: unknown keys name their place and the expected keys.
  expect_error(R"({"kvplan_scenario": 2, "nmae": "x"})", {"nmae: unknown key", "expected kvplan_scenario, name"});
  expect_error(R"({"kvplan_scenario": 2, "workload": {"rat": 3}})", {"workload.rat: unknown key", "rate"});
  expect_error(R"({"kvplan_scenario": 2, "compare": [{}, {"kv_cache": {"dtyp": "fp8"}}]})",
               {"compare[1].kv_cache.dtyp: unknown key"});
  expect_error(R"({"kvplan_scenario": 2, "compare": [{"kvcache": {}}]})", {"compare[0].kvcache: unknown key"});
  // Typed values: JSON type, range, choices.
  expect_error(R"({"kvplan_scenario": 2, "name": 5})", {"name=5", "must be a string"});
  expect_error(R"({"kvplan_scenario": 2, "engine": {"max_model_len": "8192"}})",
               {"engine.max_model_len=\"8192\"", "must be an integer"});
  expect_error(R"({"kvplan_scenario": 2, "engine": {"max_model_len": 8192.5}})", {"engine.max_model_len=8192.5", "integer"});
  expect_error(R"({"kvplan_scenario": 2, "engine": {"max_model_len": -1}})", {"engine.max_model_len=-1", "at least 0"});
  expect_error(R"({"kvplan_scenario": 2, "engine": {"gpu_memory_utilization": 1.5}})",
               {"engine.gpu_memory_utilization=1.5"});
  expect_error(R"({"kvplan_scenario": 2, "engine": {"enforce_eager": "yes"}})", {"engine.enforce_eager=\"yes\"", "true or false"});
  expect_error(R"({"kvplan_scenario": 2, "kv_cache": {"dtype": "fp7"}})", {"kv_cache.dtype=\"fp7\"", "fp8", "int4"});
  expect_error(R"({"kvplan_scenario": 2, "model": []})", {"model=[]", "must be an object"});
  expect_error(R"({"kvplan_scenario": 2, "hardware": {"gpu": null}})", {"hardware.gpu=null", "must be a string"});
  expect_error(R"({"kvplan_scenario": 2, "compare": {}})", {"compare={}", "must be an array"});
  expect_error(R"({"kvplan_scenario": 2, "compare": [5]})", {"compare[0]=5", "must be an object"});
  // Version 1, as before: keys are the flags of the section's command.
  expect_error(R"({"kvplan_scenario": 1, "nmae": "x"})", {"nmae=\"x\"", "unknown key"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"modle": "x"}})", {"memory.modle=\"x\"", "unknown key"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"users": "4"}})", {"memory.users", "not a flag of `kvplan memory`"});
  expect_error(R"({"kvplan_scenario": 1, "simulate": {"model": "x"}})", {"simulate.model", "not a flag of `kvplan simulate`"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"gpu": ["a"]}})", {"memory.gpu=[\"a\"]", "must be a string, a number"});
  expect_error(R"({"kvplan_scenario": 1, "memory": {"max-model-len": "-4"}})", {"memory", "--max-model-len=-4", "at least 0"});
  expect_error(R"({"kvplan_scenario": 1, "compare": [{"kv-dtype": "fp8"}]})", {"compare[0].kv-dtype=\"fp8\"", "unknown key"});
}

TEST(ScenarioFile, MissingFileNamesThePath) {
  try {
    load_scenario_file("/nonexistent/kvplan.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/kvplan.json"), std::string::npos) << e.what();
  }
}

TEST(ScenarioFile, ValidateNamesThePartThatFails) {
  ScenarioFile s = parse_scenario_json(R"({"kvplan_scenario": 2, "model": {"id": "no-such-model"}})", "t.json");
  try {
    validate_scenario_file(s, "t.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("scenario 't.json': scenario:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-model"), std::string::npos) << e.what();
  }
  s = parse_scenario_json(R"({"kvplan_scenario": 2, "compare": [{"kv_cache": {"h2o_budget_tokens": 64,
                              "streaming_window_tokens": 64}}]})", "t.json");
  try {
    validate_scenario_file(s, "t.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("compare[0]"), std::string::npos) << e.what();
  }
}

// Every shipped scenario is version 2, loads, and is fully valid (traces are relative to the root).
TEST(ScenarioFile, ShippedScenariosLoadAsV2) {
  std::filesystem::current_path(kSource);
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource + "/data/scenarios")) {
    const ScenarioFile s = load_scenario_file(entry.path().string());
    EXPECT_EQ(s.version_read, 2) << entry.path();
    EXPECT_NO_THROW(validate_scenario_file(s, entry.path().string()));
    ++count;
  }
  EXPECT_GE(count, 1);
  const ScenarioFile s = load_scenario_file(kSource + "/data/scenarios/chat-h100.json");
  EXPECT_EQ(s.compare.size(), 3u);
  EXPECT_EQ(s.scenario.model.id, "llama-3.1-8b");
  const sim::SimulationConfig cfg = simulation_config(s.scenario);
  EXPECT_EQ(cfg.workload.kind, sim::WorkloadKind::kClosedLoop);
  EXPECT_EQ(cfg.workload.closed.num_users, 64);
}

// data/scenario.schema.json is what scenario_schema_json() generates from the settings table.
// KVPLAN_UPDATE_SCHEMA=1 rewrites it (after a settings change).
TEST(ScenarioFile, ShippedSchemaIsTheGeneratedOne) {
  const std::string path = kSource + "/data/scenario.schema.json";
  const std::string generated = scenario_schema_json().dump(2) + "\n";
  if (const char* update = std::getenv("KVPLAN_UPDATE_SCHEMA"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << generated;
  }
  EXPECT_TRUE(read(path) == generated) << path << " is not what the settings table generates; run this test with "
                                          "KVPLAN_UPDATE_SCHEMA=1 to regenerate it";
  const nlohmann::json schema = nlohmann::json::parse(generated);
  EXPECT_EQ(schema.at("properties").at("kvplan_scenario").at("const"), 2);
  const nlohmann::json& engine = schema.at("$defs").at("engine");
  EXPECT_EQ(engine.at("additionalProperties"), false);
  EXPECT_EQ(engine.at("properties").at("max_model_len").at("type"), "integer");
  EXPECT_EQ(engine.at("properties").at("max_model_len").at("minimum"), 0);
  EXPECT_EQ(engine.at("properties").at("gpu_memory_utilization").at("exclusiveMinimum"), 0);
  EXPECT_EQ(engine.at("properties").at("gpu_memory_utilization").at("maximum"), 1);
  const nlohmann::json& dtype = schema.at("$defs").at("kv_cache").at("properties").at("dtype");
  EXPECT_NE(std::find(dtype.at("enum").begin(), dtype.at("enum").end(), "fp8"), dtype.at("enum").end());
}

}  // namespace
}  // namespace kvplan::plan
