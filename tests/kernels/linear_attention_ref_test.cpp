// CPU references of linear attention: a 3-token head of size 1 with decay 0.5 computed by hand, the
// feature maps by hand, the key-head mapping, chunk-parallel prefill (chunk 64, 7, 1) equal to the
// decode step run token by token over varlen sequences with initial states, and the causal mask
// (perturbing token j changes nothing before j, in its sequence or any other).
#include "kvplan/kernels/reference/linear_attention_ref.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"

namespace kvplan::kernels {
namespace {

using testing::random_bits;

std::vector<uint16_t> bits(ElemType t, std::initializer_list<float> values) {
  std::vector<uint16_t> v;
  for (float x : values) v.push_back(to_bits(t, x));
  return v;
}

// One sequence, one head, d_k = d_v = 1, identity φ, decay 0.5, scale 1:
//   q = [1, 0.5, 2], k = [1, 2, -1], v = [2, 1, 4], S_0 = 0
//   S_1 = 0.5·0 + 1·2 = 2      o_1 = 1·2 = 2
//   S_2 = 0.5·2 + 2·1 = 3      o_2 = 0.5·3 = 1.5
//   S_3 = 0.5·3 + (-1)·4 = -2.5  o_3 = 2·(-2.5) = -5
// With S_0 = 4: S = 4, 4, -2 and o = 4, 2, -4.
struct HandCase {
  std::vector<uint16_t> q, k, v;
  std::vector<float> decay{0.5f, 0.5f, 0.5f};
  std::vector<int32_t> cu{0, 3};
  std::vector<float> init{4.f};
  std::vector<uint16_t> out_dummy = std::vector<uint16_t>(3);
  std::vector<float> state_dummy = std::vector<float>(1);
  LinearAttentionPrefillParams p;
  explicit HandCase(ElemType t) : q(bits(t, {1, 0.5f, 2})), k(bits(t, {1, 2, -1})), v(bits(t, {2, 1, 4})) {
    p.dtype = t;
    p.num_seqs = 1;
    p.total_tokens = 3;
    p.num_key_heads = p.num_value_heads = 1;
    p.key_head_dim = p.value_head_dim = 1;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.decay = decay.data();
    p.cu_seqlens = cu.data();
    p.final_state = state_dummy.data();
    p.out = out_dummy.data();
  }
  // Decode params of token t from state `s`.
  LinearAttentionDecodeParams step(int t, float* s) {
    LinearAttentionDecodeParams d;
    d.dtype = p.dtype;
    d.num_seqs = 1;
    d.num_key_heads = d.num_value_heads = 1;
    d.key_head_dim = d.value_head_dim = 1;
    d.q = q.data() + t;
    d.k = k.data() + t;
    d.v = v.data() + t;
    d.decay = decay.data() + t;
    d.state = s;
    d.out = out_dummy.data();
    return d;
  }
};

TEST(LinearAttentionRef, ThreeTokensDecayHalfByHand) {
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    HandCase c(t);
    for (int chunk : {1, 2, 3, 64}) {
      LinearAttentionRef r = linear_attention_prefill_ref(c.p, chunk);
      ASSERT_EQ(r.out.size(), 3u);
      EXPECT_DOUBLE_EQ(r.out[0], 2.0) << chunk;
      EXPECT_DOUBLE_EQ(r.out[1], 1.5) << chunk;
      EXPECT_DOUBLE_EQ(r.out[2], -5.0) << chunk;
      EXPECT_DOUBLE_EQ(r.state[0], -2.5) << chunk;
    }
    c.p.initial_state = c.init.data();
    LinearAttentionRef r = linear_attention_prefill_ref(c.p, 2);
    EXPECT_DOUBLE_EQ(r.out[0], 4.0);
    EXPECT_DOUBLE_EQ(r.out[1], 2.0);
    EXPECT_DOUBLE_EQ(r.out[2], -4.0);
    EXPECT_DOUBLE_EQ(r.state[0], -2.0);
    // The decode step, token by token: update first, then read.
    float s = 0.f;
    const double want_out[] = {2, 1.5, -5}, want_state[] = {2, 3, -2.5};
    for (int tok = 0; tok < 3; ++tok) {
      LinearAttentionRef d = linear_attention_decode_ref(c.step(tok, &s));
      EXPECT_DOUBLE_EQ(d.out[0], want_out[tok]);
      EXPECT_DOUBLE_EQ(d.state[0], want_state[tok]);
      s = static_cast<float>(d.state[0]);
    }
    EXPECT_EQ(s, -2.5f);  // the input state of the last call was not modified by the reference
  }
}

TEST(LinearAttentionRef, NoDecayIsPlainSum) {
  HandCase c(ElemType::kFP16);
  c.p.decay = nullptr;  // S = 2, 4, 0; o = 2, 2, 0
  LinearAttentionRef r = linear_attention_prefill_ref(c.p, 2);
  EXPECT_DOUBLE_EQ(r.out[0], 2.0);
  EXPECT_DOUBLE_EQ(r.out[1], 2.0);
  EXPECT_DOUBLE_EQ(r.out[2], 0.0);
  EXPECT_DOUBLE_EQ(r.state[0], 0.0);
}

TEST(LinearAttentionRef, FeatureMapsByHand) {
  EXPECT_DOUBLE_EQ(linear_attention_feature(FeatureMap::kIdentity, -1.5), -1.5);
  EXPECT_DOUBLE_EQ(linear_attention_feature(FeatureMap::kEluPlusOne, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(linear_attention_feature(FeatureMap::kEluPlusOne, -1.0), std::exp(-1.0));
  EXPECT_DOUBLE_EQ(linear_attention_feature(FeatureMap::kEluPlusOne, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(linear_attention_feature(FeatureMap::kRelu, -1.0), 0.0);
  EXPECT_DOUBLE_EQ(linear_attention_feature(FeatureMap::kRelu, 2.0), 2.0);
  // relu on the hand case: k_3 = -1 -> 0, so S_3 = 0.5·3 = 1.5 and o_3 = 2·1.5 = 3.
  HandCase c(ElemType::kBF16);
  c.p.feature_map = FeatureMap::kRelu;
  LinearAttentionRef r = linear_attention_prefill_ref(c.p, 64);
  EXPECT_DOUBLE_EQ(r.out[2], 3.0);
  EXPECT_DOUBLE_EQ(r.state[0], 1.5);
}

// Two value heads share one key head (d_k = 2, d_v = 1, no decay, zero state, scale 0.5):
// q = [1, 2], k = [3, -1], v = [1, 10] -> S_h = k·v_h, o_h = 0.5·(q·k)·v_h = 0.5·1·v_h.
TEST(LinearAttentionRef, ValueHeadsShareKeyHead) {
  const ElemType t = ElemType::kBF16;
  std::vector<uint16_t> q = bits(t, {1, 2}), k = bits(t, {3, -1}), v = bits(t, {1, 10}), out(2);
  std::vector<float> state(4, 0.f);
  LinearAttentionDecodeParams p;
  p.dtype = t;
  p.num_seqs = 1;
  p.num_key_heads = 1;
  p.num_value_heads = 2;
  p.key_head_dim = 2;
  p.value_head_dim = 1;
  p.scale = 0.5f;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.state = state.data();
  p.out = out.data();
  LinearAttentionRef r = linear_attention_decode_ref(p);
  EXPECT_DOUBLE_EQ(r.out[0], 0.5);
  EXPECT_DOUBLE_EQ(r.out[1], 5.0);
  EXPECT_DOUBLE_EQ(r.state[0], 3.0);   // head 0, i = 0
  EXPECT_DOUBLE_EQ(r.state[1], -1.0);  // head 0, i = 1
  EXPECT_DOUBLE_EQ(r.state[2], 30.0);  // head 1, i = 0
  EXPECT_DOUBLE_EQ(r.state[3], -10.0);
  p.num_value_heads = 3;  // 2 key heads cannot be shared evenly by 3 value heads
  p.num_key_heads = 2;
  EXPECT_THROW(linear_attention_decode_ref(p), std::invalid_argument);
}

// A random varlen problem (host arrays) and its Params.
struct RandomProblem {
  std::vector<uint16_t> q, k, v, out;
  std::vector<float> decay, init, final_state;
  std::vector<int32_t> cu;
  LinearAttentionPrefillParams p;
  RandomProblem(ElemType t, FeatureMap fm, const std::vector<int>& lens, int hk, int hv, int dk, int dv, uint64_t seed) {
    std::mt19937_64 rng(seed);
    cu.push_back(0);
    for (int l : lens) cu.push_back(cu.back() + l);
    const int total = cu.back(), n = static_cast<int>(lens.size());
    q = random_bits(t, size_t(total) * hk * dk, rng);
    k = random_bits(t, q.size(), rng);
    v = random_bits(t, size_t(total) * hv * dv, rng);
    std::uniform_real_distribution<float> dd(0.7f, 1.0f), sd(-1.f, 1.f);
    decay.resize(size_t(total) * hv);
    for (float& d : decay) d = dd(rng);
    init.resize(size_t(n) * size_t(linear_attention_state_elems(hv, dk, dv)));
    for (float& s : init) s = sd(rng);
    final_state.resize(init.size());
    out.resize(size_t(total) * hv * dv);
    p.dtype = t;
    p.feature_map = fm;
    p.num_seqs = n;
    p.total_tokens = total;
    p.num_key_heads = hk;
    p.num_value_heads = hv;
    p.key_head_dim = dk;
    p.value_head_dim = dv;
    p.scale = 1.f / std::sqrt(float(dk));
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.decay = decay.data();
    p.cu_seqlens = cu.data();
    p.initial_state = init.data();
    p.final_state = final_state.data();
    p.out = out.data();
  }
};

// The decode reference run token by token over each sequence: outputs and final states.
LinearAttentionRef run_decode_chain(const LinearAttentionPrefillParams& p) {
  const int hv = p.num_value_heads, hk = p.num_key_heads, dk = p.key_head_dim, dv = p.value_head_dim;
  const size_t per_seq = size_t(linear_attention_state_elems(hv, dk, dv));
  LinearAttentionRef r;
  r.out.assign(size_t(p.total_tokens) * hv * dv, 0.0);
  r.state.assign(size_t(p.num_seqs) * per_seq, 0.0);
  std::vector<uint16_t> out_dummy(size_t(hv) * dv);
  for (int s = 0; s < p.num_seqs; ++s) {
    std::vector<float> state(p.initial_state + s * per_seq, p.initial_state + (s + 1) * per_seq);
    std::vector<double> last(state.begin(), state.end());
    for (int tok = p.cu_seqlens[s]; tok < p.cu_seqlens[s + 1]; ++tok) {
      LinearAttentionDecodeParams d;
      d.dtype = p.dtype;
      d.feature_map = p.feature_map;
      d.num_seqs = 1;
      d.num_key_heads = hk;
      d.num_value_heads = hv;
      d.key_head_dim = dk;
      d.value_head_dim = dv;
      d.scale = p.scale;
      d.q = p.q + size_t(tok) * hk * dk;
      d.k = p.k + size_t(tok) * hk * dk;
      d.v = p.v + size_t(tok) * hv * dv;
      d.decay = p.decay ? p.decay + size_t(tok) * hv : nullptr;
      d.state = state.data();
      d.out = out_dummy.data();
      LinearAttentionRef step = linear_attention_decode_ref(d);
      std::copy(step.out.begin(), step.out.end(), r.out.begin() + long(size_t(tok) * hv * dv));
      last = step.state;
      for (size_t i = 0; i < state.size(); ++i) state[i] = static_cast<float>(step.state[i]);
    }
    std::copy(last.begin(), last.end(), r.state.begin() + long(s * per_seq));
  }
  return r;
}

// |a - b| <= tol * (1 + |b|) everywhere.
void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::fabs(a[i] - b[i]) / (1 + std::fabs(b[i]));
    worst = std::max(worst, err);
    bad += err > tol;
  }
  EXPECT_EQ(bad, 0u) << what << ": worst relative error " << worst;
}

// The decode chain rounds its state to fp32 between steps (as the kernels hold it); the prefill
// reference keeps double. Chunk sizes against each other: double only.
constexpr double kChainTol = 1e-5;
constexpr double kChunkTol = 1e-11;

TEST(LinearAttentionRef, ChunkedPrefillEqualsDecodeStepByStep) {
  // Lengths on chunk boundaries +-1, a 1-token and an empty sequence, two chunks plus one.
  const std::vector<int> lens{1, 63, 64, 65, 0, 129};
  for (FeatureMap fm : {FeatureMap::kIdentity, FeatureMap::kEluPlusOne, FeatureMap::kRelu}) {
    RandomProblem pb(ElemType::kBF16, fm, lens, 1, 3, 4, 5, 7 + uint64_t(fm));
    const LinearAttentionRef chain = run_decode_chain(pb.p);
    const LinearAttentionRef recurrence = linear_attention_prefill_ref(pb.p, 1);
    for (int chunk : {kLinearAttentionChunk, 7, 1}) {
      const LinearAttentionRef r = linear_attention_prefill_ref(pb.p, chunk);
      expect_close(r.out, chain.out, kChainTol, "out");
      expect_close(r.state, chain.state, kChainTol, "state");
      expect_close(r.out, recurrence.out, kChunkTol, "out vs chunk 1");
      expect_close(r.state, recurrence.state, kChunkTol, "state vs chunk 1");
    }
  }
  // Without decay (plain linear attention) and without an initial state.
  RandomProblem pb(ElemType::kFP16, FeatureMap::kIdentity, lens, 2, 4, 3, 2, 11);
  pb.p.decay = nullptr;
  const LinearAttentionRef with_init = run_decode_chain(pb.p);
  expect_close(linear_attention_prefill_ref(pb.p).out, with_init.out, kChainTol, "out, no decay");
  std::fill(pb.init.begin(), pb.init.end(), 0.f);
  const LinearAttentionRef zero_init = run_decode_chain(pb.p);
  pb.p.initial_state = nullptr;
  expect_close(linear_attention_prefill_ref(pb.p).state, zero_init.state, kChainTol, "state, no initial state");
}

TEST(LinearAttentionRef, CausalMaskNoFutureTokenLeaks) {
  const std::vector<int> lens{70, 5};
  RandomProblem pb(ElemType::kBF16, FeatureMap::kEluPlusOne, lens, 1, 2, 4, 3, 21);
  const int hv = 2, dv = 3, dk = 4;
  const LinearAttentionRef base = linear_attention_prefill_ref(pb.p);
  for (int j : {0, 1, 31, 63, 64, 69}) {  // token j of sequence 0: inside, at and after a chunk boundary
    RandomProblem bumped = pb;
    bumped.p.q = bumped.q.data();
    bumped.p.k = bumped.k.data();
    bumped.p.v = bumped.v.data();
    bumped.p.decay = bumped.decay.data();
    bumped.p.cu_seqlens = bumped.cu.data();
    bumped.p.initial_state = bumped.init.data();
    for (int i = 0; i < dk; ++i) bumped.k[size_t(j) * dk + i] = to_bits(ElemType::kBF16, 0.875f - 0.25f * i);
    for (int c = 0; c < hv * dv; ++c) bumped.v[size_t(j) * hv * dv + c] = to_bits(ElemType::kBF16, -0.75f + 0.125f * c);
    bumped.decay[size_t(j) * hv] = 0.5f;
    const LinearAttentionRef r = linear_attention_prefill_ref(bumped.p);
    const size_t row = size_t(hv) * dv;
    for (size_t e = 0; e < size_t(j) * row; ++e) ASSERT_EQ(r.out[e], base.out[e]) << "token " << e / row << " saw token " << j;
    bool changed = false;
    for (size_t e = size_t(j) * row; e < size_t(j + 1) * row; ++e) changed |= r.out[e] != base.out[e];
    EXPECT_TRUE(changed) << "token " << j << " does not see itself";
    for (size_t e = size_t(70) * row; e < r.out.size(); ++e) ASSERT_EQ(r.out[e], base.out[e]) << "sequence 1 changed";
  }
}

TEST(LinearAttentionRef, RejectsBadParams) {
  RandomProblem pb(ElemType::kBF16, FeatureMap::kIdentity, {3}, 1, 1, 2, 2, 1);
  LinearAttentionPrefillParams p = pb.p;
  p.num_value_heads = 3;
  p.num_key_heads = 2;
  EXPECT_FALSE(linear_attention_prefill_problem(p).empty());
  EXPECT_THROW(linear_attention_prefill_ref(p), std::invalid_argument);
  p = pb.p;
  p.cu_seqlens = nullptr;
  EXPECT_THROW(linear_attention_prefill_ref(p), std::invalid_argument);
  p = pb.p;
  p.total_tokens = 4;  // cu_seqlens ends at 3
  EXPECT_THROW(linear_attention_prefill_ref(p), std::invalid_argument);
  EXPECT_THROW(linear_attention_prefill_ref(pb.p, 0), std::invalid_argument);
}

}  // namespace
}  // namespace kvplan::kernels
