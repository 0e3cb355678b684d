// kvplan/core/json_input.h — reading untrusted JSON (model configs, GPU files, scenarios, profiles,
// trace rows) and writing text that came from outside (file names, database columns) into JSON.
//
//   nlohmann::json j = parse_json_input(text, "model file 'x.json'");   // ConfigError on bad input
//   std::string out = json_text(j);                                      // never throws on bad UTF-8
//
// Every JSON reader goes through parse_json_input so that bad input can only ever end in a
// ConfigError naming the input: malformed text, numbers out of range (1e400), nesting deeper than
// kMaxJsonDepth (deep nesting would overflow the stack wherever the value is walked), and
// duplicate keys in one object (last-one-wins would silently drop a setting). Python's bare
// Infinity / -Infinity / NaN, which Hugging Face configs contain, become null.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kvplan {

inline constexpr int kMaxJsonDepth = 128;

nlohmann::json parse_json_input(std::string_view text, std::string_view what);

// JSON text with invalid UTF-8 replaced by U+FFFD (output of untrusted strings never throws).
std::string json_text(const nlohmann::json& j, int indent = -1);

// JSON with two-space indentation whose arrays of scalars stay on one line (profile files: their
// shape grids hold thousands of numbers, one per line would make a file several times larger).
// No trailing newline. Deterministic: objects in key order.
std::string json_text_flat_arrays(const nlohmann::json& j);

// A short description of a value for error messages, without walking deep or large values:
// scalars as written (strings cut at 60 characters), arrays and objects as "[array of N]" / "{object
// of N keys}".
std::string json_brief(const nlohmann::json& value);

}  // namespace kvplan
