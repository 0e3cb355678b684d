// Strict typed reads from a JSON object, with errors that name the object, field, value and rule.
//
//   JsonFields f(config, "model 'llama-2-7b'");
//   int heads = f.positive_int("num_attention_heads");
//   int kv = f.positive_int_or("num_key_value_heads", heads);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvplan::internal {

class JsonFields {
 public:
  // `what` prefixes every message, e.g. "model 'x'" or "gpu preset 'h100-sxm'".
  JsonFields(const nlohmann::json& object, std::string what);

  bool has(std::string_view key) const;  // present and not null
  const nlohmann::json& raw(std::string_view key) const;

  int64_t positive_int64(std::string_view key) const;
  int positive_int(std::string_view key) const;
  int positive_int_or(std::string_view key, int fallback) const;
  int non_negative_int_or(std::string_view key, int fallback) const;
  double positive_number(std::string_view key) const;
  double number_or(std::string_view key, double fallback) const;
  double positive_number_or(std::string_view key, double fallback) const;      // > 0, finite
  double non_negative_number_or(std::string_view key, double fallback) const;  // >= 0, finite
  bool bool_or(std::string_view key, bool fallback) const;
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  // An array of strings; absent gives {}. Each element must be a non-empty string.
  std::vector<std::string> string_list_or(std::string_view key) const;

  // Throws for the first key that is not in `known` and does not start with '_' (comment keys),
  // naming it, suggesting the closest known key and listing them all: typos must not pass silently.
  void reject_unknown_keys(const std::vector<std::string_view>& known) const;

  [[noreturn]] void fail(std::string_view key, const std::string& value, std::string_view rule) const;
  const std::string& what() const { return what_; }

 private:
  const nlohmann::json& object_;
  std::string what_;
};

// Renders a JSON value compactly for error messages (strings without quotes).
std::string json_value_text(const nlohmann::json& value);

}  // namespace kvplan::internal

namespace kvplan::internal {

// Parses JSON as Python's json module writes it: bare Infinity, -Infinity and NaN (which Hugging
// Face configs contain, e.g. Mamba-2's time_step_limit) become null. Throws ConfigError naming
// `what` on malformed input.
nlohmann::json parse_python_json(std::string_view text, std::string_view what);

}  // namespace kvplan::internal
