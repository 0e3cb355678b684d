// MLA kernels against the CPU references: decode (absorbed, paged latent, bf16/fp16 and fp8 caches,
// unsplit and split + combine) and prefill (non-absorbed, causal varlen, qk 192 / v 128). Fresh
// random inputs per run, poisoned outputs and partials, every element checked, per-dtype
// tolerances; batch 1, context 1, block boundaries +-1, odd head counts (1, 7, 17: a partial head
// tile), DeepSeek-V3's 128 heads, mixed lengths, empty splits.
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
#include "kvplan/kernels/mla_attention.h"
#include "kvplan/kernels/reference/mla_attention_ref.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

constexpr Tolerance kPartialTolerance{2e-4, 2e-4, 2e-4};
constexpr int kRow = kMlaKvLoraRank + kMlaRopeDim;

struct DecodeCase {
  std::string name;
  ElemType dtype;
  bool fp8;
  int num_heads;
  std::vector<int32_t> lens;
  int tokens_per_block;
  int num_splits;
};
std::ostream& operator<<(std::ostream& os, const DecodeCase& c) { return os << c.name; }

// Host problem: a shuffled block pool where every slot (also past each sequence's end and in unused
// blocks) holds random values, so a kernel reading a wrong slot shows up as a mismatch.
struct DecodeProblem {
  DecodeCase c;
  int num_seqs = 0, max_blocks = 0, num_blocks = 0;
  std::vector<uint16_t> q_nope, q_rope, pool16;
  std::vector<uint8_t> pool8;
  std::vector<float> scale{1.f / 224.f};  // values in [-1, 1) -> codes up to +-224
  std::vector<int32_t> table;

  DecodeProblem(const DecodeCase& cs, uint64_t seed) : c(cs) {
    std::mt19937_64 rng(seed);
    num_seqs = static_cast<int>(c.lens.size());
    const int max_len = *std::max_element(c.lens.begin(), c.lens.end()) + 2;
    max_blocks = (max_len + c.tokens_per_block - 1) / c.tokens_per_block;
    num_blocks = num_seqs * max_blocks + 3;
    std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    table.assign(perm.begin(), perm.begin() + size_t(num_seqs) * max_blocks);
    q_nope = testing::random_bits(c.dtype, size_t(num_seqs) * c.num_heads * kMlaKvLoraRank, rng, -2.f, 2.f);
    q_rope = testing::random_bits(c.dtype, size_t(num_seqs) * c.num_heads * kMlaRopeDim, rng, -2.f, 2.f);
    const size_t elems = size_t(num_blocks) * c.tokens_per_block * kRow;
    if (c.fp8) {
      pool8.resize(elems);
      std::uniform_real_distribution<float> d(-1.f, 1.f);
      for (uint8_t& x : pool8) x = float_to_fp8_e4m3(d(rng) / scale[0]);
    } else {
      pool16 = testing::random_bits(c.dtype, elems, rng);
    }
  }
  MlaDecodeParams params() const {
    MlaDecodeParams p;
    p.dtype = c.dtype;
    p.cache_type = c.fp8 ? CacheType::kFp8E4M3 : (c.dtype == ElemType::kBF16 ? CacheType::kBF16 : CacheType::kFP16);
    p.num_seqs = num_seqs;
    p.num_heads = c.num_heads;
    p.kv_lora_rank = kMlaKvLoraRank;
    p.rope_dim = kMlaRopeDim;
    p.num_blocks = num_blocks;
    p.tokens_per_block = c.tokens_per_block;
    p.max_blocks_per_seq = max_blocks;
    p.softmax_scale = 1.f / std::sqrt(192.f);  // DeepSeek: 1 / sqrt(qk_nope + rope)
    p.num_splits = c.num_splits;
    return p;
  }
};

class MlaDecodeGpu : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(MlaDecodeGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const DecodeCase& c = GetParam();
  const uint64_t seed = std::hash<std::string>{}(c.name) ^ std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const DecodeProblem pb(c, seed);
  for (int splits : {1, c.num_splits}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits));
    DeviceBuffer<uint16_t> q_nope(pb.q_nope), q_rope(pb.q_rope);
    DeviceBuffer<uint16_t> pool16(c.fp8 ? std::vector<uint16_t>(8) : pb.pool16);
    DeviceBuffer<uint8_t> pool8(c.fp8 ? pb.pool8 : std::vector<uint8_t>(16));
    DeviceBuffer<float> scale(pb.scale);
    DeviceBuffer<int32_t> table(pb.table), lens(c.lens);
    DeviceBuffer<uint16_t> out(size_t(pb.num_seqs) * c.num_heads * kMlaKvLoraRank);
    DeviceBuffer<float> pout(size_t(decode_partial_out_elems(pb.num_seqs, splits, c.num_heads, kMlaKvLoraRank)));
    DeviceBuffer<float> plse(size_t(decode_partial_lse_elems(pb.num_seqs, splits, c.num_heads)));
    out.poison();
    pout.poison();
    plse.poison();
    MlaDecodeParams p = pb.params();
    p.num_splits = splits;
    p.q_nope = q_nope.get();
    p.q_rope = q_rope.get();
    p.kv_cache = c.fp8 ? static_cast<const void*>(pool8.get()) : static_cast<const void*>(pool16.get());
    p.kv_scale = scale.get();
    p.block_table = table.get();
    p.context_lens = lens.get();
    p.out = out.get();
    p.partial_out = pout.get();
    p.partial_lse = plse.get();
    const Status s = launch_mla_decode(p, nullptr);
    ASSERT_TRUE(s.ok()) << s.describe();

    MlaDecodeParams h = p;
    h.q_nope = pb.q_nope.data();
    h.q_rope = pb.q_rope.data();
    h.kv_cache = c.fp8 ? static_cast<const void*>(pb.pool8.data()) : static_cast<const void*>(pb.pool16.data());
    h.kv_scale = pb.scale.data();
    h.block_table = pb.table.data();
    h.context_lens = c.lens.data();
    h.out = nullptr;
    h.partial_out = nullptr;
    h.partial_lse = nullptr;
    const testing::Comparison cmp =
        testing::compare(testing::as_float(c.dtype, out.download()), mla_decode_ref(h), testing::tolerance_for(c.dtype));
    EXPECT_TRUE(cmp.passed) << cmp.describe();
    if (splits > 1) {
      const DecodePartialsRef want = mla_decode_partials_ref(h);
      const testing::Comparison co = testing::compare(pout.download(), want.out, kPartialTolerance);
      EXPECT_TRUE(co.passed) << "partial_out: " << co.describe();
      const std::vector<float> got_lse = plse.download();
      size_t bad = 0;
      for (size_t i = 0; i < want.lse.size(); ++i) {
        bad += std::isinf(want.lse[i]) ? !(std::isinf(got_lse[i]) && got_lse[i] < 0)
                                       : !(std::fabs(got_lse[i] - want.lse[i]) <= 1e-4 + 1e-5 * std::fabs(want.lse[i]));
      }
      EXPECT_EQ(bad, 0u) << "partial_lse elements wrong or unwritten, of " << want.lse.size();
    } else {
      const std::vector<float> untouched = plse.download();  // unsplit runs leave the workspace alone
      EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](float x) { return std::isnan(x); }));
    }
  }
}

constexpr ElemType kBf16 = ElemType::kBF16;
constexpr ElemType kFp16 = ElemType::kFP16;

INSTANTIATE_TEST_SUITE_P(
    Shapes, MlaDecodeGpu,
    ::testing::Values(
        // name, dtype, fp8 cache, heads, lens, tokens_per_block, splits
        DecodeCase{"Batch1Context1_Heads1_bf16", kBf16, false, 1, {1}, 64, 2},
        DecodeCase{"Heads7_fp16_Block16Edges", kFp16, false, 7, {15, 16, 17, 1}, 16, 3},
        DecodeCase{"Heads17_bf16_Block64Edges_PartialTile", kBf16, false, 17, {63, 64, 65, 130}, 64, 2},
        DecodeCase{"Heads16_fp8_bf16_Mixed", kBf16, true, 16, {1, 31, 32, 33, 300}, 32, 4},
        DecodeCase{"Heads7_fp8_fp16_Block1", kFp16, true, 7, {5, 2}, 1, 2},
        DecodeCase{"DeepSeekV3_Heads128_bf16", kBf16, false, 128, {200, 1, 64}, 64, 3},
        DecodeCase{"DeepSeekV3_Heads128_fp8", kBf16, true, 128, {129, 17}, 64, 5},
        DecodeCase{"EmptySplits_Heads16_fp16", kFp16, false, 16, {1, 3, 700}, 16, 8},
        DecodeCase{"LongContext5000_Heads32_bf16", kBf16, false, 32, {5000}, 64, 16}),
    [](const ::testing::TestParamInfo<DecodeCase>& param_info) { return param_info.param.name; });

struct PrefillCase {
  std::string name;
  ElemType dtype;
  int num_heads;
  std::vector<int32_t> lens;
};
std::ostream& operator<<(std::ostream& os, const PrefillCase& c) { return os << c.name; }

class MlaPrefillGpu : public ::testing::TestWithParam<PrefillCase> {};

TEST_P(MlaPrefillGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const PrefillCase& c = GetParam();
  KVPLAN_FRESH_RNG(rng, c.name);
  std::vector<int32_t> cu{0};
  for (int32_t len : c.lens) cu.push_back(cu.back() + len);
  const int total = cu.back();
  const int dqk = kMlaPrefillQkHeadDim, dv = kMlaPrefillVHeadDim;
  const std::vector<uint16_t> q = testing::random_bits(c.dtype, size_t(total) * c.num_heads * dqk, rng, -2.f, 2.f);
  const std::vector<uint16_t> k = testing::random_bits(c.dtype, q.size(), rng);
  const std::vector<uint16_t> v = testing::random_bits(c.dtype, size_t(total) * c.num_heads * dv, rng);
  DeviceBuffer<uint16_t> dq(q), dk(k), dvv(v), out(v.size());
  DeviceBuffer<int32_t> dcu(cu);
  out.poison();
  MlaPrefillParams p;
  p.dtype = c.dtype;
  p.num_seqs = static_cast<int>(c.lens.size());
  p.total_tokens = total;
  p.max_seqlen = *std::max_element(c.lens.begin(), c.lens.end());
  p.num_heads = c.num_heads;
  p.qk_head_dim = dqk;
  p.v_head_dim = dv;
  p.softmax_scale = 1.f / std::sqrt(float(dqk));
  p.q = dq.get();
  p.k = dk.get();
  p.v = dvv.get();
  p.cu_seqlens = dcu.get();
  p.out = out.get();
  const Status s = launch_mla_prefill(p, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  MlaPrefillParams h = p;
  h.q = q.data();
  h.k = k.data();
  h.v = v.data();
  h.cu_seqlens = cu.data();
  h.out = nullptr;
  const testing::Comparison cmp =
      testing::compare(testing::as_float(c.dtype, out.download()), mla_prefill_ref(h), testing::tolerance_for(c.dtype));
  EXPECT_TRUE(cmp.passed) << cmp.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MlaPrefillGpu,
    ::testing::Values(PrefillCase{"OneToken_Heads1_bf16", kBf16, 1, {1}},
                      PrefillCase{"TileEdges_Heads3_fp16", kFp16, 3, {15, 16, 17, 31, 32, 33}},
                      PrefillCase{"Mixed_Heads16_bf16", kBf16, 16, {100, 1, 64, 65}},
                      PrefillCase{"Long_Heads2_fp16", kFp16, 2, {700, 3}}),
    [](const ::testing::TestParamInfo<PrefillCase>& param_info) { return param_info.param.name; });

TEST(MlaGpuParams, RejectsBadParamsWithoutLaunching) {
  // Params checks run before any CUDA call, so they need no device.
  alignas(16) static uint16_t buf[1024];
  static int32_t ints[2] = {0, 1};
  MlaDecodeParams p;
  EXPECT_EQ(launch_mla_decode(p, nullptr).call(), "params");  // everything missing
  p.num_seqs = 1;
  p.num_heads = 16;
  p.kv_lora_rank = 256;  // no instance
  p.rope_dim = 64;
  p.num_blocks = 1;
  p.tokens_per_block = 64;
  p.max_blocks_per_seq = 1;
  p.softmax_scale = 0.1f;
  p.q_nope = p.q_rope = buf;
  p.kv_cache = buf;
  p.out = buf;
  p.block_table = p.context_lens = ints;
  Status s = launch_mla_decode(p, nullptr);
  EXPECT_NE(s.message().find("kv_lora_rank=256"), std::string::npos) << s.describe();
  p.kv_lora_rank = 512;
  p.cache_type = CacheType::kFp8E4M3;  // no scale
  EXPECT_EQ(launch_mla_decode(p, nullptr).call(), "params");
  p.cache_type = CacheType::kFP16;  // 16-bit cache of another dtype than bf16 q
  s = launch_mla_decode(p, nullptr);
  EXPECT_NE(s.message().find("cache_type=fp16"), std::string::npos) << s.describe();
  p.cache_type = CacheType::kBF16;
  p.tokens_per_block = 48;
  EXPECT_NE(launch_mla_decode(p, nullptr).message().find("tokens_per_block=48"), std::string::npos);

  MlaPrefillParams pf;
  EXPECT_EQ(launch_mla_prefill(pf, nullptr).call(), "params");
  pf.num_seqs = 1;
  pf.num_heads = 1;
  pf.qk_head_dim = 128;
  pf.v_head_dim = 128;
  pf.softmax_scale = 0.1f;
  pf.q = pf.k = pf.v = buf;
  pf.out = buf;
  pf.cu_seqlens = ints;
  EXPECT_NE(launch_mla_prefill(pf, nullptr).message().find("qk_head_dim=128"), std::string::npos);
}

}  // namespace
}  // namespace kvplan::kernels
