// The recurrent-state cases of kvplan_bench_kernels. Like kernel_bench_cases.cpp: inputs allocated
// once (fresh random values), each case checked against its CPU reference at a reduced shape of
// the same configuration first (batch <= 2, prefill <= 300 tokens), then timed at full size. The
// decode kernels update their state in place, so timed repetitions keep stepping the same state
// (decays < 1 keep it bounded); the prefill reads an initial state and writes a separate final one.
//
// Bytes count every input read once and every output written once (the state twice: read and
// written). FLOPs count the algorithm's multiply-adds as 2, not the prefill kernel's recomputation
// of the chunk scores per 32-column tile.
#include "kernel_bench_recurrent.h"
#include "kernel_bench_util.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kvplan/kernels/linear_attention.h"
#include "kvplan/kernels/mamba2.h"
#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/linear_attention_ref.h"
#include "kvplan/kernels/reference/mamba2_ref.h"

namespace kvplan::bench {
namespace {

using namespace kvplan::kernels;

std::vector<float> uniform(size_t n, float lo, float hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// "" when every element is finite and within tolerance (bf16 outputs: 2e-2 abs + rel; fp32 states:
// 1e-4 abs + rel), else what differs.
template <typename T>
std::string compare(const std::vector<T>& got, const std::vector<double>& ref, const char* what) {
  if (got.size() != ref.size()) return std::string(what) + ": size mismatch";
  const double tol = sizeof(T) == 2 ? 2e-2 : 1e-4;
  size_t bad = 0, nan = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = 0;
    if constexpr (sizeof(T) == 2) {
      g = bf16_to_float(got[i]);
    } else {
      g = got[i];
    }
    if (std::isnan(g)) {
      ++nan;
      continue;
    }
    if (std::fabs(g - ref[i]) > tol + tol * std::fabs(ref[i])) ++bad;
  }
  if (nan + bad == 0) return "";
  return std::string(what) + ": " + std::to_string(nan) + " NaN/unwritten, " + std::to_string(bad) +
         " outside tolerance of " + std::to_string(got.size());
}

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : (b.empty() ? a : a + "; " + b); }

// Qwen3-Next-like linear attention: 16 key heads, 32 value heads, head dims 128.
constexpr int kLaKeyHeads = 16, kLaValueHeads = 32, kLaDim = 128;
// Mamba-2-2.7B: d_inner 5120 = 80 heads x 64, d_state 128, 1 group, d_conv 4.
constexpr int kMHeads = 80, kMHeadDim = 64, kMState = 128, kMGroups = 1, kMConv = 4;
constexpr int kMConvDim = kMHeads * kMHeadDim + 2 * kMGroups * kMState;

struct LaDecode {
  Keep keep;
  LinearAttentionDecodeParams p;
  std::vector<uint16_t> q, k, v;
  std::vector<float> decay, state;
};

std::shared_ptr<LaDecode> make_la_decode(int batch, uint64_t seed) {
  auto c = std::make_shared<LaDecode>();
  std::mt19937_64 rng(seed);
  c->q = random16(size_t(batch) * kLaKeyHeads * kLaDim, rng);
  c->k = random16(c->q.size(), rng);
  c->v = random16(size_t(batch) * kLaValueHeads * kLaDim, rng);
  c->decay = uniform(size_t(batch) * kLaValueHeads, 0.8f, 1.f, rng);
  c->state = uniform(size_t(batch) * size_t(linear_attention_state_elems(kLaValueHeads, kLaDim, kLaDim)), -1.f, 1.f, rng);
  LinearAttentionDecodeParams& p = c->p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = batch;
  p.num_key_heads = kLaKeyHeads;
  p.num_value_heads = kLaValueHeads;
  p.key_head_dim = p.value_head_dim = kLaDim;
  p.scale = 1.f / std::sqrt(float(kLaDim));
  p.q = upload(c->keep, c->q);
  p.k = upload(c->keep, c->k);
  p.v = upload(c->keep, c->v);
  p.decay = upload(c->keep, c->decay);
  p.state = upload(c->keep, c->state);
  p.out = alloc<uint16_t>(c->keep, c->v.size());
  return c;
}

void add_la_decode(Harness& h, int batch) {
  auto c = make_la_decode(batch, 10 + uint64_t(batch));
  const double state_bytes = 4.0 * batch * kLaValueHeads * kLaDim * kLaDim;
  const double bytes = 2 * state_bytes + 2.0 * 2 * batch * kLaKeyHeads * kLaDim + 2.0 * 2 * batch * kLaValueHeads * kLaDim +
                       4.0 * batch * kLaValueHeads;
  const double flops = 4.0 * batch * kLaValueHeads * kLaDim * kLaDim;
  const std::string shape = "B=" + std::to_string(batch) + " Hk=16 Hv=32 Dk=Dv=128 gated";
  h.add(KernelCase{"linear_attn_decode", shape, bytes, flops,
                   [c](Stream st) { return launch_linear_attention_decode(c->p, st); },
                   [batch] {
                     auto s = make_la_decode(std::min(batch, 2), 20);
                     Status st = launch_linear_attention_decode(s->p, nullptr);
                     if (!st.ok()) return st.describe();
                     LinearAttentionDecodeParams hp = s->p;
                     std::vector<uint16_t> unused(1);
                     hp.q = s->q.data();
                     hp.k = s->k.data();
                     hp.v = s->v.data();
                     hp.decay = s->decay.data();
                     hp.state = s->state.data();
                     hp.out = unused.data();
                     const LinearAttentionRef ref = linear_attention_decode_ref(hp);
                     return join(compare(download(s->p.out, s->v.size()), ref.out, "out"),
                                 compare(download(s->p.state, s->state.size()), ref.state, "state"));
                   }});
}

struct LaPrefill {
  Keep keep;
  LinearAttentionPrefillParams p;
  std::vector<uint16_t> q, k, v;
  std::vector<float> decay, init;
  std::vector<int32_t> cu;
};

std::shared_ptr<LaPrefill> make_la_prefill(int batch, int len, uint64_t seed) {
  auto c = std::make_shared<LaPrefill>();
  std::mt19937_64 rng(seed);
  const int total = batch * len;
  c->q = random16(size_t(total) * kLaKeyHeads * kLaDim, rng);
  c->k = random16(c->q.size(), rng);
  c->v = random16(size_t(total) * kLaValueHeads * kLaDim, rng);
  c->decay = uniform(size_t(total) * kLaValueHeads, 0.8f, 1.f, rng);
  c->init = uniform(size_t(batch) * size_t(linear_attention_state_elems(kLaValueHeads, kLaDim, kLaDim)), -1.f, 1.f, rng);
  for (int s = 0; s <= batch; ++s) c->cu.push_back(s * len);
  LinearAttentionPrefillParams& p = c->p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = batch;
  p.total_tokens = total;
  p.num_key_heads = kLaKeyHeads;
  p.num_value_heads = kLaValueHeads;
  p.key_head_dim = p.value_head_dim = kLaDim;
  p.scale = 1.f / std::sqrt(float(kLaDim));
  p.q = upload(c->keep, c->q);
  p.k = upload(c->keep, c->k);
  p.v = upload(c->keep, c->v);
  p.decay = upload(c->keep, c->decay);
  p.cu_seqlens = upload(c->keep, c->cu);
  p.initial_state = upload(c->keep, c->init);
  p.final_state = alloc<float>(c->keep, c->init.size());
  p.out = alloc<uint16_t>(c->keep, c->v.size());
  return c;
}

void add_la_prefill(Harness& h, int batch, int len) {
  auto c = make_la_prefill(batch, len, 30);
  const double tokens = double(batch) * len, C = kLinearAttentionChunk, dk = kLaDim, dv = kLaDim;
  const double flops = tokens * kLaValueHeads * (C * dk + C * dv + 4.0 * dk * dv);
  const double bytes = 2.0 * 2 * tokens * kLaKeyHeads * dk + 2.0 * 2 * tokens * kLaValueHeads * dv +
                       4.0 * tokens * kLaValueHeads + 2 * 4.0 * batch * kLaValueHeads * dk * dv;
  const std::string shape = "B=" + std::to_string(batch) + " L=" + std::to_string(len) + " Hk=16 Hv=32 D=128 C=" +
                            std::to_string(kLinearAttentionChunk);
  h.add(KernelCase{"linear_attn_prefill", shape, bytes, flops,
                   [c](Stream st) { return launch_linear_attention_prefill(c->p, st); },
                   [len] {
                     auto s = make_la_prefill(1, std::min(len, 300), 31);
                     Status st = launch_linear_attention_prefill(s->p, nullptr);
                     if (!st.ok()) return st.describe();
                     LinearAttentionPrefillParams hp = s->p;
                     std::vector<uint16_t> unused_out(1);
                     std::vector<float> unused_state(1);
                     hp.q = s->q.data();
                     hp.k = s->k.data();
                     hp.v = s->v.data();
                     hp.decay = s->decay.data();
                     hp.cu_seqlens = s->cu.data();
                     hp.initial_state = s->init.data();
                     hp.final_state = unused_state.data();
                     hp.out = unused_out.data();
                     const LinearAttentionRef ref = linear_attention_prefill_ref(hp);
                     return join(compare(download(s->p.out, s->v.size()), ref.out, "out"),
                                 compare(download(s->p.final_state, s->init.size()), ref.state, "final state"));
                   }});
}

struct SsmDecode {
  Keep keep;
  Mamba2DecodeParams p;
  std::vector<uint16_t> x, dt, B, C, z;
  std::vector<float> dt_bias, A, D, state;
};

std::shared_ptr<SsmDecode> make_ssm(int batch, uint64_t seed) {
  auto c = std::make_shared<SsmDecode>();
  std::mt19937_64 rng(seed);
  const size_t xs = size_t(batch) * kMHeads * kMHeadDim, bs = size_t(batch) * kMGroups * kMState;
  c->x = random16(xs, rng);
  c->z = random16(xs, rng);
  c->dt = random16(size_t(batch) * kMHeads, rng);
  c->B = random16(bs, rng);
  c->C = random16(bs, rng);
  c->dt_bias = uniform(kMHeads, -0.5f, 0.5f, rng);
  c->A = uniform(kMHeads, -2.f, -0.25f, rng);
  c->D = uniform(kMHeads, -1.f, 1.f, rng);
  c->state = uniform(xs * kMState, -1.f, 1.f, rng);
  Mamba2DecodeParams& p = c->p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = batch;
  p.num_heads = kMHeads;
  p.head_dim = kMHeadDim;
  p.d_state = kMState;
  p.n_groups = kMGroups;
  p.x = upload(c->keep, c->x);
  p.dt = upload(c->keep, c->dt);
  p.dt_bias = upload(c->keep, c->dt_bias);
  p.A = upload(c->keep, c->A);
  p.B = upload(c->keep, c->B);
  p.C = upload(c->keep, c->C);
  p.D = upload(c->keep, c->D);
  p.z = upload(c->keep, c->z);
  p.state = upload(c->keep, c->state);
  p.out = alloc<uint16_t>(c->keep, xs);
  return c;
}

void add_ssm(Harness& h, int batch) {
  auto c = make_ssm(batch, 40 + uint64_t(batch));
  const double elems = double(batch) * kMHeads * kMHeadDim * kMState;
  const double bytes = 2 * 4.0 * elems + 3 * 2.0 * batch * kMHeads * kMHeadDim + 2 * 2.0 * batch * kMGroups * kMState;
  const std::string shape = "B=" + std::to_string(batch) + " H=80 P=64 N=128 G=1";
  h.add(KernelCase{"mamba2_decode", shape, bytes, 5.0 * elems, [c](Stream st) { return launch_mamba2_decode(c->p, st); },
                   [batch] {
                     auto s = make_ssm(std::min(batch, 2), 50);
                     Status st = launch_mamba2_decode(s->p, nullptr);
                     if (!st.ok()) return st.describe();
                     Mamba2DecodeParams hp = s->p;
                     std::vector<uint16_t> unused(1);
                     hp.x = s->x.data();
                     hp.dt = s->dt.data();
                     hp.dt_bias = s->dt_bias.data();
                     hp.A = s->A.data();
                     hp.B = s->B.data();
                     hp.C = s->C.data();
                     hp.D = s->D.data();
                     hp.z = s->z.data();
                     hp.state = s->state.data();
                     hp.out = unused.data();
                     const Mamba2Ref ref = mamba2_decode_ref(hp);
                     return join(compare(download(s->p.out, s->x.size()), ref.out, "out"),
                                 compare(download(s->p.state, s->state.size()), ref.state, "state"));
                   }});
}

struct ConvUpdate {
  Keep keep;
  CausalConvUpdateParams p;
  std::vector<uint16_t> x, w, b, state;
};

std::shared_ptr<ConvUpdate> make_conv(int batch, uint64_t seed) {
  auto c = std::make_shared<ConvUpdate>();
  std::mt19937_64 rng(seed);
  c->x = random16(size_t(batch) * kMConvDim, rng);
  c->w = random16(size_t(kMConvDim) * kMConv, rng);
  c->b = random16(kMConvDim, rng);
  c->state = random16(size_t(batch) * kMConvDim * (kMConv - 1), rng);
  CausalConvUpdateParams& p = c->p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = batch;
  p.conv_dim = kMConvDim;
  p.d_conv = kMConv;
  p.silu = true;
  p.x = upload(c->keep, c->x);
  p.weight = upload(c->keep, c->w);
  p.bias = upload(c->keep, c->b);
  p.conv_state = upload(c->keep, c->state);
  p.out = alloc<uint16_t>(c->keep, c->x.size());
  return c;
}

void add_conv(Harness& h, int batch) {
  auto c = make_conv(batch, 60 + uint64_t(batch));
  const double bytes = 2.0 * (2.0 * batch * kMConvDim * (kMConv - 1) + 2.0 * batch * kMConvDim + kMConvDim * (kMConv + 1.0));
  const std::string shape = "B=" + std::to_string(batch) + " dim=" + std::to_string(kMConvDim) + " W=4 silu";
  h.add(KernelCase{"causal_conv_update", shape, bytes, 2.0 * batch * kMConvDim * kMConv,
                   [c](Stream st) { return launch_causal_conv_update(c->p, st); },
                   [batch] {
                     auto s = make_conv(std::min(batch, 2), 70);
                     Status st = launch_causal_conv_update(s->p, nullptr);
                     if (!st.ok()) return st.describe();
                     CausalConvUpdateParams hp = s->p;
                     std::vector<uint16_t> unused(1);
                     hp.x = s->x.data();
                     hp.weight = s->w.data();
                     hp.bias = s->b.data();
                     hp.conv_state = s->state.data();
                     hp.out = unused.data();
                     const CausalConvRef ref = causal_conv_update_ref(hp);
                     std::string bad = compare(download(s->p.out, s->x.size()), ref.out, "out");
                     if (download(s->p.conv_state, s->state.size()) != ref.conv_state) bad = join(bad, "conv state not an exact shift");
                     return bad;
                   }});
}

}  // namespace

void add_recurrent_cases(Harness& h, const kernels::DeviceInfo& d, bool quick) {
  (void)d;  // every shape here fits any device the kernels build for (largest: 8192-token prefill, ~40 MiB)
  const std::vector<int> batches = quick ? std::vector<int>{1, 256} : std::vector<int>{1, 64, 256};
  for (int b : batches) add_la_decode(h, b);
  add_la_prefill(h, 1, 8192);
  for (int b : batches) add_ssm(h, b);
  for (int b : batches) add_conv(h, b);
}

}  // namespace kvplan::bench
