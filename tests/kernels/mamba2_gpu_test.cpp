// Mamba-2 decode kernels (selective state update, causal conv update) against the CPU references:
// fresh random inputs, poisoned outputs, every element checked (outputs per-dtype, the fp32 SSM
// state within fp32 rounding, the 16-bit conv state bit-exact), shapes with batch 1, odd head
// counts and head dims, n_groups > 1, d_state at the kernel's maximum and not a multiple of 32,
// conv widths 1, 2, 4 and 8, with and without D, z, dt_bias, bias and silu.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/mamba2.h"
#include "kvplan/kernels/reference/mamba2_ref.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

constexpr Tolerance kStateTolerance{1e-5, 1e-5, 1e-6};

struct SsmCase {
  std::string name;
  ElemType dtype;
  int num_seqs, num_heads, head_dim, d_state, n_groups;
  bool softplus, with_d, with_z, with_bias;
};

std::ostream& operator<<(std::ostream& os, const SsmCase& c) { return os << c.name; }

std::vector<float> uniform(size_t n, float lo, float hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class Mamba2DecodeGpu : public ::testing::TestWithParam<SsmCase> {};

TEST_P(Mamba2DecodeGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const SsmCase& c = GetParam();
  std::mt19937_64 rng(77 + uint64_t(c.d_state) * 13 + uint64_t(c.num_heads));
  const size_t S = size_t(c.num_seqs), H = size_t(c.num_heads), P = size_t(c.head_dim), N = size_t(c.d_state);
  const size_t G = size_t(c.n_groups);
  const std::vector<uint16_t> x = testing::random_bits(c.dtype, S * H * P, rng);
  const std::vector<uint16_t> dt = testing::random_bits(c.dtype, S * H, rng, -2.f, 1.f);
  const std::vector<uint16_t> B = testing::random_bits(c.dtype, S * G * N, rng);
  const std::vector<uint16_t> C = testing::random_bits(c.dtype, S * G * N, rng);
  const std::vector<uint16_t> z = testing::random_bits(c.dtype, S * H * P, rng, -3.f, 3.f);
  const std::vector<float> dt_bias = uniform(H, -0.5f, 0.5f, rng), A = uniform(H, -2.f, -0.25f, rng);
  const std::vector<float> D = uniform(H, -1.f, 1.f, rng), state = uniform(S * H * P * N, -1.f, 1.f, rng);

  DeviceBuffer<uint16_t> dx(x), ddt(dt), dB(B), dC(C), dz(z), dout(S * H * P);
  DeviceBuffer<float> dbias(dt_bias), dA(A), dD(D), dstate(state);
  dout.poison();
  Mamba2DecodeParams p;
  p.dtype = c.dtype;
  p.num_seqs = c.num_seqs;
  p.num_heads = c.num_heads;
  p.head_dim = c.head_dim;
  p.d_state = c.d_state;
  p.n_groups = c.n_groups;
  p.dt_softplus = c.softplus;
  p.x = dx.get();
  p.dt = ddt.get();
  p.dt_bias = c.with_bias ? dbias.get() : nullptr;
  p.A = dA.get();
  p.B = dB.get();
  p.C = dC.get();
  p.D = c.with_d ? dD.get() : nullptr;
  p.z = c.with_z ? dz.get() : nullptr;
  p.state = dstate.get();
  p.out = dout.get();
  ASSERT_TRUE(launch_mamba2_decode(p, nullptr).ok());

  std::vector<float> host_state = state;
  std::vector<uint16_t> unused_out(1);
  Mamba2DecodeParams hp = p;
  hp.x = x.data();
  hp.dt = dt.data();
  hp.dt_bias = c.with_bias ? dt_bias.data() : nullptr;
  hp.A = A.data();
  hp.B = B.data();
  hp.C = C.data();
  hp.D = c.with_d ? D.data() : nullptr;
  hp.z = c.with_z ? z.data() : nullptr;
  hp.state = host_state.data();
  hp.out = unused_out.data();
  const Mamba2Ref ref = mamba2_decode_ref(hp);
  testing::Comparison co = testing::compare(testing::as_float(c.dtype, dout.download()), ref.out, testing::tolerance_for(c.dtype));
  EXPECT_TRUE(co.passed) << "out: " << co.describe();
  testing::Comparison cs = testing::compare(dstate.download(), ref.state, kStateTolerance);
  EXPECT_TRUE(cs.passed) << "state: " << cs.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Mamba2DecodeGpu,
    ::testing::Values(
        // Mamba-2-2.7B: d_inner 5120, head_dim 64 -> 80 heads, d_state 128, 1 group.
        SsmCase{"batch1_mamba2_2p7b_bf16", ElemType::kBF16, 1, 80, 64, 128, 1, true, true, true, true},
        SsmCase{"batch3_mamba2_2p7b_fp16", ElemType::kFP16, 3, 80, 64, 128, 1, true, true, true, true},
        SsmCase{"groups8_dstate256_no_z", ElemType::kBF16, 2, 16, 32, 256, 8, true, true, false, true},
        SsmCase{"odd_heads_odd_dims", ElemType::kFP16, 5, 7, 3, 33, 7, false, false, true, false},
        SsmCase{"dstate1_headdim1", ElemType::kBF16, 4, 2, 1, 1, 2, true, false, false, false}),
    [](const ::testing::TestParamInfo<SsmCase>& i) { return i.param.name; });

struct ConvCase {
  std::string name;
  ElemType dtype;
  int num_seqs, conv_dim, d_conv;
  bool bias, silu;
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.name; }

class CausalConvGpu : public ::testing::TestWithParam<ConvCase> {};

// Two consecutive steps on the device against two reference steps: the second one reads the state
// the first one shifted.
TEST_P(CausalConvGpu, MatchesReferenceOverTwoSteps) {
  KVPLAN_REQUIRE_GPU();
  const ConvCase& c = GetParam();
  std::mt19937_64 rng(91 + uint64_t(c.conv_dim) + uint64_t(c.d_conv));
  const size_t S = size_t(c.num_seqs), D = size_t(c.conv_dim), W = size_t(c.d_conv);
  const std::vector<uint16_t> x0 = testing::random_bits(c.dtype, S * D, rng), x1 = testing::random_bits(c.dtype, S * D, rng);
  const std::vector<uint16_t> w = testing::random_bits(c.dtype, D * W, rng), b = testing::random_bits(c.dtype, D, rng);
  std::vector<uint16_t> host_state = testing::random_bits(c.dtype, S * D * (W - 1), rng);
  DeviceBuffer<uint16_t> dx0(x0), dx1(x1), dw(w), db(b), dstate(host_state), dout(S * D);
  for (const std::vector<uint16_t>* x : {&x0, &x1}) {
    dout.poison();
    CausalConvUpdateParams p;
    p.dtype = c.dtype;
    p.num_seqs = c.num_seqs;
    p.conv_dim = c.conv_dim;
    p.d_conv = c.d_conv;
    p.silu = c.silu;
    p.x = x == &x0 ? dx0.get() : dx1.get();
    p.weight = dw.get();
    p.bias = c.bias ? db.get() : nullptr;
    p.conv_state = W > 1 ? dstate.get() : nullptr;
    p.out = dout.get();
    ASSERT_TRUE(launch_causal_conv_update(p, nullptr).ok());
    std::vector<uint16_t> unused_out(1);
    CausalConvUpdateParams hp = p;
    hp.x = x->data();
    hp.weight = w.data();
    hp.bias = c.bias ? b.data() : nullptr;
    hp.conv_state = W > 1 ? host_state.data() : nullptr;
    hp.out = unused_out.data();
    const CausalConvRef ref = causal_conv_update_ref(hp);
    testing::Comparison co = testing::compare(testing::as_float(c.dtype, dout.download()), ref.out, testing::tolerance_for(c.dtype));
    EXPECT_TRUE(co.passed) << "out: " << co.describe();
    if (W > 1) {
      const std::vector<uint16_t> got_state = dstate.download();
      EXPECT_EQ(got_state, ref.conv_state) << "conv state must be an exact shift";
    }
    host_state = ref.conv_state;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CausalConvGpu,
    ::testing::Values(
        // Mamba-2-2.7B: conv_dim = 5120 + 2·1·128 = 5376, d_conv 4.
        ConvCase{"batch1_mamba2_2p7b_bf16", ElemType::kBF16, 1, 5376, 4, true, true},
        ConvCase{"batch7_mamba2_2p7b_fp16", ElemType::kFP16, 7, 5376, 4, true, true},
        ConvCase{"odd_dim_width2_no_bias", ElemType::kBF16, 3, 37, 2, false, true},
        ConvCase{"width8_no_silu", ElemType::kFP16, 2, 300, 8, true, false},
        ConvCase{"width1_no_state", ElemType::kBF16, 5, 129, 1, true, false}),
    [](const ::testing::TestParamInfo<ConvCase>& i) { return i.param.name; });

TEST(Mamba2Launch, RejectsBadParams) {
  Mamba2DecodeParams p;
  EXPECT_FALSE(launch_mamba2_decode(p, nullptr).ok());
  CausalConvUpdateParams c;
  std::vector<uint16_t> buf(16);
  c.num_seqs = 1;
  c.conv_dim = 1;
  c.d_conv = kCausalConvMaxWidth + 1;
  c.x = c.weight = buf.data();
  c.conv_state = c.out = buf.data();
  const Status s = launch_causal_conv_update(c, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.call(), "params");
}

}  // namespace
}  // namespace kvplan::kernels
