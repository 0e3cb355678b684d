// cli/scenario_file.cpp — the scenario JSON format of scenario_file.h: strict parsing (every error
// names the file, the field, the value and the rule) and a stable, sorted writer.
#include "scenario_file.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "memory_options.h"
#include "sim_options.h"

namespace kvplan::cli {

namespace {

constexpr int kScenarioVersion = 1;

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& field, const std::string& value,
                       const std::string& rule) {
  throw ConfigError(fmt::format("scenario '{}': {}={} {}", origin, field, value, rule));
}

std::string short_dump(const json& value) {
  // summarised, never walked: a deep or huge value must not cost a stack or a megabyte here
  return json_brief(value);
}

bool known(const FlagDefaults& defaults, const std::string& name) {
  for (const auto& [key, unused] : defaults) {
    if (key == name) return true;
  }
  return false;
}

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

FlagValues flag_object(const json& obj, const std::string& origin, const std::string& section,
                       const FlagDefaults& defaults, const char* which) {
  if (!obj.is_object()) fail(origin, section, short_dump(obj), "must be an object of flag names to values");
  FlagValues out;
  for (const auto& [key, value] : obj.items()) {
    std::string field = section + "." + key;
    if (!known(defaults, key)) {
      fail(origin, field, short_dump(value), fmt::format("is not a flag of `kvplan {}` (unknown key)", which));
    }
    out[key] = flag_value_text(value, origin, field);
  }
  return out;
}

}  // namespace

ScenarioFile parse_scenario_json(const std::string& text, const std::string& origin) {
  const json root = parse_json_input(text, fmt::format("scenario '{}'", origin));
  if (!root.is_object()) fail(origin, "(top level)", short_dump(root), "must be a JSON object");
  if (!root.contains("kvplan_scenario")) fail(origin, "kvplan_scenario", "(missing)", "is required; must be 1");
  const json& version = root["kvplan_scenario"];
  if (!version.is_number_integer() || version.get<int64_t>() != kScenarioVersion) {
    fail(origin, "kvplan_scenario", short_dump(version), "must be 1 (the only version this kvplan reads)");
  }
  ScenarioFile s;
  for (const auto& [key, value] : root.items()) {
    if (key == "kvplan_scenario") continue;
    if (key == "name") {
      if (!value.is_string()) fail(origin, "name", short_dump(value), "must be a string");
      s.name = value.get<std::string>();
    } else if (key == "memory") {
      s.memory_flags = flag_object(value, origin, "memory", memory_flag_defaults(), "memory");
    } else if (key == "simulate") {
      s.sim_flags = flag_object(value, origin, "simulate", sim_flag_defaults(), "simulate");
    } else if (key == "compare") {
      if (!value.is_array()) fail(origin, "compare", short_dump(value), "must be an array of memory-flag objects");
      for (size_t i = 0; i < value.size(); ++i) {
        s.compare.push_back(flag_object(value[i], origin, fmt::format("compare[{}]", i), memory_flag_defaults(), "memory"));
      }
    } else {
      fail(origin, key, short_dump(value), "is an unknown key (expected kvplan_scenario, name, memory, simulate, compare)");
    }
  }
  return s;
}

void validate_scenario_file(const ScenarioFile& s, const std::string& origin) {
  auto in_section = [&](const std::string& section, const auto& check) {
    try {
      check();
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("scenario '{}': {}: {}", origin, section, e.what()));
    }
  };
  in_section("memory", [&] { (void)build_scenario(s.memory_flags); });
  for (size_t i = 0; i < s.compare.size(); ++i) {
    in_section(fmt::format("compare[{}]", i), [&] {
      FlagValues flags = s.memory_flags;
      for (const auto& [k, v] : s.compare[i]) flags[k] = v;
      (void)build_scenario(flags);
    });
  }
  in_section("simulate", [&] { (void)build_simulation(build_scenario(s.memory_flags), s.sim_flags); });
}

ScenarioFile load_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("scenario '{}': cannot be read", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_scenario_json(text.str(), path);
}

std::string scenario_json(const ScenarioFile& s) {
  json root = json::object();  // std::map underneath: keys come out sorted
  root["kvplan_scenario"] = kScenarioVersion;
  root["name"] = s.name;
  root["memory"] = json::object();
  for (const auto& [k, v] : s.memory_flags) root["memory"][k] = v;
  root["simulate"] = json::object();
  for (const auto& [k, v] : s.sim_flags) root["simulate"][k] = v;
  if (!s.compare.empty()) {
    root["compare"] = json::array();
    for (const FlagValues& scheme : s.compare) {
      json o = json::object();
      for (const auto& [k, v] : scheme) o[k] = v;
      root["compare"].push_back(o);
    }
  }
  return json_text(root, 2) + "\n";
}

void save_scenario_file(const std::string& path, const ScenarioFile& s) {
  try {
    write_file_atomically(path, scenario_json(s));
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("scenario '{}': {}", path, e.what()));
  }
}

}  // namespace kvplan::cli
