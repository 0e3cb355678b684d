// plan/src/setting_codec.cpp — the rules and messages shared by every row of the settings table.
#include "internal/setting_codec.h"

#include <limits>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/number_text.h"

namespace kvplan::plan::internal {

namespace {
// A value as shown in a message: at most 60 characters.
std::string shown(std::string_view text) {
  return text.size() > 60 ? std::string(text.substr(0, 57)) + "..." : std::string(text);
}
}  // namespace

void fail(std::string_view label, std::string_view text, std::string_view rule) {
  throw ConfigError(fmt::format("{}={} {}", label, shown(text), rule));
}

int64_t parse_integer(std::string_view label, std::string_view text) {
  const std::optional<int64_t> v = parse_int64_text(text);
  if (!v) fail(label, text, "must be an integer (at most 19 digits)");
  return *v;
}

double parse_number(std::string_view label, std::string_view text) {
  const std::optional<double> v = parse_double_text(text);
  if (!v) fail(label, text, "must be a number (finite, decimal or scientific)");
  return *v;
}

bool parse_boolean(std::string_view label, std::string_view text) {
  if (text == "true" || text == "1" || text == "on") return true;
  if (text == "false" || text == "0" || text == "off") return false;
  fail(label, text, "must be true or false");
}

std::string number_text(double v) { return fmt::format("{}", v); }

int64_t integer_bound(double v) {
  // 2^63 as a double is one past INT64_MAX: clamp before the cast.
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::string integer_text(double v) { return std::to_string(integer_bound(v)); }

std::string range_rule(const Range& r, bool integer) {
  auto num = [integer](double v) { return integer ? integer_text(v) : fmt::format("{:g}", v); };
  if (r.min && r.max) {
    return fmt::format("must be in {}{}, {}]", r.exclusive_min ? "(" : "[", num(*r.min), num(*r.max));
  }
  if (r.min) return fmt::format("must be {} {}", r.exclusive_min ? "greater than" : "at least", num(*r.min));
  if (r.max) return fmt::format("must be at most {}", num(*r.max));
  return "must be a number";
}

std::string choice_rule(const std::vector<std::string>& names) {
  if (names.size() == 2) return fmt::format("must be {} or {}", names[0], names[1]);
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return "must be one of " + list;
}

Setting make_row(const Doc& d, ValueType type) {
  Setting s;
  s.flag = d.flag;
  s.short_flag = d.short_flag;
  s.section = d.section;
  s.key = d.key;
  s.type = type;
  s.command = d.command;
  s.unit = d.unit;
  s.description = d.description;
  s.default_note = d.default_note;
  return s;
}

}  // namespace kvplan::plan::internal
