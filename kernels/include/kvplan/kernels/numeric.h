// kvplan/kernels/numeric.h — host-side conversions between float and the stored formats, with the
// same rounding the GPU uses (round to nearest, ties to even; fp8 e4m3 saturating to ±448, NaN
// kept). References and tests use them to build inputs and to read kernel outputs.
//
//   uint16_t b = float_to_bf16(1.5f);   float x = bf16_to_float(b);
//   uint8_t q = float_to_fp8_e4m3(3.0f); float y = fp8_e4m3_to_float(q);
#pragma once

#include <cstdint>

#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

uint16_t float_to_bf16(float x);
float bf16_to_float(uint16_t b);
uint16_t float_to_fp16(float x);
float fp16_to_float(uint16_t h);
uint8_t float_to_fp8_e4m3(float x);
float fp8_e4m3_to_float(uint8_t q);

// 16-bit element of `type` <-> float.
inline uint16_t to_bits(ElemType type, float x) {
  return type == ElemType::kBF16 ? float_to_bf16(x) : float_to_fp16(x);
}
inline float from_bits(ElemType type, uint16_t b) {
  return type == ElemType::kBF16 ? bf16_to_float(b) : fp16_to_float(b);
}

}  // namespace kvplan::kernels
