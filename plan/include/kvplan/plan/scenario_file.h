// kvplan/plan/scenario_file.h — a scenario saved as JSON, read by `kvplan memory|simulate|capacity
// --scenario FILE` and `kvplan report FILE`, and opened and saved by the planner.
//
//   plan::ScenarioFile f = plan::load_scenario_file("chat.json");   // v1 files are migrated
//   plan::MemoryAnswer a = plan::answer_memory(f.scenario);
//   plan::save_scenario_file("chat-v2.json", f);                     // always written as v2
//
// Version 2 (docs/reports.md; its JSON Schema is data/scenario.schema.json, generated from the
// settings table by scenario_schema_json()):
//   {"kvplan_scenario": 2, "name": "chat on H100",
//    "model": {"id": "llama-3.1-8b"}, "hardware": {"gpu": "h100-sxm"},
//    "engine": {"max_model_len": 8192}, "kv_cache": {"dtype": "fp8"},
//    "workload": {"users": 64, "think_time_s": 10}, "slo": {"ttft_ms": 2000}, "cost": {},
//    "compare": [{"kv_cache": {"dtype": "auto"}}, {"kv_cache": {"dtype": "int4"}}]}
// Sections hold typed values (integers, numbers, booleans, strings; choices as their names); an
// absent key takes its default. A `workload` section, even empty, asks reports to simulate it.
//
// Version 1 ({"kvplan_scenario": 1, "memory": {flags}, "simulate": {flags}, "compare": [{flags}]},
// values as typed on the command line) still loads: each flag is set on the typed scenario and the
// result is the same scenario; it is written back as version 2.
//
// Validation is done here in C++ from the settings table (types, required, enums, minimum/maximum,
// no unknown keys), and the schema file is generated from that same table; a test checks the
// shipped schema is the generated one. Every error is a ConfigError that names the file, the key
// with its place and the rule, e.g. "scenario 'x.json': workload.rat: unknown key (expected ...)".
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"

namespace kvplan::plan {

inline constexpr int kScenarioFileVersion = 2;

struct ScenarioFile {
  std::string name;
  Scenario scenario;
  // Compared variants (reports, the planner): each a set of settings on top of `scenario`.
  std::vector<SettingValues> compare;
  // The file has a workload section (v1: a non-empty "simulate" section): reports simulate it.
  bool simulate = false;
  int version_read = kScenarioFileVersion;  // 1 when it was migrated from version 1
};

// What a reader of a migrated file should be told, once (the CLI on stderr, Python as a warning):
// empty for a version-2 file. Library code never prints it itself.
std::string migration_note(const ScenarioFile& s, const std::string& origin);

// `origin` names the file in messages.
ScenarioFile parse_scenario_json(const std::string& text, const std::string& origin);
ScenarioFile load_scenario_file(const std::string& path);
// Every part checked as the answers that use it would check it, whichever command reads the file:
// the scenario and each compare variant resolved, the simulation configured (traces opened).
// Throws ConfigError "scenario '<origin>': <part>: <message>".
void validate_scenario_file(const ScenarioFile& s, const std::string& origin);
// Version 2, keys sorted, only values that differ from the defaults (plus model.id and hardware.gpu,
// always): stable for diffs. The workload section is written when `simulate` is set or it holds a
// value.
nlohmann::json scenario_to_json(const ScenarioFile& s);
std::string scenario_json(const ScenarioFile& s);  // scenario_to_json, indented by two, with a newline
// Written atomically (core/atomic_file.h).
void save_scenario_file(const std::string& path, const ScenarioFile& s);

// The JSON Schema (draft 2020-12) of version 2, from the settings table.
nlohmann::json scenario_schema_json();

}  // namespace kvplan::plan
