// The cases of kvplan_bench_kernels. Each case allocates its inputs once (fresh random values,
// never zeros), is checked against the CPU reference at a reduced shape of the same configuration
// (the references accumulate in double and would take minutes at full size), then timed at full size.
#include "kernel_bench_cases.h"
#include "kernel_bench_util.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvplan/kernels/block_copy.h"
#include "kvplan/kernels/decode_attention.h"
#include "kvplan/kernels/kv_cache.h"
#include "kvplan/kernels/kv_write.h"
#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/prefill_attention.h"
#include "kvplan/kernels/quant_decode_attention.h"
#include "kvplan/kernels/reference/decode_attention_ref.h"
#include "kvplan/kernels/reference/kv_write_ref.h"
#include "kvplan/kernels/reference/prefill_attention_ref.h"
#include "kvplan/kernels/reference/quant_decode_attention_ref.h"
#include "kvplan/kernels/split_plan.h"

namespace kvplan::bench {

namespace {

using namespace kvplan::kernels;

struct DecodeShape {
  int batch, q_heads, kv_heads, head_dim, context;
};

std::string shape_text(const DecodeShape& s) {
  return "B=" + std::to_string(s.batch) + " Hq=" + std::to_string(s.q_heads) + " Hkv=" + std::to_string(s.kv_heads) +
         " D=" + std::to_string(s.head_dim) + " L=" + std::to_string(s.context);
}

double decode_bytes(const DecodeShape& s) {
  return 2.0 * (2.0 * s.batch * s.kv_heads * double(s.context) * s.head_dim + 2.0 * s.batch * s.q_heads * s.head_dim);
}

double decode_flops(const DecodeShape& s) { return 4.0 * s.batch * s.q_heads * double(s.context) * s.head_dim; }

// Paged or contiguous decode at `s`, with a shuffled block table for paged. `splits` 0 = planned.
struct DecodeCase {
  Keep keep;
  DecodeAttentionParams contiguous;
  PagedDecodeAttentionParams paged;
  bool is_paged = false;
  std::vector<uint16_t> hq, hk, hv;
  std::vector<int32_t> table, lens;
};

std::shared_ptr<DecodeCase> make_decode(const DecodeShape& s, bool paged, int splits, int tpb, uint64_t seed) {
  auto c = std::make_shared<DecodeCase>();
  std::mt19937_64 rng(seed);
  c->is_paged = paged;
  const size_t kv_elems = size_t(s.batch) * s.context * s.kv_heads * s.head_dim;
  c->hq = random16(size_t(s.batch) * s.q_heads * s.head_dim, rng);
  c->hk = random16(kv_elems, rng);
  c->hv = random16(kv_elems, rng);
  c->lens.assign(s.batch, s.context);
  const float scale = 1.f / std::sqrt(float(s.head_dim));
  uint16_t* q = upload(c->keep, c->hq);
  uint16_t* k = upload(c->keep, c->hk);
  uint16_t* v = upload(c->keep, c->hv);
  int32_t* lens = upload(c->keep, c->lens);
  uint16_t* out = alloc<uint16_t>(c->keep, c->hq.size());
  float* pout = nullptr;
  float* plse = nullptr;
  if (splits > 1) {
    pout = alloc<float>(c->keep, size_t(decode_partial_out_elems(s.batch, splits, s.q_heads, s.head_dim)));
    plse = alloc<float>(c->keep, size_t(decode_partial_lse_elems(s.batch, splits, s.q_heads)));
  }
  if (!paged) {
    c->contiguous = DecodeAttentionParams{ElemType::kBF16, s.batch, s.q_heads, s.kv_heads, s.head_dim, s.context, scale,
                                          q, k, v, lens, out, splits, pout, plse};
    return c;
  }
  // The same K/V values, stored as blocks in a shuffled order: the kernel must follow the table.
  const int blocks_per_seq = (s.context + tpb - 1) / tpb;
  const int num_blocks = s.batch * blocks_per_seq;
  std::vector<int32_t> perm(num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  c->table = perm;
  const size_t block_elems = size_t(s.kv_heads) * tpb * s.head_dim;
  std::vector<uint16_t> pk(size_t(num_blocks) * block_elems, 0), pv(pk.size(), 0);
  for (int b = 0; b < s.batch; ++b) {
    for (int t = 0; t < s.context; ++t) {
      const size_t block = size_t(perm[size_t(b) * blocks_per_seq + t / tpb]);
      for (int h = 0; h < s.kv_heads; ++h) {
        const size_t src = ((size_t(b) * s.context + t) * s.kv_heads + h) * s.head_dim;
        const size_t dst = ((block * s.kv_heads + h) * tpb + t % tpb) * s.head_dim;
        std::copy_n(c->hk.begin() + long(src), s.head_dim, pk.begin() + long(dst));
        std::copy_n(c->hv.begin() + long(src), s.head_dim, pv.begin() + long(dst));
      }
    }
  }
  c->hk = std::move(pk);
  c->hv = std::move(pv);
  uint16_t* dk = upload(c->keep, c->hk);
  uint16_t* dv = upload(c->keep, c->hv);
  int32_t* table = upload(c->keep, c->table);
  c->paged = PagedDecodeAttentionParams{ElemType::kBF16, s.batch, s.q_heads, s.kv_heads, s.head_dim, num_blocks, tpb,
                                        blocks_per_seq, scale, q, dk, dv, table, lens, out, splits, pout, plse};
  return c;
}

Status run_decode(const DecodeCase& c, Stream stream) {
  return c.is_paged ? launch_paged_decode_attention(c.paged, stream) : launch_decode_attention(c.contiguous, stream);
}

std::string check_decode(const DecodeShape& full, bool paged, int splits, int tpb) {
  DecodeShape s = full;
  s.batch = std::min(s.batch, 2);
  s.context = std::min(s.context, 4096);
  auto c = make_decode(s, paged, std::min(splits, 8), tpb, 99);
  Status st = run_decode(*c, nullptr);
  if (!st.ok()) return st.describe();
  DecodeAttentionParams h;
  PagedDecodeAttentionParams hp;
  std::vector<double> ref;
  if (paged) {
    hp = c->paged;
    hp.q = c->hq.data();
    hp.k_cache = c->hk.data();
    hp.v_cache = c->hv.data();
    hp.block_table = c->table.data();
    hp.context_lens = c->lens.data();
    ref = paged_decode_attention_ref(hp);
  } else {
    h = c->contiguous;
    h.q = c->hq.data();
    h.k_cache = c->hk.data();
    h.v_cache = c->hv.data();
    h.context_lens = c->lens.data();
    ref = decode_attention_ref(h);
  }
  const uint16_t* out = paged ? c->paged.out : c->contiguous.out;
  return compare_bf16(download(out, c->hq.size()), ref);
}

void add_decode(Harness& h, const DecodeShape& s, bool paged, int splits, int tpb) {
  auto c = make_decode(s, paged, splits, tpb, 1);
  std::string shape = shape_text(s) + (paged ? " b" + std::to_string(tpb) : "") + " splits=" + std::to_string(splits);
  h.add(KernelCase{paged ? "decode_paged" : "decode_contiguous", shape, decode_bytes(s), decode_flops(s),
                   [c](Stream st) { return run_decode(*c, st); },
                   [s, paged, splits, tpb] { return check_decode(s, paged, splits, tpb); }});
}

// Causal prefill of `batch` sequences of `len` new tokens, optionally after a cached paged prefix.
void add_prefill(Harness& h, int batch, int len, int prefix, int q_heads, int kv_heads, int head_dim) {
  auto make = [=](int b, int l, int pre, uint64_t seed) {
    struct Case {
      Keep keep;
      PrefillAttentionParams p;
      std::vector<uint16_t> hq, hk, hv, hkc, hvc;
      std::vector<int32_t> cu, prefix_lens, table;
    };
    auto c = std::make_shared<Case>();
    std::mt19937_64 rng(seed);
    const int tpb = 16;
    c->hq = random16(size_t(b) * l * q_heads * head_dim, rng);
    c->hk = random16(size_t(b) * l * kv_heads * head_dim, rng);
    c->hv = random16(c->hk.size(), rng);
    c->cu.resize(size_t(b) + 1);
    for (int i = 0; i <= b; ++i) c->cu[size_t(i)] = i * l;
    PrefillAttentionParams& p = c->p;
    p.dtype = ElemType::kBF16;
    p.q = upload(c->keep, c->hq);
    p.k = upload(c->keep, c->hk);
    p.v = upload(c->keep, c->hv);
    p.cu_seqlens = upload(c->keep, c->cu);
    p.out = alloc<uint16_t>(c->keep, c->hq.size());
    p.num_seqs = b;
    p.total_q_tokens = b * l;
    p.max_seqlen_q = l;
    p.num_q_heads = q_heads;
    p.num_kv_heads = kv_heads;
    p.head_dim = head_dim;
    p.softmax_scale = 1.f / std::sqrt(float(head_dim));
    if (pre > 0) {
      const int blocks = (pre + tpb - 1) / tpb;
      c->hkc = random16(size_t(b) * blocks * kv_heads * tpb * head_dim, rng);
      c->hvc = random16(c->hkc.size(), rng);
      c->prefix_lens.assign(size_t(b), pre);
      c->table.resize(size_t(b) * blocks);
      std::iota(c->table.begin(), c->table.end(), 0);
      std::shuffle(c->table.begin(), c->table.end(), rng);
      p.prefix_lens = upload(c->keep, c->prefix_lens);
      p.k_cache = upload(c->keep, c->hkc);
      p.v_cache = upload(c->keep, c->hvc);
      p.block_table = upload(c->keep, c->table);
      p.num_blocks = b * blocks;
      p.tokens_per_block = tpb;
      p.max_blocks_per_seq = blocks;
    }
    return c;
  };
  auto full = make(batch, len, prefix, 2);
  const double pairs = double(batch) * (double(len) * (len + 1) / 2 + double(len) * prefix);
  const double flops = 4.0 * q_heads * head_dim * pairs;
  const double bytes = 2.0 * (2.0 * batch * len * q_heads * head_dim + 2.0 * batch * (len + prefix) * kv_heads * head_dim);
  std::string shape = "B=" + std::to_string(batch) + " Hq=" + std::to_string(q_heads) + " Hkv=" + std::to_string(kv_heads) +
                      " D=" + std::to_string(head_dim) + " L=" + std::to_string(len) +
                      (prefix ? " prefix=" + std::to_string(prefix) : "");
  h.add(KernelCase{prefix ? "prefill_chunked" : "prefill", shape, bytes, flops,
                   [full](Stream st) { return launch_prefill_attention(full->p, st); },
                   [make, batch, len, prefix] {
                     auto c = make(std::min(batch, 2), std::min(len, 300), std::min(prefix, 200), 98);
                     Status st = launch_prefill_attention(c->p, nullptr);
                     if (!st.ok()) return st.describe();
                     PrefillAttentionParams hp = c->p;
                     hp.q = c->hq.data();
                     hp.k = c->hk.data();
                     hp.v = c->hv.data();
                     hp.cu_seqlens = c->cu.data();
                     if (hp.prefix_lens) {
                       hp.prefix_lens = c->prefix_lens.data();
                       hp.k_cache = c->hkc.data();
                       hp.v_cache = c->hvc.data();
                       hp.block_table = c->table.data();
                     }
                     return compare_bf16(download(c->p.out, c->hq.size()), prefill_attention_ref(hp));
                   }});
}

// Block copy (copy-on-write) of `pairs` blocks, and swaps of as many blocks to and from pinned host memory.
void add_copies(Harness& h, int pairs) {
  const int heads = 8, tpb = 16, dim = 128;
  const int blocks = 2 * pairs;
  const size_t elems = size_t(blocks) * block_elems(heads, tpb, dim);
  struct Case {
    Keep keep;
    BlockCopyParams copy;
    BlockSwapParams swap;
    std::vector<int64_t> host_pairs;
    uint16_t* host_k = nullptr;
    uint16_t* host_v = nullptr;
    ~Case() {
      cudaFreeHost(host_k);
      cudaFreeHost(host_v);
    }
  };
  auto c = std::make_shared<Case>();
  std::mt19937_64 rng(3);
  std::vector<uint16_t> data = random16(elems, rng);
  uint16_t* k = upload(c->keep, data);
  uint16_t* v = upload(c->keep, data);
  std::vector<int64_t> pair_list;
  for (int i = 0; i < pairs; ++i) {
    pair_list.push_back(i);
    pair_list.push_back(pairs + i);
  }
  c->copy = BlockCopyParams{k, v, upload(c->keep, pair_list), pairs, blocks, heads, tpb, dim};
  const double block_bytes = 2.0 * double(block_elems(heads, tpb, dim));
  h.add(KernelCase{"block_copy", std::to_string(pairs) + " pairs, 2x" + std::to_string(int(block_bytes / 1024)) + " KiB",
                   2.0 * 2.0 * pairs * block_bytes, 0, [c](Stream st) { return launch_block_copy(c->copy, st); }, {}});
  if (cudaMallocHost(reinterpret_cast<void**>(&c->host_k), size_t(pairs) * block_bytes) != cudaSuccess ||
      cudaMallocHost(reinterpret_cast<void**>(&c->host_v), size_t(pairs) * block_bytes) != cudaSuccess) {
    return;
  }
  for (int i = 0; i < pairs; ++i) {
    c->host_pairs.push_back(i);
    c->host_pairs.push_back(i);
  }
  c->swap = BlockSwapParams{k, v, c->host_k, c->host_v, c->host_pairs.data(), pairs, blocks, pairs, heads, tpb, dim};
  h.add(KernelCase{"swap_out", std::to_string(pairs) + " blocks to pinned host", 2.0 * pairs * block_bytes, 0,
                   [c](Stream st) { return launch_swap_out(c->swap, st); }, {}});
  h.add(KernelCase{"swap_in", std::to_string(pairs) + " blocks from pinned host", 2.0 * pairs * block_bytes, 0,
                   [c](Stream st) { return launch_swap_in(c->swap, st); }, {}});
}

// A paged quantized cache filled by the KV-write kernel from random K/V, then read by the
// quantized decode kernel. Both are cases: the write (all B x L tokens) and the decode.
struct QuantCase {
  Keep keep;
  KvWriteParams write;
  QuantDecodeParams decode;
  std::vector<uint16_t> hk, hv, hq;
  std::vector<int64_t> slots;
  std::vector<int32_t> table, lens;
  std::vector<float> scales;
};

std::shared_ptr<QuantCase> make_quant(CacheType type, const DecodeShape& s, uint64_t seed) {
  auto c = std::make_shared<QuantCase>();
  std::mt19937_64 rng(seed);
  const int tpb = 16, group = 32;
  const int blocks_per_seq = (s.context + tpb - 1) / tpb;
  const int64_t num_slots = int64_t(s.batch) * blocks_per_seq * tpb;
  const int64_t rows = num_slots * s.kv_heads;
  QuantKvCache q;
  q.type = type;
  q.layout = CacheLayout::kPaged;
  q.num_kv_heads = s.kv_heads;
  q.head_dim = s.head_dim;
  q.group_size = group;
  q.tokens_per_block = tpb;
  q.num_slots = num_slots;
  q.k_data = alloc<uint8_t>(c->keep, size_t(rows * data_row_bytes(type, s.head_dim)));
  q.v_data = alloc<uint8_t>(c->keep, size_t(rows * data_row_bytes(type, s.head_dim)));
  if (has_group_meta(type)) {
    q.k_meta = alloc<uint16_t>(c->keep, size_t(rows * meta_row_elems(type, s.head_dim, group)));
    q.v_meta = alloc<uint16_t>(c->keep, size_t(rows * meta_row_elems(type, s.head_dim, group)));
  }
  if (type == CacheType::kFp8E4M3) {
    c->scales = {0.01f};
    q.k_scale = upload(c->keep, c->scales);
    q.v_scale = q.k_scale;
  }
  // Block table: each sequence's blocks in a shuffled order; slots follow it.
  const int num_blocks = s.batch * blocks_per_seq;
  c->table.resize(size_t(num_blocks));
  std::iota(c->table.begin(), c->table.end(), 0);
  std::shuffle(c->table.begin(), c->table.end(), rng);
  for (int b = 0; b < s.batch; ++b) {
    for (int t = 0; t < s.context; ++t) {
      c->slots.push_back(int64_t(c->table[size_t(b) * blocks_per_seq + t / tpb]) * tpb + t % tpb);
    }
  }
  const size_t new_elems = size_t(s.batch) * s.context * s.kv_heads * s.head_dim;
  c->hk = random16(new_elems, rng);
  c->hv = random16(new_elems, rng);
  c->hq = random16(size_t(s.batch) * s.q_heads * s.head_dim, rng);
  c->lens.assign(size_t(s.batch), s.context);
  c->write.dtype = ElemType::kBF16;
  c->write.k_new = upload(c->keep, c->hk);
  c->write.v_new = upload(c->keep, c->hv);
  c->write.slot_mapping = upload(c->keep, c->slots);
  c->write.cache = q;
  c->write.num_tokens = s.batch * s.context;
  QuantDecodeParams& d = c->decode;
  d.dtype = ElemType::kBF16;
  d.cache = q;
  d.q = upload(c->keep, c->hq);
  d.out = alloc<uint16_t>(c->keep, c->hq.size());
  d.block_table = upload(c->keep, c->table);
  d.context_lens = upload(c->keep, c->lens);
  d.num_seqs = s.batch;
  d.num_q_heads = s.q_heads;
  d.num_kv_heads = s.kv_heads;
  d.head_dim = s.head_dim;
  d.max_blocks_per_seq = blocks_per_seq;
  d.softmax_scale = 1.f / std::sqrt(float(s.head_dim));
  return c;
}

// Writes with the GPU, then checks the cache bytes against kv_write_ref (exact) and the decode
// output against quant_decode_attention_ref on the downloaded cache.
std::string check_quant(CacheType type, const DecodeShape& full) {
  DecodeShape s = full;
  s.batch = std::min(s.batch, 2);
  s.context = std::min(s.context, 1000);
  auto c = make_quant(type, s, 97);
  Status st = launch_kv_write(c->write, nullptr);
  if (!st.ok()) return "write: " + st.describe();
  st = launch_quant_decode_attention(c->decode, nullptr);
  if (!st.ok()) return "decode: " + st.describe();
  const QuantKvCache& q = c->write.cache;
  const int64_t rows = q.num_slots * q.num_kv_heads;
  const size_t data_bytes = size_t(rows * data_row_bytes(type, q.head_dim));
  const size_t meta_elems = size_t(rows * meta_row_elems(type, q.head_dim, q.group_size));
  std::vector<uint8_t> kd = download(static_cast<uint8_t*>(q.k_data), data_bytes);
  std::vector<uint8_t> vd = download(static_cast<uint8_t*>(q.v_data), data_bytes);
  std::vector<uint16_t> km = meta_elems ? download(q.k_meta, meta_elems) : std::vector<uint16_t>();
  std::vector<uint16_t> vm = meta_elems ? download(q.v_meta, meta_elems) : std::vector<uint16_t>();
  // Reference write into host storage poisoned the same way.
  std::vector<uint8_t> rkd(data_bytes, 0xFF), rvd(data_bytes, 0xFF);
  std::vector<uint16_t> rkm(meta_elems, 0xFFFF), rvm(meta_elems, 0xFFFF);
  KvWriteParams hw = c->write;
  hw.k_new = c->hk.data();
  hw.v_new = c->hv.data();
  hw.slot_mapping = c->slots.data();
  hw.cache.k_data = rkd.data();
  hw.cache.v_data = rvd.data();
  hw.cache.k_meta = meta_elems ? rkm.data() : nullptr;
  hw.cache.v_meta = meta_elems ? rvm.data() : nullptr;
  hw.cache.k_scale = c->scales.empty() ? nullptr : c->scales.data();
  hw.cache.v_scale = hw.cache.k_scale;
  kv_write_ref(hw);
  if (kd != rkd || vd != rvd || km != rkm || vm != rvm) return "write: cache bytes differ from kv_write_ref";
  QuantDecodeParams hd = c->decode;
  hd.cache = hw.cache;
  hd.q = c->hq.data();
  hd.block_table = c->table.data();
  hd.context_lens = c->lens.data();
  return compare_bf16(download(c->decode.out, c->hq.size()), quant_decode_attention_ref(hd));
}

void add_quant(Harness& h, CacheType type, const DecodeShape& s) {
  auto c = make_quant(type, s, 4);
  const int group = 32;
  const double token_bytes = double(token_bytes_per_head(type, s.head_dim, group));
  const double tokens = double(s.batch) * s.context;
  const std::string name(cache_type_name(type));
  h.add(KernelCase{"kv_write_" + name, std::to_string(int64_t(tokens)) + " tokens Hkv=" + std::to_string(s.kv_heads) +
                                           " D=" + std::to_string(s.head_dim),
                   tokens * s.kv_heads * 2.0 * (2.0 * s.head_dim + token_bytes) + tokens * 8, 0,
                   [c](Stream st) { return launch_kv_write(c->write, st); }, {}});
  if (type == CacheType::kBF16 || type == CacheType::kFP16) return;  // 16-bit decode: decode_paged
  h.add(KernelCase{"decode_" + name, shape_text(s) + " b16",
                   2.0 * tokens * s.kv_heads * token_bytes + 4.0 * s.batch * s.q_heads * s.head_dim, decode_flops(s),
                   [c](Stream st) {
                     // The write must have run once so the cache holds real codes.
                     static thread_local std::shared_ptr<QuantCase> filled;
                     if (filled != c) {
                       Status w = launch_kv_write(c->write, st);
                       if (!w.ok()) return w;
                       filled = c;
                     }
                     return launch_quant_decode_attention(c->decode, st);
                   },
                   [type, s] { return check_quant(type, s); }});
}

}  // namespace

void add_kernel_cases(Harness& h, const DeviceInfo& device, bool quick) {
  // Llama-3.1-8B attention shapes: 32 query heads, 8 KV heads, head_dim 128.
  const DecodeShape long_one{1, 32, 8, 128, 32768};
  const int planned = plan_decode_splits({.num_seqs = 1, .num_kv_heads = 8, .max_context_len = 32768,
                                          .total_context_tokens = 32768, .num_sms = device.num_sms})
                          .num_splits;
  add_decode(h, long_one, false, 1, 16);
  add_decode(h, long_one, false, planned, 16);
  add_decode(h, long_one, true, 1, 16);
  add_decode(h, long_one, true, planned, 16);
  for (DecodeShape s : {DecodeShape{64, 32, 8, 128, 4096}, DecodeShape{256, 32, 8, 128, 1024}}) {
    add_decode(h, s, false, 1, 16);
    for (int tpb : {16, 128}) add_decode(h, s, true, 1, tpb);
  }
  if (!quick) {
    add_decode(h, DecodeShape{16, 64, 8, 128, 8192}, true, 1, 16);
    add_decode(h, DecodeShape{64, 32, 32, 128, 2048}, true, 1, 16);  // MHA
    add_decode(h, DecodeShape{64, 16, 1, 256, 2048}, true, 1, 16);   // MQA, head_dim 256
    add_decode(h, DecodeShape{64, 32, 8, 64, 4096}, true, 1, 32);
  }
  add_prefill(h, 1, 4096, 0, 32, 8, 128);
  add_prefill(h, 8, 2048, 0, 32, 8, 128);
  add_prefill(h, 1, 512, 8192, 32, 8, 128);
  for (CacheType t : {CacheType::kBF16, CacheType::kFp8E4M3, CacheType::kInt8, CacheType::kInt4}) {
    add_quant(h, t, DecodeShape{64, 32, 8, 128, 4096});
  }
  add_copies(h, quick ? 1024 : 4096);
}

}  // namespace kvplan::bench
