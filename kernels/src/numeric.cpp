// Host conversions with the GPU's rounding: round to nearest, ties to even.
#include "kvplan/kernels/numeric.h"

#include <cmath>
#include <cstring>

namespace kvplan::kernels {

namespace {

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Encodes |a| (finite, not NaN) into a small float format with `man` mantissa bits and exponent
// bias `bias`, rounding to nearest even; returns exponent and mantissa fields as one integer
// (exponent << man | mantissa), which may reach the all-ones exponent (caller handles overflow).
uint32_t encode_magnitude(double a, int man, int bias) {
  if (a == 0) return 0;
  const int min_exp = 1 - bias;  // exponent of the smallest normal
  int e = std::ilogb(a);
  if (e < min_exp) {
    // Subnormal: multiples of 2^(min_exp - man); rounding may carry into the smallest normal,
    // which the field arithmetic represents correctly (mantissa 2^man = exponent 1, mantissa 0).
    double q = std::nearbyint(std::ldexp(a, man - min_exp));
    return static_cast<uint32_t>(q);
  }
  double q = std::nearbyint(std::ldexp(a, man - e));  // in [2^man, 2^(man+1)]
  uint32_t m = static_cast<uint32_t>(q);
  if (m == (1u << (man + 1))) {
    m >>= 1;
    ++e;
  }
  return (static_cast<uint32_t>(e + bias) << man) | (m - (1u << man));
}

}  // namespace

uint16_t float_to_bf16(float x) {
  uint32_t u = bits_of(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);
  uint32_t rounding = ((u >> 16) & 1u) + 0x7FFFu;
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float bf16_to_float(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_fp16(float x) {
  uint16_t sign = static_cast<uint16_t>((bits_of(x) >> 16) & 0x8000u);
  if (std::isnan(x)) return static_cast<uint16_t>(sign | 0x7E00);
  double a = std::fabs(static_cast<double>(x));
  if (std::isinf(x)) return static_cast<uint16_t>(sign | 0x7C00);
  uint32_t field = encode_magnitude(a, 10, 15);
  if (field >= 0x7C00u) return static_cast<uint16_t>(sign | 0x7C00);  // overflow to infinity
  return static_cast<uint16_t>(sign | field);
}

float fp16_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) ? 1 : 0;
  const int exp = (h >> 10) & 0x1F;
  const int man = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), -24);
  } else if (exp == 31) {
    v = man ? std::nan("") : INFINITY;
  } else {
    v = std::ldexp(1.0 + man / 1024.0, exp - 15);
  }
  return static_cast<float>(sign ? -v : v);
}

uint8_t float_to_fp8_e4m3(float x) {
  const uint8_t sign = (bits_of(x) >> 24) & 0x80u;
  if (std::isnan(x)) return static_cast<uint8_t>(sign | 0x7F);
  double a = std::fabs(static_cast<double>(x));
  if (a >= 448.0) return static_cast<uint8_t>(sign | 0x7E);  // saturate to the largest finite
  uint32_t field = encode_magnitude(a, 3, 7);
  if (field > 0x7Eu) field = 0x7E;
  return static_cast<uint8_t>(sign | field);
}

float fp8_e4m3_to_float(uint8_t q) {
  const bool negative = q & 0x80u;
  const int exp = (q >> 3) & 0xF;
  const int man = q & 0x7;
  double v;
  if (exp == 15 && man == 7) {
    v = std::nan("");
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), -9);
  } else {
    v = std::ldexp(1.0 + man / 8.0, exp - 7);
  }
  return static_cast<float>(negative ? -v : v);
}

std::string_view elem_type_name(ElemType t) { return t == ElemType::kBF16 ? "bf16" : "fp16"; }

std::string_view cache_type_name(CacheType t) {
  switch (t) {
    case CacheType::kBF16: return "bf16";
    case CacheType::kFP16: return "fp16";
    case CacheType::kFp8E4M3: return "fp8_e4m3";
    case CacheType::kInt8: return "int8";
    case CacheType::kInt4: return "int4";
    case CacheType::kKivi2: return "kivi2";
  }
  return "?";
}

}  // namespace kvplan::kernels
