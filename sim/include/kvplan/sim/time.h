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

// Rounds to the nearest nanosecond (ties away from zero), so conversions are deterministic.
inline TimeNs seconds_to_ns(double seconds) { return static_cast<TimeNs>(std::llround(seconds * 1e9)); }
inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) * 1e-9; }
inline double ns_to_ms(TimeNs ns) { return static_cast<double>(ns) * 1e-6; }

}  // namespace kvplan::sim
