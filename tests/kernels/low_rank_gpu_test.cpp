// Low-rank KV decode kernel (low_rank.h, absorbed form) against the CPU reference (reconstructed
// form): fresh random latents and projections, 16-bit and int4 latents, poisoned outputs, every
// element checked, per-dtype tolerances; batch 1, context 1, mixed lengths, odd head counts, groups
// above one CTA's tile, ranks 32/64/128 with head dims 64/128/256, splits.
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/low_rank.h"
#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/low_rank_ref.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;

struct Case {
  std::string name;
  ElemType dtype;
  bool int4;
  int head_dim, rank, group_size, num_q_heads, num_kv_heads;
  std::vector<int32_t> lens;
  int num_splits;
};
std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

class LowRankGpu : public ::testing::TestWithParam<Case> {};

TEST_P(LowRankGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  KVPLAN_FRESH_RNG(rng, c.name);
  const int num_seqs = static_cast<int>(c.lens.size());
  const int max_seq_len = *std::max_element(c.lens.begin(), c.lens.end()) + 3;
  const size_t rows = size_t(num_seqs) * c.num_kv_heads * max_seq_len;
  // Projections in +-2/sqrt(rank): reconstructed k, v entries of order 1, like the plain tests.
  const float u_range = 2.f / std::sqrt(static_cast<float>(c.rank));
  const std::vector<uint16_t> q = testing::random_bits(c.dtype, size_t(num_seqs) * c.num_q_heads * c.head_dim, rng, -2.f, 2.f);
  const std::vector<uint16_t> u_k = testing::random_bits(c.dtype, size_t(c.num_kv_heads) * c.rank * c.head_dim, rng, -u_range, u_range);
  const std::vector<uint16_t> u_v = testing::random_bits(c.dtype, u_k.size(), rng, -u_range, u_range);
  std::vector<uint16_t> lat_k16, lat_v16, k_meta, v_meta;
  std::vector<uint8_t> lat_k4, lat_v4;
  if (!c.int4) {
    lat_k16 = testing::random_bits(c.dtype, rows * c.rank, rng);
    lat_v16 = testing::random_bits(c.dtype, rows * c.rank, rng);
  } else {
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.02f, 0.15f), zero(-1.f, 0.f);
    lat_k4.resize(rows * c.rank / 2);
    lat_v4.resize(rows * c.rank / 2);
    for (auto& b : lat_k4) b = static_cast<uint8_t>(byte(rng));
    for (auto& b : lat_v4) b = static_cast<uint8_t>(byte(rng));
    for (size_t i = 0; i < rows * (c.rank / c.group_size); ++i) {
      k_meta.push_back(float_to_fp16(scale(rng)));
      k_meta.push_back(float_to_fp16(zero(rng)));
      v_meta.push_back(float_to_fp16(scale(rng)));
      v_meta.push_back(float_to_fp16(zero(rng)));
    }
  }

  LowRankDecodeParams p;
  p.dtype = c.dtype;
  p.int4_latents = c.int4;
  p.num_seqs = num_seqs;
  p.num_q_heads = c.num_q_heads;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.rank = c.rank;
  p.group_size = c.group_size;
  p.max_seq_len = max_seq_len;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.num_splits = c.num_splits;
  LowRankDecodeParams h = p;
  h.q = q.data();
  h.u_k = u_k.data();
  h.u_v = u_v.data();
  h.k_latent = c.int4 ? static_cast<const void*>(lat_k4.data()) : lat_k16.data();
  h.v_latent = c.int4 ? static_cast<const void*>(lat_v4.data()) : lat_v16.data();
  h.k_meta = k_meta.data();
  h.v_meta = v_meta.data();
  h.context_lens = c.lens.data();
  const std::vector<double> want = low_rank_decode_attention_ref(h);

  DeviceBuffer<uint16_t> dq(q), duk(u_k), duv(u_v), out(want.size());
  DeviceBuffer<uint16_t> dk16(std::max<size_t>(lat_k16.size(), 1)), dv16(std::max<size_t>(lat_v16.size(), 1));
  DeviceBuffer<uint8_t> dk4(std::max<size_t>(lat_k4.size(), 1)), dv4(std::max<size_t>(lat_v4.size(), 1));
  DeviceBuffer<uint16_t> dkm(std::max<size_t>(k_meta.size(), 1)), dvm(std::max<size_t>(v_meta.size(), 1));
  if (!c.int4) {
    dk16.upload(lat_k16);
    dv16.upload(lat_v16);
  } else {
    dk4.upload(lat_k4);
    dv4.upload(lat_v4);
    dkm.upload(k_meta);
    dvm.upload(v_meta);
  }
  DeviceBuffer<int32_t> dlens(c.lens);
  DeviceBuffer<float> pout(size_t(num_seqs) * c.num_splits * c.num_q_heads * c.head_dim);
  DeviceBuffer<float> plse(size_t(num_seqs) * c.num_splits * c.num_q_heads);
  out.poison();
  pout.poison();
  plse.poison();
  p.q = dq.get();
  p.u_k = duk.get();
  p.u_v = duv.get();
  p.k_latent = c.int4 ? static_cast<const void*>(dk4.get()) : dk16.get();
  p.v_latent = c.int4 ? static_cast<const void*>(dv4.get()) : dv16.get();
  p.k_meta = dkm.get();
  p.v_meta = dvm.get();
  p.context_lens = dlens.get();
  p.out = out.get();
  p.partial_out = pout.get();
  p.partial_lse = plse.get();
  const Status s = launch_low_rank_decode_attention(p, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  const testing::Comparison cmp = testing::compare(testing::as_float(c.dtype, out.download()), want, testing::tolerance_for(c.dtype));
  EXPECT_TRUE(cmp.passed) << cmp.describe();
}

const ElemType kB = ElemType::kBF16;
const ElemType kH = ElemType::kFP16;

INSTANTIATE_TEST_SUITE_P(
    Shapes, LowRankGpu,
    ::testing::Values(Case{"bf16_d128_r64_batch1_context1", kB, false, 128, 64, 0, 8, 2, {1}, 1},
                      Case{"fp16_d128_r32_mixed", kH, false, 128, 32, 0, 8, 2, {300, 1, 63, 64, 65}, 1},
                      Case{"bf16_d64_r64_full_rank_mha7", kB, false, 64, 64, 0, 7, 7, {100, 2}, 1},
                      Case{"fp16_d256_r128_odd_heads_split3", kH, false, 256, 128, 0, 9, 3, {900, 40}, 3},
                      Case{"bf16_d128_r128_group16", kB, false, 128, 128, 0, 16, 1, {500, 0}, 1},
                      Case{"bf16_int4_d128_r64_g32", kB, true, 128, 64, 32, 8, 2, {1, 257, 128}, 1},
                      Case{"fp16_int4_d64_r32_g8_split4", kH, true, 64, 32, 8, 6, 2, {1000, 5}, 4},
                      Case{"fp16_int4_d256_r128_g128_group5", kH, true, 256, 128, 128, 10, 2, {333}, 1}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

TEST(LowRankParams, RejectsBadInput) {
  LowRankDecodeParams p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = 1;
  p.num_q_heads = 4;
  p.num_kv_heads = 2;
  p.head_dim = 128;
  p.rank = 48;
  p.max_seq_len = 8;
  p.softmax_scale = 0.1f;
  EXPECT_NE(launch_low_rank_decode_attention(p, nullptr).message().find("rank"), std::string::npos);
  p.rank = 64;
  p.int4_latents = true;
  p.group_size = 12;
  EXPECT_NE(launch_low_rank_decode_attention(p, nullptr).message().find("group_size"), std::string::npos);
}

}  // namespace
}  // namespace kvplan::kernels
