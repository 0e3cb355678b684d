// Decode attention kernels (contiguous, paged, split + combine) against the CPU references: fresh
// random inputs per case, poisoned outputs and partials, every element checked, per-dtype
// tolerances; shapes with batch 1, context 1, block boundaries +-1, odd head counts, mixed lengths,
// MQA with more query heads than one CTA holds, and a 33,000-token context with splits.
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
#include "kvplan/kernels/decode_attention.h"
#include "kvplan/kernels/reference/decode_attention_ref.h"
#include "kvplan/kernels/split_plan.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

struct Case {
  std::string name;
  ElemType dtype;
  int head_dim;
  int num_q_heads;
  int num_kv_heads;
  std::vector<int32_t> lens;
  int tokens_per_block;
  int num_splits;  // 0: ask plan_decode_splits (with the device's SM count)
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// fp32 partials carry no 16-bit rounding: only fp32 accumulation differs from the reference.
constexpr Tolerance kPartialTolerance{2e-4, 2e-4, 2e-4};

// Host copy of one problem, in both layouts. K/V rows past a sequence's length, the tail slots of
// its last block, and the pool's unused blocks all hold random values: a kernel that reads them
// shows up as a mismatch.
struct Problem {
  Case c;
  int num_seqs = 0;
  int max_seq_len = 0;
  int max_blocks = 0;
  int num_blocks = 0;
  std::vector<uint16_t> q, k, v, k_pool, v_pool;
  std::vector<int32_t> table;

  Problem(const Case& cs, uint64_t seed) : c(cs) {
    std::mt19937_64 rng(seed);
    num_seqs = static_cast<int>(c.lens.size());
    max_seq_len = *std::max_element(c.lens.begin(), c.lens.end()) + 3;
    const int tpb = c.tokens_per_block;
    max_blocks = (max_seq_len + tpb - 1) / tpb;
    num_blocks = num_seqs * max_blocks + 5;
    // Queries in [-4, 4) give peaked softmax weights (scores of a few units), so a wrong token or
    // a wrong max changes the answer well beyond the tolerance.
    q = testing::random_bits(c.dtype, size_t(num_seqs) * c.num_q_heads * c.head_dim, rng, -4.f, 4.f);
    k = testing::random_bits(c.dtype, size_t(num_seqs) * max_seq_len * c.num_kv_heads * c.head_dim, rng);
    v = testing::random_bits(c.dtype, k.size(), rng);
    const size_t block_elems = size_t(c.num_kv_heads) * tpb * c.head_dim;
    k_pool = testing::random_bits(c.dtype, block_elems * num_blocks, rng);
    v_pool = testing::random_bits(c.dtype, block_elems * num_blocks, rng);
    std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    table.assign(perm.begin(), perm.begin() + size_t(num_seqs) * max_blocks);
    for (int s = 0; s < num_seqs; ++s) {
      for (int tok = 0; tok < max_seq_len; ++tok) {
        const size_t block = static_cast<size_t>(table[size_t(s) * max_blocks + tok / tpb]);
        for (int h = 0; h < c.num_kv_heads; ++h) {
          const size_t src = ((size_t(s) * max_seq_len + tok) * c.num_kv_heads + h) * c.head_dim;
          const size_t dst = ((block * c.num_kv_heads + h) * tpb + tok % tpb) * c.head_dim;
          std::copy_n(k.begin() + src, c.head_dim, k_pool.begin() + dst);
          std::copy_n(v.begin() + src, c.head_dim, v_pool.begin() + dst);
        }
      }
    }
  }
};

// Device copies and the Params of one run; outputs poisoned.
struct DeviceRun {
  DeviceBuffer<uint16_t> q, k, v, out;
  DeviceBuffer<int32_t> lens, table;
  DeviceBuffer<float> partial_out, partial_lse;
  DeviceRun(const Problem& pb, bool paged, int num_splits)
      : q(pb.q),
        k(paged ? pb.k_pool : pb.k),
        v(paged ? pb.v_pool : pb.v),
        out(size_t(pb.num_seqs) * pb.c.num_q_heads * pb.c.head_dim),
        lens(pb.c.lens),
        table(pb.table),
        partial_out(static_cast<size_t>(decode_partial_out_elems(pb.num_seqs, num_splits, pb.c.num_q_heads, pb.c.head_dim))),
        partial_lse(static_cast<size_t>(decode_partial_lse_elems(pb.num_seqs, num_splits, pb.c.num_q_heads))) {
    out.poison();
    partial_out.poison();
    partial_lse.poison();
  }
};

template <typename P>
void fill_common(P& p, const Problem& pb, DeviceRun& r, int num_splits) {
  p.dtype = pb.c.dtype;
  p.num_seqs = pb.num_seqs;
  p.num_q_heads = pb.c.num_q_heads;
  p.num_kv_heads = pb.c.num_kv_heads;
  p.head_dim = pb.c.head_dim;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(pb.c.head_dim));
  p.q = r.q.get();
  p.k_cache = r.k.get();
  p.v_cache = r.v.get();
  p.context_lens = r.lens.get();
  p.out = r.out.get();
  p.num_splits = num_splits;
  p.partial_out = r.partial_out.get();
  p.partial_lse = r.partial_lse.get();
}

// The same Params with host pointers, for the references.
template <typename P>
P on_host(P p, const Problem& pb, bool paged) {
  p.q = pb.q.data();
  p.k_cache = paged ? pb.k_pool.data() : pb.k.data();
  p.v_cache = paged ? pb.v_pool.data() : pb.v.data();
  p.context_lens = pb.c.lens.data();
  p.out = nullptr;
  p.partial_out = nullptr;
  p.partial_lse = nullptr;
  return p;
}

void expect_partials_match(const DeviceRun& r, const DecodePartialsRef& want) {
  const std::vector<float> got_out = r.partial_out.download();
  const std::vector<float> got_lse = r.partial_lse.download();
  const testing::Comparison co = testing::compare(got_out, want.out, kPartialTolerance);
  EXPECT_TRUE(co.passed) << "partial_out: " << co.describe();
  // lse: -inf exactly where the split is empty, close elsewhere.
  ASSERT_EQ(got_lse.size(), want.lse.size());
  size_t bad = 0;
  for (size_t i = 0; i < want.lse.size(); ++i) {
    if (std::isinf(want.lse[i])) {
      bad += !(std::isinf(got_lse[i]) && got_lse[i] < 0);
    } else {
      bad += !(std::fabs(got_lse[i] - want.lse[i]) <= 1e-4 + 1e-5 * std::fabs(want.lse[i]));  // also catches NaN
    }
  }
  EXPECT_EQ(bad, 0u) << "partial_lse elements wrong or unwritten, of " << want.lse.size();
}

class DecodeAttentionGpu : public ::testing::TestWithParam<Case> {};

TEST_P(DecodeAttentionGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  const uint64_t seed = std::hash<std::string>{}(c.name) ^ std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));  // inputs are fresh each run; a failure names its seed
  const Problem pb(c, seed);
  int planned = c.num_splits;
  if (planned == 0) {
    const int64_t total = std::accumulate(c.lens.begin(), c.lens.end(), int64_t{0});
    const int64_t max_len = *std::max_element(c.lens.begin(), c.lens.end());
    planned = plan_decode_splits({pb.num_seqs, c.num_kv_heads, max_len, total, query_device(0).num_sms}).num_splits;
  }
  const Tolerance tol = testing::tolerance_for(c.dtype);

  for (bool paged : {false, true}) {
    for (int splits : {1, planned}) {
      SCOPED_TRACE(std::string(paged ? "paged" : "contiguous") + ", num_splits " + std::to_string(splits));
      DeviceRun r(pb, paged, splits);
      std::vector<double> want;
      DecodePartialsRef want_parts;
      Status s;
      if (paged) {
        PagedDecodeAttentionParams p;
        fill_common(p, pb, r, splits);
        p.num_blocks = pb.num_blocks;
        p.tokens_per_block = c.tokens_per_block;
        p.max_blocks_per_seq = pb.max_blocks;
        p.block_table = r.table.get();
        s = launch_paged_decode_attention(p, nullptr);
        PagedDecodeAttentionParams h = on_host(p, pb, true);
        h.block_table = pb.table.data();
        want = paged_decode_attention_ref(h);
        if (splits > 1) want_parts = paged_decode_attention_partials_ref(h);
      } else {
        DecodeAttentionParams p;
        fill_common(p, pb, r, splits);
        p.max_seq_len = pb.max_seq_len;
        s = launch_decode_attention(p, nullptr);
        const DecodeAttentionParams h = on_host(p, pb, false);
        want = decode_attention_ref(h);
        if (splits > 1) want_parts = decode_attention_partials_ref(h);
      }
      ASSERT_TRUE(s.ok()) << s.describe();
      const testing::Comparison cmp = testing::compare(testing::as_float(c.dtype, r.out.download()), want, tol);
      EXPECT_TRUE(cmp.passed) << cmp.describe();
      if (splits > 1) expect_partials_match(r, want_parts);
      if (splits == 1) {
        // Unsplit runs leave the workspace alone: still all poison.
        const std::vector<float> untouched = r.partial_lse.download();
        EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](float x) { return std::isnan(x); }));
      }
    }
  }
}

constexpr ElemType kBf16 = ElemType::kBF16;
constexpr ElemType kFp16 = ElemType::kFP16;

INSTANTIATE_TEST_SUITE_P(
    Shapes, DecodeAttentionGpu,
    ::testing::Values(
        // name, dtype, head_dim, q heads, kv heads, lens, tokens_per_block, splits
        Case{"Batch1Context1_Mha7_d128_bf16", kBf16, 128, 7, 7, {1}, 16, 1},
        Case{"Mha7_d64_fp16_Mixed", kFp16, 64, 7, 7, {1, 5, 40, 300}, 8, 4},
        Case{"Gqa3x3_d64_fp16_Block8Edges", kFp16, 64, 9, 3, {7, 8, 9, 1, 64}, 8, 3},
        Case{"Gqa3x3_d128_bf16_Block16Edges", kBf16, 128, 9, 3, {15, 16, 17, 33}, 16, 2},
        Case{"Gqa32x8_d128_bf16_Block32Edges", kBf16, 128, 32, 8, {31, 32, 33, 511, 512, 513}, 32, 5},
        Case{"Gqa32x8_d128_fp16_Block64Edges", kFp16, 128, 32, 8, {63, 64, 65, 1000}, 64, 0},
        Case{"Gqa10x2_d256_bf16_Block128Edges", kBf16, 256, 10, 2, {127, 128, 129, 2}, 128, 3},
        Case{"Gqa8x4_d256_fp16", kFp16, 256, 8, 4, {1, 2, 3, 250}, 16, 7},
        Case{"Mqa16_d128_bf16_TwoTiles", kBf16, 128, 16, 1, {33, 64, 65}, 16, 2},
        Case{"Mqa12_d64_fp16_UnevenTiles", kFp16, 64, 12, 1, {100, 1}, 32, 3},
        Case{"Mqa1_d256_bf16", kBf16, 256, 1, 1, {1, 129}, 64, 2},
        Case{"EmptySplitsShortSeqs_d128_fp16", kFp16, 128, 8, 2, {1, 3, 700}, 16, 8},
        Case{"LongContext33000_d128_bf16_Planned", kBf16, 128, 32, 8, {33000}, 16, 0},
        Case{"LongContext33000_d128_fp16_Mixed", kFp16, 128, 8, 8, {33000, 17, 4096}, 128, 0},
        Case{"LongContext33000_d64_bf16_64Splits", kBf16, 64, 4, 1, {33000}, 32, 64}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

TEST(DecodeAttentionGpuCombine, MergesPartialsIncludingEmptySplits) {
  KVPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int num_seqs = 3, num_splits = 5, num_q_heads = 3, head_dim = 64;
  std::uniform_real_distribution<float> u(-1.f, 1.f), l(-3.f, 3.f);
  std::vector<float> parts(static_cast<size_t>(decode_partial_out_elems(num_seqs, num_splits, num_q_heads, head_dim)));
  std::vector<float> lse(static_cast<size_t>(decode_partial_lse_elems(num_seqs, num_splits, num_q_heads)));
  for (float& x : parts) x = u(rng);
  for (float& x : lse) x = l(rng);
  // Sequence 1: splits 2.. empty (short sequence); partials there are NaN, which must not leak.
  for (int sp = 2; sp < num_splits; ++sp) {
    for (int h = 0; h < num_q_heads; ++h) {
      const size_t at = (size_t(1) * num_splits + sp) * num_q_heads + h;
      lse[at] = -INFINITY;
      std::fill_n(parts.begin() + at * head_dim, head_dim, NAN);
    }
  }
  // Sequence 2: every split empty (context 0): output 0.
  for (int sp = 0; sp < num_splits; ++sp) {
    for (int h = 0; h < num_q_heads; ++h) lse[(size_t(2) * num_splits + sp) * num_q_heads + h] = -INFINITY;
  }
  for (ElemType t : {kBf16, kFp16}) {
    DeviceBuffer<float> d_parts(parts), d_lse(lse);
    DeviceBuffer<uint16_t> d_out(size_t(num_seqs) * num_q_heads * head_dim);
    d_out.poison();
    DecodeCombineParams p;
    p.dtype = t;
    p.num_seqs = num_seqs;
    p.num_splits = num_splits;
    p.num_q_heads = num_q_heads;
    p.head_dim = head_dim;
    p.partial_out = d_parts.get();
    p.partial_lse = d_lse.get();
    p.out = d_out.get();
    const Status s = launch_decode_attention_combine(p, nullptr);
    ASSERT_TRUE(s.ok()) << s.describe();
    DecodeCombineParams h = p;
    h.partial_out = parts.data();
    h.partial_lse = lse.data();
    h.out = nullptr;
    const std::vector<double> want = decode_attention_combine_ref(h);
    const testing::Comparison cmp = testing::compare(testing::as_float(t, d_out.download()), want, testing::tolerance_for(t));
    EXPECT_TRUE(cmp.passed) << cmp.describe();
  }
}

TEST(DecodeAttentionGpuParams, RejectsBadParamsWithoutLaunching) {
  // Params checks run before any CUDA call, so they need no device.
  DecodeAttentionParams p;
  EXPECT_EQ(launch_decode_attention(p, nullptr).call(), "params");  // everything missing
  alignas(16) static uint16_t buf[1024];
  static int32_t lens[1] = {1};
  p.num_seqs = 1;
  p.num_q_heads = 6;
  p.num_kv_heads = 4;  // does not divide 6
  p.head_dim = 128;
  p.max_seq_len = 4;
  p.softmax_scale = 0.1f;
  p.q = p.k_cache = p.v_cache = buf;
  p.out = buf;
  p.context_lens = lens;
  Status s = launch_decode_attention(p, nullptr);
  EXPECT_EQ(s.call(), "params");
  EXPECT_NE(s.message().find("num_kv_heads=4 must divide num_q_heads=6"), std::string::npos) << s.describe();
  p.num_kv_heads = 2;
  p.head_dim = 96;
  s = launch_decode_attention(p, nullptr);
  EXPECT_NE(s.message().find("head_dim=96"), std::string::npos) << s.describe();
  p.head_dim = 128;
  p.num_splits = 4;  // no workspace
  EXPECT_EQ(launch_decode_attention(p, nullptr).call(), "params");
  p.num_splits = 1;
  p.k_cache = buf + 1;  // misaligned
  EXPECT_EQ(launch_decode_attention(p, nullptr).call(), "params");

  PagedDecodeAttentionParams pp;
  pp.num_seqs = 1;
  pp.num_q_heads = pp.num_kv_heads = 2;
  pp.head_dim = 64;
  pp.softmax_scale = 0.1f;
  pp.q = pp.k_cache = pp.v_cache = buf;
  pp.out = buf;
  pp.context_lens = lens;
  pp.block_table = lens;
  pp.num_blocks = 1;
  pp.max_blocks_per_seq = 1;
  pp.tokens_per_block = 24;  // not a power of two
  s = launch_paged_decode_attention(pp, nullptr);
  EXPECT_NE(s.message().find("tokens_per_block=24"), std::string::npos) << s.describe();
}

}  // namespace
}  // namespace kvplan::kernels
