// kvplan/core/error.h — the one exception type for bad input at a boundary.
//
// Configs, presets, traces, CLI flags and GUI forms throw ConfigError when a value breaks a rule.
// The message names the object, the field, the value and the rule, e.g.
//   throw ConfigError(fmt::format("model '{}': num_key_value_heads={} must divide "
//                                 "num_attention_heads={}", id, kv, q));
// Expected outcomes ("does not fit") are values, never exceptions.
#pragma once

#include <stdexcept>
#include <string>

namespace kvplan {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kvplan
