#include "flag_parse.h"

#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/number_text.h"

namespace kvplan::cli {

const std::string& flag_text(const FlagValues& flags, const FlagDefaults& defaults, const std::string& name) {
  static const std::string empty;
  auto it = flags.find(name);
  if (it != flags.end()) return it->second;
  for (const auto& [key, value] : defaults) {
    if (key == name) return value;
  }
  return empty;
}

void check_known_flags(const FlagValues& flags, const FlagDefaults& defaults) {
  for (const auto& [key, value] : flags) {
    bool known = false;
    for (const auto& [name, unused] : defaults) known = known || name == key;
    if (!known) throw ConfigError(fmt::format("--{}={}: unknown option", key, value));
  }
}

namespace {
// A value as shown in a message: at most 60 characters.
std::string shown_value(const std::string& text) { return text.size() > 60 ? text.substr(0, 57) + "..." : text; }
}  // namespace

int64_t parse_int_flag(const std::string& name, const std::string& text) {
  const std::optional<int64_t> v = parse_int64_text(text);
  if (!v) throw ConfigError(fmt::format("--{}={} must be an integer (at most 19 digits)", name, shown_value(text)));
  return *v;
}

double parse_number_flag(const std::string& name, const std::string& text) {
  const std::optional<double> v = parse_double_text(text);
  if (!v) throw ConfigError(fmt::format("--{}={} must be a number (finite, decimal or scientific)", name, shown_value(text)));
  return *v;
}

bool parse_bool_flag(const std::string& name, const std::string& text, bool if_empty) {
  if (text.empty()) return if_empty;
  if (text == "true" || text == "1" || text == "on") return true;
  if (text == "false" || text == "0" || text == "off") return false;
  throw ConfigError(fmt::format("--{}={} must be true or false", name, text));
}

}  // namespace kvplan::cli
