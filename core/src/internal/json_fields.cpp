#include "internal/json_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "internal/did_you_mean.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"

namespace kvplan::internal {

std::string json_value_text(const nlohmann::json& value) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    std::string text = json_text(nlohmann::json(s.size() > 60 ? s.substr(0, 57) + "..." : s));
    return text.substr(1, text.size() - 2);  // without the quotes
  }
  return json_brief(value);  // scalars as written; arrays and objects summarised, never walked
}

JsonFields::JsonFields(const nlohmann::json& object, std::string what)
    : object_(object), what_(std::move(what)) {
  if (!object_.is_object()) {
    throw ConfigError(fmt::format("{}: expected a JSON object, got {}", what_, object_.type_name()));
  }
}

bool JsonFields::has(std::string_view key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const nlohmann::json& JsonFields::raw(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) fail(key, "missing", "is required");
  return *it;
}

void JsonFields::fail(std::string_view key, const std::string& value, std::string_view rule) const {
  if (value == "missing") {
    throw ConfigError(fmt::format("{}: field '{}' is missing; it {}", what_, key, rule));
  }
  throw ConfigError(fmt::format("{}: {}={} {}", what_, key, value, rule));
}

int64_t JsonFields::positive_int64(std::string_view key) const {
  const nlohmann::json& v = raw(key);
  if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    if (x <= 0) fail(key, json_value_text(v), "must be a positive integer");
    return x;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d > 0 && std::floor(d) == d && d < 9.0e18) return static_cast<int64_t>(d);
  }
  fail(key, json_value_text(v), "must be a positive integer");
}

int JsonFields::positive_int(std::string_view key) const {
  int64_t x = positive_int64(key);
  if (x > std::numeric_limits<int>::max()) fail(key, std::to_string(x), "is too large");
  return static_cast<int>(x);
}

int JsonFields::positive_int_or(std::string_view key, int fallback) const {
  return has(key) ? positive_int(key) : fallback;
}

int JsonFields::non_negative_int_or(std::string_view key, int fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = raw(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
      v.get<int64_t>() > std::numeric_limits<int>::max()) {
    fail(key, json_value_text(v), "must be a non-negative integer");
  }
  return v.get<int>();
}

double JsonFields::positive_number(std::string_view key) const {
  const nlohmann::json& v = raw(key);
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    fail(key, json_value_text(v), "must be a positive number");
  }
  return v.get<double>();
}

double JsonFields::number_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = raw(key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) fail(key, json_value_text(v), "must be a number");
  return v.get<double>();
}

double JsonFields::positive_number_or(std::string_view key, double fallback) const {
  return has(key) ? positive_number(key) : fallback;
}

double JsonFields::non_negative_number_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = raw(key);
  if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>())) {
    fail(key, json_value_text(v), "must be a number >= 0");
  }
  return v.get<double>();
}

bool JsonFields::bool_or(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = raw(key);
  if (!v.is_boolean()) fail(key, json_value_text(v), "must be true or false");
  return v.get<bool>();
}

std::string JsonFields::string(std::string_view key) const {
  const nlohmann::json& v = raw(key);
  if (!v.is_string()) fail(key, json_value_text(v), "must be a string");
  return v.get<std::string>();
}

std::string JsonFields::string_or(std::string_view key, std::string fallback) const {
  return has(key) ? string(key) : fallback;
}

std::vector<std::string> JsonFields::string_list_or(std::string_view key) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const nlohmann::json& v = raw(key);
  if (!v.is_array()) fail(key, json_value_text(v), "must be an array of strings");
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get<std::string>().empty()) {
      fail(fmt::format("{}[{}]", key, i), json_value_text(v[i]), "must be a non-empty string");
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

void JsonFields::reject_unknown_keys(const std::vector<std::string_view>& known) const {
  for (const auto& [key, value] : object_.items()) {
    if (key.empty() || key[0] == '_') continue;
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::vector<NameCandidate> candidates;
    std::string list;
    for (std::string_view k : known) {
      candidates.push_back({std::string(k), std::string(k), std::string(k)});
      list += (list.empty() ? "" : ", ") + std::string(k);
    }
    std::string hint = did_you_mean(key, candidates);
    throw ConfigError(fmt::format("{}: unknown field '{}'{}; known fields: {} (keys starting with '_' are comments)",
                                  what_, key, hint.empty() ? "" : " (" + hint + ")", list));
  }
}

}  // namespace kvplan::internal

namespace kvplan::internal {

nlohmann::json parse_python_json(std::string_view text, std::string_view what) {
  return parse_json_input(text, what);
}

}  // namespace kvplan::internal
