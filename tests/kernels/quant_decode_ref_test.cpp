// CPU reference of quantized-KV decode attention on hand-computed cases: two tokens through an fp8
// paged cache (GQA, block-table indirection), an int4 cache, KIVI with only the residual, context 0,
// and the Params it rejects.
#include "kvplan/kernels/reference/quant_decode_attention_ref.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/kv_write_ref.h"
#include "quant_cache_test_support.h"

namespace kvplan::kernels {
namespace {

using testing::HostKiviCache;
using testing::HostQuantCache;

constexpr int kD = 64;

// Writes `tokens` K/V rows (each [1 head, kD] of constant-per-token values given by the callbacks)
// at the given slots.
template <typename KFn, typename VFn>
void fill(HostQuantCache& h, const std::vector<int64_t>& slots, KFn key, VFn value) {
  std::vector<uint16_t> k, v;
  for (size_t t = 0; t < slots.size(); ++t) {
    for (int d = 0; d < kD; ++d) {
      k.push_back(to_bits(ElemType::kBF16, key(static_cast<int>(t), d)));
      v.push_back(to_bits(ElemType::kBF16, value(static_cast<int>(t), d)));
    }
  }
  KvWriteParams p;
  p.k_new = k.data();
  p.v_new = v.data();
  p.slot_mapping = slots.data();
  p.cache = h.view();
  p.num_tokens = static_cast<int>(slots.size());
  kv_write_ref(p);
}

QuantDecodeParams params_for(HostQuantCache& h, const std::vector<uint16_t>& q, const std::vector<int32_t>& table,
                             const std::vector<int32_t>& lens, int num_q_heads) {
  QuantDecodeParams p;
  p.cache = h.view();
  p.q = q.data();
  p.out = reinterpret_cast<uint16_t*>(1);  // ignored by the reference, checked for null
  p.block_table = table.data();
  p.context_lens = lens.data();
  p.num_seqs = static_cast<int>(lens.size());
  p.num_q_heads = num_q_heads;
  p.num_kv_heads = 1;
  p.head_dim = kD;
  p.max_blocks_per_seq = static_cast<int>(table.size() / lens.size());
  return p;
}

TEST(QuantDecodeRef, TwoTokensFp8ByHand) {
  // One KV head, two query heads. k0 = 0, k1 = e0; v0 = 1, v1 = -1 (exact in e4m3, scale 1).
  // Query head 0 = e0 with softmax_scale ln 3: scores 0 and ln 3, weights 1/4 and 3/4, out = -1/2.
  // Query head 1 = 0: equal weights, out = 0. The sequence lives in block 1 (of 2, 16 tokens each).
  HostQuantCache h(CacheType::kFp8E4M3, CacheLayout::kPaged, 32, 1, kD, 16, 0);
  fill(h, {16, 17}, [](int t, int d) { return t == 1 && d == 0 ? 1.f : 0.f; }, [](int t, int) { return t == 0 ? 1.f : -1.f; });
  std::vector<uint16_t> q(2 * kD, 0);
  q[0] = to_bits(ElemType::kBF16, 1.f);
  std::vector<int32_t> table = {1}, lens = {2};
  QuantDecodeParams p = params_for(h, q, table, lens, 2);
  p.softmax_scale = static_cast<float>(std::log(3.0));
  std::vector<double> out = quant_decode_attention_ref(p);
  ASSERT_EQ(out.size(), 2u * kD);
  for (int d = 0; d < kD; ++d) {
    EXPECT_NEAR(out[static_cast<size_t>(d)], -0.5, 1e-7) << d;  // ln 3 rounded to fp32
    EXPECT_NEAR(out[static_cast<size_t>(kD + d)], 0.0, 1e-15) << d;
  }
}

TEST(QuantDecodeRef, Int4DequantizesBeforeAttention) {
  // One token: attention returns its dequantized V row. V channel d = d % 8 (group of 8: min 0,
  // max 7, scale fp16(7/15) = 1911/4096, codes round(d / s) = 0 2 4 6 9 11 13 15); out = code * s.
  HostQuantCache h(CacheType::kInt4, CacheLayout::kPaged, 16, 1, kD, 8, 8);
  fill(h, {8}, [](int, int d) { return d / 64.f; }, [](int, int d) { return static_cast<float>(d % 8); });
  std::vector<uint16_t> q(kD, to_bits(ElemType::kBF16, 0.25f));
  std::vector<int32_t> table = {1}, lens = {1};
  QuantDecodeParams p = params_for(h, q, table, lens, 1);
  p.softmax_scale = 0.125f;
  std::vector<double> out = quant_decode_attention_ref(p);
  const double s = 1911.0 / 4096;
  const int codes[8] = {0, 2, 4, 6, 9, 11, 13, 15};
  for (int d = 0; d < kD; ++d) EXPECT_DOUBLE_EQ(out[static_cast<size_t>(d)], codes[d % 8] * s) << d;
}

TEST(QuantDecodeRef, KiviResidualOnlyAndEmptyContext) {
  // Sequence 0 has 1 token (in the ring): the output is its V. Sequence 1 has context 0: zeros.
  HostKiviCache h(ElemType::kFP16, 2, 1, kD, 32, 16, 64);
  std::vector<uint16_t> k(kD), v(kD);
  for (int d = 0; d < kD; ++d) {
    k[static_cast<size_t>(d)] = to_bits(ElemType::kFP16, 0.01f * d);
    v[static_cast<size_t>(d)] = to_bits(ElemType::kFP16, -0.5f + 0.015625f * d);
  }
  std::vector<int32_t> off = {0, 1, 1}, before = {0, 0};
  KiviWriteParams w;
  w.k_new = k.data();
  w.v_new = v.data();
  w.new_token_offsets = off.data();
  w.context_lens_before = before.data();
  w.cache = h.view();
  w.num_new_tokens = 1;
  kivi_write_ref(w);
  std::vector<uint16_t> q(2 * kD, to_bits(ElemType::kFP16, 0.5f));
  std::vector<int32_t> lens = {1, 0};
  QuantDecodeParams p;
  p.dtype = ElemType::kFP16;
  p.kivi = true;
  p.kivi_cache = h.view();
  p.q = q.data();
  p.out = reinterpret_cast<uint16_t*>(1);
  p.context_lens = lens.data();
  p.num_seqs = 2;
  p.num_q_heads = 1;
  p.num_kv_heads = 1;
  p.head_dim = kD;
  p.softmax_scale = 0.125f;
  std::vector<double> out = quant_decode_attention_ref(p);
  for (int d = 0; d < kD; ++d) {
    EXPECT_DOUBLE_EQ(out[static_cast<size_t>(d)], -0.5 + 0.015625 * d);
    EXPECT_EQ(out[static_cast<size_t>(kD + d)], 0.0);
  }
}

TEST(QuantDecodeRef, KiviQuantizedTokensAreDequantized) {
  // R = 0, G = 8: 8 tokens are one quantized group. Equal keys give equal weights, so the output is
  // the mean of the dequantized values, which kivi_dequantize_token supplies independently.
  HostKiviCache h(ElemType::kBF16, 1, 1, kD, 8, 0, 16);
  std::vector<uint16_t> k(8 * kD, to_bits(ElemType::kBF16, 0.25f)), v(8 * kD);
  for (size_t i = 0; i < v.size(); ++i) v[i] = to_bits(ElemType::kBF16, std::sin(static_cast<float>(i)));
  std::vector<int32_t> off = {0, 8}, before = {0};
  KiviWriteParams w;
  w.k_new = k.data();
  w.v_new = v.data();
  w.new_token_offsets = off.data();
  w.context_lens_before = before.data();
  w.cache = h.view();
  w.num_new_tokens = 8;
  kivi_write_ref(w);
  std::vector<uint16_t> q(kD, to_bits(ElemType::kBF16, 1.f));
  std::vector<int32_t> lens = {8};
  QuantDecodeParams p;
  p.kivi = true;
  p.kivi_cache = h.view();
  p.q = q.data();
  p.out = reinterpret_cast<uint16_t*>(1);
  p.context_lens = lens.data();
  p.num_seqs = 1;
  p.num_q_heads = 1;
  p.num_kv_heads = 1;
  p.head_dim = kD;
  p.softmax_scale = 0.125f;
  std::vector<double> out = quant_decode_attention_ref(p);
  for (int d = 0; d < kD; ++d) {
    double mean = 0;
    for (int t = 0; t < 8; ++t) mean += kivi_dequantize_token(h.view(), false, 0, 0, t, 8)[static_cast<size_t>(d)] / 8;
    EXPECT_NEAR(out[static_cast<size_t>(d)], mean, 1e-12) << d;
    EXPECT_NEAR(mean, 0, 1.0);  // codes 0..3 of values in [-1, 1]
  }
}

TEST(QuantDecodeRef, RejectsBadParams) {
  HostQuantCache h(CacheType::kInt8, CacheLayout::kPaged, 16, 1, kD, 16, 32);
  std::vector<uint16_t> q(3 * kD, 0);
  std::vector<int32_t> table = {0}, lens = {1};
  QuantDecodeParams p = params_for(h, q, table, lens, 3);
  p.softmax_scale = 1.f;
  p.num_kv_heads = 2;  // 3 query heads are not a multiple of 2 (and the cache has 1)
  EXPECT_THROW(quant_decode_attention_ref(p), std::invalid_argument);
  p.num_kv_heads = 1;
  p.head_dim = 96;
  EXPECT_THROW(quant_decode_attention_ref(p), std::invalid_argument);
  EXPECT_FALSE(check_quant_decode_params(p).ok());
  p.head_dim = kD;
  lens = {17};  // beyond 1 block of 16
  EXPECT_THROW(quant_decode_attention_ref(p), std::invalid_argument);
  p.cache.type = CacheType::kBF16;
  EXPECT_FALSE(check_quant_decode_params(p).ok());
}

}  // namespace
}  // namespace kvplan::kernels
