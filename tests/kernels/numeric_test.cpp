// Host conversions: hand-picked values whose encodings are known, and round-to-nearest-even ties.
#include "kvplan/kernels/numeric.h"

#include <cmath>

#include <gtest/gtest.h>

namespace kvplan::kernels {
namespace {

TEST(Numeric, Bf16KnownValues) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16_to_float(0x3FC0), 1.5f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0); 1 + 3*2^-8 rounds up.
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(Numeric, Fp16KnownValues) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(-2.5f), 0xC100);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);          // rounds to infinity
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(0x3555), 0.333251953125f);
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // every finite positive half round-trips
    ASSERT_EQ(float_to_fp16(fp16_to_float(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(Numeric, Fp8E4M3KnownValues) {
  EXPECT_EQ(float_to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(1000.0f), 0x7E);   // saturates
  EXPECT_EQ(float_to_fp8_e4m3(-1000.0f), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7F)));
  // 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39): ties to even.
  EXPECT_EQ(float_to_fp8_e4m3(1.0625f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3(1.1875f), 0x3A);  // halfway 1.125/1.25: even is 1.25 (0x3A)
  for (uint32_t q = 0; q < 0x7F; ++q) {
    ASSERT_EQ(float_to_fp8_e4m3(fp8_e4m3_to_float(static_cast<uint8_t>(q))), q) << q;
  }
}

}  // namespace
}  // namespace kvplan::kernels
