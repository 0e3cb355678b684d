// plan/src/internal/setting_codec.h — builds the rows of the settings table (settings.cpp): each
// builder takes a field of Scenario (two member pointers: the section, then the field) and the
// row's documentation, and returns a Setting whose set_text/text read and write that field with
// the type's rule (integers, numbers, booleans, text, choices; each possibly optional).
//
//   Setting s = integer<&Scenario::engine, &EngineSettings::max_model_len>(
//       {"max-model-len", "engine", "max_model_len", "tokens", "Context length ..."}, {.min = 0});
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kvplan/plan/settings.h"

namespace kvplan::plan::internal {

// The documentation part of a row.
struct Doc {
  const char* flag;
  const char* section;
  const char* key;
  const char* unit;
  const char* description;
  const char* default_note = "";  // e.g. "0 means the engine's default"
  Command command = Command::kMemory;
  const char* short_flag = "";
};

// An inclusive range unless exclusive_min; `rule` replaces the generated rule text.
struct Range {
  std::optional<double> min = std::nullopt;
  std::optional<double> max = std::nullopt;
  bool exclusive_min = false;
  const char* rule = nullptr;
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {
  using type = T;
};

// A name of a choice and its value; the first name of each value is the one written back.
template <typename T>
struct Named {
  std::string_view name;
  T value;
};

// Throws ConfigError "<label>=<text> <rule>" (the text cut to 60 characters).
[[noreturn]] void fail(std::string_view label, std::string_view text, std::string_view rule);
int64_t parse_integer(std::string_view label, std::string_view text);
double parse_number(std::string_view label, std::string_view text);
bool parse_boolean(std::string_view label, std::string_view text);
std::string number_text(double v);  // shortest text that reads back the same double
// A bound of an integer setting (stored as a double) as an int64, clamped (2^63 -> INT64_MAX).
int64_t integer_bound(double v);
std::string integer_text(double v);
std::string range_rule(const Range& r, bool integer);
// "must be a or b" / "must be one of a, b, c".
std::string choice_rule(const std::vector<std::string>& names);

Setting make_row(const Doc& d, ValueType type);

template <auto Section, auto Field>
Setting integer(const Doc& d, Range r) {
  using F = std::remove_cvref_t<decltype(std::declval<Scenario&>().*Section.*Field)>;
  constexpr bool kOptional = IsOptional<F>::value;
  using T = std::conditional_t<kOptional, typename IsOptional<F>::type, F>;
  static_assert(std::is_integral_v<T>);
  Setting s = make_row(d, ValueType::kInteger);
  s.optional = kOptional;
  // Without an explicit maximum the type's own bound applies, with its own message.
  const bool explicit_max = r.max.has_value();
  const double type_max = static_cast<double>(std::numeric_limits<T>::max());
  s.minimum = r.min;
  s.maximum = r.max ? r.max : std::optional<double>(type_max);
  s.exclusive_minimum = r.exclusive_min;
  const std::string rule = r.rule ? r.rule : range_rule(r, true);
  s.set_text = [r, rule, explicit_max](Scenario& sc, std::string_view text, std::string_view label) {
    F& field = sc.*Section.*Field;
    if constexpr (kOptional) {
      if (text.empty()) {
        field.reset();
        return;
      }
    }
    const int64_t v = parse_integer(label, text);
    const double dv = static_cast<double>(v);
    if ((r.min && (r.exclusive_min ? dv <= *r.min : dv < *r.min)) || (r.max && dv > *r.max)) fail(label, text, rule);
    if (!explicit_max && v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      fail(label, text, "is too large (at most " + std::to_string(std::numeric_limits<T>::max()) + ")");
    }
    field = static_cast<T>(v);
  };
  s.text = [](const Scenario& sc) -> std::string {
    const F& field = sc.*Section.*Field;
    if constexpr (kOptional) {
      return field ? std::to_string(*field) : std::string();
    } else {
      return std::to_string(field);
    }
  };
  s.default_text = s.text(Scenario{});
  return s;
}

template <auto Section, auto Field>
Setting number(const Doc& d, Range r) {
  using F = std::remove_cvref_t<decltype(std::declval<Scenario&>().*Section.*Field)>;
  constexpr bool kOptional = IsOptional<F>::value;
  Setting s = make_row(d, ValueType::kNumber);
  s.optional = kOptional;
  s.minimum = r.min;
  s.maximum = r.max;
  s.exclusive_minimum = r.exclusive_min;
  const std::string rule = r.rule ? r.rule : range_rule(r, false);
  s.set_text = [r, rule](Scenario& sc, std::string_view text, std::string_view label) {
    F& field = sc.*Section.*Field;
    if constexpr (kOptional) {
      if (text.empty()) {
        field.reset();
        return;
      }
    }
    const double v = parse_number(label, text);
    if ((r.min && (r.exclusive_min ? v <= *r.min : v < *r.min)) || (r.max && v > *r.max)) fail(label, text, rule);
    field = v;
  };
  s.text = [](const Scenario& sc) -> std::string {
    const F& field = sc.*Section.*Field;
    if constexpr (kOptional) {
      return field ? number_text(*field) : std::string();
    } else {
      return number_text(field);
    }
  };
  s.default_text = s.text(Scenario{});
  return s;
}

// bool: true/1/on or false/0/off ("" = false); std::optional<bool>: "" = unset.
template <auto Section, auto Field>
Setting boolean(const Doc& d) {
  using F = std::remove_cvref_t<decltype(std::declval<Scenario&>().*Section.*Field)>;
  constexpr bool kOptional = IsOptional<F>::value;
  Setting s = make_row(d, ValueType::kBoolean);
  s.optional = kOptional;
  s.choices = {"true", "false"};
  s.set_text = [](Scenario& sc, std::string_view text, std::string_view label) {
    F& field = sc.*Section.*Field;
    if constexpr (kOptional) {
      if (text.empty()) {
        field.reset();
        return;
      }
    }
    field = text.empty() ? false : parse_boolean(label, text);
  };
  s.text = [](const Scenario& sc) -> std::string {
    const F& field = sc.*Section.*Field;
    if constexpr (kOptional) {
      return field ? (*field ? "true" : "false") : std::string();
    } else {
      return field ? "true" : "false";
    }
  };
  s.default_text = s.text(Scenario{});
  return s;
}

// Free text, or text a function checks (and may store in another type: `store` converts the text
// into the field, throwing ConfigError with `label`; `show` writes it back).
template <auto Section, auto Field>
Setting text(const Doc& d,
             std::function<void(std::remove_cvref_t<decltype(std::declval<Scenario&>().*Section.*Field)>&,
                                std::string_view text, std::string_view label)>
                 store = {},
             std::function<std::string(const std::remove_cvref_t<decltype(std::declval<Scenario&>().*Section.*Field)>&)>
                 show = {}) {
  using F = std::remove_cvref_t<decltype(std::declval<Scenario&>().*Section.*Field)>;
  Setting s = make_row(d, ValueType::kText);
  s.set_text = [store](Scenario& sc, std::string_view text, std::string_view label) {
    F& field = sc.*Section.*Field;
    if (store) {
      store(field, text, label);
    } else {
      if constexpr (std::is_same_v<F, std::string>) field = std::string(text);
    }
  };
  s.text = [show](const Scenario& sc) -> std::string {
    const F& field = sc.*Section.*Field;
    if (show) return show(field);
    if constexpr (std::is_same_v<F, std::string>) {
      return field;
    } else {
      return {};
    }
  };
  s.default_text = s.text(Scenario{});
  return s;
}

// One of `names` (the first name of each value is written back; the others are aliases), or what
// `fallback` accepts (other spellings, e.g. dtype names as Hugging Face writes them). For an
// optional field, `unset` is the word for nullopt ("auto", or "" where the default is derived and
// has no name) and is listed first among the choices when it is a word.
template <auto Section, auto Field, typename T>
Setting choice(const Doc& d, std::vector<Named<T>> names, std::vector<std::string> shown, std::string_view unset = "",
               const char* rule_override = nullptr, std::function<std::optional<T>(std::string_view)> fallback = {}) {
  using F = std::remove_cvref_t<decltype(std::declval<Scenario&>().*Section.*Field)>;
  constexpr bool kOptional = IsOptional<F>::value;
  Setting s = make_row(d, ValueType::kChoice);
  s.optional = kOptional;
  if (kOptional && !unset.empty()) shown.insert(shown.begin(), std::string(unset));
  s.choices = shown;
  const std::string rule = rule_override ? rule_override : choice_rule(shown);
  const std::string unset_word(unset);
  s.set_text = [names, rule, unset_word, fallback](Scenario& sc, std::string_view text, std::string_view label) {
    F& field = sc.*Section.*Field;
    if constexpr (kOptional) {
      if (text.empty() || text == unset_word) {
        field.reset();
        return;
      }
    }
    for (const Named<T>& n : names) {
      if (n.name == text) {
        field = n.value;
        return;
      }
    }
    if (fallback) {
      if (std::optional<T> v = fallback(text)) {
        field = *v;
        return;
      }
    }
    fail(label, text, rule);
  };
  s.text = [names, unset_word](const Scenario& sc) -> std::string {
    const F& field = sc.*Section.*Field;
    const T* v = nullptr;
    if constexpr (kOptional) {
      if (!field) return unset_word;
      v = &*field;
    } else {
      v = &field;
    }
    for (const Named<T>& n : names) {
      if (n.value == *v) return std::string(n.name);
    }
    return "?";
  };
  s.default_text = s.text(Scenario{});
  return s;
}

}  // namespace kvplan::plan::internal
