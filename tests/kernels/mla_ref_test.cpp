// CPU references of MLA: a two-token decode by hand (the rope part scores, only the latent is
// averaged), fp8 latent equal to the 16-bit one on exactly representable values, the absorption
// identity checked numerically against the non-absorbed computation with explicit W_UK / W_UV
// (through the prefill reference), split + combine == unsplit, and causal prefill by hand.
#include "kvplan/kernels/reference/mla_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"

namespace kvplan::kernels {
namespace {

constexpr double kW = 0.2689414213699951;  // 1 / (1 + e)

std::vector<uint16_t> bits(ElemType t, std::initializer_list<float> values) {
  std::vector<uint16_t> v;
  for (float x : values) v.push_back(to_bits(t, x));
  return v;
}

// A paged latent problem: `latent[s]` holds sequence s's rows ([len, kv_lora_rank + rope_dim], float
// values) scattered through a reversed block table into a pool whose other slots hold noise.
struct LatentProblem {
  MlaDecodeParams p;
  std::vector<uint16_t> q_nope, q_rope, pool16;
  std::vector<uint8_t> pool8;
  std::vector<float> scale{0.5f};
  std::vector<int32_t> table, lens;

  LatentProblem(ElemType t, int heads, int rank, int rope, int tpb, const std::vector<std::vector<float>>& latent,
                std::vector<int32_t> lengths, std::mt19937_64& rng)
      : lens(std::move(lengths)) {
    const int row = rank + rope;
    const int seqs = static_cast<int>(lens.size());
    const int max_len = *std::max_element(lens.begin(), lens.end());
    const int max_blocks = std::max(1, (max_len + tpb - 1) / tpb);
    const int num_blocks = seqs * max_blocks + 1;
    table.resize(static_cast<size_t>(seqs) * max_blocks);
    for (size_t i = 0; i < table.size(); ++i) table[i] = num_blocks - 1 - static_cast<int32_t>(i);  // reversed
    pool16 = testing::random_bits(t, static_cast<size_t>(num_blocks) * tpb * row, rng);
    pool8.assign(pool16.size(), 0x7E);  // noise code (448 * scale): a kernel reading it shows up
    for (int s = 0; s < seqs; ++s) {
      for (int tok = 0; tok < lens[s]; ++tok) {
        const size_t slot = static_cast<size_t>(table[size_t(s) * max_blocks + tok / tpb]) * tpb + tok % tpb;
        for (int i = 0; i < row; ++i) {
          const float x = latent[s][size_t(tok) * row + i];
          pool16[slot * row + i] = to_bits(t, x);
          pool8[slot * row + i] = float_to_fp8_e4m3(x / scale[0]);
        }
      }
    }
    q_nope = testing::random_bits(t, size_t(seqs) * heads * rank, rng, -2.f, 2.f);
    q_rope = testing::random_bits(t, size_t(seqs) * heads * rope, rng, -2.f, 2.f);
    p.dtype = t;
    p.cache_type = t == ElemType::kBF16 ? CacheType::kBF16 : CacheType::kFP16;
    p.num_seqs = seqs;
    p.num_heads = heads;
    p.kv_lora_rank = rank;
    p.rope_dim = rope;
    p.num_blocks = num_blocks;
    p.tokens_per_block = tpb;
    p.max_blocks_per_seq = max_blocks;
    p.softmax_scale = 0.4f;
    p.q_nope = q_nope.data();
    p.q_rope = q_rope.data();
    p.kv_cache = pool16.data();
    p.kv_scale = scale.data();
    p.block_table = table.data();
    p.context_lens = lens.data();
  }
  void use_fp8() {
    p.cache_type = CacheType::kFp8E4M3;
    p.kv_cache = pool8.data();
  }
};

TEST(MlaRef, TwoTokensByHand) {
  // kv_lora_rank 2, rope 1, one head. Token 0: c = [1, 0], k_rope = [0]; token 1: c = [0, 1],
  // k_rope = [1]. q_abs = [1, 0], q_rope = [2], scale 1: scores 1 and 2 -> weights 1 - w, w with
  // w = e/(1+e); out_latent = [1 - w, w] = [kW, 1 - kW] (the rope part scores but is never averaged).
  for (int tpb : {1, 16}) {
    std::mt19937_64 rng(1);
    LatentProblem pb(ElemType::kBF16, 1, 2, 1, tpb, {{1, 0, 0, 0, 1, 1}}, {2}, rng);
    pb.q_nope = bits(ElemType::kBF16, {1, 0});
    pb.q_rope = bits(ElemType::kBF16, {2});
    pb.p.q_nope = pb.q_nope.data();
    pb.p.q_rope = pb.q_rope.data();
    pb.p.softmax_scale = 1.f;
    const std::vector<double> out = mla_decode_ref(pb.p);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_NEAR(out[0], kW, 1e-12);
    EXPECT_NEAR(out[1], 1 - kW, 1e-12);
    pb.use_fp8();  // 1 and 0 are exact in e4m3 at scale 0.5 (codes 2.0 and 0)
    const std::vector<double> out8 = mla_decode_ref(pb.p);
    EXPECT_EQ(out8, out);
    pb.lens[0] = 0;  // empty context: zeros, never NaN
    EXPECT_EQ(mla_decode_ref(pb.p), std::vector<double>(2, 0.0));
  }
}

// Values k/8, |k| <= 16: exact in bf16, fp16, and in e4m3 after dividing by the scale 0.5.
std::vector<float> eighths(size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(-16, 16);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(d(rng)) / 8.f;
  return v;
}

TEST(MlaRef, Fp8LatentEqualsSixteenBitOnExactValues) {
  std::mt19937_64 rng(5);
  const int rank = 8, rope = 4, row = rank + rope;
  std::vector<std::vector<float>> latent = {eighths(9 * row, rng), eighths(3 * row, rng)};
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    LatentProblem pb(t, 3, rank, rope, 4, latent, {9, 3}, rng);
    const std::vector<double> want = mla_decode_ref(pb.p);
    pb.use_fp8();
    EXPECT_EQ(mla_decode_ref(pb.p), want);
    pb.scale[0] = 0.25f;  // a different scale reads different values: the comparison can fail
    EXPECT_NE(mla_decode_ref(pb.p), want);
  }
}

// The absorption identity. Non-absorbed head h: k_nope_t = W_UK[h] c_t, k_t = [k_nope_t | k_rope_t],
// v_t = W_UV[h] c_t, out = sum_t softmax(scale q . k_t) v_t (mla_prefill_ref, last query row: it
// sees every token). Absorbed: q_abs = W_UK[h]^T q_nope, out_latent = mla_decode_ref, out = W_UV[h]
// out_latent. Small integers and halves keep every 16-bit input exact, so the two agree to rounding
// of double arithmetic.
TEST(MlaRef, AbsorbedDecodeEqualsNonAbsorbedAttention) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> small(-2, 2), halves(-4, 4);
  const int H = 2, rank = 4, rope = 2, nope = 3, dv = 2, T = 5, dqk = nope + rope;
  const ElemType t = ElemType::kBF16;
  auto ints = [&](size_t n) {
    std::vector<double> v(n);
    for (double& x : v) x = small(rng);
    return v;
  };
  const std::vector<double> w_uk = ints(size_t(H) * nope * rank);  // [H, nope, rank]
  const std::vector<double> w_uv = ints(size_t(H) * dv * rank);    // [H, dv, rank]
  std::vector<float> latent(size_t(T) * (rank + rope));           // [T, rank + rope]
  for (float& x : latent) x = static_cast<float>(halves(rng)) / 2.f;
  const std::vector<double> q_nope = ints(size_t(H) * nope);  // the last token's query
  const std::vector<double> q_rope = ints(size_t(H) * rope);

  // Non-absorbed prefill inputs (every token needs q; only the last row is compared).
  std::vector<uint16_t> q(size_t(T) * H * dqk), k(size_t(T) * H * dqk), v(size_t(T) * H * dv);
  for (int tok = 0; tok < T; ++tok) {
    const float* c = latent.data() + size_t(tok) * (rank + rope);
    for (int h = 0; h < H; ++h) {
      uint16_t* qr = q.data() + (size_t(tok) * H + h) * dqk;
      uint16_t* kr = k.data() + (size_t(tok) * H + h) * dqk;
      uint16_t* vr = v.data() + (size_t(tok) * H + h) * dv;
      for (int n = 0; n < nope; ++n) {
        double kn = 0;
        for (int i = 0; i < rank; ++i) kn += w_uk[(size_t(h) * nope + n) * rank + i] * c[i];
        kr[n] = to_bits(t, static_cast<float>(kn));
        ASSERT_EQ(double(from_bits(t, kr[n])), kn);  // exact: the identity is tested, not rounding
        qr[n] = to_bits(t, tok == T - 1 ? static_cast<float>(q_nope[size_t(h) * nope + n]) : 0.5f);
      }
      for (int i = 0; i < rope; ++i) {
        kr[nope + i] = to_bits(t, c[rank + i]);  // k_rope broadcast to every head
        qr[nope + i] = to_bits(t, tok == T - 1 ? static_cast<float>(q_rope[size_t(h) * rope + i]) : -0.5f);
      }
      for (int d = 0; d < dv; ++d) {
        double x = 0;
        for (int i = 0; i < rank; ++i) x += w_uv[(size_t(h) * dv + d) * rank + i] * c[i];
        vr[d] = to_bits(t, static_cast<float>(x));
        ASSERT_EQ(double(from_bits(t, vr[d])), x);
      }
    }
  }
  const std::vector<int32_t> cu{0, T};
  MlaPrefillParams pf;
  pf.dtype = t;
  pf.num_seqs = 1;
  pf.total_tokens = T;
  pf.max_seqlen = T;
  pf.num_heads = H;
  pf.qk_head_dim = dqk;
  pf.v_head_dim = dv;
  pf.softmax_scale = 0.3f;
  pf.q = q.data();
  pf.k = k.data();
  pf.v = v.data();
  pf.cu_seqlens = cu.data();
  const std::vector<double> non_absorbed = mla_prefill_ref(pf);

  // Absorbed decode over the same latent (paged, 2 tokens per block).
  LatentProblem pb(t, H, rank, rope, 2, {latent}, {T}, rng);
  for (int h = 0; h < H; ++h) {
    for (int i = 0; i < rank; ++i) {
      double qa = 0;
      for (int n = 0; n < nope; ++n) qa += w_uk[(size_t(h) * nope + n) * rank + i] * q_nope[size_t(h) * nope + n];
      pb.q_nope[size_t(h) * rank + i] = to_bits(t, static_cast<float>(qa));  // integers <= 12: exact
      ASSERT_EQ(double(from_bits(t, pb.q_nope[size_t(h) * rank + i])), qa);
    }
    for (int i = 0; i < rope; ++i) pb.q_rope[size_t(h) * rope + i] = to_bits(t, static_cast<float>(q_rope[size_t(h) * rope + i]));
  }
  pb.p.softmax_scale = pf.softmax_scale;
  const std::vector<double> out_latent = mla_decode_ref(pb.p);
  double max_abs = 0;
  for (int h = 0; h < H; ++h) {
    for (int d = 0; d < dv; ++d) {
      double o = 0;
      for (int i = 0; i < rank; ++i) o += w_uv[(size_t(h) * dv + d) * rank + i] * out_latent[size_t(h) * rank + i];
      const double want = non_absorbed[(size_t(T - 1) * H + h) * dv + d];
      EXPECT_NEAR(o, want, 1e-12) << "head " << h << " channel " << d;
      max_abs = std::max(max_abs, std::fabs(want));
    }
  }
  EXPECT_GT(max_abs, 0.1);  // a non-trivial output
}

TEST(MlaRef, SplitThenCombineEqualsUnsplit) {
  std::mt19937_64 rng(9);
  const int rank = 16, rope = 8, row = rank + rope;
  std::vector<std::vector<float>> latent;
  std::vector<int32_t> lens{11, 1, 6};
  for (int len : lens) {
    std::vector<float> x(size_t(len) * row);
    for (float& f : x) f = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
    latent.push_back(x);
  }
  LatentProblem pb(ElemType::kFP16, 5, rank, rope, 4, latent, lens, rng);
  for (bool fp8 : {false, true}) {
    if (fp8) pb.use_fp8();
    const std::vector<double> want = mla_decode_ref(pb.p);
    for (int splits : {1, 2, 3, 12}) {  // 12 > every length: empty splits
      pb.p.num_splits = splits;
      const DecodePartialsRef parts = mla_decode_partials_ref(pb.p);
      std::vector<float> out32(parts.out.begin(), parts.out.end()), lse32(parts.lse.begin(), parts.lse.end());
      DecodeCombineParams c;
      c.num_seqs = 3;
      c.num_splits = splits;
      c.num_q_heads = 5;
      c.head_dim = rank;
      c.partial_out = out32.data();
      c.partial_lse = lse32.data();
      const std::vector<double> got = decode_attention_combine_ref(c);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << splits << " splits, " << i;
    }
  }
}

TEST(MlaRef, PrefillIsCausalByHand) {
  // One head, qk dim 2, v dim 1, three tokens. Token 0 sees only itself: out = v0. Token 1: q1 = [1, 0]
  // with k0 = [1, 0], k1 = [0, 0]: scores 1 and 0, out = (e v0 + v1) / (1 + e).
  const ElemType t = ElemType::kFP16;
  std::vector<uint16_t> q = bits(t, {0, 0, 1, 0, 0, 1});
  std::vector<uint16_t> k = bits(t, {1, 0, 0, 0, 0, 1});
  std::vector<uint16_t> v = bits(t, {2, -1, 4});
  const std::vector<int32_t> cu{0, 3};
  MlaPrefillParams p;
  p.dtype = t;
  p.num_seqs = 1;
  p.total_tokens = 3;
  p.max_seqlen = 3;
  p.num_heads = 1;
  p.qk_head_dim = 2;
  p.v_head_dim = 1;
  p.softmax_scale = 1.f;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.cu_seqlens = cu.data();
  std::vector<double> out = mla_prefill_ref(p);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], 2.0);
  EXPECT_NEAR(out[1], (1 - kW) * 2 + kW * -1, 1e-12);
  // Token 2: q2 = [0, 1], scores 0, 0, 1.
  const double e = std::exp(1.0);
  EXPECT_NEAR(out[2], (2 - 1 + e * 4) / (2 + e), 1e-12);
  // A later token never changes an earlier output.
  v[2] = to_bits(t, -4.f);
  k[4] = to_bits(t, 3.f);
  const std::vector<double> changed = mla_prefill_ref(p);
  EXPECT_EQ(changed[0], out[0]);
  EXPECT_EQ(changed[1], out[1]);
  EXPECT_NE(changed[2], out[2]);
}

}  // namespace
}  // namespace kvplan::kernels
