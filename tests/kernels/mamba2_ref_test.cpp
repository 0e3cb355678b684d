// CPU references of the Mamba-2 decode step and the causal conv update: one step with d_state 2
// computed by hand (with and without D, z, softplus), the head-to-group mapping, the conv window
// shift by hand, and a stream of conv steps equal to a direct causal convolution.
#include "kvplan/kernels/reference/mamba2_ref.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"

namespace kvplan::kernels {
namespace {

std::vector<uint16_t> bits(ElemType t, std::initializer_list<float> values) {
  std::vector<uint16_t> v;
  for (float x : values) v.push_back(to_bits(t, x));
  return v;
}

// One sequence, one head, head_dim 1, d_state 2, no softplus:
//   dt' = 0.25 + 0.25 = 0.5, A = -2 -> dA = e^{-1};  x = 2, B = [1, -1], C = [0.5, 2], h = [1, 3], D = 0.5
//   h' = e^{-1}·[1, 3] + 0.5·[1, -1]·2 = [e^{-1} + 1, 3e^{-1} - 1]
//   y  = 0.5(e^{-1} + 1) + 2(3e^{-1} - 1) + 0.5·2 = 6.5 e^{-1} - 0.5
//   with z = 1: y · 1 · sigmoid(1) = y / (1 + e^{-1})
struct HandStep {
  std::vector<uint16_t> x, dt, B, C, z, out = std::vector<uint16_t>(1);
  std::vector<float> dt_bias{0.25f}, A{-2.f}, D{0.5f}, state{1.f, 3.f};
  Mamba2DecodeParams p;
  explicit HandStep(ElemType t)
      : x(bits(t, {2})), dt(bits(t, {0.25f})), B(bits(t, {1, -1})), C(bits(t, {0.5f, 2})), z(bits(t, {1})) {
    p.dtype = t;
    p.num_seqs = 1;
    p.num_heads = 1;
    p.head_dim = 1;
    p.d_state = 2;
    p.n_groups = 1;
    p.dt_softplus = false;
    p.x = x.data();
    p.dt = dt.data();
    p.dt_bias = dt_bias.data();
    p.A = A.data();
    p.B = B.data();
    p.C = C.data();
    p.D = D.data();
    p.state = state.data();
    p.out = out.data();
  }
};

TEST(Mamba2Ref, OneStepDState2ByHand) {
  const double e1 = std::exp(-1.0);
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    HandStep c(t);
    Mamba2Ref r = mamba2_decode_ref(c.p);
    ASSERT_EQ(r.state.size(), 2u);
    EXPECT_NEAR(r.state[0], e1 + 1, 1e-15);
    EXPECT_NEAR(r.state[1], 3 * e1 - 1, 1e-15);
    EXPECT_NEAR(r.out[0], 6.5 * e1 - 0.5, 1e-15);
    EXPECT_EQ(c.state[0], 1.f);  // input untouched
    c.p.z = c.z.data();
    EXPECT_NEAR(mamba2_decode_ref(c.p).out[0], (6.5 * e1 - 0.5) / (1 + e1), 1e-15);
    c.p.z = nullptr;
    c.p.D = nullptr;  // y without the skip term: 6.5 e^{-1} - 1.5
    EXPECT_NEAR(mamba2_decode_ref(c.p).out[0], 6.5 * e1 - 1.5, 1e-15);
  }
}

TEST(Mamba2Ref, SoftplusOfDtWithThreshold) {
  EXPECT_NEAR(mamba2_effective_dt(0.0, true), std::log(2.0), 1e-15);
  EXPECT_NEAR(mamba2_effective_dt(-3.0, true), std::log1p(std::exp(-3.0)), 1e-15);
  EXPECT_EQ(mamba2_effective_dt(20.5, true), 20.5);  // above the threshold: kept as is
  EXPECT_EQ(mamba2_effective_dt(-3.0, false), -3.0);
  // In the step: dt = 0.25 + bias -0.25 = 0 -> dt' = ln 2, dA = e^{-2 ln 2} = 1/4;
  // h' = [1, 3]/4 + ln2·[1, -1]·2; y = 0.5 h'_0 + 2 h'_1 + 1.
  HandStep c(ElemType::kFP16);
  c.dt_bias[0] = -0.25f;
  c.p.dt_softplus = true;
  const double l2 = std::log(2.0);
  Mamba2Ref r = mamba2_decode_ref(c.p);
  EXPECT_NEAR(r.state[0], 0.25 + 2 * l2, 1e-15);
  EXPECT_NEAR(r.state[1], 0.75 - 2 * l2, 1e-15);
  EXPECT_NEAR(r.out[0], 0.5 * (0.25 + 2 * l2) + 2 * (0.75 - 2 * l2) + 1, 1e-14);
}

// 4 heads, 2 groups: heads 0-1 read group 0, heads 2-3 group 1. d_state 1, zero state, dt' = 1,
// A = -1, x = 1: h' = B_g, y = C_g·B_g. Group 0: B = 1, C = 2 -> 2; group 1: B = 3, C = -1 -> -3.
TEST(Mamba2Ref, HeadsReadTheirGroup) {
  const ElemType t = ElemType::kBF16;
  std::vector<uint16_t> x = bits(t, {1, 1, 1, 1}), dt = bits(t, {1, 1, 1, 1}), B = bits(t, {1, 3}), C = bits(t, {2, -1});
  std::vector<uint16_t> out(4);
  std::vector<float> A(4, -1.f), state(4, 0.f);
  Mamba2DecodeParams p;
  p.dtype = t;
  p.num_seqs = 1;
  p.num_heads = 4;
  p.head_dim = 1;
  p.d_state = 1;
  p.n_groups = 2;
  p.dt_softplus = false;
  p.x = x.data();
  p.dt = dt.data();
  p.A = A.data();
  p.B = B.data();
  p.C = C.data();
  p.state = state.data();
  p.out = out.data();
  Mamba2Ref r = mamba2_decode_ref(p);
  EXPECT_EQ(r.out, (std::vector<double>{2, 2, -3, -3}));
  EXPECT_EQ(r.state, (std::vector<double>{1, 1, 3, 3}));
  p.n_groups = 3;  // does not divide 4
  EXPECT_THROW(mamba2_decode_ref(p), std::invalid_argument);
}

// d_conv 4, one channel, fp16 (every value below is exact): state [1, 2, 3] (oldest first), x = 4,
// weight [1, 10, 100, 1000], bias 0.5: out = 1 + 20 + 300 + 4000 + 0.5 = 4321.5; state -> [2, 3, 4].
TEST(CausalConvRef, WindowShiftByHand) {
  const ElemType t = ElemType::kFP16;
  std::vector<uint16_t> x = bits(t, {4}), w = bits(t, {1, 10, 100, 1000}), b = bits(t, {0.5f}), st = bits(t, {1, 2, 3});
  std::vector<uint16_t> out(1);
  CausalConvUpdateParams p;
  p.dtype = t;
  p.num_seqs = 1;
  p.conv_dim = 1;
  p.d_conv = 4;
  p.silu = false;
  p.x = x.data();
  p.weight = w.data();
  p.bias = b.data();
  p.conv_state = st.data();
  p.out = out.data();
  CausalConvRef r = causal_conv_update_ref(p);
  EXPECT_DOUBLE_EQ(r.out[0], 4321.5);
  EXPECT_EQ(r.conv_state, bits(t, {2, 3, 4}));
  EXPECT_EQ(st, bits(t, {1, 2, 3}));  // input untouched
  // silu on: 4321.5 · sigmoid(4321.5) = 4321.5 (to double precision).
  p.silu = true;
  EXPECT_DOUBLE_EQ(causal_conv_update_ref(p).out[0], 4321.5);
  // A small one: weights all 1, state [0.5, -1, 2], x = 1, no bias: 2.5 · sigmoid(2.5).
  std::vector<uint16_t> ones = bits(t, {1, 1, 1, 1}), st2 = bits(t, {0.5f, -1, 2}), x2 = bits(t, {1});
  p.x = x2.data();
  p.weight = ones.data();
  p.bias = nullptr;
  p.conv_state = st2.data();
  EXPECT_NEAR(causal_conv_update_ref(p).out[0], 2.5 / (1 + std::exp(-2.5)), 1e-15);
  // d_conv 1: no state, out = w·x + b = 1·4 + 0.5.
  p.d_conv = 1;
  p.x = x.data();
  p.weight = w.data();
  p.conv_state = nullptr;
  p.bias = b.data();
  p.silu = false;
  CausalConvRef r1 = causal_conv_update_ref(p);
  EXPECT_DOUBLE_EQ(r1.out[0], 4.5);
  EXPECT_TRUE(r1.conv_state.empty());
}

// Feeding a stream x_0..x_9 one step at a time from a zero state gives the direct causal
// convolution out_t = Σ_k w[k]·x_{t-(W-1)+k} (x before 0 is 0), for 3 channels.
TEST(CausalConvRef, StreamEqualsDirectConvolution) {
  const ElemType t = ElemType::kBF16;
  const int D = 3, W = 4, T = 10;
  std::mt19937_64 rng(5);
  std::vector<uint16_t> xs = testing::random_bits(t, size_t(T) * D, rng), w = testing::random_bits(t, size_t(D) * W, rng);
  std::vector<uint16_t> state(size_t(D) * (W - 1), to_bits(t, 0.f)), out(D);
  for (int step = 0; step < T; ++step) {
    CausalConvUpdateParams p;
    p.dtype = t;
    p.num_seqs = 1;
    p.conv_dim = D;
    p.d_conv = W;
    p.silu = false;
    p.x = xs.data() + size_t(step) * D;
    p.weight = w.data();
    p.conv_state = state.data();
    p.out = out.data();
    CausalConvRef r = causal_conv_update_ref(p);
    for (int c = 0; c < D; ++c) {
      double want = 0;
      for (int k = 0; k < W; ++k) {
        const int src = step - (W - 1) + k;
        if (src >= 0) want += double(from_bits(t, w[size_t(c) * W + k])) * double(from_bits(t, xs[size_t(src) * D + c]));
      }
      EXPECT_NEAR(r.out[size_t(c)], want, 1e-12) << "step " << step << " channel " << c;
    }
    state = r.conv_state;
  }
}

}  // namespace
}  // namespace kvplan::kernels
