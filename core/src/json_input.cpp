// Strict JSON input (json_input.h): Python specials, a depth bound, duplicate keys refused, and
// every nlohmann exception turned into a ConfigError naming the input.
#include "kvplan/core/json_input.h"

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

namespace {

// Python's json module writes bare Infinity, -Infinity and NaN; they become null.
std::string without_python_specials(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      clean += c;
      if (c == '\\' && i + 1 < text.size()) clean += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    auto word = [&](std::string_view w) { return text.substr(i, w.size()) == w; };
    if (word("-Infinity")) {
      clean += "null";
      i += 8;
      continue;
    }
    if (word("Infinity")) {
      clean += "null";
      i += 7;
      continue;
    }
    if (word("NaN")) {
      clean += "null";
      i += 2;
      continue;
    }
    clean += c;
  }
  return clean;
}

std::string brief_text(std::string_view s) {
  std::string out = json_text(nlohmann::json(std::string(s.substr(0, 60))));
  return s.size() > 60 ? out + "..." : out;
}

// Thrown from the parser callback; caught in parse_json_input and turned into a ConfigError.
struct Refused {
  std::string rule;
};

}  // namespace

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

void write_flat_arrays(std::string& out, const nlohmann::json& j, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      out += pad + "  " + json_text(nlohmann::json(it.key())) + ": ";
      write_flat_arrays(out, it.value(), indent + 2);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += pad + "}";
    return;
  }
  const bool flat = j.is_array() && std::all_of(j.begin(), j.end(), [](const nlohmann::json& e) { return e.is_primitive(); });
  if (j.is_array() && !j.empty() && !flat) {
    out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      out += pad + "  ";
      write_flat_arrays(out, j[i], indent + 2);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += pad + "]";
    return;
  }
  out += json_text(j);
}

}  // namespace

std::string json_text_flat_arrays(const nlohmann::json& j) {
  std::string out;
  write_flat_arrays(out, j, 0);
  return out;
}

std::string json_brief(const nlohmann::json& value) {
  // Small containers as written (parsed input nests at most kMaxJsonDepth deep, so this is bounded);
  // large ones summarised.
  if ((value.is_array() || value.is_object()) && value.size() <= 16) {
    std::string text = json_text(value);
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
  }
  if (value.is_array()) return fmt::format("[array of {}]", value.size());
  if (value.is_object()) return fmt::format("{{object of {} keys}}", value.size());
  if (value.is_string()) return brief_text(value.get_ref<const std::string&>());
  return json_text(value);
}

nlohmann::json parse_json_input(std::string_view text, std::string_view what) {
  const std::string clean = without_python_specials(text);
  // One set of keys per open object, to refuse duplicates; depth bounded before recursion starts.
  std::vector<std::set<std::string>> keys;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth) {
      throw Refused{fmt::format("nests deeper than {} levels", kMaxJsonDepth)};
    }
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end && !keys.empty()) keys.pop_back();
    if (event == E::key && !keys.empty() && parsed.is_string()) {
      if (!keys.back().insert(parsed.get<std::string>()).second) {
        throw Refused{fmt::format("has the key {} twice in one object (a later value would silently replace the "
                                  "first)",
                                  brief_text(parsed.get<std::string>()))};
      }
    }
    return true;
  };
  try {
    return nlohmann::json::parse(clean, callback);
  } catch (const Refused& r) {
    throw ConfigError(fmt::format("{}: JSON {}", what, r.rule));
  } catch (const nlohmann::json::exception& e) {
    // parse_error (malformed), out_of_range (a number such as 1e400), type_error: all bad input.
    std::string message = e.what();
    if (message.size() > 300) message = message.substr(0, 297) + "...";
    // The message quotes the input, which may not be UTF-8: escape it.
    const std::string escaped = json_text(nlohmann::json(message));
    throw ConfigError(fmt::format("{}: is not valid JSON ({})", what, escaped.substr(1, escaped.size() - 2)));
  }
}

}  // namespace kvplan
