#include "internal/azure_time.h"

#include <chrono>

namespace kvplan::sim::internal {

namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

// Reads exactly `width` decimal digits at `pos`.
std::optional<int> digits(std::string_view text, size_t pos, size_t width) {
  if (pos + width > text.size()) return std::nullopt;
  int value = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<int64_t> parse_wall_clock_ns(std::string_view text) {
  // 0123456789012345678
  // 2023-11-16 18:15:46[.fffffffff]
  if (text.size() < 19 || text[4] != '-' || text[7] != '-' || (text[10] != ' ' && text[10] != 'T') ||
      text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  auto year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  auto hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (*year < 1900 || *year > 2200 || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year{*year}, std::chrono::month{static_cast<unsigned>(*month)},
                                         std::chrono::day{static_cast<unsigned>(*day)}};
  if (!date.ok()) return std::nullopt;  // month 13, 2023-02-29, day 0, ...

  int64_t fraction_ns = 0;
  if (text.size() > 19) {
    const size_t width = text.size() - 20;
    if (text[19] != '.' || width < 1 || width > 9) return std::nullopt;
    auto fraction = digits(text, 20, width);
    if (!fraction) return std::nullopt;
    fraction_ns = *fraction;
    for (size_t i = width; i < 9; ++i) fraction_ns *= 10;  // ".68059" -> 680'590'000 ns
  }
  // std::chrono's civil calendar: proleptic Gregorian, exact integer day counts.
  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  const int64_t seconds = ((days * 24 + *hour) * 60 + *minute) * 60 + *second;
  return seconds * kNsPerSecond + fraction_ns;
}

}  // namespace kvplan::sim::internal
