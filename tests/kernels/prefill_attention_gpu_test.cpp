// launch_prefill_attention against the CPU reference: fresh random inputs every run (seed printed on
// failure), poisoned outputs, every element compared under per-dtype tolerances, NaN/unwritten check.
// Shapes: batch 1, 1-token sequences, lengths on query/key tile boundaries +-1, odd and grouped head
// counts, mixed lengths in one batch, chunked prefill with prefixes crossing block boundaries.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/prefill_attention.h"
#include "kvplan/kernels/reference/prefill_attention_ref.h"

namespace kvplan::kernels {
namespace {

using testing::as_float;
using testing::Comparison;
using testing::compare;
using testing::DeviceBuffer;
using testing::random_bits;
using testing::tolerance_for;

struct SeqSpec {
  int new_len;
  int prefix_len;
};

struct PrefillCase {
  std::string name;
  ElemType dtype;
  int head_dim;
  int num_q_heads;
  int num_kv_heads;
  int tokens_per_block;
  std::vector<SeqSpec> seqs;
  float softmax_scale = 0.f;  // 0: 1 / sqrt(head_dim)
};

// Host inputs of one problem; params() points into them (host pointers, for the reference).
struct HostProblem {
  std::vector<uint16_t> q, k, v, k_cache, v_cache;
  std::vector<int32_t> cu_seqlens, prefix_lens, block_table;
  std::vector<int32_t> unused_blocks;  // cache blocks no table entry names
  PrefillAttentionParams shape;        // scalar fields only

  PrefillAttentionParams params() const {
    PrefillAttentionParams p = shape;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.cu_seqlens = cu_seqlens.data();
    p.out = reinterpret_cast<uint16_t*>(16);  // the reference ignores out
    if (!prefix_lens.empty()) {
      p.prefix_lens = prefix_lens.data();
      p.k_cache = k_cache.data();
      p.v_cache = v_cache.data();
      p.block_table = block_table.data();
    }
    return p;
  }
};

HostProblem make_problem(const PrefillCase& c, std::mt19937_64& rng) {
  HostProblem h;
  PrefillAttentionParams& s = h.shape;
  s.dtype = c.dtype;
  s.num_seqs = static_cast<int>(c.seqs.size());
  s.num_q_heads = c.num_q_heads;
  s.num_kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.softmax_scale = c.softmax_scale > 0.f ? c.softmax_scale : 1.f / std::sqrt(static_cast<float>(c.head_dim));
  h.cu_seqlens.push_back(0);
  bool any_prefix = false;
  int max_blocks = 1, used_blocks = 0;
  for (const SeqSpec& q : c.seqs) {
    h.cu_seqlens.push_back(h.cu_seqlens.back() + q.new_len);
    s.max_seqlen_q = std::max(s.max_seqlen_q, q.new_len);
    any_prefix |= q.prefix_len > 0;
    const int blocks = (q.prefix_len + c.tokens_per_block - 1) / c.tokens_per_block;
    max_blocks = std::max(max_blocks, blocks);
    used_blocks += blocks;
  }
  s.total_q_tokens = h.cu_seqlens.back();
  const size_t d = static_cast<size_t>(c.head_dim);
  h.q = random_bits(c.dtype, static_cast<size_t>(s.total_q_tokens) * c.num_q_heads * d, rng);
  h.k = random_bits(c.dtype, static_cast<size_t>(s.total_q_tokens) * c.num_kv_heads * d, rng);
  h.v = random_bits(c.dtype, h.k.size(), rng);
  if (any_prefix) {
    s.tokens_per_block = c.tokens_per_block;
    s.max_blocks_per_seq = max_blocks;
    s.num_blocks = used_blocks + 3;  // spare blocks with random contents that must never be read
    h.k_cache = random_bits(c.dtype, static_cast<size_t>(s.num_blocks) * c.num_kv_heads * c.tokens_per_block * d, rng);
    h.v_cache = random_bits(c.dtype, h.k_cache.size(), rng);
    std::vector<int32_t> perm(static_cast<size_t>(s.num_blocks));
    for (int i = 0; i < s.num_blocks; ++i) perm[static_cast<size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    h.block_table.assign(static_cast<size_t>(s.num_seqs) * max_blocks, -1);  // -1: never read
    size_t next = 0;
    for (int i = 0; i < s.num_seqs; ++i) {
      h.prefix_lens.push_back(c.seqs[static_cast<size_t>(i)].prefix_len);
      const int blocks = (h.prefix_lens.back() + c.tokens_per_block - 1) / c.tokens_per_block;
      for (int b = 0; b < blocks; ++b) h.block_table[static_cast<size_t>(i) * max_blocks + b] = perm[next++];
    }
    h.unused_blocks.assign(perm.begin() + static_cast<long>(next), perm.end());
  }
  return h;
}

// DeviceBuffer uploads from a vector; an unused (empty) array still gets a one-element buffer.
template <typename T>
std::vector<T> or_one(const std::vector<T>& v) {
  return v.empty() ? std::vector<T>(1) : v;
}

struct DeviceProblem {
  DeviceBuffer<uint16_t> q, k, v, k_cache, v_cache, out;
  DeviceBuffer<int32_t> cu_seqlens, prefix_lens, block_table;
  bool has_prefix;

  explicit DeviceProblem(const HostProblem& h)
      : q(or_one(h.q)), k(or_one(h.k)), v(or_one(h.v)), k_cache(or_one(h.k_cache)), v_cache(or_one(h.v_cache)),
        out(h.q.size()), cu_seqlens(h.cu_seqlens), prefix_lens(or_one(h.prefix_lens)),
        block_table(or_one(h.block_table)), has_prefix(!h.prefix_lens.empty()) {}

  PrefillAttentionParams params(const PrefillAttentionParams& shape) {
    PrefillAttentionParams p = shape;
    p.q = q.get();
    p.k = k.get();
    p.v = v.get();
    p.out = out.get();
    p.cu_seqlens = cu_seqlens.get();
    if (has_prefix) {
      p.prefix_lens = prefix_lens.get();
      p.k_cache = k_cache.get();
      p.v_cache = v_cache.get();
      p.block_table = block_table.get();
    }
    return p;
  }

  // Poisons out, launches, returns out.
  std::vector<uint16_t> run(const PrefillAttentionParams& shape) {
    out.poison();
    const Status s = launch_prefill_attention(params(shape), nullptr);
    EXPECT_TRUE(s.ok()) << s.describe();
    return out.download();
  }
};

class PrefillAttentionGpu : public ::testing::TestWithParam<PrefillCase> {};

TEST_P(PrefillAttentionGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const PrefillCase& c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const HostProblem h = make_problem(c, rng);
  const std::vector<double> ref = prefill_attention_ref(h.params());
  DeviceProblem d(h);
  const std::vector<uint16_t> out = d.run(h.shape);
  const Comparison cmp = compare(as_float(c.dtype, out), ref, tolerance_for(c.dtype));
  EXPECT_TRUE(cmp.passed) << cmp.describe();
}

// Lengths around both tile sizes: query tile kPrefillTileQ, key tile kPrefillTileKV, and 64.
std::vector<SeqSpec> tile_boundary_lengths() {
  std::vector<SeqSpec> s;
  for (int base : {kPrefillTileQ, kPrefillTileKV, 64})
    for (int delta : {-1, 0, 1}) s.push_back({base + delta, 0});
  return s;
}

std::vector<PrefillCase> cases() {
  const ElemType bf = ElemType::kBF16, fp = ElemType::kFP16;
  std::vector<PrefillCase> c = {
      {"batch1_len1_bf16_d64", bf, 64, 1, 1, 16, {{1, 0}}},
      {"batch1_len1_fp16_d256", fp, 256, 2, 1, 16, {{1, 0}}},
      {"odd_heads_mha_bf16_d128", bf, 128, 7, 7, 16, {{5, 0}, {40, 0}}},
      {"gqa_6_3_fp16_d64", fp, 64, 6, 3, 16, {{33, 0}}},
      {"mqa_8_1_bf16_d64", bf, 64, 8, 1, 16, {{100, 0}}},
      {"gqa_5_1_fp16_d256_mixed", fp, 256, 5, 1, 16, {{17, 0}, {2, 0}, {1, 0}}},
      {"long_bf16_d128", bf, 128, 2, 1, 16, {{300, 0}}},
      {"peaky_softmax_fp16_d64", fp, 64, 2, 2, 16, {{70, 0}}, 2.0f},
      {"empty_sequence_in_batch_bf16_d64", bf, 64, 2, 1, 16, {{0, 5}, {7, 0}, {0, 0}, {3, 17}}},
      // Chunked prefill: prefixes one below, at and above block boundaries, chunks of every size.
      {"chunked_bf16_d128_tpb16", bf, 128, 4, 2, 16, {{1, 15}, {5, 16}, {17, 17}, {40, 33}, {16, 1}, {3, 64}}},
      {"chunked_fp16_d64_tpb16", fp, 64, 3, 1, 16, {{33, 31}, {1, 32}, {64, 47}}},
      {"chunked_bf16_d256_tpb8_mixed", bf, 256, 2, 2, 8, {{20, 23}, {1, 8}, {33, 0}}},
      {"chunked_long_fp16_d64", fp, 64, 2, 1, 16, {{130, 200}}},
      {"chunked_tpb1_fp16_d128", fp, 128, 4, 4, 1, {{9, 5}, {2, 1}}},
  };
  for (ElemType t : {bf, fp})
    for (int d : {64, 128, 256})
      c.push_back({std::string("tile_boundaries_") + (t == bf ? "bf16" : "fp16") + "_d" + std::to_string(d), t, d, 4, 2, 16,
                   tile_boundary_lengths()});
  return c;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PrefillAttentionGpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PrefillCase>& i) { return i.param.name; });

// Perturbing token j's new K/V leaves every earlier row bit-identical (and changes row j); changing
// cache blocks no block-table entry names changes nothing.
TEST(PrefillAttentionGpuMask, NoQueryAttendsToAFutureToken) {
  KVPLAN_REQUIRE_GPU();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const PrefillCase c{"mask", ElemType::kBF16, 64, 4, 2, 16, {{50, 20}}};
  HostProblem h = make_problem(c, rng);
  const std::vector<uint16_t> base = DeviceProblem(h).run(h.shape);
  const size_t row = static_cast<size_t>(c.num_q_heads) * c.head_dim;
  const size_t kv_row = static_cast<size_t>(c.num_kv_heads) * c.head_dim;
  for (int j : {1, kPrefillTileQ, kPrefillTileKV + 1, 49}) {
    HostProblem p = h;
    for (size_t e = 0; e < kv_row; ++e) {
      p.k[j * kv_row + e] = to_bits(c.dtype, 0.9375f);
      p.v[j * kv_row + e] = to_bits(c.dtype, -0.9375f);
    }
    const std::vector<uint16_t> out = DeviceProblem(p).run(p.shape);
    for (size_t i = 0; i < static_cast<size_t>(j) * row; ++i)
      ASSERT_EQ(out[i], base[i]) << "token " << j << " leaked into element " << i;
    bool changed = false;
    for (size_t i = j * row; i < (j + 1) * row; ++i) changed |= out[i] != base[i];
    EXPECT_TRUE(changed) << "token " << j << " does not see itself";
  }
  // Blocks outside the table: rewrite them, the output must not move.
  HostProblem p = h;
  const size_t block = static_cast<size_t>(c.num_kv_heads) * c.tokens_per_block * c.head_dim;
  ASSERT_FALSE(p.unused_blocks.empty());
  for (int32_t b : p.unused_blocks)
    for (size_t e = 0; e < block; ++e) {
      p.k_cache[b * block + e] = to_bits(c.dtype, 0.5f);
      p.v_cache[b * block + e] = to_bits(c.dtype, 0.5f);
    }
  EXPECT_EQ(DeviceProblem(p).run(p.shape), base);
}

// The launcher's host-side checks. They return before any CUDA call, so this runs without a GPU.
TEST(PrefillAttentionLaunch, RejectsBadParamsBeforeLaunching) {
  const auto* fake = reinterpret_cast<const uint16_t*>(uintptr_t{256});
  const auto* fake_i = reinterpret_cast<const int32_t*>(uintptr_t{256});
  PrefillAttentionParams ok;
  ok.q = ok.k = ok.v = fake;
  ok.out = reinterpret_cast<uint16_t*>(uintptr_t{512});
  ok.cu_seqlens = fake_i;
  ok.num_seqs = 1;
  ok.total_q_tokens = 0;  // empty batch: valid, nothing launched
  ok.max_seqlen_q = 0;
  ok.num_q_heads = 4;
  ok.num_kv_heads = 2;
  ok.head_dim = 128;
  ok.softmax_scale = 0.125f;
  EXPECT_TRUE(launch_prefill_attention(ok, nullptr).ok());

  auto rejected = [](const PrefillAttentionParams& p) {
    const Status s = launch_prefill_attention(p, nullptr);
    return !s.ok() && s.call() == "params";
  };
  PrefillAttentionParams p = ok;
  p.head_dim = 96;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.num_kv_heads = 3;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.q = reinterpret_cast<const uint16_t*>(uintptr_t{258});  // not 16-byte aligned
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.prefix_lens = fake_i;  // prefix without cache
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.softmax_scale = 0.f;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.cu_seqlens = nullptr;
  EXPECT_TRUE(rejected(p));
}

}  // namespace
}  // namespace kvplan::kernels
