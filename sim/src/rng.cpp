// The simulator's random numbers. Every sampler here is written out by hand (no std::
// distributions), so a seed gives the same numbers with every compiler and standard library.
#include "kvplan/sim/rng.h"

#include <cassert>
#include <cmath>
#include <numbers>

#include "kvplan/core/length_distribution.h"

namespace kvplan::sim {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio, splitmix64's step
// Salt so that Rng::stream(seed, s) never coincides with a plain Rng(seed).
constexpr uint64_t kStreamSalt = 0xD1B54A32D192ED03ULL;

// splitmix64 finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t splitmix64_next(uint64_t& state) {
  state += kGolden;
  return mix64(state);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  // xoshiro's authors recommend filling the state from splitmix64; it cannot come out all zero
  // for any seed in practice (four consecutive outputs of a bijection on distinct inputs).
  uint64_t state = seed;
  for (uint64_t& word : s_) word = splitmix64_next(state);
}

// xoshiro256** 1.0 (Blackman & Vigna 2018).
uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform01() {
  // The top 53 bits, scaled by 2^-53: every double in [0, 1) that is a multiple of 2^-53.
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double Rng::exponential(double mean) {
  assert(mean >= 0);
  // Inversion: 1 - u lies in (0, 1], so the log is finite.
  return -mean * std::log1p(-uniform01());
}

double Rng::normal() {
  // Box–Muller, cosine branch only: two uniforms per draw, so a draw never depends on a cached
  // value from an earlier call (streams stay easy to reason about).
  const double u1 = 1.0 - uniform01();  // (0, 1]
  const double u2 = uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::gamma(double shape, double scale) {
  assert(shape > 0 && scale >= 0);
  if (shape < 1) {
    // Boost: if X ~ Gamma(shape + 1) and U ~ U(0, 1], X * U^(1/shape) ~ Gamma(shape).
    const double boost = std::pow(1.0 - uniform01(), 1.0 / shape);
    return gamma(shape + 1, scale) * boost;
  }
  // Marsaglia & Tsang (2000), "A simple method for generating gamma variables".
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal();
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = uniform01();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v * scale;
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

int64_t Rng::uniform_int(int64_t low, int64_t high) {
  assert(low <= high);
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
  if (range == 0) return static_cast<int64_t>(next_u64());  // the whole int64 range
  // Rejection of the low `2^64 mod range` values removes modulo bias.
  const uint64_t threshold = (0 - range) % range;
  for (;;) {
    const uint64_t r = next_u64();
    if (r >= threshold) return static_cast<int64_t>(static_cast<uint64_t>(low) + r % range);
  }
}

int64_t Rng::sample(const LengthDistribution& lengths) { return lengths.quantile(uniform01()); }

Rng Rng::stream(uint64_t seed, uint64_t stream) {
  // Two rounds of mixing: streams of one seed differ in every bit, and (seed, stream) pairs do
  // not alias the way a plain `seed ^ stream * golden` would.
  return Rng(mix64(mix64(seed ^ kStreamSalt) + kGolden * (stream + 1)));
}

}  // namespace kvplan::sim
