// H2O kernels (h2o.h) against their CPU references. Decode: output under per-dtype tolerances and
// the accumulated scores (fp32 sums of probabilities) within 1e-4, every element checked, outputs
// poisoned, slots past each length untouched; split and unsplit. Eviction: exact — scores drawn
// from a few values so ties are common, outputs poisoned and compared bit for bit in full (slots
// past the new length must stay poisoned), new lengths exact.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/h2o.h"
#include "kvplan/kernels/reference/h2o_ref.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;

struct DecodeCase {
  std::string name;
  ElemType dtype;
  int head_dim, num_q_heads, num_kv_heads;
  std::vector<int32_t> lens;
  int num_splits;
};
std::ostream& operator<<(std::ostream& os, const DecodeCase& c) { return os << c.name; }

class H2ODecodeGpu : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(H2ODecodeGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const DecodeCase& c = GetParam();
  KVPLAN_FRESH_RNG(rng, c.name);
  const int num_seqs = static_cast<int>(c.lens.size());
  const int max_tokens = *std::max_element(c.lens.begin(), c.lens.end()) + 5;
  const size_t slab_rows = size_t(num_seqs) * c.num_kv_heads * max_tokens;
  const std::vector<uint16_t> q = testing::random_bits(c.dtype, size_t(num_seqs) * c.num_q_heads * c.head_dim, rng, -4.f, 4.f);
  const std::vector<uint16_t> k = testing::random_bits(c.dtype, slab_rows * c.head_dim, rng);
  const std::vector<uint16_t> v = testing::random_bits(c.dtype, slab_rows * c.head_dim, rng);
  std::vector<float> acc(slab_rows);
  std::uniform_real_distribution<float> u(0.f, 2.f);
  for (float& x : acc) x = u(rng);

  H2ODecodeParams p;
  p.dtype = c.dtype;
  p.num_seqs = num_seqs;
  p.num_q_heads = c.num_q_heads;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.max_tokens = max_tokens;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.num_splits = c.num_splits;
  H2ODecodeParams h = p;
  h.q = q.data();
  h.k_cache = k.data();
  h.v_cache = v.data();
  h.context_lens = c.lens.data();
  h.acc_scores = acc.data();
  const H2ODecodeRef want = h2o_decode_attention_ref(h);

  DeviceBuffer<uint16_t> dq(q), dk(k), dv(v), out(want.out.size());
  DeviceBuffer<int32_t> dlens(c.lens);
  DeviceBuffer<float> dacc(acc);
  DeviceBuffer<float> lse(size_t(num_seqs) * c.num_splits * c.num_q_heads);
  DeviceBuffer<float> pout(size_t(num_seqs) * c.num_splits * c.num_q_heads * c.head_dim);
  out.poison();
  lse.poison();
  pout.poison();
  p.q = dq.get();
  p.k_cache = dk.get();
  p.v_cache = dv.get();
  p.context_lens = dlens.get();
  p.out = out.get();
  p.acc_scores = dacc.get();
  p.lse = lse.get();
  p.partial_out = pout.get();
  const Status s = launch_h2o_decode_attention(p, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  const testing::Comparison co = testing::compare(testing::as_float(c.dtype, out.download()), want.out, testing::tolerance_for(c.dtype));
  EXPECT_TRUE(co.passed) << "out: " << co.describe();
  const testing::Comparison ca = testing::compare(dacc.download(), want.acc_scores, testing::Tolerance{1e-4, 1e-4, 1e-4});
  EXPECT_TRUE(ca.passed) << "acc_scores: " << ca.describe();
}

const ElemType kB = ElemType::kBF16;
const ElemType kH = ElemType::kFP16;

INSTANTIATE_TEST_SUITE_P(
    Shapes, H2ODecodeGpu,
    ::testing::Values(DecodeCase{"bf16_d128_batch1_context1", kB, 128, 8, 2, {1}, 1},
                      DecodeCase{"fp16_d128_mixed", kH, 128, 8, 2, {300, 1, 255, 256, 257}, 1},
                      DecodeCase{"bf16_d64_mha7", kB, 64, 7, 7, {100, 33}, 1},
                      DecodeCase{"fp16_d256_odd_heads_split3", kH, 256, 9, 3, {1000, 2}, 3},
                      DecodeCase{"bf16_d128_group16_split4", kB, 128, 16, 1, {700, 511, 0}, 4},
                      DecodeCase{"fp16_d64_group5", kH, 64, 10, 2, {513, 64}, 1}),
    [](const ::testing::TestParamInfo<DecodeCase>& param_info) { return param_info.param.name; });

struct EvictCase {
  std::string name;
  int head_dim, num_kv_heads;
  std::vector<int32_t> lens;
  int budget, recent;
};
std::ostream& operator<<(std::ostream& os, const EvictCase& c) { return os << c.name; }

class H2OEvictGpu : public ::testing::TestWithParam<EvictCase> {};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST_P(H2OEvictGpu, MatchesReferenceExactly) {
  KVPLAN_REQUIRE_GPU();
  const EvictCase& c = GetParam();
  KVPLAN_FRESH_RNG(rng, c.name);
  const int num_seqs = static_cast<int>(c.lens.size());
  const int max_tokens = *std::max_element(c.lens.begin(), c.lens.end()) + 3;
  const size_t rows = size_t(num_seqs) * c.num_kv_heads * max_tokens;
  const std::vector<uint16_t> k = testing::random_bits(ElemType::kBF16, rows * c.head_dim, rng);
  const std::vector<uint16_t> v = testing::random_bits(ElemType::kBF16, rows * c.head_dim, rng);
  std::vector<float> scores(rows);
  std::uniform_int_distribution<int> level(0, 7);  // 8 values: many ties
  for (float& x : scores) x = 0.125f * static_cast<float>(level(rng));

  DeviceBuffer<uint16_t> dk(k), dv(v), k_out(k.size()), v_out(v.size());
  DeviceBuffer<float> dscores(scores), scores_out(rows);
  DeviceBuffer<int32_t> dlens(c.lens), new_lens(c.lens.size());
  k_out.poison();
  v_out.poison();
  scores_out.poison();
  new_lens.poison();
  H2OEvictParams p;
  p.num_seqs = num_seqs;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.max_tokens = max_tokens;
  p.budget_tokens = c.budget;
  p.recent_tokens = c.recent;
  H2OEvictParams h = p;
  std::vector<uint16_t> poisoned_k(k.size(), 0xFFFF), poisoned_v(v.size(), 0xFFFF);
  std::vector<float> poisoned32(rows);
  std::memset(poisoned32.data(), 0xFF, rows * sizeof(float));
  h.k_in = k.data();
  h.v_in = v.data();
  h.scores_in = scores.data();
  h.context_lens = c.lens.data();
  h.k_out = poisoned_k.data();  // the reference starts from the poisoned contents
  h.v_out = poisoned_v.data();
  h.scores_out = poisoned32.data();
  const H2OEvictRef want = h2o_evict_ref(h);

  p.k_in = dk.get();
  p.v_in = dv.get();
  p.scores_in = dscores.get();
  p.context_lens = dlens.get();
  p.k_out = k_out.get();
  p.v_out = v_out.get();
  p.scores_out = scores_out.get();
  p.new_context_lens = new_lens.get();
  const Status s = launch_h2o_evict(p, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  EXPECT_EQ(new_lens.download(), want.new_context_lens);
  EXPECT_TRUE(same_bits(k_out.download(), want.k)) << "k_out differs";
  EXPECT_TRUE(same_bits(v_out.download(), want.v)) << "v_out differs";
  EXPECT_TRUE(same_bits(scores_out.download(), want.scores)) << "scores_out differs";
}

INSTANTIATE_TEST_SUITE_P(Shapes, H2OEvictGpu,
                         ::testing::Values(EvictCase{"d128_batch1_len1", 128, 2, {1}, 4, 2},
                                           EvictCase{"d128_under_at_over_budget", 128, 3, {63, 64, 65, 300}, 64, 16},
                                           EvictCase{"d64_recent_equals_budget", 64, 2, {100, 20}, 20, 20},
                                           EvictCase{"d256_no_recent", 256, 1, {700}, 300, 0},
                                           EvictCase{"d64_chunk_boundaries", 64, 5, {255, 256, 257, 513}, 250, 3},
                                           EvictCase{"d128_len0", 128, 2, {0, 10}, 8, 4}),
                         [](const ::testing::TestParamInfo<EvictCase>& param_info) { return param_info.param.name; });

TEST(H2OParams, RejectsAliasingAndBadBudget) {
  std::vector<uint16_t> buf(64);
  std::vector<float> sc(8);
  std::vector<int32_t> lens(1), out_lens(1);
  H2OEvictParams p;
  p.num_seqs = 1;
  p.num_kv_heads = 1;
  p.head_dim = 8;
  p.max_tokens = 8;
  p.budget_tokens = 4;
  p.recent_tokens = 5;
  p.k_in = p.v_in = buf.data();
  p.k_out = p.v_out = buf.data();
  p.scores_in = p.scores_out = sc.data();
  p.context_lens = lens.data();
  p.new_context_lens = out_lens.data();
  EXPECT_NE(launch_h2o_evict(p, nullptr).message().find("recent_tokens"), std::string::npos);
  p.recent_tokens = 2;
  EXPECT_NE(launch_h2o_evict(p, nullptr).message().find("alias"), std::string::npos);
}

}  // namespace
}  // namespace kvplan::kernels
