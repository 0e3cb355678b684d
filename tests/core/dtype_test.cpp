// Element types (dtype.h): sizes, names and parsing.
#include <gtest/gtest.h>

#include <string>

#include "kvplan/core/dtype.h"
#include "kvplan/core/error.h"

namespace kvplan {
namespace {

TEST(DType, Bits) {
  EXPECT_EQ(dtype_bits(DType::kF32), 32);
  EXPECT_EQ(dtype_bits(DType::kF16), 16);
  EXPECT_EQ(dtype_bits(DType::kBF16), 16);
  EXPECT_EQ(dtype_bits(DType::kFp8E4M3), 8);
  EXPECT_EQ(dtype_bits(DType::kFp8E5M2), 8);
  EXPECT_EQ(dtype_bits(DType::kInt8), 8);
  EXPECT_EQ(dtype_bits(DType::kInt4), 4);
  EXPECT_EQ(dtype_bits(DType::kInt2), 2);
}

TEST(DType, BytesRoundUp) {
  EXPECT_EQ(dtype_bytes_for(DType::kBF16, 4096), 8192);  // 4096 * 2
  EXPECT_EQ(dtype_bytes_for(DType::kF32, 3), 12);        // 3 * 4
  EXPECT_EQ(dtype_bytes_for(DType::kInt4, 3), 2);        // ceil(12 bits / 8)
  EXPECT_EQ(dtype_bytes_for(DType::kInt2, 5), 2);        // ceil(10 bits / 8)
  EXPECT_EQ(dtype_bytes_for(DType::kInt2, 128), 32);     // 256 bits
  EXPECT_EQ(dtype_bytes_for(DType::kInt4, 0), 0);
}

TEST(DType, Names) {
  EXPECT_EQ(dtype_name(DType::kF32), "fp32");
  EXPECT_EQ(dtype_name(DType::kF16), "fp16");
  EXPECT_EQ(dtype_name(DType::kBF16), "bf16");
  EXPECT_EQ(dtype_name(DType::kFp8E4M3), "fp8_e4m3");
  EXPECT_EQ(dtype_name(DType::kFp8E5M2), "fp8_e5m2");
  EXPECT_EQ(dtype_name(DType::kInt8), "int8");
  EXPECT_EQ(dtype_name(DType::kInt4), "int4");
  EXPECT_EQ(dtype_name(DType::kInt2), "int2");
}

TEST(DType, Classes) {
  EXPECT_TRUE(is_fp8(DType::kFp8E4M3));
  EXPECT_TRUE(is_fp8(DType::kFp8E5M2));
  EXPECT_FALSE(is_fp8(DType::kInt8));
  EXPECT_TRUE(is_quantized_int(DType::kInt8));
  EXPECT_TRUE(is_quantized_int(DType::kInt4));
  EXPECT_TRUE(is_quantized_int(DType::kInt2));
  EXPECT_FALSE(is_quantized_int(DType::kBF16));
  EXPECT_FALSE(is_quantized_int(DType::kFp8E4M3));
}

TEST(DType, ParseAcceptsCommonSpellings) {
  EXPECT_EQ(parse_dtype("torch.bfloat16", "dtype"), DType::kBF16);
  EXPECT_EQ(parse_dtype("bf16", "dtype"), DType::kBF16);
  EXPECT_EQ(parse_dtype("fp8", "kv-cache-dtype"), DType::kFp8E4M3);
  EXPECT_EQ(parse_dtype("fp8_e5m2", "kv-cache-dtype"), DType::kFp8E5M2);
  EXPECT_EQ(parse_dtype("float16", "dtype"), DType::kF16);
  EXPECT_EQ(parse_dtype("half", "dtype"), DType::kF16);
  EXPECT_EQ(parse_dtype("float32", "dtype"), DType::kF32);
  EXPECT_EQ(parse_dtype("BFloat16", "dtype"), DType::kBF16);  // case-insensitive
  EXPECT_EQ(parse_dtype("int4", "dtype"), DType::kInt4);
  EXPECT_EQ(parse_dtype("int2", "dtype"), DType::kInt2);
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kFp8E4M3, DType::kFp8E5M2, DType::kInt8,
                  DType::kInt4, DType::kInt2}) {
    EXPECT_EQ(parse_dtype(dtype_name(t), "x"), t) << dtype_name(t);
  }
}

TEST(DType, ParseRejectsUnknown) {
  try {
    parse_dtype("float13", "kv-cache-dtype");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("kv-cache-dtype"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float13"), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_dtype("", "dtype"), ConfigError);
  EXPECT_THROW(parse_dtype("torch.", "dtype"), ConfigError);
}

}  // namespace
}  // namespace kvplan
