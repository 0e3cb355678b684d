// cli/setting_options.h — the settings table (kvplan/plan/settings.h) as CLI11 options: one per
// setting, with its flag (vLLM's name where vLLM has the setting), its type, its help line
// (plan::setting_help: description, unit and default), and a check that rejects a bad value while
// parsing with the setting's own rule ("--gpu-memory-utilization=1.5 must be in (0, 1]"; choices listed).
//
//   SettingOptions opts;
//   opts.add_to(*memory, plan::Command::kMemory);     // memory, simulate and capacity share the rows
//   app.parse(argc, argv);
//   plan::set_values(scenario, opts.given());         // what was typed, on top of a --scenario file
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "kvplan/plan/settings.h"

namespace kvplan::cli {

// The CLI11 type name: INT, NUMBER, BOOL, TEXT, or the choices as {a,b,c}.
std::string option_type_name(const plan::Setting& s);

class SettingOptions {
 public:
  // One option per setting read by `up_to`: kMemory adds the memory settings only; kSimulate all.
  // `except`: settings the command replaces with its own option (plan's per-GPU --gpu-price).
  void add_to(CLI::App& cmd, plan::Command up_to, const std::vector<std::string>& except = {});
  // The settings given on the command line, as text (a bare switch is "true").
  plan::SettingValues given() const;

 private:
  std::map<std::string, std::string> texts_;  // flag -> text as typed
  std::vector<std::pair<const plan::Setting*, CLI::Option*>> options_;
};

// A CLI11 validation error says "--flag: <message>"; the setting's message already names the flag,
// the value and the rule, so the prefix goes.
std::string validation_message(const CLI::ValidationError& e);

}  // namespace kvplan::cli
