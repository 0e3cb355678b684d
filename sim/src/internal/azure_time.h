// sim/internal/azure_time.h — exact parsing of the Azure LLM trace's wall-clock timestamps.
//
//   std::optional<int64_t> ns = parse_wall_clock_ns("2023-11-16 18:15:46.6805900");
//   // nanoseconds since 1970-01-01 00:00:00 (the trace's own clock; no time zone is applied)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kvplan::sim::internal {

// "YYYY-MM-DD HH:MM:SS" with an optional fraction of 1 to 9 digits (a 'T' may replace the space).
// Integer arithmetic only, so the result is exact to the nanosecond. nullopt if the text is not
// such a time or names an impossible date (2023-02-30) or time (24:00:00); years 1900..2200.
std::optional<int64_t> parse_wall_clock_ns(std::string_view text);

}  // namespace kvplan::sim::internal
