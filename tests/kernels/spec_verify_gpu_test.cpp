// Speculative verification kernel against spec_verify_ref: fresh random inputs, poisoned output,
// every element checked, per-dtype tolerances; head dims 64/128/256, num_draft 0 (plain decode) to 7,
// context 0 and 1, drafts crossing block boundaries (+-1), odd head counts (3 KV x 3, 7-head MHA),
// MQA, Llama-3.1-8B's 32 x 8 with k = 4, mixed lengths.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/reference/spec_verify_ref.h"
#include "kvplan/kernels/spec_verify.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;

struct Case {
  std::string name;
  ElemType dtype;
  int head_dim;
  int num_q_heads;
  int num_kv_heads;
  int num_draft;
  std::vector<int32_t> context;
  int tokens_per_block;
};
std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

class SpecVerifyGpu : public ::testing::TestWithParam<Case> {};

TEST_P(SpecVerifyGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  KVPLAN_FRESH_RNG(rng, c.name);
  const int seqs = static_cast<int>(c.context.size());
  const int tpb = c.tokens_per_block;
  const int max_total = *std::max_element(c.context.begin(), c.context.end()) + c.num_draft + 1;
  const int max_blocks = (max_total + tpb - 1) / tpb + 1;  // one spare entry: never read
  const int num_blocks = seqs * max_blocks + 3;
  std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  const std::vector<int32_t> table(perm.begin(), perm.begin() + size_t(seqs) * max_blocks);
  // Queries in [-4, 4): peaked weights, so a wrong (e.g. later, masked) token changes the answer.
  const std::vector<uint16_t> q =
      testing::random_bits(c.dtype, size_t(seqs) * (c.num_draft + 1) * c.num_q_heads * c.head_dim, rng, -4.f, 4.f);
  const std::vector<uint16_t> k = testing::random_bits(c.dtype, size_t(num_blocks) * c.num_kv_heads * tpb * c.head_dim, rng);
  const std::vector<uint16_t> v = testing::random_bits(c.dtype, k.size(), rng);
  DeviceBuffer<uint16_t> dq(q), dk(k), dv(v), out(q.size());
  DeviceBuffer<int32_t> dtable(table), dctx(c.context);
  out.poison();
  SpecVerifyParams p;
  p.dtype = c.dtype;
  p.num_seqs = seqs;
  p.num_draft = c.num_draft;
  p.num_q_heads = c.num_q_heads;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.num_blocks = num_blocks;
  p.tokens_per_block = tpb;
  p.max_blocks_per_seq = max_blocks;
  p.softmax_scale = 1.f / std::sqrt(float(c.head_dim));
  p.q = dq.get();
  p.k_cache = dk.get();
  p.v_cache = dv.get();
  p.block_table = dtable.get();
  p.context_lens = dctx.get();
  p.out = out.get();
  const Status s = launch_spec_verify(p, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  SpecVerifyParams h = p;
  h.q = q.data();
  h.k_cache = k.data();
  h.v_cache = v.data();
  h.block_table = table.data();
  h.context_lens = c.context.data();
  h.out = nullptr;
  const testing::Comparison cmp =
      testing::compare(testing::as_float(c.dtype, out.download()), spec_verify_ref(h), testing::tolerance_for(c.dtype));
  EXPECT_TRUE(cmp.passed) << cmp.describe();
}

constexpr ElemType kBf16 = ElemType::kBF16;
constexpr ElemType kFp16 = ElemType::kFP16;

INSTANTIATE_TEST_SUITE_P(
    Shapes, SpecVerifyGpu,
    ::testing::Values(
        // name, dtype, head_dim, q heads, kv heads, num_draft, context lens, tokens_per_block
        Case{"NoDraft_Context0_Mha7_d128_bf16", kBf16, 128, 7, 7, 0, {0}, 16},
        Case{"Batch1Context1_Draft4_d64_fp16", kFp16, 64, 4, 1, 4, {1}, 16},
        Case{"Gqa3x3_d64_bf16_DraftCrossesBlock8", kBf16, 64, 9, 3, 3, {5, 6, 7, 8, 9}, 8},
        Case{"Llama8B_Gqa32x8_d128_bf16_Draft4", kBf16, 128, 32, 8, 4, {12, 15, 16, 17, 300}, 16},
        Case{"Llama8B_Gqa32x8_d128_fp16_Draft4_Block1", kFp16, 128, 32, 8, 4, {3, 40}, 1},
        Case{"Mha7_d256_fp16_Draft7", kFp16, 256, 7, 7, 7, {60, 1, 0}, 64},
        Case{"Mqa12_d256_bf16_Draft2_UnevenTiles", kBf16, 256, 12, 1, 2, {100, 127}, 128},
        Case{"Gqa8x2_d128_bf16_Draft1_Long", kBf16, 128, 8, 2, 1, {4100, 33}, 32}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

TEST(SpecVerifyGpuParams, RejectsBadParamsWithoutLaunching) {
  alignas(16) static uint16_t buf[1024];
  static int32_t ints[1] = {0};
  SpecVerifyParams p;
  EXPECT_EQ(launch_spec_verify(p, nullptr).call(), "params");
  p.num_seqs = 1;
  p.num_q_heads = 6;
  p.num_kv_heads = 4;
  p.head_dim = 128;
  p.num_blocks = 1;
  p.tokens_per_block = 16;
  p.max_blocks_per_seq = 1;
  p.softmax_scale = 0.1f;
  p.q = p.k_cache = p.v_cache = buf;
  p.out = buf;
  p.block_table = p.context_lens = ints;
  Status s = launch_spec_verify(p, nullptr);
  EXPECT_NE(s.message().find("num_kv_heads=4 must divide num_q_heads=6"), std::string::npos) << s.describe();
  p.num_kv_heads = 2;
  p.head_dim = 96;
  EXPECT_NE(launch_spec_verify(p, nullptr).message().find("head_dim=96"), std::string::npos);
  p.head_dim = 128;
  p.num_draft = -1;
  EXPECT_EQ(launch_spec_verify(p, nullptr).call(), "params");
  p.num_draft = 2;
  p.k_cache = buf + 1;  // misaligned
  EXPECT_EQ(launch_spec_verify(p, nullptr).call(), "params");
}

}  // namespace
}  // namespace kvplan::kernels
