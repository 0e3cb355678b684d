// kvplan/sim/rng.h — the simulator's random numbers: xoshiro256** seeded by splitmix64, with its
// own samplers so results are byte-identical across standard libraries (std:: distributions are
// implementation-defined).
//
//   Rng rng(42);
//   double gap_s = rng.exponential(1.0 / rate_per_s);
//   int64_t tokens = rng.sample(length_distribution);
#pragma once

#include <array>
#include <cstdint>

namespace kvplan {
class LengthDistribution;
}

namespace kvplan::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  double uniform01();                            // [0, 1), 53 random bits
  double exponential(double mean);
  double normal();                               // standard normal
  double gamma(double shape, double scale);      // Marsaglia–Tsang; shape > 0
  int64_t uniform_int(int64_t low, int64_t high);  // inclusive bounds
  int64_t sample(const LengthDistribution& lengths);  // inverse transform through quantile()
  // An independent stream derived from this seed and `stream` (e.g. one per user).
  static Rng stream(uint64_t seed, uint64_t stream);

 private:
  std::array<uint64_t, 4> s_{};
};

}  // namespace kvplan::sim
