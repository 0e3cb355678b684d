// tests/kernels/kernel_test_support.h — what every kernel test needs on the host: fresh random
// inputs (never zeros), comparison with a double-precision reference under per-dtype tolerances,
// and a NaN / unwritten-element check.
//
//   std::vector<uint16_t> q = random_bits(ElemType::kBF16, n, rng);     // uniform in [-1, 1)
//   Comparison c = compare(as_float(ElemType::kBF16, out), ref, tolerance_for(ElemType::kBF16));
//   EXPECT_TRUE(c.passed) << c.describe();
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <functional>
#include <string>
#include <vector>

#include "kvplan/kernels/numeric.h"

// A generator with a fresh seed for every run (inputs must differ from run to run), named in the
// test's trace so a failure can be replayed: KVPLAN_FRESH_RNG(rng, case_name);
#define KVPLAN_FRESH_RNG(rng, name)                                                           \
  const uint64_t kvplan_seed_ = std::hash<std::string>{}(name) ^ std::random_device{}();      \
  SCOPED_TRACE("seed " + std::to_string(kvplan_seed_));                                       \
  std::mt19937_64 rng(kvplan_seed_)

namespace kvplan::kernels::testing {

// Poison for outputs: an all-ones 16-bit word is NaN in both bf16 and fp16, so an element the kernel
// never wrote shows up as NaN.
inline constexpr uint16_t kPoison16 = 0xFFFF;
inline constexpr float kPoisonF32 = std::numeric_limits<float>::quiet_NaN();

inline std::vector<uint16_t> random_bits(ElemType t, size_t n, std::mt19937_64& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    float f = d(rng);
    if (f == 0.f) f = 0.5f * hi;  // never an exact zero
    x = to_bits(t, f);
  }
  return v;
}

inline std::vector<float> as_float(ElemType t, const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_bits(t, v[i]);
  return out;
}

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  double max_rel_l2 = 0;  // ||got - ref|| / ||ref||
};

// Attention outputs are weighted means of values in [-1, 1): an absolute tolerance per element
// plus a relative one. bf16 keeps 8 significant bits (step 2^-8 near 1), fp16 11.
inline Tolerance tolerance_for(ElemType t) {
  return t == ElemType::kBF16 ? Tolerance{2e-2, 2e-2, 1e-2} : Tolerance{3e-3, 3e-3, 2e-3};
}

struct Comparison {
  bool passed = true;
  size_t count = 0;
  size_t nan_count = 0;   // includes elements never written (poison)
  size_t bad_count = 0;   // outside atol + rtol * |ref|
  size_t first_bad = 0;
  double first_bad_got = 0, first_bad_ref = 0;
  double max_abs_err = 0;
  double rel_l2 = 0;
  std::string describe() const {
    std::ostringstream s;
    s << count << " elements: " << nan_count << " NaN/unwritten, " << bad_count << " outside tolerance";
    if (bad_count > 0) s << " (first at " << first_bad << ": got " << first_bad_got << ", ref " << first_bad_ref << ")";
    s << ", max abs err " << max_abs_err << ", rel L2 " << rel_l2;
    return s.str();
  }
};

template <typename Ref>
Comparison compare(const std::vector<float>& got, const std::vector<Ref>& ref, const Tolerance& tol) {
  Comparison c;
  c.count = got.size();
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = static_cast<double>(ref[i]);
    const double g = got[i];
    if (std::isnan(g)) {
      ++c.nan_count;
      continue;
    }
    const double err = std::fabs(g - r);
    c.max_abs_err = std::max(c.max_abs_err, err);
    num += err * err;
    den += r * r;
    if (err > tol.atol + tol.rtol * std::fabs(r)) {
      if (c.bad_count == 0) {
        c.first_bad = i;
        c.first_bad_got = g;
        c.first_bad_ref = r;
      }
      ++c.bad_count;
    }
  }
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  c.passed = got.size() == ref.size() && c.nan_count == 0 && c.bad_count == 0 && c.rel_l2 <= tol.max_rel_l2;
  return c;
}

}  // namespace kvplan::kernels::testing
