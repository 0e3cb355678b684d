// Sliding-window and StreamingLLM decode kernel (window_attention.h) against its CPU reference: fresh
// random inputs, poisoned outputs and partials, every element checked, per-dtype tolerances. The
// block table entries of blocks holding no attended token are set to -1 (an engine may free them):
// reading one would fault or show as a mismatch. Shapes: batch 1, context 1, windows crossing
// blocks, window = block size +-1, lengths at block boundaries +-1, odd head counts, groups above
// one CTA's tile, mixed lengths, splits, sinks longer than the context, partial rotary.
#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/reference/window_attention_ref.h"
#include "kvplan/kernels/window_attention.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;

struct Case {
  std::string name;
  ElemType dtype;
  int head_dim, num_q_heads, num_kv_heads;
  std::vector<int32_t> lens;
  int tokens_per_block;
  int window_tokens, sink_tokens, rotary_dim;
  int num_splits;
};
std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

class WindowAttentionGpu : public ::testing::TestWithParam<Case> {};

TEST_P(WindowAttentionGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  KVPLAN_FRESH_RNG(rng, c.name);
  const int num_seqs = static_cast<int>(c.lens.size());
  const int tpb = c.tokens_per_block;
  const int max_blocks = (*std::max_element(c.lens.begin(), c.lens.end()) + tpb) / tpb + 1;
  const int num_blocks = num_seqs * max_blocks + 3;
  const size_t block_elems = size_t(c.num_kv_heads) * tpb * c.head_dim;
  // Every pool element random (unused blocks and tail slots included).
  const std::vector<uint16_t> q = testing::random_bits(c.dtype, size_t(num_seqs) * c.num_q_heads * c.head_dim, rng, -4.f, 4.f);
  const std::vector<uint16_t> k = testing::random_bits(c.dtype, block_elems * num_blocks, rng);
  const std::vector<uint16_t> v = testing::random_bits(c.dtype, block_elems * num_blocks, rng);
  std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> table(perm.begin(), perm.begin() + size_t(num_seqs) * max_blocks);
  size_t freed = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const WindowSpan span = window_span(c.lens[s], c.sink_tokens, c.window_tokens);
    std::vector<bool> used(static_cast<size_t>(max_blocks), false);
    for (int i = 0; i < span.count; ++i) used[static_cast<size_t>(window_token(span, i) / tpb)] = true;
    for (int b = 0; b < max_blocks; ++b) {
      if (!used[static_cast<size_t>(b)]) {
        table[size_t(s) * max_blocks + b] = -1;
        ++freed;
      }
    }
  }

  WindowDecodeParams p;
  p.dtype = c.dtype;
  p.num_seqs = num_seqs;
  p.num_q_heads = c.num_q_heads;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.num_blocks = num_blocks;
  p.tokens_per_block = tpb;
  p.max_blocks_per_seq = max_blocks;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.window_tokens = c.window_tokens;
  p.sink_tokens = c.sink_tokens;
  p.rotary_dim = c.rotary_dim;
  p.rope_theta = 10000.f;
  p.num_splits = c.num_splits;

  WindowDecodeParams h = p;
  h.q = q.data();
  h.k_cache = k.data();
  h.v_cache = v.data();
  h.block_table = table.data();
  h.context_lens = c.lens.data();
  const std::vector<double> want = window_decode_attention_ref(h);

  DeviceBuffer<uint16_t> dq(q), dk(k), dv(v), out(want.size());
  DeviceBuffer<int32_t> dtable(table), dlens(c.lens);
  DeviceBuffer<float> pout(size_t(num_seqs) * c.num_splits * c.num_q_heads * c.head_dim);
  DeviceBuffer<float> plse(size_t(num_seqs) * c.num_splits * c.num_q_heads);
  out.poison();
  pout.poison();
  plse.poison();
  p.q = dq.get();
  p.k_cache = dk.get();
  p.v_cache = dv.get();
  p.block_table = dtable.get();
  p.context_lens = dlens.get();
  p.out = out.get();
  p.partial_out = pout.get();
  p.partial_lse = plse.get();
  const Status s = launch_window_decode_attention(p, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  const testing::Comparison cmp = testing::compare(testing::as_float(c.dtype, out.download()), want, testing::tolerance_for(c.dtype));
  EXPECT_TRUE(cmp.passed) << cmp.describe() << " (" << freed << " table entries freed)";
}

const ElemType kB = ElemType::kBF16;
const ElemType kH = ElemType::kFP16;

INSTANTIATE_TEST_SUITE_P(
    Shapes, WindowAttentionGpu,
    ::testing::Values(
        // Sliding window (no sinks, no rotary).
        Case{"bf16_d128_batch1_context1", kB, 128, 8, 2, {1}, 16, 4, 0, 0, 1},
        Case{"fp16_d128_window_crosses_blocks", kH, 128, 8, 2, {100}, 16, 37, 0, 0, 1},
        Case{"bf16_d64_window_block_minus1", kB, 64, 4, 4, {161, 160, 159}, 16, 15, 0, 0, 1},
        Case{"bf16_d64_window_block_plus1", kB, 64, 4, 4, {161, 160, 159}, 16, 17, 0, 0, 1},
        Case{"fp16_d256_window_equals_block", kH, 256, 16, 8, {64, 65, 63}, 32, 32, 0, 0, 1},
        Case{"bf16_d128_window_longer_than_context", kB, 128, 9, 3, {5, 40, 1}, 8, 64, 0, 0, 1},
        Case{"fp16_d128_mha7_mixed", kH, 128, 7, 7, {300, 1, 17, 129}, 64, 100, 0, 0, 1},
        Case{"bf16_d128_group16_split3", kB, 128, 16, 1, {2000, 513}, 16, 700, 0, 0, 3},
        Case{"fp16_d64_split5_short_window", kH, 64, 6, 2, {1000, 3}, 128, 9, 0, 0, 5},
        // StreamingLLM: sinks + window, rotary at cache positions.
        Case{"bf16_d128_sinks4_window16_rope", kB, 128, 8, 2, {200, 20, 19, 3}, 16, 16, 4, 128, 1},
        Case{"fp16_d128_sinks4_window16_rope", kH, 128, 8, 2, {200, 20, 21, 1}, 16, 16, 4, 128, 1},
        Case{"fp16_d256_partial_rotary64_split3", kH, 256, 4, 2, {900, 50}, 32, 300, 4, 64, 3},
        Case{"bf16_d64_sinks_over_block_rope", kB, 64, 3, 3, {130, 17, 16}, 8, 33, 9, 64, 1},
        Case{"fp16_d128_sinks_only_no_rotary", kH, 128, 4, 1, {77}, 16, 5, 3, 0, 1},
        Case{"bf16_d128_group12_rope_split2", kB, 128, 12, 1, {511, 512, 513}, 32, 200, 2, 32, 2}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

TEST(WindowAttentionParams, RejectsBadInput) {
  WindowDecodeParams p;  // every pointer null
  p.dtype = ElemType::kBF16;
  p.num_seqs = 1;
  p.num_q_heads = 4;
  p.num_kv_heads = 2;
  p.head_dim = 128;
  p.num_blocks = 1;
  p.tokens_per_block = 16;
  p.max_blocks_per_seq = 1;
  p.softmax_scale = 0.1f;
  p.window_tokens = 8;
  EXPECT_FALSE(launch_window_decode_attention(p, nullptr).ok());  // null pointers
  p.window_tokens = 0;
  EXPECT_NE(launch_window_decode_attention(p, nullptr).message().find("window_tokens"), std::string::npos);
  p.window_tokens = 8;
  p.rotary_dim = 24;
  EXPECT_NE(launch_window_decode_attention(p, nullptr).message().find("rotary_dim"), std::string::npos);
}

}  // namespace
}  // namespace kvplan::kernels
