// CPU reference of low-rank KV decode (low_rank.h): rank = head_dim with identity projections equals
// plain decode; a rank-1 case by hand; int4 latent codes and metadata decoded by hand.
#include "kvplan/kernels/reference/low_rank_ref.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"
#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/decode_attention_ref.h"

namespace kvplan::kernels {
namespace {

TEST(LowRankRef, IdentityProjectionAtFullRankEqualsPlainDecode) {
  // 2 sequences, 4 query heads, 2 KV heads, head_dim = rank = 8, lengths 3 and 5.
  const int S = 2, Hq = 4, H = 2, D = 8, T = 5;
  std::mt19937_64 rng(7);
  const std::vector<uint16_t> q = testing::random_bits(ElemType::kBF16, size_t(S) * Hq * D, rng, -2.f, 2.f);
  const std::vector<uint16_t> lat_k = testing::random_bits(ElemType::kBF16, size_t(S) * H * T * D, rng);
  const std::vector<uint16_t> lat_v = testing::random_bits(ElemType::kBF16, lat_k.size(), rng);
  std::vector<uint16_t> eye(size_t(H) * D * D, float_to_bf16(0.f));
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < D; ++j) eye[(size_t(h) * D + j) * D + j] = float_to_bf16(1.f);
  const std::vector<int32_t> lens = {3, 5};
  LowRankDecodeParams p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = S;
  p.num_q_heads = Hq;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.rank = D;
  p.max_seq_len = T;
  p.softmax_scale = 0.5f;
  p.q = q.data();
  p.u_k = eye.data();
  p.u_v = eye.data();
  p.k_latent = lat_k.data();
  p.v_latent = lat_v.data();
  p.context_lens = lens.data();
  const std::vector<double> got = low_rank_decode_attention_ref(p);
  // The same rows in decode_attention.h's contiguous layout [S, T, H, D].
  std::vector<uint16_t> k(lat_k.size()), v(lat_v.size());
  for (int s = 0; s < S; ++s)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < D; ++c) {
          k[((size_t(s) * T + t) * H + h) * D + c] = lat_k[((size_t(s) * H + h) * T + t) * D + c];
          v[((size_t(s) * T + t) * H + h) * D + c] = lat_v[((size_t(s) * H + h) * T + t) * D + c];
        }
  DecodeAttentionParams d;
  d.dtype = ElemType::kBF16;
  d.num_seqs = S;
  d.num_q_heads = Hq;
  d.num_kv_heads = H;
  d.head_dim = D;
  d.max_seq_len = T;
  d.softmax_scale = 0.5f;
  d.q = q.data();
  d.k_cache = k.data();
  d.v_cache = v.data();
  d.context_lens = lens.data();
  const std::vector<double> want = decode_attention_ref(d);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

TEST(LowRankRef, RankOneByHand) {
  // head_dim 2, rank 1: U_k = [1, 0], U_v = [0, 2]; latents k: 1, 0; v: 1, 3. So k0 = [1, 0], k1 = 0,
  // v0 = [0, 2], v1 = [0, 6]; q = [1, 0], scale 1: scores 1, 0; w = 1 / (1 + e).
  auto b = [](float x) { return float_to_fp16(x); };
  const std::vector<uint16_t> q = {b(1), b(0)}, uk = {b(1), b(0)}, uv = {b(0), b(2)};
  const std::vector<uint16_t> lk = {b(1), b(0)}, lv = {b(1), b(3)};
  const std::vector<int32_t> lens = {2};
  LowRankDecodeParams p;
  p.dtype = ElemType::kFP16;
  p.num_seqs = 1;
  p.num_q_heads = 1;
  p.num_kv_heads = 1;
  p.head_dim = 2;
  p.rank = 1;
  p.max_seq_len = 2;
  p.softmax_scale = 1.f;
  p.q = q.data();
  p.u_k = uk.data();
  p.u_v = uv.data();
  p.k_latent = lk.data();
  p.v_latent = lv.data();
  p.context_lens = lens.data();
  const std::vector<double> got = low_rank_decode_attention_ref(p);
  const double w = 1 / (1 + std::exp(1.0));
  EXPECT_NEAR(got[0], 0.0, 1e-12);
  EXPECT_NEAR(got[1], 2 * (1 - w) + 6 * w, 1e-12);
}

TEST(LowRankRef, Int4LatentsDecodeByHand) {
  // rank 16, group 8: token 0, channel 0 and 1 live in byte 0 = 0x3A (low nibble 10, high 3);
  // group 0 {scale 0.5, zero -1}: 10 * 0.5 - 1 = 4, 3 * 0.5 - 1 = 0.5. Channel 9 (group 1, byte 4
  // high nibble 0xF, {scale 0.25, zero 2}): 15 * 0.25 + 2 = 5.75.
  std::vector<uint8_t> codes(8, 0);
  codes[0] = 0x3A;
  codes[4] = 0xF0;
  const std::vector<uint16_t> meta = {float_to_fp16(0.5f), float_to_fp16(-1.f), float_to_fp16(0.25f), float_to_fp16(2.f)};
  LowRankDecodeParams p;
  p.int4_latents = true;
  p.num_seqs = 1;
  p.num_kv_heads = 1;
  p.rank = 16;
  p.group_size = 8;
  p.max_seq_len = 1;
  p.k_latent = codes.data();
  p.k_meta = meta.data();
  EXPECT_DOUBLE_EQ(low_rank_latent_ref(p, true, 0, 0, 0, 0), 4.0);
  EXPECT_DOUBLE_EQ(low_rank_latent_ref(p, true, 0, 0, 0, 1), 0.5);
  EXPECT_DOUBLE_EQ(low_rank_latent_ref(p, true, 0, 0, 0, 9), 5.75);
  EXPECT_DOUBLE_EQ(low_rank_latent_ref(p, true, 0, 0, 0, 8), 2.0);  // code 0: the zero point
}

}  // namespace
}  // namespace kvplan::kernels
