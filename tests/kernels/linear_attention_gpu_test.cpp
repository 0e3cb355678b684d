// Linear attention kernels (decode step, chunked varlen prefill) against the CPU references: fresh
// random inputs per case, poisoned outputs and final states, every element checked, per-dtype
// tolerances for the 16-bit outputs and an fp32 tolerance for the states; shapes with batch 1,
// 1-token sequences, lengths on chunk boundaries +-1, odd head counts, value dims that leave a
// partial 32-column tile, mixed lengths. Also: prefill == the decode kernel run token by token, and
// perturbing token j leaves every earlier output bit-identical (the causal mask).
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/linear_attention.h"
#include "kvplan/kernels/reference/linear_attention_ref.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

// fp32 state against the double reference: only accumulation order and fp32 rounding differ.
constexpr Tolerance kStateTolerance{1e-4, 1e-4, 1e-5};

struct Case {
  std::string name;
  ElemType dtype;
  FeatureMap fm;
  int hk, hv, dk, dv;
  std::vector<int> lens;  // prefill: tokens per sequence; decode: only the count matters
  bool gated;             // per-token decay, else plain (decay == nullptr)
  bool init;              // initial state given, else zeros (prefill only)
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// Host inputs of one problem: fresh random values (never zeros), decays in [0.8, 1).
struct Problem {
  Case c;
  int num_seqs = 0, total = 0;
  std::vector<uint16_t> q, k, v;
  std::vector<float> decay, state;
  std::vector<int32_t> cu;
  Problem(const Case& cs, uint64_t seed, bool decode) : c(cs) {
    std::mt19937_64 rng(seed);
    num_seqs = static_cast<int>(c.lens.size());
    cu.push_back(0);
    for (int l : c.lens) cu.push_back(cu.back() + (decode ? 1 : l));
    total = cu.back();
    q = testing::random_bits(c.dtype, size_t(total) * c.hk * c.dk, rng);
    k = testing::random_bits(c.dtype, q.size(), rng);
    v = testing::random_bits(c.dtype, size_t(total) * c.hv * c.dv, rng);
    std::uniform_real_distribution<float> dd(0.8f, 1.f), sd(-1.f, 1.f);
    decay.resize(size_t(total) * c.hv);
    for (float& d : decay) d = dd(rng);
    state.resize(size_t(num_seqs) * size_t(linear_attention_state_elems(c.hv, c.dk, c.dv)));
    for (float& s : state) s = sd(rng);
  }
  template <typename P>
  void fill_common(P& p) const {
    p.dtype = c.dtype;
    p.feature_map = c.fm;
    p.num_seqs = num_seqs;
    p.num_key_heads = c.hk;
    p.num_value_heads = c.hv;
    p.key_head_dim = c.dk;
    p.value_head_dim = c.dv;
    p.scale = 1.f / std::sqrt(float(c.dk));
  }
  LinearAttentionPrefillParams host_prefill() const {
    LinearAttentionPrefillParams p;
    fill_common(p);
    p.total_tokens = total;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.decay = c.gated ? decay.data() : nullptr;
    p.cu_seqlens = cu.data();
    p.initial_state = c.init ? state.data() : nullptr;
    p.final_state = const_cast<float*>(state.data());  // ignored by the reference
    p.out = const_cast<uint16_t*>(q.data());           // ignored by the reference
    return p;
  }
};

// Device copies of a prefill problem with poisoned outputs; `in_place` makes final_state the
// initial state buffer.
struct PrefillRun {
  DeviceBuffer<uint16_t> q, k, v, out;
  DeviceBuffer<float> decay, init, fin;
  DeviceBuffer<int32_t> cu;
  LinearAttentionPrefillParams p;
  PrefillRun(const Problem& pb, bool in_place)
      : q(pb.q), k(pb.k), v(pb.v), out(size_t(pb.total) * pb.c.hv * pb.c.dv), decay(pb.decay), init(pb.state),
        fin(pb.state.size()), cu(pb.cu) {
    out.poison();
    fin.poison();
    pb.fill_common(p);
    p.total_tokens = pb.total;
    p.q = q.get();
    p.k = k.get();
    p.v = v.get();
    p.decay = pb.c.gated ? decay.get() : nullptr;
    p.cu_seqlens = cu.get();
    p.initial_state = pb.c.init || in_place ? init.get() : nullptr;
    p.final_state = in_place ? init.get() : fin.get();
    p.out = out.get();
    if (in_place && !pb.c.init) init.upload(std::vector<float>(pb.state.size(), 0.f));
  }
  std::vector<float> final_state() const { return p.final_state == init.get() ? init.download() : fin.download(); }
};

void expect_matches(const std::vector<float>& got, const std::vector<double>& ref, const Tolerance& tol, const char* what) {
  testing::Comparison cmp = testing::compare(got, ref, tol);
  EXPECT_TRUE(cmp.passed) << what << ": " << cmp.describe();
}

class LinearAttentionDecodeGpu : public ::testing::TestWithParam<Case> {};

TEST_P(LinearAttentionDecodeGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  Problem pb(c, 1000 + c.lens.size() * 7 + uint64_t(c.dk), true);
  DeviceBuffer<uint16_t> q(pb.q), k(pb.k), v(pb.v), out(size_t(pb.num_seqs) * c.hv * c.dv);
  DeviceBuffer<float> decay(pb.decay), state(pb.state);
  out.poison();
  LinearAttentionDecodeParams p;
  pb.fill_common(p);
  p.q = q.get();
  p.k = k.get();
  p.v = v.get();
  p.decay = c.gated ? decay.get() : nullptr;
  p.state = state.get();
  p.out = out.get();
  ASSERT_TRUE(launch_linear_attention_decode(p, nullptr).ok());
  LinearAttentionDecodeParams hp = p;
  hp.q = pb.q.data();
  hp.k = pb.k.data();
  hp.v = pb.v.data();
  hp.decay = c.gated ? pb.decay.data() : nullptr;
  hp.state = pb.state.data();
  std::vector<uint16_t> unused_out(1);
  hp.out = unused_out.data();  // ignored by the reference, must be non-null
  const LinearAttentionRef ref = linear_attention_decode_ref(hp);
  expect_matches(testing::as_float(c.dtype, out.download()), ref.out, testing::tolerance_for(c.dtype), "out");
  expect_matches(state.download(), ref.state, kStateTolerance, "state");
}

class LinearAttentionPrefillGpu : public ::testing::TestWithParam<Case> {};

TEST_P(LinearAttentionPrefillGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  Problem pb(c, 2000 + uint64_t(c.dk) * 3 + uint64_t(c.hv), false);
  const LinearAttentionRef ref = linear_attention_prefill_ref(pb.host_prefill());
  for (bool in_place : {false, true}) {
    PrefillRun run(pb, in_place);
    ASSERT_TRUE(launch_linear_attention_prefill(run.p, nullptr).ok());
    expect_matches(testing::as_float(c.dtype, run.out.download()), ref.out, testing::tolerance_for(c.dtype),
                   in_place ? "out (in place)" : "out");
    expect_matches(run.final_state(), ref.state, kStateTolerance, in_place ? "final state (in place)" : "final state");
  }
}

// The prefill kernel and the decode kernel run token by token agree (outputs within the 16-bit
// tolerance of each other's rounding, states within fp32 accumulation error).
TEST_P(LinearAttentionPrefillGpu, EqualsDecodeKernelTokenByToken) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  Problem pb(c, 3000 + uint64_t(c.dv), false);
  PrefillRun run(pb, false);
  ASSERT_TRUE(launch_linear_attention_prefill(run.p, nullptr).ok());
  const std::vector<uint16_t> prefill_out = run.out.download();
  const std::vector<float> prefill_state = run.final_state();

  const size_t per_seq = size_t(linear_attention_state_elems(c.hv, c.dk, c.dv));
  DeviceBuffer<float> state(c.init ? pb.state : std::vector<float>(pb.state.size(), 0.f));
  DeviceBuffer<uint16_t> out(prefill_out.size());
  out.poison();
  for (int s = 0; s < pb.num_seqs; ++s) {
    for (int tok = pb.cu[size_t(s)]; tok < pb.cu[size_t(s) + 1]; ++tok) {
      LinearAttentionDecodeParams d;
      pb.fill_common(d);
      d.num_seqs = 1;
      d.q = run.p.q + size_t(tok) * c.hk * c.dk;
      d.k = run.p.k + size_t(tok) * c.hk * c.dk;
      d.v = run.p.v + size_t(tok) * c.hv * c.dv;
      d.decay = c.gated ? run.p.decay + size_t(tok) * c.hv : nullptr;
      d.state = state.get() + size_t(s) * per_seq;
      d.out = out.get() + size_t(tok) * c.hv * c.dv;
      ASSERT_TRUE(launch_linear_attention_decode(d, nullptr).ok());
    }
  }
  const std::vector<double> decode_out_as_ref = [&] {
    std::vector<double> r;
    for (float x : testing::as_float(c.dtype, out.download())) r.push_back(x);
    return r;
  }();
  const std::vector<double> decode_state = [&] {
    std::vector<double> r;
    for (float x : state.download()) r.push_back(x);
    return r;
  }();
  // Two roundings to 16 bits (one each side): twice the per-dtype tolerance.
  Tolerance t = testing::tolerance_for(c.dtype);
  t.atol *= 2;
  t.rtol *= 2;
  t.max_rel_l2 *= 2;
  expect_matches(testing::as_float(c.dtype, prefill_out), decode_out_as_ref, t, "prefill out vs decode steps");
  expect_matches(prefill_state, decode_state, kStateTolerance, "prefill state vs decode steps");
}

// Perturbing token j (its k, v and decay) leaves every output before j, and every other sequence,
// bit-identical, and changes token j's own output.
TEST_P(LinearAttentionPrefillGpu, CausalMaskNoFutureTokenLeaks) {
  KVPLAN_REQUIRE_GPU();
  const Case& c = GetParam();
  Problem pb(c, 4000 + uint64_t(c.hk), false);
  PrefillRun base_run(pb, false);
  ASSERT_TRUE(launch_linear_attention_prefill(base_run.p, nullptr).ok());
  const std::vector<uint16_t> base = base_run.out.download();
  const size_t row = size_t(c.hv) * c.dv;
  std::mt19937_64 rng(5);
  for (int s = 0; s < pb.num_seqs; ++s) {
    const int len = pb.cu[size_t(s) + 1] - pb.cu[size_t(s)];
    if (len == 0) continue;
    for (int j : {0, len / 2, len - 1, std::min(len - 1, kLinearAttentionChunk)}) {
      const int tok = pb.cu[size_t(s)] + j;
      Problem bumped = pb;
      std::vector<uint16_t> nk = testing::random_bits(c.dtype, size_t(c.hk) * c.dk, rng, 1.f, 2.f);
      std::vector<uint16_t> nv = testing::random_bits(c.dtype, row, rng, 1.f, 2.f);
      std::copy(nk.begin(), nk.end(), bumped.k.begin() + long(size_t(tok) * c.hk * c.dk));
      std::copy(nv.begin(), nv.end(), bumped.v.begin() + long(size_t(tok) * row));
      for (int h = 0; h < c.hv; ++h) bumped.decay[size_t(tok) * c.hv + h] = 0.5f;
      PrefillRun run(bumped, false);
      ASSERT_TRUE(launch_linear_attention_prefill(run.p, nullptr).ok());
      const std::vector<uint16_t> got = run.out.download();
      for (size_t e = 0; e < got.size(); ++e) {
        const size_t t = e / row;
        const bool before_in_seq = int(t) >= pb.cu[size_t(s)] && int(t) < tok;
        const bool other_seq = int(t) < pb.cu[size_t(s)] || int(t) >= pb.cu[size_t(s) + 1];
        if (before_in_seq || other_seq) {
          ASSERT_EQ(got[e], base[e]) << "token " << t << " changed when token " << tok << " did";
        }
      }
      EXPECT_FALSE(std::equal(got.begin() + long(size_t(tok) * row), got.begin() + long(size_t(tok + 1) * row),
                              base.begin() + long(size_t(tok) * row)))
          << "token " << tok << " does not see itself";
    }
  }
}

const ElemType kBf = ElemType::kBF16;
const ElemType kFp = ElemType::kFP16;
const FeatureMap kId = FeatureMap::kIdentity;
const FeatureMap kElu = FeatureMap::kEluPlusOne;
const FeatureMap kRelu = FeatureMap::kRelu;

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearAttentionDecodeGpu,
    ::testing::Values(Case{"batch1_bf16_qwen3next", kBf, kId, 16, 32, 128, 128, {1}, true, true},
                      Case{"batch5_fp16_elu", kFp, kElu, 2, 4, 128, 128, {1, 1, 1, 1, 1}, true, true},
                      Case{"odd_heads_relu_dv48", kBf, kRelu, 3, 9, 64, 48, {1, 1, 1}, true, true},
                      Case{"plain_dk17_dv33", kFp, kId, 1, 5, 17, 33, {1, 1}, false, true},
                      Case{"mha_dk1_dv1", kBf, kId, 7, 7, 1, 1, {1, 1, 1, 1}, true, true}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearAttentionPrefillGpu,
    ::testing::Values(Case{"batch1_one_token", kBf, kId, 1, 2, 128, 128, {1}, true, true},
                      Case{"chunk_boundaries_bf16", kBf, kId, 2, 4, 128, 128, {63, 64, 65}, true, true},
                      Case{"two_chunks_pm1_fp16_elu", kFp, kElu, 1, 3, 64, 64, {127, 128, 129}, true, false},
                      Case{"mixed_relu_odd_heads", kBf, kRelu, 3, 3, 32, 48, {1, 0, 200, 5, 64}, true, true},
                      Case{"plain_no_decay", kFp, kId, 1, 1, 16, 16, {150, 2}, false, true},
                      Case{"dk17_dv33_gqa5", kBf, kElu, 1, 5, 17, 33, {66, 31}, true, true}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Params checks run everywhere (no device needed: they fail before any CUDA call).
TEST(LinearAttentionLaunch, RejectsBadParams) {
  LinearAttentionDecodeParams p;
  EXPECT_FALSE(launch_linear_attention_decode(p, nullptr).ok());  // null pointers, zero heads
  std::vector<uint16_t> buf(8);
  std::vector<float> st(8);
  p.num_seqs = 1;
  p.num_key_heads = 1;
  p.num_value_heads = 1;
  p.key_head_dim = kLinearAttentionMaxKeyDim + 1;
  p.value_head_dim = 1;
  p.q = p.k = p.v = buf.data();
  p.out = buf.data();
  p.state = st.data();
  const Status s = launch_linear_attention_decode(p, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.call(), "params");
  LinearAttentionPrefillParams pp;
  EXPECT_FALSE(launch_linear_attention_prefill(pp, nullptr).ok());
}

}  // namespace
}  // namespace kvplan::kernels
