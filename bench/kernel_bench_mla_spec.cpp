// MLA decode and speculative-verify cases of kvplan_bench_kernels. As in kernel_bench_cases.cpp, each
// case is checked against its CPU reference at a reduced shape of the same configuration, then timed
// at full size. Full-size caches (up to 2.4 GB) are filled by repeating a random pattern of 2^22
// elements: timing does not depend on the values, and the checks use shapes where every value is
// drawn fresh.
#include "kernel_bench_mla_spec.h"
#include "kernel_bench_util.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvplan/kernels/mla_attention.h"
#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/mla_attention_ref.h"
#include "kvplan/kernels/reference/spec_verify_ref.h"
#include "kvplan/kernels/spec_verify.h"
#include "kvplan/kernels/split_plan.h"

namespace kvplan::bench {
namespace {

using namespace kvplan::kernels;

constexpr size_t kPatternElems = size_t{1} << 22;

// n elements drawn by `gen`; when `host` is given every element is fresh and kept there, otherwise the
// device buffer repeats a pattern of kPatternElems fresh ones.
template <typename T, typename Gen>
T* random_device_buffer(Keep& keep, size_t n, Gen gen, std::vector<T>* host) {
  auto blob = std::make_shared<DeviceBlob>(n * sizeof(T));
  keep.push_back(blob);
  T* dev = static_cast<T*>(blob->ptr);
  if (dev == nullptr) return nullptr;
  std::vector<T> pattern(host ? n : std::min(n, kPatternElems));
  for (T& x : pattern) x = gen();
  for (size_t at = 0; at < n; at += pattern.size()) {
    cudaMemcpy(dev + at, pattern.data(), std::min(pattern.size(), n - at) * sizeof(T), cudaMemcpyHostToDevice);
  }
  if (host) *host = std::move(pattern);
  return dev;
}

auto bf16_gen(std::mt19937_64& rng, float lo, float hi) {
  return [&rng, lo, hi] {
    const float f = std::uniform_real_distribution<float>(lo, hi)(rng);
    return float_to_bf16(f == 0.f ? 0.25f : f);
  };
}

std::vector<int32_t> shuffled_table(int blocks, std::mt19937_64& rng) {
  std::vector<int32_t> t(static_cast<size_t>(blocks));
  std::iota(t.begin(), t.end(), 0);
  std::shuffle(t.begin(), t.end(), rng);
  return t;
}

// ── MLA decode ──
struct MlaCase {
  Keep keep;
  MlaDecodeParams p;
  std::vector<uint16_t> hq_nope, hq_rope, hpool16;  // host copies (check shapes only)
  std::vector<uint8_t> hpool8;
  std::vector<float> scale{1.f / 224.f};
  std::vector<int32_t> table, lens;
};

constexpr int kMlaHeads = 128;      // DeepSeek-V3 (one GPU, attention not tensor-parallel)
constexpr int kMlaTpb = 64;         // FlashMLA's block size
constexpr int kMlaRow = kMlaKvLoraRank + kMlaRopeDim;

std::shared_ptr<MlaCase> make_mla(int batch, int context, bool fp8, int splits, uint64_t seed, bool keep_host) {
  auto c = std::make_shared<MlaCase>();
  std::mt19937_64 rng(seed);
  const int blocks_per_seq = (context + kMlaTpb - 1) / kMlaTpb;
  const int num_blocks = batch * blocks_per_seq;
  c->table = shuffled_table(num_blocks, rng);
  c->lens.assign(static_cast<size_t>(batch), context);
  MlaDecodeParams& p = c->p;
  p.dtype = ElemType::kBF16;
  p.cache_type = fp8 ? CacheType::kFp8E4M3 : CacheType::kBF16;
  p.num_seqs = batch;
  p.num_heads = kMlaHeads;
  p.kv_lora_rank = kMlaKvLoraRank;
  p.rope_dim = kMlaRopeDim;
  p.num_blocks = num_blocks;
  p.tokens_per_block = kMlaTpb;
  p.max_blocks_per_seq = blocks_per_seq;
  p.softmax_scale = 1.f / std::sqrt(192.f);
  p.q_nope = random_device_buffer<uint16_t>(c->keep, size_t(batch) * kMlaHeads * kMlaKvLoraRank, bf16_gen(rng, -2.f, 2.f),
                                            &c->hq_nope);
  p.q_rope = random_device_buffer<uint16_t>(c->keep, size_t(batch) * kMlaHeads * kMlaRopeDim, bf16_gen(rng, -2.f, 2.f),
                                            &c->hq_rope);
  const size_t elems = size_t(num_blocks) * kMlaTpb * kMlaRow;
  if (fp8) {
    const float s = c->scale[0];
    p.kv_cache = random_device_buffer<uint8_t>(
        c->keep, elems, [&rng, s] { return float_to_fp8_e4m3(std::uniform_real_distribution<float>(-1.f, 1.f)(rng) / s); },
        keep_host ? &c->hpool8 : nullptr);
  } else {
    p.kv_cache = random_device_buffer<uint16_t>(c->keep, elems, bf16_gen(rng, -1.f, 1.f), keep_host ? &c->hpool16 : nullptr);
  }
  p.kv_scale = upload(c->keep, c->scale);
  p.block_table = upload(c->keep, c->table);
  p.context_lens = upload(c->keep, c->lens);
  p.out = alloc<uint16_t>(c->keep, size_t(batch) * kMlaHeads * kMlaKvLoraRank);
  p.num_splits = splits;
  if (splits > 1) {
    p.partial_out = alloc<float>(c->keep, size_t(decode_partial_out_elems(batch, splits, kMlaHeads, kMlaKvLoraRank)));
    p.partial_lse = alloc<float>(c->keep, size_t(decode_partial_lse_elems(batch, splits, kMlaHeads)));
  }
  return c;
}

std::string check_mla(int batch, int context, bool fp8, int splits) {
  auto c = make_mla(std::min(batch, 2), std::min(context, 1024), fp8, std::min(splits, 8), 97, true);
  const Status st = launch_mla_decode(c->p, nullptr);
  if (!st.ok()) return st.describe();
  MlaDecodeParams h = c->p;
  h.q_nope = c->hq_nope.data();
  h.q_rope = c->hq_rope.data();
  h.kv_cache = fp8 ? static_cast<const void*>(c->hpool8.data()) : static_cast<const void*>(c->hpool16.data());
  h.kv_scale = c->scale.data();
  h.block_table = c->table.data();
  h.context_lens = c->lens.data();
  return compare_bf16(download(c->p.out, c->hq_nope.size()), mla_decode_ref(h));
}

void add_mla(Harness& h, const DeviceInfo& d, int batch, int context, bool fp8) {
  // Split count as the launch path would plan it: a sequence occupies mla_decode_head_tiles CTAs.
  const int splits = plan_decode_splits({.num_seqs = batch, .num_kv_heads = mla_decode_head_tiles(kMlaHeads),
                                         .max_context_len = context, .total_context_tokens = int64_t{batch} * context,
                                         .num_sms = d.num_sms})
                         .num_splits;
  auto c = make_mla(batch, context, fp8, splits, 3, false);
  const double tokens = double(batch) * context;
  const double bytes = tokens * kMlaRow * (fp8 ? 1.0 : 2.0) + 2.0 * batch * kMlaHeads * (kMlaRow + kMlaKvLoraRank);
  const double flops = 2.0 * tokens * kMlaHeads * (kMlaRow + kMlaKvLoraRank);
  const std::string shape = "B=" + std::to_string(batch) + " H=128 L=" + std::to_string(context) + " b64 splits=" +
                            std::to_string(splits);
  h.add(KernelCase{fp8 ? "mla_decode_fp8" : "mla_decode_bf16", shape, bytes, flops,
                   [c](Stream s) { return launch_mla_decode(c->p, s); },
                   [batch, context, fp8, splits] { return check_mla(batch, context, fp8, splits); }});
}

// ── Speculative verify ──
struct VerifyCase {
  Keep keep;
  SpecVerifyParams p;
  std::vector<uint16_t> hq, hk, hv;
  std::vector<int32_t> table, lens;
};

constexpr int kVerifyTpb = 16;

std::shared_ptr<VerifyCase> make_verify(int batch, int context, int draft, int q_heads, int kv_heads, int head_dim,
                                        uint64_t seed, bool keep_host) {
  auto c = std::make_shared<VerifyCase>();
  std::mt19937_64 rng(seed);
  const int blocks_per_seq = (context + draft + 1 + kVerifyTpb - 1) / kVerifyTpb;
  const int num_blocks = batch * blocks_per_seq;
  c->table = shuffled_table(num_blocks, rng);
  c->lens.assign(static_cast<size_t>(batch), context);
  SpecVerifyParams& p = c->p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = batch;
  p.num_draft = draft;
  p.num_q_heads = q_heads;
  p.num_kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.num_blocks = num_blocks;
  p.tokens_per_block = kVerifyTpb;
  p.max_blocks_per_seq = blocks_per_seq;
  p.softmax_scale = 1.f / std::sqrt(float(head_dim));
  const size_t q_elems = size_t(batch) * (draft + 1) * q_heads * head_dim;
  const size_t kv_elems = size_t(num_blocks) * kv_heads * kVerifyTpb * head_dim;
  p.q = random_device_buffer<uint16_t>(c->keep, q_elems, bf16_gen(rng, -2.f, 2.f), &c->hq);
  p.k_cache = random_device_buffer<uint16_t>(c->keep, kv_elems, bf16_gen(rng, -1.f, 1.f), keep_host ? &c->hk : nullptr);
  p.v_cache = random_device_buffer<uint16_t>(c->keep, kv_elems, bf16_gen(rng, -1.f, 1.f), keep_host ? &c->hv : nullptr);
  p.block_table = upload(c->keep, c->table);
  p.context_lens = upload(c->keep, c->lens);
  p.out = alloc<uint16_t>(c->keep, q_elems);
  return c;
}

void add_verify(Harness& h, int batch, int context, int draft, int q_heads, int kv_heads, int head_dim) {
  auto c = make_verify(batch, context, draft, q_heads, kv_heads, head_dim, 5, false);
  const double kv_tokens = double(batch) * (context + draft + 1);
  const double q_rows = double(batch) * (draft + 1) * q_heads;
  const double bytes = 2.0 * (2.0 * kv_tokens * kv_heads * head_dim + 2.0 * q_rows * head_dim);
  const double flops = 4.0 * q_rows * (context + draft / 2.0 + 1) * head_dim;  // query j sees context + j + 1
  const std::string shape = "B=" + std::to_string(batch) + " Hq=" + std::to_string(q_heads) + " Hkv=" +
                            std::to_string(kv_heads) + " D=" + std::to_string(head_dim) + " L=" + std::to_string(context) +
                            " k=" + std::to_string(draft) + " b16";
  h.add(KernelCase{"spec_verify", shape, bytes, flops, [c](Stream s) { return launch_spec_verify(c->p, s); },
                   [=] {
                     auto r = make_verify(std::min(batch, 2), std::min(context, 1000), draft, q_heads, kv_heads, head_dim,
                                          96, true);
                     const Status st = launch_spec_verify(r->p, nullptr);
                     if (!st.ok()) return st.describe();
                     SpecVerifyParams hp = r->p;
                     hp.q = r->hq.data();
                     hp.k_cache = r->hk.data();
                     hp.v_cache = r->hv.data();
                     hp.block_table = r->table.data();
                     hp.context_lens = r->lens.data();
                     return compare_bf16(download(r->p.out, r->hq.size()), spec_verify_ref(hp));
                   }});
}

}  // namespace

void add_mla_spec_cases(Harness& h, const DeviceInfo& d, bool quick) {
  // DeepSeek-V3 MLA decode: batch 64 and 1, context 4096 and 32768, bf16 and fp8 latent.
  for (bool fp8 : {false, true}) {
    add_mla(h, d, 64, 4096, fp8);
    add_mla(h, d, 1, 32768, fp8);
    if (!quick) {
      add_mla(h, d, 64, 32768, fp8);
      add_mla(h, d, 1, 4096, fp8);
    }
  }
  // Llama-3.1-8B speculative verify, k = 4 drafts, batch 64, context 4096 (and k = 0: plain decode cost).
  add_verify(h, 64, 4096, 4, 32, 8, 128);
  if (!quick) add_verify(h, 64, 4096, 0, 32, 8, 128);
}

}  // namespace kvplan::bench
