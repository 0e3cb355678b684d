// kvplan/plan/settings.h — one row per setting of a Scenario: its flag, its scenario-file key, its
// type, unit, default, range or choices, and a one-line description. The command line (CLI11
// options and --help), the planner's input table (tooltips, drop-downs), the scenario file (keys,
// JSON types, the JSON Schema in data/scenario.schema.json) and the Python keywords all come from
// this table, so adding a setting is one row (settings.cpp).
//
//   const plan::Setting& s = plan::setting("max-model-len");   // or plan::setting("engine.max_model_len")
//   plan::Scenario sc;
//   s.set(sc, "8192");                  // typed: sc.engine.max_model_len == 8192
//   s.set(sc, "-5");                    // ConfigError "--max-model-len=-5 must be at least 0"
//   plan::set_values(sc, {{"kv-cache-dtype", "fp8"}, {"users", "64"}});
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/plan/scenario.h"

namespace kvplan::plan {

// The JSON type of a setting's value in a scenario file, and the CLI11 type name.
enum class ValueType { kInteger, kNumber, kBoolean, kText, kChoice };
std::string_view value_type_name(ValueType type);  // "integer", "number", "boolean", "string", "string"

// Which commands read a setting: kMemory settings shape the memory answer (kvplan memory,
// simulate, capacity, report); kSimulate ones only the simulation (kvplan simulate, capacity).
enum class Command { kMemory, kSimulate };

struct Setting {
  std::string flag;         // "max-model-len": the CLI flag without "--", and the setting's name
  std::string short_flag;   // "t" for -t, or ""
  std::string section;      // "engine": the scenario file's section
  std::string key;          // "max_model_len": the key inside it
  ValueType type = ValueType::kText;
  Command command = Command::kMemory;
  std::string unit;         // "tokens", "GiB", "ms", "fraction", ... (never empty)
  std::string description;  // one line, no trailing period
  std::string default_text; // the default as text ("" for an unset optional)
  std::string default_note; // what the default means, e.g. "0 means the engine's default"
  std::vector<std::string> choices;  // kChoice: the accepted names (aliases are accepted too)
  std::optional<double> minimum, maximum;  // kInteger / kNumber
  bool exclusive_minimum = false;
  bool optional = false;    // "" (absent in a file) is allowed: the derived default

  // Sets the field from text, checking type, range and choices. `label` names the field in the
  // message ("--max-model-len" on the command line, "engine.max_model_len" in a file; default:
  // "--<flag>"). Throws ConfigError "<label>=<text> <rule>".
  std::function<void(Scenario&, std::string_view text, std::string_view label)> set_text;
  // The field as text: what set_text accepts back ("" for an unset optional).
  std::function<std::string(const Scenario&)> text;

  void set(Scenario& s, std::string_view value) const { set_text(s, value, "--" + flag); }
  std::string file_key() const { return section + "." + key; }  // "engine.max_model_len"
  bool is_default(const Scenario& s) const { return text(s) == default_text; }
};

// Every setting, grouped by section in file order (model, hardware, engine, kv_cache, workload,
// slo, cost).
const std::vector<Setting>& settings();
// The scenario file's sections, in order.
const std::vector<std::string>& setting_sections();
// By flag ("max-model-len", also "--max-model-len") or file key ("engine.max_model_len"); nullptr
// when there is none.
const Setting* find_setting(std::string_view name);
// As find_setting; throws ConfigError "unknown setting '<name>'" with the closest names.
const Setting& setting(std::string_view name);

// Setting name (its flag) -> value as text: what `--compare` varies, what a scenario's compare
// entry and the planner's inputs hold.
using SettingValues = std::map<std::string, std::string>;

// `--compare KEY=V1,V2,...`: one setting and the values it takes, side by side (memory and
// capacity). The first axis of several varies slowest.
struct SettingAxis {
  std::string setting;              // its flag, e.g. "kv-cache-dtype"
  std::vector<std::string> values;  // as given, each checked by the setting's rule
};
// Parses "KEY=V1,V2,..." for `kvplan <command_name>`. KEY is a flag or file key; with kMemory only
// memory settings are accepted, with kSimulate every setting. Throws ConfigError naming the text,
// the key or the value, and the rule.
SettingAxis parse_setting_axis(std::string_view text, Command command, std::string_view command_name);

// Sets each value by name (throws ConfigError naming the first bad one).
void set_values(Scenario& s, const SettingValues& values);
Scenario with_values(Scenario s, const SettingValues& values);
// The settings that differ from the defaults, as text.
SettingValues non_default_values(const Scenario& s);

}  // namespace kvplan::plan
