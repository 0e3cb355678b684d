// kvplan/core/number_text.h — numbers typed by people or printed by other programs, read strictly:
// the whole text must be the number, nothing more, and it must fit.
//
//   std::optional<int64_t> n = parse_int64_text("4294967297");   // 4294967297
//   std::optional<double> x = parse_double_text("1e400");         // nullopt (not finite)
//   with_commas(19366)                                            // "19,366"
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvplan {

// An optional leading '+' or '-' then digits; nullopt for anything else or on overflow.
inline std::optional<int64_t> parse_int64_text(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A finite decimal or scientific number; nullopt for anything else (inf, nan, 1e400, "1.2.3").
inline std::optional<double> parse_double_text(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// 19366 -> "19,366", whatever the process locale (fmt's {:L} would depend on it).
inline std::string with_commas(int64_t v) {
  const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const std::string digits = std::to_string(magnitude);
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace kvplan
