// cli/flag_parse.h — typed values out of a subcommand's flags (kept as text so --compare can vary
// any of them). Every error names the flag, the value and the rule, as ConfigError.
//
//   const std::string& text = flag_text(flags, memory_flag_defaults(), "max-model-len");
//   int64_t n = parse_int_flag("max-model-len", text);      // "--max-model-len=x must be an integer"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kvplan::cli {

// Flag name (without "--") -> value as typed. Absent flags take their defaults.
using FlagValues = std::map<std::string, std::string>;
using FlagDefaults = std::vector<std::pair<std::string, std::string>>;

// The value given, else the default, else "".
const std::string& flag_text(const FlagValues& flags, const FlagDefaults& defaults, const std::string& name);
// Throws for any flag not in `defaults`.
void check_known_flags(const FlagValues& flags, const FlagDefaults& defaults);
int64_t parse_int_flag(const std::string& name, const std::string& text);
double parse_number_flag(const std::string& name, const std::string& text);  // finite
// true/1/on or false/0/off; "" gives `if_empty`.
bool parse_bool_flag(const std::string& name, const std::string& text, bool if_empty);

}  // namespace kvplan::cli
