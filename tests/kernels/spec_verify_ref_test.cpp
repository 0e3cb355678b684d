// CPU reference of speculative verification: a two-query case by hand, num_draft = 0 equal to paged
// decode over context + 1 tokens, every query j equal to paged decode over context + j + 1 tokens,
// and no draft token seeing a later one (perturb later draft K/V: earlier outputs bit-identical).
#include "kvplan/kernels/reference/spec_verify_ref.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"
#include "kvplan/kernels/reference/decode_attention_ref.h"

namespace kvplan::kernels {
namespace {

constexpr double kW = 0.2689414213699951;  // 1 / (1 + e)

// A paged GQA cache whose sequence s holds lens[s] + num_draft + 1 tokens (context + query tokens),
// blocks in a shuffled order, every slot random.
struct VerifyProblem {
  SpecVerifyParams p;
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> table, lens;
  VerifyProblem(ElemType t, int q_heads, int kv_heads, int d, int tpb, int draft, std::vector<int32_t> context,
                uint64_t seed)
      : lens(std::move(context)) {
    std::mt19937_64 rng(seed);
    const int seqs = static_cast<int>(lens.size());
    const int max_total = *std::max_element(lens.begin(), lens.end()) + draft + 1;
    const int max_blocks = (max_total + tpb - 1) / tpb;
    const int num_blocks = seqs * max_blocks + 3;
    std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    table.assign(perm.begin(), perm.begin() + size_t(seqs) * max_blocks);
    q = testing::random_bits(t, size_t(seqs) * (draft + 1) * q_heads * d, rng, -2.f, 2.f);
    k = testing::random_bits(t, size_t(num_blocks) * kv_heads * tpb * d, rng);
    v = testing::random_bits(t, k.size(), rng);
    p.dtype = t;
    p.num_seqs = seqs;
    p.num_draft = draft;
    p.num_q_heads = q_heads;
    p.num_kv_heads = kv_heads;
    p.head_dim = d;
    p.num_blocks = num_blocks;
    p.tokens_per_block = tpb;
    p.max_blocks_per_seq = max_blocks;
    p.softmax_scale = 0.6f;
    p.q = q.data();
    p.k_cache = k.data();
    p.v_cache = v.data();
    p.block_table = table.data();
    p.context_lens = lens.data();
  }
  // Element offset of position `pos` of sequence s, KV head h.
  size_t row(int s, int h, int pos) const {
    const size_t block = static_cast<size_t>(table[size_t(s) * p.max_blocks_per_seq + pos / p.tokens_per_block]);
    return ((block * p.num_kv_heads + h) * p.tokens_per_block + pos % p.tokens_per_block) * p.head_dim;
  }
  // Paged decode of query token j alone over context + j + 1 tokens.
  std::vector<double> decode_of_query(int j) const {
    std::vector<uint16_t> qj;
    const size_t per = size_t(p.num_q_heads) * p.head_dim;
    for (int s = 0; s < p.num_seqs; ++s) {
      const auto from = q.begin() + static_cast<long>((size_t(s) * (p.num_draft + 1) + j) * per);
      qj.insert(qj.end(), from, from + static_cast<long>(per));
    }
    std::vector<int32_t> visible(lens);
    for (int32_t& x : visible) x += j + 1;
    PagedDecodeAttentionParams d;
    d.dtype = p.dtype;
    d.num_seqs = p.num_seqs;
    d.num_q_heads = p.num_q_heads;
    d.num_kv_heads = p.num_kv_heads;
    d.head_dim = p.head_dim;
    d.num_blocks = p.num_blocks;
    d.tokens_per_block = p.tokens_per_block;
    d.max_blocks_per_seq = p.max_blocks_per_seq;
    d.softmax_scale = p.softmax_scale;
    d.q = qj.data();
    d.k_cache = p.k_cache;
    d.v_cache = p.v_cache;
    d.block_table = p.block_table;
    d.context_lens = visible.data();
    return paged_decode_attention_ref(d);
  }
};

TEST(SpecVerifyRef, TwoQueriesByHand) {
  // Context 1, num_draft 1, one head, head_dim 2, 2 tokens per block: positions 0 (context), 1
  // (query 0), 2 (query 1). k = [1,0], [0,1], [1,1]; v = [1,2], [3,-1], [5,8].
  // Query 0, q = [1, 0], scale 1: sees positions 0..1, scores 1, 0 -> [1 + 2 kW, 2 - 3 kW].
  // Query 1, q = [0, 0]: sees 0..2 with equal weights -> the mean [3, 3].
  VerifyProblem pb(ElemType::kBF16, 1, 1, 2, 2, 1, {1}, 3);
  pb.p.softmax_scale = 1.f;
  const float kv[3][2][2] = {{{1, 0}, {1, 2}}, {{0, 1}, {3, -1}}, {{1, 1}, {5, 8}}};
  for (int pos = 0; pos < 3; ++pos) {
    for (int i = 0; i < 2; ++i) {
      pb.k[pb.row(0, 0, pos) + i] = float_to_bf16(kv[pos][0][i]);
      pb.v[pb.row(0, 0, pos) + i] = float_to_bf16(kv[pos][1][i]);
    }
  }
  pb.q = {float_to_bf16(1), float_to_bf16(0), float_to_bf16(0), float_to_bf16(0)};
  pb.p.q = pb.q.data();
  const std::vector<double> out = spec_verify_ref(pb.p);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_NEAR(out[0], 1 + 2 * kW, 1e-12);
  EXPECT_NEAR(out[1], 2 - 3 * kW, 1e-12);
  EXPECT_NEAR(out[2], 3.0, 1e-12);
  EXPECT_NEAR(out[3], 3.0, 1e-12);
}

TEST(SpecVerifyRef, NoDraftEqualsPagedDecodeOverContextPlusOne) {
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    VerifyProblem pb(t, 6, 2, 8, 4, 0, {0, 3, 4, 9}, 11);
    EXPECT_EQ(spec_verify_ref(pb.p), pb.decode_of_query(0));
  }
}

TEST(SpecVerifyRef, EachQuerySeesContextPlusDraftUpToItself) {
  VerifyProblem pb(ElemType::kBF16, 4, 4, 8, 4, 4, {5, 1, 7}, 12);  // tokens_per_block 4: drafts cross blocks
  const std::vector<double> got = spec_verify_ref(pb.p);
  const size_t per = size_t(pb.p.num_q_heads) * pb.p.head_dim;
  for (int j = 0; j <= 4; ++j) {
    const std::vector<double> want = pb.decode_of_query(j);
    for (int s = 0; s < 3; ++s) {
      for (size_t i = 0; i < per; ++i) {
        ASSERT_EQ(got[(size_t(s) * 5 + j) * per + i], want[size_t(s) * per + i]) << "seq " << s << " query " << j;
      }
    }
  }
}

TEST(SpecVerifyRef, NoDraftTokenSeesALaterOne) {
  VerifyProblem pb(ElemType::kFP16, 4, 2, 8, 2, 3, {3, 6}, 13);
  const std::vector<double> base = spec_verify_ref(pb.p);
  const size_t per = size_t(pb.p.num_q_heads) * pb.p.head_dim;
  for (int later = 1; later <= 3; ++later) {  // perturb query token `later`'s K and V in every sequence
    VerifyProblem changed = pb;
    changed.p.q = changed.q.data();
    changed.p.k_cache = changed.k.data();
    changed.p.v_cache = changed.v.data();
    changed.p.block_table = changed.table.data();
    changed.p.context_lens = changed.lens.data();
    for (int s = 0; s < 2; ++s) {
      for (int h = 0; h < 2; ++h) {
        const size_t r = changed.row(s, h, changed.lens[s] + later);
        for (int i = 0; i < 8; ++i) {
          changed.k[r + i] = float_to_fp16(3.f);
          changed.v[r + i] = float_to_fp16(-7.f);
        }
      }
    }
    const std::vector<double> got = spec_verify_ref(changed.p);
    for (int s = 0; s < 2; ++s) {
      for (int j = 0; j <= 3; ++j) {
        const auto a = base.begin() + static_cast<long>((size_t(s) * 4 + j) * per);
        const auto b = got.begin() + static_cast<long>((size_t(s) * 4 + j) * per);
        const bool same = std::equal(a, a + static_cast<long>(per), b);
        if (j < later) {
          EXPECT_TRUE(same) << "query " << j << " saw draft token " << later;
        } else {
          EXPECT_FALSE(same) << "query " << j << " did not see token " << later;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvplan::kernels
