#include "setting_options.h"

#include <algorithm>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/plan/setting_help.h"

namespace kvplan::cli {

std::string option_type_name(const plan::Setting& s) {
  switch (s.type) {
    case plan::ValueType::kInteger: return "INT";
    case plan::ValueType::kNumber: return "NUMBER";
    case plan::ValueType::kBoolean: return "BOOL";
    case plan::ValueType::kText: return "TEXT";
    case plan::ValueType::kChoice: {
      std::string out;
      for (const std::string& c : s.choices) out += (out.empty() ? "{" : ",") + c;
      return out + "}";
    }
  }
  return "TEXT";
}

void SettingOptions::add_to(CLI::App& cmd, plan::Command up_to, const std::vector<std::string>& except) {
  for (const plan::Setting& s : plan::settings()) {
    if (up_to == plan::Command::kMemory && s.command != plan::Command::kMemory) continue;
    if (std::find(except.begin(), except.end(), s.flag) != except.end()) continue;
    std::string names = "--" + s.flag;
    if (!s.short_flag.empty()) names = "-" + s.short_flag + "," + names;
    CLI::Option* o = cmd.add_option(names, texts_[s.flag], plan::setting_help(s));
    o->type_name(option_type_name(s));
    const plan::Setting* row = &s;
    o->check(CLI::Validator(
        [row](std::string& value) -> std::string {
          plan::Scenario scratch;
          try {
            row->set(scratch, value);
          } catch (const ConfigError& e) {
            return e.what();
          }
          return {};
        },
        ""));
    // Switches work as vLLM's do (--enforce-eager) and also take an explicit true/false.
    if (s.type == plan::ValueType::kBoolean) o->expected(0, 1);
    options_.emplace_back(row, o);
  }
}

plan::SettingValues SettingOptions::given() const {
  plan::SettingValues out;
  for (const auto& [row, opt] : options_) {
    if (opt->count() == 0) continue;
    // A switch given without a value means true.
    const bool bare = opt->results().empty() || opt->results().front().empty();
    out[row->flag] = bare && row->type == plan::ValueType::kBoolean ? std::string("true") : texts_.at(row->flag);
  }
  return out;
}

std::string validation_message(const CLI::ValidationError& e) {
  const std::string what = e.what();
  const size_t colon = what.find(": ");
  if (what.rfind("-", 0) == 0 && colon != std::string::npos && what.compare(colon + 2, 1, "-") == 0) {
    return what.substr(colon + 2);
  }
  return what;
}

}  // namespace kvplan::cli
