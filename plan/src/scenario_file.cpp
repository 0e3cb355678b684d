// plan/src/scenario_file.cpp — the scenario JSON of scenario_file.h: version 2 read strictly
// against the settings table (every error names the file, the key with its place, the value and the
// rule), version 1 migrated flag by flag, and a stable version-2 writer.
#include "kvplan/plan/scenario_file.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "internal/setting_codec.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/number_text.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::plan {

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& field, const std::string& value,
                       const std::string& rule) {
  throw ConfigError(fmt::format("scenario '{}': {}={} {}", origin, field, value, rule));
}

[[noreturn]] void fail_key(const std::string& origin, const std::string& place, const std::string& expected) {
  throw ConfigError(fmt::format("scenario '{}': {}: unknown key (expected {})", origin, place, expected));
}

// Summarised, never walked: a deep or huge value must not cost a stack or a megabyte here.
std::string short_dump(const json& value) { return json_brief(value); }

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::vector<std::string> section_keys(const std::string& section) {
  std::vector<std::string> keys;
  for (const Setting& s : settings()) {
    if (s.section == section) keys.push_back(s.key);
  }
  return keys;
}

const Setting* setting_in(const std::string& section, const std::string& key) {
  for (const Setting& s : settings()) {
    if (s.section == section && s.key == key) return &s;
  }
  return nullptr;
}

bool is_section(const std::string& key) {
  for (const std::string& s : setting_sections()) {
    if (s == key) return true;
  }
  return false;
}

// ---- version 2 -------------------------------------------------------------------------------

// A typed JSON value as the setting's text, checked against the JSON type and (choices) the names.
std::string typed_value_text(const Setting& row, const json& v, const std::string& origin, const std::string& field) {
  switch (row.type) {
    case ValueType::kInteger:
      if (!v.is_number_integer()) fail(origin, field, short_dump(v), "must be an integer (a JSON number without a fraction)");
      return v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>());
    case ValueType::kNumber:
      if (!v.is_number()) fail(origin, field, short_dump(v), "must be a number");
      if (v.is_number_integer()) {
        return v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>());
      }
      return internal::number_text(v.get<double>());
    case ValueType::kBoolean:
      if (!v.is_boolean()) fail(origin, field, short_dump(v), "must be true or false (a JSON boolean)");
      return v.get<bool>() ? "true" : "false";
    case ValueType::kChoice: {
      if (!v.is_string()) fail(origin, field, short_dump(v), internal::choice_rule(row.choices) + " (a JSON string)");
      const std::string s = v.get<std::string>();
      bool listed = false;
      for (const std::string& c : row.choices) listed = listed || c == s;
      if (!listed) fail(origin, field, short_dump(v), internal::choice_rule(row.choices));
      return s;
    }
    case ValueType::kText:
      if (!v.is_string()) fail(origin, field, short_dump(v), "must be a string");
      return v.get<std::string>();
  }
  return {};
}

// One section object: every key a setting of that section with a value of its type; each value
// set on `s` (range and rule checked, the message naming "<place>.<key>").
void read_section(const json& obj, const std::string& section, const std::string& place, const std::string& origin,
                  Scenario& s, SettingValues* values) {
  if (!obj.is_object()) fail(origin, place, short_dump(obj), "must be an object");
  for (const auto& [key, value] : obj.items()) {
    const std::string field = place + "." + key;
    const Setting* row = setting_in(section, key);
    if (row == nullptr) fail_key(origin, field, joined(section_keys(section)));
    const std::string text = typed_value_text(*row, value, origin, field);
    try {
      row->set_text(s, text, field);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("scenario '{}': {}", origin, e.what()));
    }
    if (values != nullptr) (*values)[row->flag] = text;
  }
}

const std::string kTopKeys = "kvplan_scenario, name, model, hardware, engine, kv_cache, workload, slo, cost, compare";

ScenarioFile parse_v2(const json& root, const std::string& origin) {
  ScenarioFile f;
  for (const auto& [key, value] : root.items()) {
    if (key == "kvplan_scenario") continue;
    if (key == "name") {
      if (!value.is_string()) fail(origin, "name", short_dump(value), "must be a string");
      f.name = value.get<std::string>();
    } else if (is_section(key)) {
      read_section(value, key, key, origin, f.scenario, nullptr);
      if (key == "workload") f.simulate = true;
    } else if (key != "compare") {
      fail_key(origin, key, kTopKeys);
    }
  }
  if (root.contains("compare")) {
    const json& list = root["compare"];
    if (!list.is_array()) fail(origin, "compare", short_dump(list), "must be an array of objects of sections");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string place = fmt::format("compare[{}]", i);
      const json& entry = list[i];
      if (!entry.is_object()) fail(origin, place, short_dump(entry), "must be an object of sections (e.g. {\"kv_cache\": {...}})");
      SettingValues values;
      Scenario scratch = f.scenario;
      for (const auto& [key, value] : entry.items()) {
        if (!is_section(key)) fail_key(origin, place + "." + key, joined(setting_sections()));
        read_section(value, key, place + "." + key, origin, scratch, &values);
      }
      f.compare.push_back(std::move(values));
    }
  }
  return f;
}

// ---- version 1 -------------------------------------------------------------------------------

// A flag value as the command line would carry it. Integers stay integers ("64"); other numbers
// take their shortest round-trip form ("0.9"); booleans become "true"/"false".
std::string flag_value_text(const json& v, const std::string& origin, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d)) fail(origin, field, short_dump(v), "must be a finite number");
    return fmt::format("{}", d);
  }
  fail(origin, field, short_dump(v), "must be a string, a number or a boolean (the flag's value as typed)");
}

// A v1 section of flags: each must be a flag of that command (`which`); returned as text.
SettingValues v1_flags(const json& obj, const std::string& origin, const std::string& section, Command command,
                       const char* which) {
  if (!obj.is_object()) fail(origin, section, short_dump(obj), "must be an object of flag names to values");
  SettingValues out;
  for (const auto& [key, value] : obj.items()) {
    const std::string field = section + "." + key;
    const Setting* row = find_setting(key);
    if (row == nullptr || row->command != command || key.rfind("--", 0) == 0 || key != row->flag) {
      fail(origin, field, short_dump(value), fmt::format("is not a flag of `kvplan {}` (unknown key)", which));
    }
    out[key] = flag_value_text(value, origin, field);
  }
  return out;
}

// Sets every flag of one v1 section; a bad value is "scenario '<origin>': <section>: <message>".
void apply_v1(Scenario& s, const SettingValues& flags, const std::string& origin, const std::string& section) {
  try {
    set_values(s, flags);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("scenario '{}': {}: {}", origin, section, e.what()));
  }
}

ScenarioFile parse_v1(const json& root, const std::string& origin) {
  ScenarioFile f;
  f.version_read = 1;
  SettingValues memory, simulate;
  std::vector<SettingValues> compare;
  for (const auto& [key, value] : root.items()) {
    if (key == "kvplan_scenario") continue;
    if (key == "name") {
      if (!value.is_string()) fail(origin, "name", short_dump(value), "must be a string");
      f.name = value.get<std::string>();
    } else if (key == "memory") {
      memory = v1_flags(value, origin, "memory", Command::kMemory, "memory");
    } else if (key == "simulate") {
      simulate = v1_flags(value, origin, "simulate", Command::kSimulate, "simulate");
    } else if (key == "compare") {
      if (!value.is_array()) fail(origin, "compare", short_dump(value), "must be an array of memory-flag objects");
      for (size_t i = 0; i < value.size(); ++i) {
        compare.push_back(v1_flags(value[i], origin, fmt::format("compare[{}]", i), Command::kMemory, "memory"));
      }
    } else {
      fail(origin, key, short_dump(value), "is an unknown key (expected kvplan_scenario, name, memory, simulate, compare)");
    }
  }
  apply_v1(f.scenario, memory, origin, "memory");
  apply_v1(f.scenario, simulate, origin, "simulate");
  for (size_t i = 0; i < compare.size(); ++i) {
    Scenario scratch = f.scenario;
    apply_v1(scratch, compare[i], origin, fmt::format("compare[{}]", i));
  }
  f.compare = std::move(compare);
  f.simulate = !simulate.empty();
  return f;
}

// ---- writing ---------------------------------------------------------------------------------

// The setting's text as its JSON type.
json typed_json(const Setting& row, const std::string& text) {
  switch (row.type) {
    case ValueType::kInteger:
      if (auto v = parse_int64_text(text)) return *v;
      break;
    case ValueType::kNumber:
      if (auto v = parse_int64_text(text)) return *v;  // 2000, not 2000.0
      if (auto v = parse_double_text(text)) return *v;
      break;
    case ValueType::kBoolean:
      if (text == "true" || text == "false") return text == "true";
      break;
    case ValueType::kChoice:
    case ValueType::kText: break;
  }
  return text;
}

void put(json& root, const Setting& row, const std::string& text) { root[row.section][row.key] = typed_json(row, text); }

}  // namespace

ScenarioFile parse_scenario_json(const std::string& text, const std::string& origin) {
  const json root = parse_json_input(text, fmt::format("scenario '{}'", origin));
  if (!root.is_object()) fail(origin, "(top level)", short_dump(root), "must be a JSON object");
  if (!root.contains("kvplan_scenario")) fail(origin, "kvplan_scenario", "(missing)", "is required; must be 1 or 2");
  const json& version = root["kvplan_scenario"];
  const bool integer = version.is_number_integer();
  if (integer && version.get<int64_t>() == 1) return parse_v1(root, origin);
  if (integer && version.get<int64_t>() == kScenarioFileVersion) return parse_v2(root, origin);
  fail(origin, "kvplan_scenario", short_dump(version), "must be 1 or 2 (the versions this kvplan reads)");
}

std::string migration_note(const ScenarioFile& s, const std::string& origin) {
  if (s.version_read == kScenarioFileVersion) return "";
  return fmt::format("note: scenario '{}' is version {}; it was migrated to version {} on reading (\"memory\" -> model, "
                     "hardware, engine, kv_cache; \"simulate\" -> workload, slo). The file is unchanged; save it again "
                     "from the planner, or write kvplan.load_scenario(path).to_json() from Python, to keep version {}",
                     origin, s.version_read, kScenarioFileVersion, kScenarioFileVersion);
}

ScenarioFile load_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("scenario '{}': cannot be read", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_scenario_json(text.str(), path);
}

void validate_scenario_file(const ScenarioFile& s, const std::string& origin) {
  auto in_part = [&](const std::string& part, const auto& check) {
    try {
      check();
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("scenario '{}': {}: {}", origin, part, e.what()));
    }
  };
  const std::string base_part = s.version_read == 1 ? "memory" : "scenario";
  in_part(base_part, [&] { (void)resolve(s.scenario); });
  for (size_t i = 0; i < s.compare.size(); ++i) {
    in_part(fmt::format("compare[{}]", i), [&] { (void)resolve(with_values(s.scenario, s.compare[i])); });
  }
  in_part(s.version_read == 1 ? "simulate" : "workload", [&] { (void)simulation_config(s.scenario); });
}

json scenario_to_json(const ScenarioFile& s) {
  json root = json::object();  // std::map underneath: keys come out sorted
  root["kvplan_scenario"] = kScenarioFileVersion;
  if (!s.name.empty()) root["name"] = s.name;
  for (const Setting& row : settings()) {
    const std::string text = row.text(s.scenario);
    const bool identity = row.flag == "model" || row.flag == "gpu";
    if (text != row.default_text || identity) put(root, row, text);
  }
  if (s.simulate && !root.contains("workload")) root["workload"] = json::object();
  if (!s.compare.empty()) {
    json list = json::array();
    for (const SettingValues& variant : s.compare) {
      json entry = json::object();
      for (const auto& [name, value] : variant) {
        const Setting* row = find_setting(name);
        if (row == nullptr) continue;  // not a setting: nothing a reader could do with it
        // Canonical text (choices by their written names), as a reader of version 2 expects.
        std::string text = value;
        try {
          Scenario scratch = s.scenario;
          row->set(scratch, value);
          text = row->text(scratch);
        } catch (const ConfigError&) {
        }
        put(entry, *row, text);
      }
      list.push_back(std::move(entry));
    }
    root["compare"] = std::move(list);
  }
  return root;
}

std::string scenario_json(const ScenarioFile& s) { return json_text(scenario_to_json(s), 2) + "\n"; }

void save_scenario_file(const std::string& path, const ScenarioFile& s) {
  try {
    write_file_atomically(path, scenario_json(s));
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("scenario '{}': {}", path, e.what()));
  }
}

json scenario_schema_json() {
  json defs = json::object();
  for (const std::string& section : setting_sections()) {
    json props = json::object();
    for (const Setting& row : settings()) {
      if (row.section != section) continue;
      json p = json::object();
      p["type"] = row.type == ValueType::kInteger   ? "integer"
                  : row.type == ValueType::kNumber  ? "number"
                  : row.type == ValueType::kBoolean ? "boolean"
                                                    : "string";
      std::string description = fmt::format("{} [{}; flag --{}]", row.description, row.unit, row.flag);
      if (!row.default_note.empty()) description += ". " + row.default_note;
      p["description"] = description;
      if (!row.default_text.empty()) p["default"] = typed_json(row, row.default_text);
      if (row.type == ValueType::kChoice) p["enum"] = row.choices;
      if (row.type == ValueType::kInteger || row.type == ValueType::kNumber) {
        auto bound = [&](double v) -> json {
          if (row.type == ValueType::kInteger) return internal::integer_bound(v);
          return v;
        };
        if (row.minimum) p[row.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = bound(*row.minimum);
        if (row.maximum) p["maximum"] = bound(*row.maximum);
      }
      props[row.key] = std::move(p);
    }
    defs[section] = {{"type", "object"}, {"additionalProperties", false}, {"properties", std::move(props)}};
  }
  json variant_props = json::object();
  for (const std::string& section : setting_sections()) variant_props[section] = {{"$ref", "#/$defs/" + section}};
  defs["variant"] = {{"type", "object"},
                     {"additionalProperties", false},
                     {"description", "Settings that differ from the scenario's, in the same sections"},
                     {"properties", variant_props}};
  json props = json::object();
  props["kvplan_scenario"] = {{"const", kScenarioFileVersion}, {"description", "Format version"}};
  props["name"] = {{"type", "string"}};
  for (const std::string& section : setting_sections()) props[section] = {{"$ref", "#/$defs/" + section}};
  props["compare"] = {{"type", "array"},
                      {"items", {{"$ref", "#/$defs/variant"}}},
                      {"description", "Compared variants (reports, the planner), each on top of the scenario"}};
  return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"title", "kvplan scenario, version 2"},
          {"description", "Generated from the settings table (plan/src/settings.cpp) by scenario_schema_json(); "
                          "a workload section, even empty, asks reports to simulate it."},
          {"type", "object"},
          {"additionalProperties", false},
          {"required", {"kvplan_scenario"}},
          {"properties", std::move(props)},
          {"$defs", std::move(defs)}};
}

}  // namespace kvplan::plan
