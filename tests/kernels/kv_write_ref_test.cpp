// CPU reference of the KV writes on hand-computed cases: group quantization (int4, int8, constant
// group), fp8 with per-head scales, row placement in paged caches, the KIVI flush rule, and the
// storage byte counts against core's KV arithmetic.
#include "kvplan/kernels/reference/kv_write_ref.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kvplan/kernels/numeric.h"
#include "quant_cache_test_support.h"

namespace kvplan::kernels {
namespace {

using testing::HostKiviCache;
using testing::HostQuantCache;

std::vector<uint16_t> bits_of(ElemType t, const std::vector<float>& x) {
  std::vector<uint16_t> b;
  for (float f : x) b.push_back(to_bits(t, f));
  return b;
}

TEST(KvWriteRef, Int4GroupByHand) {
  // min -1, max 6.5: scale = 7.5 / 15 = 0.5, zero = -1. (x + 1) / 0.5 = 0, 2.5, 3.5, 15: ties go to
  // even, so 2.5 -> 2 and 3.5 -> 4.
  const float x[4] = {-1.f, 0.25f, 0.75f, 6.5f};
  uint8_t codes[4];
  GroupQuant g = quantize_group(x, 4, 1, kInt4MaxCode, codes);
  EXPECT_EQ(g.scale, 0x3800);  // 0.5
  EXPECT_EQ(g.zero, 0xBC00);   // -1
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 2);
  EXPECT_EQ(codes[2], 4);
  EXPECT_EQ(codes[3], 15);
}

TEST(KvWriteRef, Int8GroupByHand) {
  // Range 255/128 gives scale 2^-7 exactly; (x + 1) * 128 = 0, 100.5 (tie -> 100), 255, 128.
  const float x[4] = {-1.f, -0.21484375f, 0.9921875f, 0.f};
  uint8_t codes[4];
  GroupQuant g = quantize_group(x, 4, 1, kInt8MaxCode, codes);
  EXPECT_EQ(fp16_to_float(g.scale), 1.f / 128);
  EXPECT_EQ(fp16_to_float(g.zero), -1.f);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 100);
  EXPECT_EQ(codes[2], 255);
  EXPECT_EQ(codes[3], 128);
}

TEST(KvWriteRef, ConstantGroupHasZeroScaleAndCodes) {
  const float x[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  uint8_t codes[8];
  GroupQuant g = quantize_group(x, 8, 1, kInt4MaxCode, codes);
  EXPECT_EQ(g.scale, 0);
  EXPECT_EQ(g.zero, 0x3800);
  for (uint8_t c : codes) EXPECT_EQ(c, 0);
}

TEST(KvWriteRef, Fp8PerHeadScaleAndPagedPlacement) {
  // 2 heads, head_dim 8, 4 tokens per block, 2 blocks. Token 0 -> slot 5 (block 1, offset 1), token 1 padding.
  HostQuantCache h(CacheType::kFp8E4M3, CacheLayout::kPaged, 8, 2, 8, 4, 0, /*fp8_per_head=*/true);
  h.k_scale = {0.5f, 2.f};
  h.v_scale = {1.f, 4.f};
  std::vector<float> k(2 * 2 * 8, 1.f), v(2 * 2 * 8, -2.f);
  k[3] = 300.f;  // head 0, channel 3: 300 / 0.5 = 600 saturates to 448
  std::vector<uint16_t> kb = bits_of(ElemType::kBF16, k), vb = bits_of(ElemType::kBF16, v);
  std::vector<int64_t> slots = {5, -1};
  KvWriteParams p;
  p.dtype = ElemType::kBF16;
  p.k_new = kb.data();
  p.v_new = vb.data();
  p.slot_mapping = slots.data();
  p.cache = h.view();
  p.num_tokens = 2;
  kv_write_ref(p);
  for (int head = 0; head < 2; ++head) {
    const size_t row = static_cast<size_t>(((1 * 2 + head) * 4 + 1) * 8);
    for (int d = 0; d < 8; ++d) {
      // head 0: 1 / 0.5 = 2 (0x40), 300 / 0.5 -> 448 (0x7E); head 1: 1 / 2 = 0.5 (0x30).
      const uint8_t want_k = head == 0 ? (d == 3 ? 0x7E : 0x40) : 0x30;
      // V: -2 / 1 = -2 (0xC0); -2 / 4 = -0.5 (0xB0).
      const uint8_t want_v = head == 0 ? 0xC0 : 0xB0;
      EXPECT_EQ(h.k_data[row + static_cast<size_t>(d)], want_k) << head << "," << d;
      EXPECT_EQ(h.v_data[row + static_cast<size_t>(d)], want_v) << head << "," << d;
    }
  }
  size_t written = 0;
  for (uint8_t b : h.k_data) written += b != 0xFF;
  EXPECT_EQ(written, 16u);  // one token, two heads; the padding token wrote nothing
  std::vector<double> back = dequantize_row(h.view(), true, 5, 0);
  EXPECT_DOUBLE_EQ(back[0], 1.0);
  EXPECT_DOUBLE_EQ(back[3], 224.0);  // 448 * 0.5
}

TEST(KvWriteRef, Int4PackingAndMetadataPlacement) {
  // Contiguous, 1 head, head_dim 16, group 8: slot 2. Group 0 is the hand vector, group 1 a ramp.
  HostQuantCache h(CacheType::kInt4, CacheLayout::kContiguous, 4, 1, 16, 0, 8);
  std::vector<float> k = {-1.f, 0.25f, 0.75f, 6.5f, 0.f, 0.f, 0.f, 0.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.5f};
  std::vector<uint16_t> kb = bits_of(ElemType::kFP16, k);
  std::vector<int64_t> slots = {2};
  KvWriteParams p;
  p.dtype = ElemType::kFP16;
  p.k_new = kb.data();
  p.v_new = kb.data();
  p.slot_mapping = slots.data();
  p.cache = h.view();
  p.num_tokens = 1;
  kv_write_ref(p);
  // Group 0: codes 0 2 4 15 2 2 2 2; group 1: scale 0.5, zero 0, codes 0 2 4 6 8 10 12 15.
  const std::vector<uint8_t> want = {0x20, 0xF4, 0x22, 0x22, 0x20, 0x64, 0xA8, 0xFC};
  for (size_t j = 0; j < want.size(); ++j) EXPECT_EQ(h.k_data[2 * 8 + j], want[j]) << j;
  EXPECT_EQ(h.k_meta[2 * 4 + 0], 0x3800);
  EXPECT_EQ(h.k_meta[2 * 4 + 1], 0xBC00);
  EXPECT_EQ(h.k_meta[2 * 4 + 2], 0x3800);
  EXPECT_EQ(h.k_meta[2 * 4 + 3], 0x0000);
  std::vector<double> back = dequantize_row(h.view(), true, 2, 0);
  EXPECT_DOUBLE_EQ(back[1], 0.0);  // code 2: 2 * 0.5 - 1
  EXPECT_DOUBLE_EQ(back[3], 6.5);
  EXPECT_DOUBLE_EQ(back[15], 7.5);
}

TEST(KvWriteRef, RejectsBadSlotsAndShapes) {
  HostQuantCache h(CacheType::kInt8, CacheLayout::kPaged, 8, 1, 16, 4, 8);
  std::vector<uint16_t> kb(16, to_bits(ElemType::kBF16, 0.5f));
  std::vector<int64_t> slots = {8};
  KvWriteParams p;
  p.k_new = kb.data();
  p.v_new = kb.data();
  p.slot_mapping = slots.data();
  p.cache = h.view();
  p.num_tokens = 1;
  EXPECT_THROW(kv_write_ref(p), std::out_of_range);
  p.cache.group_size = 12;
  EXPECT_THROW(kv_write_ref(p), std::invalid_argument);
  EXPECT_FALSE(check_kv_write_params(p).ok());
}

// Bytes per token per KV head, K or V, as core/src/kv_layout.cpp counts them (data bits/8 per
// element + one fp16 scale and one fp16 zero per group, asymmetric).
TEST(KvWriteRef, StorageMatchesCoreByteCounts) {
  for (int d : {64, 128, 256}) {
    for (int g : {32, 64, 128}) {
      if (g > d) continue;  // a group larger than the head is rejected (group_size must divide head_dim)
      const int64_t groups = (d + g - 1) / g;
      EXPECT_EQ(token_bytes_per_head(CacheType::kInt8, d, g), d + groups * 2 * 2);
      EXPECT_EQ(token_bytes_per_head(CacheType::kInt4, d, g), (d * 4 + 7) / 8 + groups * 2 * 2);
    }
    EXPECT_EQ(token_bytes_per_head(CacheType::kFp8E4M3, d, 0), d);  // scales are per tensor/head (fixed bytes)
    EXPECT_EQ(token_bytes_per_head(CacheType::kBF16, d, 0), 2 * d);
  }
  // KIVI at L = R + k*G: live bytes per (sequence, head) from the layout vs kv_layout's
  // residual * 16-bit bytes + quantized * (2-bit K + 2-bit V + value metadata) + groups * key metadata.
  KiviCache c;
  c.num_seqs = 1;
  c.num_kv_heads = 1;
  c.head_dim = 128;
  c.group_size = 32;
  c.residual_tokens = 64;
  c.max_seq_len = 512;
  for (int k = 0; k <= 4; ++k) {
    const int L = c.residual_tokens + k * c.group_size;
    const int q = kivi_quantized_tokens(L, c.residual_tokens, c.group_size);
    ASSERT_EQ(q, L - c.residual_tokens);
    const int64_t code_bytes_per_token = kivi_code_offset(c, 0, 0, 1) - kivi_code_offset(c, 0, 0, 0);
    const int64_t vmeta_bytes_per_token = 2 * (kivi_value_meta_offset(c, 0, 0, 1, 0) - kivi_value_meta_offset(c, 0, 0, 0, 0));
    const int64_t kmeta_bytes_per_group =
        2 * (kivi_key_meta_offset(c, 0, 0, c.group_size, 0) - kivi_key_meta_offset(c, 0, 0, 0, 0));
    const int64_t live = (L - q) * 2 * 2 * c.head_dim + q * (2 * code_bytes_per_token + vmeta_bytes_per_token) +
                         q / c.group_size * kmeta_bytes_per_group;
    const int64_t core = c.residual_tokens * 2 * c.head_dim * 2 +
                         q * (2 * ((c.head_dim * 2 + 7) / 8) + (c.head_dim / c.group_size) * 2 * 2) +
                         (q + c.group_size - 1) / c.group_size * (c.head_dim * 2 * 2);
    EXPECT_EQ(live, core) << L;
  }
}

TEST(KiviWriteRef, QuantizedTokensRule) {
  EXPECT_EQ(kivi_quantized_tokens(0, 2, 8), 0);
  EXPECT_EQ(kivi_quantized_tokens(9, 2, 8), 0);    // R + G - 1: all in the ring
  EXPECT_EQ(kivi_quantized_tokens(10, 2, 8), 8);   // R + G: one group quantized
  EXPECT_EQ(kivi_quantized_tokens(17, 2, 8), 8);
  EXPECT_EQ(kivi_quantized_tokens(18, 2, 8), 16);
  EXPECT_EQ(kivi_quantized_tokens(8, 0, 8), 8);    // no residual window
}

TEST(KiviWriteRef, FlushAfterResidualPlusGroupByHand) {
  // R = 2, G = 8, head_dim 8. Keys k[t][c] = c + t/4: per channel min c, max c + 1.75, scale
  // fp16(1.75/3) = 0.58349609375, codes round(t/4 / 0.5835) = 0 0 1 1 2 2 3 3.
  // Values v[t][c] = c/2 - 1: per token min -1, max 2.5, scale fp16(3.5/3) = 1.1669921875, codes
  // round((c/2) / 1.167) = 0 0 1 1 2 2 3 3 -> bytes 0x50, 0xFA.
  HostKiviCache h(ElemType::kBF16, 1, 1, 8, 8, 2, 16);
  auto append = [&](int t) {
    std::vector<float> k(8), v(8);
    for (int c = 0; c < 8; ++c) k[static_cast<size_t>(c)] = static_cast<float>(c) + t / 4.f, v[static_cast<size_t>(c)] = c / 2.f - 1.f;
    std::vector<uint16_t> kb = bits_of(ElemType::kBF16, k), vb = bits_of(ElemType::kBF16, v);
    std::vector<int32_t> off = {0, 1}, before = {t};
    KiviWriteParams p;
    p.k_new = kb.data();
    p.v_new = vb.data();
    p.new_token_offsets = off.data();
    p.context_lens_before = before.data();
    p.cache = h.view();
    p.num_new_tokens = 1;
    kivi_write_ref(p);
  };
  for (int t = 0; t < 9; ++t) append(t);
  for (uint8_t b : h.k_codes) ASSERT_EQ(b, 0xFF) << "nothing is quantized before R + G tokens";
  append(9);
  const uint8_t key_bytes[8] = {0x00, 0x00, 0x55, 0x55, 0xAA, 0xAA, 0xFF, 0xFF};  // 4 channels of equal code
  for (int t = 0; t < 8; ++t) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(h.k_codes[static_cast<size_t>(t * 2 + j)], key_bytes[t]) << t;
    }
    EXPECT_EQ(h.v_codes[static_cast<size_t>(t * 2)], 0x50) << t;
    EXPECT_EQ(h.v_codes[static_cast<size_t>(t * 2 + 1)], 0xFA) << t;
    EXPECT_EQ(fp16_to_float(h.v_meta[static_cast<size_t>(t * 2)]), 1.1669921875f);
    EXPECT_EQ(fp16_to_float(h.v_meta[static_cast<size_t>(t * 2 + 1)]), -1.f);
  }
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(fp16_to_float(h.k_meta[static_cast<size_t>(c * 2)]), 0.58349609375f);
    EXPECT_EQ(fp16_to_float(h.k_meta[static_cast<size_t>(c * 2 + 1)]), static_cast<float>(c));
  }
  for (uint8_t b : std::vector<uint8_t>(h.k_codes.begin() + 16, h.k_codes.end())) ASSERT_EQ(b, 0xFF) << "exactly G tokens quantized";
  // Tokens 8 and 9 stay 16-bit, in ring slots 8 and 9 (ring of R + G = 10).
  const KiviCache c = h.view();
  for (int t : {8, 9}) {
    std::vector<double> k = kivi_dequantize_token(c, true, 0, 0, t, 10);
    EXPECT_DOUBLE_EQ(k[5], 5.0 + t / 4.0);
    EXPECT_EQ(kivi_residual_offset(c, 0, 0, t), t * 8);
  }
  std::vector<double> k2 = kivi_dequantize_token(c, true, 0, 0, 2, 10);  // code 1: c + 0.5835
  EXPECT_DOUBLE_EQ(k2[3], 3.0 + 0.58349609375);
}

TEST(KiviWriteRef, BatchedAppendEqualsSingleAppends) {
  // 1 sequence, 2 heads, head_dim 16, G 8, R 4: 13 tokens at once vs one at a time, then 20 more.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint16_t> k(33 * 2 * 16), v(k.size());
  for (auto& x : k) x = to_bits(ElemType::kFP16, u(rng));
  for (auto& x : v) x = to_bits(ElemType::kFP16, u(rng));
  HostKiviCache a(ElemType::kFP16, 1, 2, 16, 8, 4, 40), b = a;
  auto write = [&](HostKiviCache& h, int first, int n) {
    std::vector<int32_t> off = {0, n}, before = {first};
    KiviWriteParams p;
    p.k_new = k.data() + first * 32;
    p.v_new = v.data() + first * 32;
    p.new_token_offsets = off.data();
    p.context_lens_before = before.data();
    p.cache = h.view();
    p.num_new_tokens = n;
    kivi_write_ref(p);
  };
  write(a, 0, 13);
  write(a, 13, 20);
  for (int t = 0; t < 33; ++t) write(b, t, 1);
  EXPECT_EQ(a.k_codes, b.k_codes);
  EXPECT_EQ(a.v_codes, b.v_codes);
  EXPECT_EQ(a.k_meta, b.k_meta);
  EXPECT_EQ(a.v_meta, b.v_meta);
  for (int h = 0; h < 2; ++h) {
    for (int t = 0; t < 33; ++t) {
      EXPECT_EQ(kivi_dequantize_token(a.view(), true, 0, h, t, 33), kivi_dequantize_token(b.view(), true, 0, h, t, 33));
      EXPECT_EQ(kivi_dequantize_token(a.view(), false, 0, h, t, 33), kivi_dequantize_token(b.view(), false, 0, h, t, 33));
    }
  }
  std::vector<int32_t> off = {0, 8}, before = {33};
  KiviWriteParams p;
  p.k_new = k.data();
  p.v_new = v.data();
  p.new_token_offsets = off.data();
  p.context_lens_before = before.data();
  p.cache = a.view();
  p.num_new_tokens = 8;
  EXPECT_THROW(kivi_write_ref(p), std::out_of_range);  // 41 > max_seq_len 40
}

}  // namespace
}  // namespace kvplan::kernels
