// kvplan/sim/time.h — simulated time: int64 nanoseconds, never read from a wall clock.
//
//   TimeNs t = seconds_to_ns(1.5);        // 1'500'000'000
//   double s = ns_to_seconds(t);
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace kvplan::sim {

using TimeNs = int64_t;

inline constexpr TimeNs kNsPerUs = 1'000;
inline constexpr TimeNs kNsPerMs = 1'000'000;
inline constexpr TimeNs kNsPerSecond = 1'000'000'000;
inline constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

// The longest simulated time: 1e9 s (about 31.7 years) is 1e18 ns, so sums of two times still fit
// in int64. A time beyond it (a rate of 1e-9 req/s, a trace row 1e12 s out, an absurd GPU file)
// is bad input, not an overflow.
inline constexpr double kMaxSimulatedSeconds = 1e9;

// Throws ConfigError naming the limit (time.cpp).
[[noreturn]] void throw_beyond_time_limit(double seconds);

// Rounds to the nearest nanosecond (ties away from zero), so conversions are deterministic.
// Throws ConfigError for a time that is not finite or not within [-1e9 s, 1e9 s].
inline TimeNs seconds_to_ns(double seconds) {
  if (!(std::abs(seconds) <= kMaxSimulatedSeconds)) throw_beyond_time_limit(seconds);
  return static_cast<TimeNs>(std::llround(seconds * 1e9));
}
inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) * 1e-9; }
inline double ns_to_ms(TimeNs ns) { return static_cast<double>(ns) * 1e-6; }

}  // namespace kvplan::sim
