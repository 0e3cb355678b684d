#include "kvplan/core/dtype.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

int dtype_bits(DType t) {
  switch (t) {
    case DType::kF32: return 32;
    case DType::kF16:
    case DType::kBF16: return 16;
    case DType::kFp8E4M3:
    case DType::kFp8E5M2:
    case DType::kInt8: return 8;
    case DType::kInt4:
    case DType::kFp4E2M1: return 4;
    case DType::kInt2: return 2;
  }
  return 0;
}

int64_t dtype_bytes_for(DType t, int64_t elements) {
  return (elements * dtype_bits(t) + 7) / 8;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kFp8E4M3: return "fp8_e4m3";
    case DType::kFp8E5M2: return "fp8_e5m2";
    case DType::kInt8: return "int8";
    case DType::kInt4: return "int4";
    case DType::kInt2: return "int2";
    case DType::kFp4E2M1: return "fp4_e2m1";
  }
  return "?";
}

bool is_quantized_int(DType t) { return t == DType::kInt8 || t == DType::kInt4 || t == DType::kInt2; }
bool is_fp8(DType t) { return t == DType::kFp8E4M3 || t == DType::kFp8E5M2; }

DType parse_dtype(std::string_view text, std::string_view field) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  if (s == "bf16" || s == "bfloat16") return DType::kBF16;
  if (s == "fp16" || s == "float16" || s == "half") return DType::kF16;
  if (s == "fp32" || s == "float32" || s == "float") return DType::kF32;
  if (s == "fp8" || s == "fp8_e4m3" || s == "float8_e4m3fn" || s == "e4m3") return DType::kFp8E4M3;
  if (s == "fp8_e5m2" || s == "float8_e5m2" || s == "e5m2") return DType::kFp8E5M2;
  if (s == "int8") return DType::kInt8;
  if (s == "int4") return DType::kInt4;
  if (s == "int2") return DType::kInt2;
  if (s == "fp4_e2m1") return DType::kFp4E2M1;  // kvplan's own name (dtype_name), e.g. in calibration rows
  throw ConfigError(fmt::format(
      "{}={} is not a known dtype; use one of bf16, fp16, fp32, fp8 (fp8_e4m3), fp8_e5m2, int8, "
      "int4, int2",
      field, text));
}

}  // namespace kvplan
