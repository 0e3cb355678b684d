// Cases of the KV-reduction scheme kernels. As in kernel_bench_cases.cpp, each case is checked
// against its CPU reference at a reduced shape (fresh random values), then timed at full size. The
// full-size buffers are filled with a constant (bytes 0x3C: bf16 0.0115, a finite value) rather
// than random values: timing does not depend on the values, and filling gigabytes from the host
// RNG would take longer than the benchmark. Bytes count what the kernel must read (the attended
// tokens only) and write.
#include "kernel_bench_schemes.h"
#include "kernel_bench_util.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvplan/kernels/h2o.h"
#include "kvplan/kernels/low_rank.h"
#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/h2o_ref.h"
#include "kvplan/kernels/reference/low_rank_ref.h"
#include "kvplan/kernels/reference/window_attention_ref.h"
#include "kvplan/kernels/split_plan.h"
#include "kvplan/kernels/window_attention.h"

namespace kvplan::bench {
namespace {

using namespace kvplan::kernels;

// Device memory owned by a case; `fill` random host values (check) or the constant byte (timing).
class Buffers {
 public:
  ~Buffers() {
    for (void* p : ptrs_) cudaFree(p);
  }
  template <typename T>
  T* alloc(size_t n, int byte) {
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(n * sizeof(T), 16)) != cudaSuccess) return nullptr;
    cudaMemset(p, byte, n * sizeof(T));
    ptrs_.push_back(p);
    return static_cast<T*>(p);
  }
  template <typename T>
  T* upload(const std::vector<T>& host) {
    T* p = alloc<T>(host.size(), 0);
    if (p) cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
    return p;
  }

 private:
  std::vector<void*> ptrs_;
};

constexpr int kFillByte = 0x3C;
constexpr int kPoisonByte = 0xFF;

std::vector<uint16_t> random_bf16(size_t n, std::mt19937_64& rng, float range = 1.f) {
  std::uniform_real_distribution<float> d(-range, range);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    const float f = d(rng);
    x = float_to_bf16(f == 0.f ? 0.25f * range : f);
  }
  return v;
}

int planned_splits(const DeviceInfo& d, int batch, int kv_heads, int attended) {
  return plan_decode_splits({batch, kv_heads, attended, int64_t{batch} * attended, d.num_sms}).num_splits;
}

struct AttnShape {
  int batch, q_heads, kv_heads, head_dim, context;
};

// ── Sliding window / StreamingLLM ──
struct WindowCase {
  Buffers buf;
  WindowDecodeParams p;
  std::vector<uint16_t> hq, hk, hv;
  std::vector<int32_t> table, lens;
};

// Only the blocks holding attended tokens are allocated; the other table entries are -1 (freed).
std::shared_ptr<WindowCase> make_window(const AttnShape& s, int window, int sinks, int rotary_dim, int splits,
                                        bool random, uint64_t seed) {
  auto c = std::make_shared<WindowCase>();
  std::mt19937_64 rng(seed);
  const int tpb = 16;
  const int max_blocks = (s.context + tpb - 1) / tpb;
  const WindowSpan span = window_span(s.context, sinks, window);
  int used = 0;
  c->table.assign(size_t(s.batch) * max_blocks, -1);
  for (int b = 0; b < s.batch; ++b) {
    for (int i = 0; i < span.count; ++i) {
      int32_t& e = c->table[size_t(b) * max_blocks + window_token(span, i) / tpb];
      if (e < 0) e = used++;
    }
  }
  const size_t pool = size_t(used) * s.kv_heads * tpb * s.head_dim;
  c->lens.assign(size_t(s.batch), s.context);
  WindowDecodeParams& p = c->p;
  p = WindowDecodeParams{};
  p.dtype = ElemType::kBF16;
  p.num_seqs = s.batch;
  p.num_q_heads = s.q_heads;
  p.num_kv_heads = s.kv_heads;
  p.head_dim = s.head_dim;
  p.num_blocks = used;
  p.tokens_per_block = tpb;
  p.max_blocks_per_seq = max_blocks;
  p.softmax_scale = 1.f / std::sqrt(float(s.head_dim));
  p.window_tokens = window;
  p.sink_tokens = sinks;
  p.rotary_dim = rotary_dim;
  p.num_splits = splits;
  const size_t q_elems = size_t(s.batch) * s.q_heads * s.head_dim;
  if (random) {
    c->hq = random_bf16(q_elems, rng, 2.f);
    c->hk = random_bf16(pool, rng);
    c->hv = random_bf16(pool, rng);
    p.q = c->buf.upload(c->hq);
    p.k_cache = c->buf.upload(c->hk);
    p.v_cache = c->buf.upload(c->hv);
  } else {
    p.q = c->buf.alloc<uint16_t>(q_elems, kFillByte);
    p.k_cache = c->buf.alloc<uint16_t>(pool, kFillByte);
    p.v_cache = c->buf.alloc<uint16_t>(pool, kFillByte);
  }
  p.block_table = c->buf.upload(c->table);
  p.context_lens = c->buf.upload(c->lens);
  p.out = c->buf.alloc<uint16_t>(q_elems, kPoisonByte);
  if (splits > 1) {
    p.partial_out = c->buf.alloc<float>(q_elems * splits, kPoisonByte);
    p.partial_lse = c->buf.alloc<float>(size_t(s.batch) * splits * s.q_heads, kPoisonByte);
  }
  return c;
}

void add_window(Harness& h, const DeviceInfo& d, const char* name, const AttnShape& s, int window, int sinks, int rotary_dim) {
  const int n = window_span(s.context, sinks, window).count;
  const int splits = planned_splits(d, s.batch, s.kv_heads, n);
  auto c = make_window(s, window, sinks, rotary_dim, splits, false, 1);
  const std::string shape = "B=" + std::to_string(s.batch) + " Hq=" + std::to_string(s.q_heads) + " Hkv=" +
                            std::to_string(s.kv_heads) + " D=" + std::to_string(s.head_dim) + " L=" +
                            std::to_string(s.context) + " S=" + std::to_string(sinks) + " W=" + std::to_string(window) +
                            " splits=" + std::to_string(splits);
  const double bytes = 2.0 * (2.0 * s.batch * s.kv_heads * double(n) * s.head_dim + 2.0 * s.batch * s.q_heads * s.head_dim);
  const double flops = 4.0 * s.batch * s.q_heads * double(n) * s.head_dim;
  h.add(KernelCase{name, shape, bytes, flops, [c](Stream st) { return launch_window_decode_attention(c->p, st); },
                   [s, window, sinks, rotary_dim, splits] {
                     // Reduced: batch <= 2, context 1/8 (window and sinks scaled alike), at most 8 splits.
                     AttnShape r = s;
                     r.batch = std::min(r.batch, 2);
                     r.context = std::max(1, s.context / 8);
                     auto k = make_window(r, std::max(1, window / 8), sinks, rotary_dim, std::min(splits, 8), true, 99);
                     const Status st = launch_window_decode_attention(k->p, nullptr);
                     if (!st.ok()) return st.describe();
                     WindowDecodeParams hp = k->p;
                     hp.q = k->hq.data();
                     hp.k_cache = k->hk.data();
                     hp.v_cache = k->hv.data();
                     hp.block_table = k->table.data();
                     hp.context_lens = k->lens.data();
                     return compare_bf16(download(k->p.out, k->hq.size()), window_decode_attention_ref(hp));
                   }});
}

// ── H2O ──
struct H2OCase {
  Buffers buf;
  H2ODecodeParams dp;
  H2OEvictParams ep;
  std::vector<uint16_t> hq, hk, hv;
  std::vector<float> hacc;
  std::vector<int32_t> lens;
};

std::shared_ptr<H2OCase> make_h2o(const AttnShape& s, int budget, int recent, int splits, bool random, uint64_t seed) {
  auto c = std::make_shared<H2OCase>();
  std::mt19937_64 rng(seed);
  const int max_tokens = s.context;
  const size_t rows = size_t(s.batch) * s.kv_heads * max_tokens;
  const size_t q_elems = size_t(s.batch) * s.q_heads * s.head_dim;
  c->lens.assign(size_t(s.batch), s.context);
  H2ODecodeParams& p = c->dp;
  p.dtype = ElemType::kBF16;
  p.num_seqs = s.batch;
  p.num_q_heads = s.q_heads;
  p.num_kv_heads = s.kv_heads;
  p.head_dim = s.head_dim;
  p.max_tokens = max_tokens;
  p.softmax_scale = 1.f / std::sqrt(float(s.head_dim));
  p.num_splits = splits;
  if (random) {
    c->hq = random_bf16(q_elems, rng, 2.f);
    c->hk = random_bf16(rows * s.head_dim, rng);
    c->hv = random_bf16(rows * s.head_dim, rng);
    c->hacc.resize(rows);
    std::uniform_int_distribution<int> level(0, 15);
    for (float& x : c->hacc) x = 0.0625f * float(level(rng));  // ties included
    p.q = c->buf.upload(c->hq);
    p.k_cache = c->buf.upload(c->hk);
    p.v_cache = c->buf.upload(c->hv);
    p.acc_scores = c->buf.upload(c->hacc);
  } else {
    p.q = c->buf.alloc<uint16_t>(q_elems, kFillByte);
    p.k_cache = c->buf.alloc<uint16_t>(rows * s.head_dim, kFillByte);
    p.v_cache = c->buf.alloc<uint16_t>(rows * s.head_dim, kFillByte);
    p.acc_scores = c->buf.alloc<float>(rows, 0);
  }
  p.context_lens = c->buf.upload(c->lens);
  p.out = c->buf.alloc<uint16_t>(q_elems, kPoisonByte);
  p.lse = c->buf.alloc<float>(size_t(s.batch) * splits * s.q_heads, kPoisonByte);
  if (splits > 1) p.partial_out = c->buf.alloc<float>(q_elems * splits, kPoisonByte);
  H2OEvictParams& e = c->ep;
  e.num_seqs = s.batch;
  e.num_kv_heads = s.kv_heads;
  e.head_dim = s.head_dim;
  e.max_tokens = max_tokens;
  e.budget_tokens = budget;
  e.recent_tokens = recent;
  e.k_in = p.k_cache;
  e.v_in = p.v_cache;
  e.scores_in = p.acc_scores;
  e.context_lens = p.context_lens;
  e.k_out = c->buf.alloc<uint16_t>(rows * s.head_dim, kPoisonByte);
  e.v_out = c->buf.alloc<uint16_t>(rows * s.head_dim, kPoisonByte);
  e.scores_out = c->buf.alloc<float>(rows, kPoisonByte);
  e.new_context_lens = c->buf.alloc<int32_t>(size_t(s.batch), kPoisonByte);
  return c;
}

std::string check_h2o(const AttnShape& s, int budget, int recent, int splits, bool evict) {
  AttnShape r = s;
  r.batch = std::min(r.batch, 2);
  auto k = make_h2o(r, budget, recent, std::min(splits, 8), true, 99);
  H2ODecodeParams hp = k->dp;
  hp.q = k->hq.data();
  hp.k_cache = k->hk.data();
  hp.v_cache = k->hv.data();
  hp.context_lens = k->lens.data();
  hp.acc_scores = k->hacc.data();
  if (!evict) {
    const Status st = launch_h2o_decode_attention(k->dp, nullptr);
    if (!st.ok()) return st.describe();
    const H2ODecodeRef want = h2o_decode_attention_ref(hp);
    std::string bad = compare_bf16(download(k->dp.out, k->hq.size()), want.out);
    const std::vector<float> acc = download(k->dp.acc_scores, k->hacc.size());
    size_t off = 0;
    for (size_t i = 0; i < acc.size(); ++i) off += !(std::fabs(acc[i] - want.acc_scores[i]) <= 1e-4 + 1e-4 * want.acc_scores[i]);
    if (off > 0) bad += " acc_scores: " + std::to_string(off) + " off";
    return bad;
  }
  const Status st = launch_h2o_evict(k->ep, nullptr);
  if (!st.ok()) return st.describe();
  H2OEvictParams he = k->ep;
  he.k_in = k->hk.data();
  he.v_in = k->hv.data();
  he.scores_in = k->hacc.data();
  he.context_lens = k->lens.data();
  he.k_out = nullptr;
  he.v_out = nullptr;
  he.scores_out = nullptr;
  const H2OEvictRef want = h2o_evict_ref(he);
  const std::vector<int32_t> lens = download(k->ep.new_context_lens, k->lens.size());
  if (lens != want.new_context_lens) return "new lengths differ";
  const std::vector<uint16_t> kout = download(k->ep.k_out, k->hk.size());
  const std::vector<float> sout = download(k->ep.scores_out, k->hacc.size());
  size_t bad = 0;
  const size_t D = size_t(r.head_dim);
  for (size_t slab = 0; slab < size_t(r.batch) * r.kv_heads; ++slab) {
    for (int t = 0; t < lens[slab / r.kv_heads]; ++t) {
      const size_t row = slab * r.context + size_t(t);
      bad += sout[row] != want.scores[row];
      bad += !std::equal(kout.begin() + long(row * D), kout.begin() + long((row + 1) * D), want.k.begin() + long(row * D));
    }
  }
  return bad == 0 ? "" : std::to_string(bad) + " kept rows differ";
}

void add_h2o(Harness& h, const DeviceInfo& d, const AttnShape& s, int budget, int recent) {
  const int splits = planned_splits(d, s.batch, s.kv_heads, s.context);
  auto c = make_h2o(s, budget, recent, splits, false, 1);
  const std::string shape = "B=" + std::to_string(s.batch) + " Hq=" + std::to_string(s.q_heads) + " Hkv=" +
                            std::to_string(s.kv_heads) + " D=" + std::to_string(s.head_dim) + " L=" +
                            std::to_string(s.context);
  const double kv = 2.0 * s.batch * s.kv_heads * double(s.context) * s.head_dim;  // K (or V) bytes
  const double acc = 4.0 * s.batch * s.kv_heads * double(s.context);
  // Decode reads K twice (attention, then mass), V once, and reads + writes the scores.
  h.add(KernelCase{"h2o_decode", shape + " splits=" + std::to_string(splits), 3 * kv + 2 * acc,
                   4.0 * s.batch * s.q_heads * double(s.context) * s.head_dim * 1.5,
                   [c](Stream st) { return launch_h2o_decode_attention(c->dp, st); },
                   [s, budget, recent, splits] { return check_h2o(s, budget, recent, splits, false); }});
  const double kept = double(std::min(s.context, budget)) / s.context;
  h.add(KernelCase{"h2o_evict", shape + " budget=" + std::to_string(budget) + " recent=" + std::to_string(recent),
                   acc * (1 + kept) + 2 * kv * kept * 2, 0, [c](Stream st) { return launch_h2o_evict(c->ep, st); },
                   [s, budget, recent, splits] { return check_h2o(s, budget, recent, splits, true); }});
}

// ── Low-rank KV ──
struct LowRankCase {
  Buffers buf;
  LowRankDecodeParams p;
  std::vector<uint16_t> hq, huk, huv, hk16, hv16, hkm, hvm;
  std::vector<uint8_t> hk4, hv4;
  std::vector<int32_t> lens;
};

std::shared_ptr<LowRankCase> make_low_rank(const AttnShape& s, int rank, bool int4, int group, int splits, bool random,
                                           uint64_t seed) {
  auto c = std::make_shared<LowRankCase>();
  std::mt19937_64 rng(seed);
  const size_t rows = size_t(s.batch) * s.kv_heads * s.context;
  const size_t q_elems = size_t(s.batch) * s.q_heads * s.head_dim;
  const size_t u_elems = size_t(s.kv_heads) * rank * s.head_dim;
  const size_t lat = int4 ? rows * rank / 4 : rows * rank;  // in uint16 words (int4: rank / 2 bytes per row)
  const size_t meta = rows * (int4 ? rank / group : 0) * 2;
  c->lens.assign(size_t(s.batch), s.context);
  LowRankDecodeParams& p = c->p;
  p.dtype = ElemType::kBF16;
  p.int4_latents = int4;
  p.num_seqs = s.batch;
  p.num_q_heads = s.q_heads;
  p.num_kv_heads = s.kv_heads;
  p.head_dim = s.head_dim;
  p.rank = rank;
  p.group_size = group;
  p.max_seq_len = s.context;
  p.softmax_scale = 1.f / std::sqrt(float(s.head_dim));
  p.num_splits = splits;
  if (random) {
    const float ur = 2.f / std::sqrt(float(rank));
    c->hq = random_bf16(q_elems, rng, 2.f);
    c->huk = random_bf16(u_elems, rng, ur);
    c->huv = random_bf16(u_elems, rng, ur);
    p.q = c->buf.upload(c->hq);
    p.u_k = c->buf.upload(c->huk);
    p.u_v = c->buf.upload(c->huv);
    if (int4) {
      std::uniform_int_distribution<int> byte(0, 255);
      c->hk4.resize(rows * rank / 2);
      c->hv4.resize(rows * rank / 2);
      for (auto& b : c->hk4) b = uint8_t(byte(rng));
      for (auto& b : c->hv4) b = uint8_t(byte(rng));
      std::uniform_real_distribution<float> sc(0.02f, 0.15f), z(-1.f, 0.f);
      for (size_t i = 0; i < meta / 2; ++i) {
        c->hkm.push_back(float_to_fp16(sc(rng)));
        c->hkm.push_back(float_to_fp16(z(rng)));
        c->hvm.push_back(float_to_fp16(sc(rng)));
        c->hvm.push_back(float_to_fp16(z(rng)));
      }
      p.k_latent = c->buf.upload(c->hk4);
      p.v_latent = c->buf.upload(c->hv4);
      p.k_meta = c->buf.upload(c->hkm);
      p.v_meta = c->buf.upload(c->hvm);
    } else {
      c->hk16 = random_bf16(lat, rng);
      c->hv16 = random_bf16(lat, rng);
      p.k_latent = c->buf.upload(c->hk16);
      p.v_latent = c->buf.upload(c->hv16);
    }
  } else {
    p.q = c->buf.alloc<uint16_t>(q_elems, kFillByte);
    p.u_k = c->buf.alloc<uint16_t>(u_elems, kFillByte);
    p.u_v = c->buf.alloc<uint16_t>(u_elems, kFillByte);
    p.k_latent = c->buf.alloc<uint16_t>(lat, kFillByte);
    p.v_latent = c->buf.alloc<uint16_t>(lat, kFillByte);
    if (int4) {
      p.k_meta = c->buf.alloc<uint16_t>(meta, kFillByte);
      p.v_meta = c->buf.alloc<uint16_t>(meta, kFillByte);
    }
  }
  p.context_lens = c->buf.upload(c->lens);
  p.out = c->buf.alloc<uint16_t>(q_elems, kPoisonByte);
  if (splits > 1) {
    p.partial_out = c->buf.alloc<float>(q_elems * splits, kPoisonByte);
    p.partial_lse = c->buf.alloc<float>(size_t(s.batch) * splits * s.q_heads, kPoisonByte);
  }
  return c;
}

void add_low_rank(Harness& h, const DeviceInfo& d, const AttnShape& s, int rank, bool int4) {
  const int group = 32;
  const int splits = planned_splits(d, s.batch, s.kv_heads, s.context);
  auto c = make_low_rank(s, rank, int4, group, splits, false, 1);
  const std::string shape = "B=" + std::to_string(s.batch) + " Hq=" + std::to_string(s.q_heads) + " Hkv=" +
                            std::to_string(s.kv_heads) + " D=" + std::to_string(s.head_dim) + " r=" +
                            std::to_string(rank) + " L=" + std::to_string(s.context) + " splits=" + std::to_string(splits);
  const double per_row = int4 ? rank / 2.0 + 4.0 * rank / group : 2.0 * rank;
  const double bytes = 2.0 * s.batch * s.kv_heads * double(s.context) * per_row + 2.0 * 2.0 * s.batch * s.q_heads * s.head_dim;
  const double flops = 4.0 * s.batch * s.q_heads * double(s.context) * rank;
  h.add(KernelCase{int4 ? "low_rank_int4" : "low_rank_bf16", shape, bytes, flops,
                   [c](Stream st) { return launch_low_rank_decode_attention(c->p, st); },
                   [s, rank, int4, group, splits] {
                     AttnShape r = s;
                     r.batch = std::min(r.batch, 2);
                     r.context = std::min(r.context, 1024);
                     auto k = make_low_rank(r, rank, int4, group, std::min(splits, 8), true, 99);
                     const Status st = launch_low_rank_decode_attention(k->p, nullptr);
                     if (!st.ok()) return st.describe();
                     LowRankDecodeParams hp = k->p;
                     hp.q = k->hq.data();
                     hp.u_k = k->huk.data();
                     hp.u_v = k->huv.data();
                     hp.k_latent = int4 ? static_cast<const void*>(k->hk4.data()) : k->hk16.data();
                     hp.v_latent = int4 ? static_cast<const void*>(k->hv4.data()) : k->hv16.data();
                     hp.k_meta = k->hkm.data();
                     hp.v_meta = k->hvm.data();
                     hp.context_lens = k->lens.data();
                     return compare_bf16(download(k->p.out, k->hq.size()), low_rank_decode_attention_ref(hp));
                   }});
}

}  // namespace

void add_scheme_cases(Harness& h, const DeviceInfo& d, bool quick) {
  // Gemma-2-9B local layers: 16 query heads, 8 KV heads, head_dim 256, window 4096.
  const AttnShape gemma1{1, 16, 8, 256, 32768};
  const AttnShape gemma64{64, 16, 8, 256, 32768};
  add_window(h, d, "sliding_window", gemma1, 4096, 0, 0);
  add_window(h, d, "sliding_window", gemma64, 4096, 0, 0);
  // StreamingLLM on a Llama-3-8B-like layer: 4 sinks + 4092 recent, rotary on all 128 channels.
  const AttnShape llama1{1, 32, 8, 128, 32768};
  const AttnShape llama64{64, 32, 8, 128, 32768};
  add_window(h, d, "streaming_llm", llama1, 4092, 4, 128);
  if (!quick) add_window(h, d, "streaming_llm", llama64, 4092, 4, 128);
  // H2O: budget 2048 (256 recent), decoding at budget + 16 tokens, then evicting back to budget.
  add_h2o(h, d, AttnShape{1, 32, 8, 128, 2048 + 16}, 2048, 256);
  if (!quick) add_h2o(h, d, AttnShape{64, 32, 8, 128, 2048 + 16}, 2048, 256);
  // Low-rank KV, rank 64 of head_dim 128 (half the bytes of bf16 K/V; int4 about an eighth).
  add_low_rank(h, d, llama1, 64, false);
  add_low_rank(h, d, llama1, 64, true);
  if (!quick) {
    add_low_rank(h, d, AttnShape{64, 32, 8, 128, 8192}, 64, false);
    add_low_rank(h, d, AttnShape{64, 32, 8, 128, 8192}, 64, true);
  }
}

}  // namespace kvplan::bench
