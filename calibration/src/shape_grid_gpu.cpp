// The calibration shape grids (runner_gpu.h): each shape allocates fresh random inputs on the device
// and returns its launch, with the bytes and FLOPs its parameters imply.
#include "runner_gpu.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <set>

#include "kvplan/calibration/gpu_probes.h"
#include "kvplan/kernels/block_copy.h"
#include "kvplan/kernels/decode_attention.h"
#include "kvplan/kernels/device.h"
#include "kvplan/kernels/kv_cache.h"
#include "kvplan/kernels/kv_write.h"
#include "kvplan/kernels/prefill_attention.h"
#include "kvplan/kernels/quant_decode_attention.h"
#include "kvplan/kernels/split_plan.h"

namespace kvplan::calibration::internal {

namespace {

using namespace kvplan::kernels;
using kvplan::calibration::Status;

// Device and pinned allocations of one shape; freed when the shape's launch is dropped.
struct Holder {
  std::vector<void*> device;
  std::vector<void*> pinned;
  cublasHandle_t cublas = nullptr;
  Holder() = default;
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;
  ~Holder() {
    cudaDeviceSynchronize();  // nothing of this shape may still run when its memory goes
    if (cublas) cublasDestroy(cublas);
    for (void* p : device) cudaFree(p);
    for (void* p : pinned) cudaFreeHost(p);
  }
  Status alloc(size_t bytes, void** out) {
    *out = nullptr;
    if (Status s = cuda_status(cudaMalloc(out, std::max<size_t>(bytes, 16)), "cudaMalloc", __LINE__); !s.ok()) return s;
    device.push_back(*out);
    return Status::success();
  }
  Status alloc_random(size_t elems16, uint64_t seed, void** out, bool fp16 = false) {
    if (Status s = alloc(elems16 * 2, out); !s.ok()) return s;
    return fill_random_16bit(*out, elems16, seed, fp16, nullptr);
  }
  template <typename T>
  Status upload(const std::vector<T>& host, T** out) {
    void* p = nullptr;
    if (Status s = alloc(host.size() * sizeof(T), &p); !s.ok()) return s;
    *out = static_cast<T*>(p);
    return cuda_status(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy",
                       __LINE__);
  }
  Status alloc_pinned(size_t bytes, void** out) {
    if (Status s = cuda_status(cudaMallocHost(out, bytes), "cudaMallocHost", __LINE__); !s.ok()) return s;
    pinned.push_back(*out);
    std::memset(*out, 0x3C, bytes);  // touched, not zero
    return Status::success();
  }
};

Status finish_prepare() { return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize (prepare)", __LINE__); }

const char* dtype_name(ElemType t) { return t == ElemType::kFP16 ? "fp16" : "bf16"; }

// ── decode attention ────────────────────────────────────────────────────────────────────────────

struct DecodeSpec {
  bool paged = true;
  int batch = 1, q_heads = 32, kv_heads = 8, head_dim = 128, tpb = 16, splits = 1;
  ElemType dtype = ElemType::kBF16;
  std::string mix = "uniform";  // "uniform": every sequence at ctx; "skewed": batch/8 at ctx, the rest at ctx/16
  int ctx = 1024;
};

std::vector<int32_t> context_lens(const DecodeSpec& d) {
  std::vector<int32_t> lens(static_cast<size_t>(d.batch), d.ctx);
  if (d.mix == "skewed") {
    const int n_long = std::max(1, d.batch / 8);
    for (int i = n_long; i < d.batch; ++i) lens[static_cast<size_t>(i)] = std::max(16, d.ctx / 16);
    std::mt19937 rng(static_cast<unsigned>(d.batch * 131 + d.ctx));  // long ones anywhere in the batch
    std::shuffle(lens.begin(), lens.end(), rng);
  }
  return lens;
}

Shape decode_shape(const DecodeSpec& d) {
  const std::vector<int32_t> lens = context_lens(d);
  const int64_t sum = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  const int max_len = *std::max_element(lens.begin(), lens.end());
  Shape s;
  s.kernel = d.paged ? "decode_paged" : "decode_contiguous";
  s.op_class = "attention_decode";
  s.params.set("B", d.batch).set("Hq", d.q_heads).set("Hkv", d.kv_heads).set("D", d.head_dim);
  s.params.set("dtype", dtype_name(d.dtype)).set("mix", d.mix).set("ctx_max", max_len).set("ctx_sum", sum);
  s.params.set("splits", d.splits);
  if (d.paged) s.params.set("tokens_per_block", d.tpb);
  // Each KV element read once (K and V), q read and out written once.
  s.bytes = 2.0 * (2.0 * double(sum) * d.kv_heads * d.head_dim) + 2.0 * 2.0 * d.batch * d.q_heads * d.head_dim;
  s.flops = 4.0 * d.q_heads * d.head_dim * double(sum);
  s.prepare = [d, lens, max_len](Launch* launch) -> Status {
    auto h = std::make_shared<Holder>();
    const bool fp16 = d.dtype == ElemType::kFP16;
    void *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr, *pout = nullptr, *plse = nullptr;
    int32_t* dlens = nullptr;
    const size_t q_elems = size_t(d.batch) * d.q_heads * d.head_dim;
    if (Status st = h->alloc_random(q_elems, 1, &q, fp16); !st.ok()) return st;
    if (Status st = h->alloc(q_elems * 2, &out); !st.ok()) return st;
    if (Status st = h->upload(lens, &dlens); !st.ok()) return st;
    if (d.splits > 1) {
      if (Status st = h->alloc(size_t(decode_partial_out_elems(d.batch, d.splits, d.q_heads, d.head_dim)) * 4, &pout);
          !st.ok())
        return st;
      if (Status st = h->alloc(size_t(decode_partial_lse_elems(d.batch, d.splits, d.q_heads)) * 4, &plse); !st.ok())
        return st;
    }
    const float scale = 1.f / std::sqrt(float(d.head_dim));
    if (!d.paged) {
      const size_t kv = size_t(d.batch) * max_len * d.kv_heads * d.head_dim;
      if (Status st = h->alloc_random(kv, 2, &k, fp16); !st.ok()) return st;
      if (Status st = h->alloc_random(kv, 3, &v, fp16); !st.ok()) return st;
      DecodeAttentionParams p;
      p.dtype = d.dtype;
      p.num_seqs = d.batch;
      p.num_q_heads = d.q_heads;
      p.num_kv_heads = d.kv_heads;
      p.head_dim = d.head_dim;
      p.max_seq_len = max_len;
      p.softmax_scale = scale;
      p.q = static_cast<const uint16_t*>(q);
      p.k_cache = static_cast<const uint16_t*>(k);
      p.v_cache = static_cast<const uint16_t*>(v);
      p.context_lens = dlens;
      p.out = static_cast<uint16_t*>(out);
      p.num_splits = d.splits;
      p.partial_out = static_cast<float*>(pout);
      p.partial_lse = static_cast<float*>(plse);
      *launch = [h, p]() { return (launch_decode_attention(p, nullptr)); };
      return finish_prepare();
    }
    // Paged: each sequence holds just the blocks its length needs, in a shuffled pool order.
    const int max_blocks = (max_len + d.tpb - 1) / d.tpb;
    std::vector<int32_t> table(size_t(d.batch) * max_blocks, 0);
    int num_blocks = 0;
    for (int b = 0; b < d.batch; ++b) num_blocks += (lens[size_t(b)] + d.tpb - 1) / d.tpb;
    std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::mt19937 rng(7);
    std::shuffle(perm.begin(), perm.end(), rng);
    int next = 0;
    for (int b = 0; b < d.batch; ++b) {
      const int nb = (lens[size_t(b)] + d.tpb - 1) / d.tpb;
      for (int i = 0; i < nb; ++i) table[size_t(b) * max_blocks + i] = perm[size_t(next++)];
    }
    const size_t kv = size_t(num_blocks) * d.kv_heads * d.tpb * d.head_dim;
    int32_t* dtable = nullptr;
    if (Status st = h->alloc_random(kv, 2, &k, fp16); !st.ok()) return st;
    if (Status st = h->alloc_random(kv, 3, &v, fp16); !st.ok()) return st;
    if (Status st = h->upload(table, &dtable); !st.ok()) return st;
    PagedDecodeAttentionParams p;
    p.dtype = d.dtype;
    p.num_seqs = d.batch;
    p.num_q_heads = d.q_heads;
    p.num_kv_heads = d.kv_heads;
    p.head_dim = d.head_dim;
    p.num_blocks = num_blocks;
    p.tokens_per_block = d.tpb;
    p.max_blocks_per_seq = max_blocks;
    p.softmax_scale = scale;
    p.q = static_cast<const uint16_t*>(q);
    p.k_cache = static_cast<const uint16_t*>(k);
    p.v_cache = static_cast<const uint16_t*>(v);
    p.block_table = dtable;
    p.context_lens = dlens;
    p.out = static_cast<uint16_t*>(out);
    p.num_splits = d.splits;
    p.partial_out = static_cast<float*>(pout);
    p.partial_lse = static_cast<float*>(plse);
    *launch = [h, p]() { return (launch_paged_decode_attention(p, nullptr)); };
    return finish_prepare();
  };
  return s;
}

// ── prefill attention ───────────────────────────────────────────────────────────────────────────

Shape prefill_shape(int batch, int len, int prefix, int q_heads, int kv_heads, int head_dim) {
  Shape s;
  s.kernel = prefix ? "prefill_chunked" : "prefill";
  s.op_class = "attention_prefill";
  s.params.set("B", batch).set("L", len).set("prefix", prefix).set("Hq", q_heads).set("Hkv", kv_heads);
  s.params.set("D", head_dim).set("dtype", "bf16").set("tokens_per_block", 16);
  const double pairs = double(batch) * (double(len) * (len + 1) / 2 + double(len) * prefix);
  s.flops = 4.0 * q_heads * head_dim * pairs;
  s.bytes = 2.0 * (2.0 * batch * len * q_heads * head_dim + 2.0 * batch * (len + prefix) * kv_heads * head_dim);
  s.prepare = [=](Launch* launch) -> Status {
    auto h = std::make_shared<Holder>();
    const int tpb = 16;
    void *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr;
    const size_t qe = size_t(batch) * len * q_heads * head_dim, ke = size_t(batch) * len * kv_heads * head_dim;
    std::vector<int32_t> cu(size_t(batch) + 1);
    for (int i = 0; i <= batch; ++i) cu[size_t(i)] = i * len;
    int32_t* dcu = nullptr;
    if (Status st = h->alloc_random(qe, 11, &q); !st.ok()) return st;
    if (Status st = h->alloc_random(ke, 12, &k); !st.ok()) return st;
    if (Status st = h->alloc_random(ke, 13, &v); !st.ok()) return st;
    if (Status st = h->alloc(qe * 2, &out); !st.ok()) return st;
    if (Status st = h->upload(cu, &dcu); !st.ok()) return st;
    PrefillAttentionParams p;
    p.dtype = ElemType::kBF16;
    p.q = static_cast<const uint16_t*>(q);
    p.k = static_cast<const uint16_t*>(k);
    p.v = static_cast<const uint16_t*>(v);
    p.cu_seqlens = dcu;
    p.out = static_cast<uint16_t*>(out);
    p.num_seqs = batch;
    p.total_q_tokens = batch * len;
    p.max_seqlen_q = len;
    p.num_q_heads = q_heads;
    p.num_kv_heads = kv_heads;
    p.head_dim = head_dim;
    p.softmax_scale = 1.f / std::sqrt(float(head_dim));
    if (prefix > 0) {
      const int blocks = (prefix + tpb - 1) / tpb;
      void *kc = nullptr, *vc = nullptr;
      const size_t ce = size_t(batch) * blocks * kv_heads * tpb * head_dim;
      std::vector<int32_t> prefix_lens(size_t(batch), prefix), table(size_t(batch) * blocks);
      std::iota(table.begin(), table.end(), 0);
      std::mt19937 rng(5);
      std::shuffle(table.begin(), table.end(), rng);
      int32_t *dpl = nullptr, *dtable = nullptr;
      if (Status st = h->alloc_random(ce, 14, &kc); !st.ok()) return st;
      if (Status st = h->alloc_random(ce, 15, &vc); !st.ok()) return st;
      if (Status st = h->upload(prefix_lens, &dpl); !st.ok()) return st;
      if (Status st = h->upload(table, &dtable); !st.ok()) return st;
      p.prefix_lens = dpl;
      p.k_cache = static_cast<const uint16_t*>(kc);
      p.v_cache = static_cast<const uint16_t*>(vc);
      p.block_table = dtable;
      p.num_blocks = batch * blocks;
      p.tokens_per_block = tpb;
      p.max_blocks_per_seq = blocks;
    }
    *launch = [h, p]() { return (launch_prefill_attention(p, nullptr)); };
    return finish_prepare();
  };
  return s;
}

// ── KV write (16-bit and quantized) and quantized decode ────────────────────────────────────────

struct QuantSetup {
  std::shared_ptr<Holder> h;
  KvWriteParams write;
  QuantDecodeParams decode;
};

// A paged cache of `type` for batch x ctx tokens (tpb 16, group 32), the write of all of them,
// and the decode that reads them.
Status make_quant(CacheType type, int batch, int ctx, int q_heads, int kv_heads, int head_dim, QuantSetup* out) {
  auto h = std::make_shared<Holder>();
  const int tpb = 16, group = 32;
  const int blocks_per_seq = (ctx + tpb - 1) / tpb;
  const int64_t num_slots = int64_t(batch) * blocks_per_seq * tpb;
  const int64_t rows = num_slots * kv_heads;
  QuantKvCache q;
  q.type = type;
  q.layout = CacheLayout::kPaged;
  q.num_kv_heads = kv_heads;
  q.head_dim = head_dim;
  q.group_size = group;
  q.tokens_per_block = tpb;
  q.num_slots = num_slots;
  if (Status s = h->alloc(size_t(rows * data_row_bytes(type, head_dim)), &q.k_data); !s.ok()) return s;
  if (Status s = h->alloc(size_t(rows * data_row_bytes(type, head_dim)), &q.v_data); !s.ok()) return s;
  if (has_group_meta(type)) {
    void *km = nullptr, *vm = nullptr;
    if (Status s = h->alloc(size_t(rows * meta_row_elems(type, head_dim, group)) * 2, &km); !s.ok()) return s;
    if (Status s = h->alloc(size_t(rows * meta_row_elems(type, head_dim, group)) * 2, &vm); !s.ok()) return s;
    q.k_meta = static_cast<uint16_t*>(km);
    q.v_meta = static_cast<uint16_t*>(vm);
  }
  if (type == CacheType::kFp8E4M3) {
    float* scale = nullptr;
    if (Status s = h->upload(std::vector<float>{1.0f / 256.0f}, &scale); !s.ok()) return s;  // |x| < 1 -> codes < 256
    q.k_scale = scale;
    q.v_scale = scale;
  }
  const int num_blocks = batch * blocks_per_seq;
  std::vector<int32_t> table(static_cast<size_t>(num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(9);
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<int64_t> slots;
  slots.reserve(size_t(batch) * ctx);
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < ctx; ++t) slots.push_back(int64_t(table[size_t(b) * blocks_per_seq + t / tpb]) * tpb + t % tpb);
  void *kn = nullptr, *vn = nullptr, *qv = nullptr, *o = nullptr;
  const size_t new_elems = size_t(batch) * ctx * kv_heads * head_dim;
  int64_t* dslots = nullptr;
  int32_t *dtable = nullptr, *dlens = nullptr;
  if (Status s = h->alloc_random(new_elems, 21, &kn); !s.ok()) return s;
  if (Status s = h->alloc_random(new_elems, 22, &vn); !s.ok()) return s;
  if (Status s = h->alloc_random(size_t(batch) * q_heads * head_dim, 23, &qv); !s.ok()) return s;
  if (Status s = h->alloc(size_t(batch) * q_heads * head_dim * 2, &o); !s.ok()) return s;
  if (Status s = h->upload(slots, &dslots); !s.ok()) return s;
  if (Status s = h->upload(table, &dtable); !s.ok()) return s;
  if (Status s = h->upload(std::vector<int32_t>(size_t(batch), ctx), &dlens); !s.ok()) return s;
  out->h = h;
  out->write.dtype = ElemType::kBF16;
  out->write.k_new = static_cast<const uint16_t*>(kn);
  out->write.v_new = static_cast<const uint16_t*>(vn);
  out->write.slot_mapping = dslots;
  out->write.cache = q;
  out->write.num_tokens = batch * ctx;
  QuantDecodeParams& d = out->decode;
  d.dtype = ElemType::kBF16;
  d.cache = q;
  d.q = static_cast<const uint16_t*>(qv);
  d.out = static_cast<uint16_t*>(o);
  d.block_table = dtable;
  d.context_lens = dlens;
  d.num_seqs = batch;
  d.num_q_heads = q_heads;
  d.num_kv_heads = kv_heads;
  d.head_dim = head_dim;
  d.max_blocks_per_seq = blocks_per_seq;
  d.softmax_scale = 1.f / std::sqrt(float(head_dim));
  return Status::success();
}

Shape kv_write_shape(CacheType type, int tokens, int kv_heads, int head_dim) {
  Shape s;
  s.kernel = "kv_write";
  s.op_class = "kv_write";
  s.params.set("tokens", tokens).set("Hkv", kv_heads).set("D", head_dim).set("cache", std::string(cache_type_name(type)));
  s.params.set("group", 32).set("tokens_per_block", 16).set("dtype", "bf16");
  const double token_bytes = double(token_bytes_per_head(type, head_dim, 32));
  s.bytes = double(tokens) * kv_heads * 2.0 * (2.0 * head_dim + token_bytes) + double(tokens) * 8;
  s.prepare = [=](Launch* launch) -> Status {
    QuantSetup q;
    if (Status st = make_quant(type, 1, tokens, kv_heads, kv_heads, head_dim, &q); !st.ok()) return st;
    auto h = q.h;
    KvWriteParams w = q.write;
    *launch = [h, w]() { return (launch_kv_write(w, nullptr)); };
    return finish_prepare();
  };
  return s;
}

Shape quant_decode_shape(CacheType type, int batch, int ctx, int q_heads, int kv_heads, int head_dim) {
  Shape s;
  s.kernel = "decode_quant";
  s.op_class = "attention_decode";
  s.params.set("B", batch).set("ctx_max", ctx).set("ctx_sum", int64_t(batch) * ctx).set("mix", "uniform");
  s.params.set("Hq", q_heads).set("Hkv", kv_heads).set("D", head_dim).set("cache", std::string(cache_type_name(type)));
  s.params.set("group", 32).set("tokens_per_block", 16).set("dtype", "bf16");
  const double tokens = double(batch) * ctx;
  s.bytes = 2.0 * tokens * kv_heads * double(token_bytes_per_head(type, head_dim, 32)) +
            4.0 * batch * q_heads * head_dim;
  s.flops = 4.0 * q_heads * head_dim * tokens;
  s.prepare = [=](Launch* launch) -> Status {
    QuantSetup q;
    if (Status st = make_quant(type, batch, ctx, q_heads, kv_heads, head_dim, &q); !st.ok()) return st;
    // The cache must hold real codes: write every token once before timing the decode.
    if (Status st = (launch_kv_write(q.write, nullptr)); !st.ok()) return st;
    auto h = q.h;
    QuantDecodeParams d = q.decode;
    *launch = [h, d]() { return (launch_quant_decode_attention(d, nullptr)); };
    return finish_prepare();
  };
  return s;
}

// ── block copy and swaps ────────────────────────────────────────────────────────────────────────

Shape block_copy_shape(int pairs, const std::string& kind) {
  const int heads = 8, tpb = 16, dim = 128;
  const double block_bytes = 2.0 * double(block_elems(heads, tpb, dim));  // one of K or V
  Shape s;
  s.kernel = kind;  // "block_copy", "swap_out", "swap_in"
  s.op_class = kind == "block_copy" ? "elementwise" : (kind == "swap_out" ? "copy_d2h" : "copy_h2d");
  s.params.set("pairs", pairs).set("Hkv", heads).set("tokens_per_block", tpb).set("D", dim);
  // block_copy reads and writes on the device; a swap moves each byte once over the link.
  s.bytes = (kind == "block_copy" ? 2.0 : 1.0) * 2.0 * pairs * block_bytes;
  s.prepare = [=](Launch* launch) -> Status {
    auto h = std::make_shared<Holder>();
    const int blocks = 2 * pairs;
    const size_t elems = size_t(blocks) * block_elems(heads, tpb, dim);
    void *k = nullptr, *v = nullptr;
    if (Status st = h->alloc_random(elems, 31, &k); !st.ok()) return st;
    if (Status st = h->alloc_random(elems, 32, &v); !st.ok()) return st;
    std::vector<int64_t> pair_list;
    for (int i = 0; i < pairs; ++i) {
      pair_list.push_back(i);
      pair_list.push_back(kind == "block_copy" ? pairs + i : i);
    }
    if (kind == "block_copy") {
      int64_t* dpairs = nullptr;
      if (Status st = h->upload(pair_list, &dpairs); !st.ok()) return st;
      BlockCopyParams c{static_cast<uint16_t*>(k), static_cast<uint16_t*>(v), dpairs, pairs, blocks, heads, tpb, dim};
      *launch = [h, c]() { return (launch_block_copy(c, nullptr)); };
      return finish_prepare();
    }
    void *hk = nullptr, *hv = nullptr;
    if (Status st = h->alloc_pinned(size_t(pairs * block_bytes), &hk); !st.ok()) return st;
    if (Status st = h->alloc_pinned(size_t(pairs * block_bytes), &hv); !st.ok()) return st;
    auto host_pairs = std::make_shared<std::vector<int64_t>>(pair_list);
    BlockSwapParams w{static_cast<uint16_t*>(k), static_cast<uint16_t*>(v), static_cast<uint16_t*>(hk),
                      static_cast<uint16_t*>(hv), host_pairs->data(), pairs, blocks, pairs, heads, tpb, dim};
    const bool out = kind == "swap_out";
    *launch = [h, host_pairs, w, out]() {
      return (out ? launch_swap_out(w, nullptr) : launch_swap_in(w, nullptr));
    };
    return finish_prepare();
  };
  return s;
}

// ── memory copies ───────────────────────────────────────────────────────────────────────────────

Shape copy_shape(const std::string& dir, int64_t bytes) {
  Shape s;
  s.kernel = "copy_" + dir;
  s.op_class = dir == "d2d" ? "elementwise" : "copy_" + dir;
  s.params.set("bytes", bytes);
  s.bytes = (dir == "d2d" ? 2.0 : 1.0) * double(bytes);  // D2D: read + write (METHOD.md)
  s.prepare = [=](Launch* launch) -> Status {
    auto h = std::make_shared<Holder>();
    void *a = nullptr, *b = nullptr;
    if (dir == "h2d") {
      if (Status st = h->alloc_pinned(size_t(bytes), &a); !st.ok()) return st;
      if (Status st = h->alloc(size_t(bytes), &b); !st.ok()) return st;
    } else if (dir == "d2h") {
      if (Status st = h->alloc_random(size_t(bytes) / 2, 41, &a); !st.ok()) return st;
      if (Status st = h->alloc_pinned(size_t(bytes), &b); !st.ok()) return st;
    } else {
      if (Status st = h->alloc_random(size_t(bytes) / 2, 42, &a); !st.ok()) return st;
      if (Status st = h->alloc(size_t(bytes), &b); !st.ok()) return st;
    }
    const cudaMemcpyKind kind =
        dir == "h2d" ? cudaMemcpyHostToDevice : (dir == "d2h" ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
    *launch = [h, a, b, bytes, kind]() {
      return cuda_status(cudaMemcpyAsync(b, a, size_t(bytes), kind, nullptr), "cudaMemcpyAsync", __LINE__);
    };
    return finish_prepare();
  };
  return s;
}

// ── GEMMs (cuBLAS, bf16 in / bf16 out, fp32 accumulate) ─────────────────────────────────────────

// out[T, N] = x[T, K] · W[N, K]^T, as nn.Linear stores W: cuBLAS column-major "TN".
Shape gemm_shape(int64_t t, int64_t k, int64_t n) {
  Shape s;
  s.kernel = "gemm_bf16";
  s.op_class = "gemm";
  s.params.set("M", t).set("K", k).set("N", n).set("dtype", "bf16").set("layout", "TN").set("compute", "fp32");
  s.flops = 2.0 * double(t) * double(k) * double(n);
  s.bytes = 2.0 * (double(t) * k + double(n) * k + double(t) * n);
  s.prepare = [=](Launch* launch) -> Status {
    auto h = std::make_shared<Holder>();
    void *x = nullptr, *w = nullptr, *y = nullptr;
    if (Status st = h->alloc_random(size_t(t * k), 51, &x); !st.ok()) return st;
    if (Status st = h->alloc_random(size_t(n * k), 52, &w); !st.ok()) return st;
    if (Status st = h->alloc(size_t(t * n) * 2, &y); !st.ok()) return st;
    if (cublasStatus_t c = cublasCreate(&h->cublas); c != CUBLAS_STATUS_SUCCESS)
      return Status::error("cublasCreate", int(c), cublasGetStatusString(c), "runner_gpu.cpp");
    cublasSetStream(h->cublas, nullptr);
    *launch = [h, x, w, y, t, k, n]() {
      const float alpha = 1.f, beta = 0.f;
      const cublasStatus_t c =
          cublasGemmEx(h->cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(t), int(k), &alpha, w, CUDA_R_16BF, int(k), x,
                       CUDA_R_16BF, int(k), &beta, y, CUDA_R_16BF, int(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      if (c != CUBLAS_STATUS_SUCCESS) return Status::error("cublasGemmEx", int(c), cublasGetStatusString(c), "runner_gpu.cpp");
      return Status::success();
    };
    return finish_prepare();
  };
  return s;
}

// ── launch and CUPTI overhead ───────────────────────────────────────────────────────────────────

Shape empty_shape(bool overhead) {
  Shape s;
  s.kernel = overhead ? "cupti_overhead" : "launch_empty";
  s.op_class = "";
  s.params.set("probe", "kvplan_empty_kernel").set("kernels_per_rep", overhead ? 64 : 1);
  s.mode = overhead ? Shape::Mode::kCuptiOverhead : Shape::Mode::kTimed;
  s.kernels_per_rep = overhead ? 64 : 1;
  const int count = s.kernels_per_rep;
  s.prepare = [count](Launch* launch) -> Status {
    *launch = [count]() { return launch_empty_kernels(count, nullptr); };
    return Status::success();
  };
  return s;
}

// Projection and MLP GEMMs (K, N) of presets: Llama-3.1-8B (quick and full), Llama-3.1-70B and
// Qwen2-7B (full), at tensor parallel 1.
struct GemmDims {
  int64_t k, n;
};

}  // namespace

std::vector<Shape> build_shape_grid(GridSize size, int device, std::vector<std::string>* notes) {
  const bool full = size == GridSize::kFull;
  const DeviceInfo dev = query_device(device);
  std::vector<Shape> g;

  g.push_back(empty_shape(false));
  g.push_back(empty_shape(true));

  // Decode: head configurations (q heads, kv heads, head dim).
  struct Heads {
    int q, kv, d;
  };
  std::vector<Heads> heads = {{32, 8, 128}, {64, 8, 128}};
  if (full) heads.insert(heads.end(), {{32, 32, 128}, {16, 1, 256}, {32, 8, 64}, {28, 4, 128}});
  const std::vector<int> batches = full ? std::vector<int>{1, 4, 16, 32, 64, 128, 256} : std::vector<int>{1, 8, 32, 128};
  const std::vector<int> ctxs = full ? std::vector<int>{256, 1024, 4096, 16384, 65536} : std::vector<int>{512, 2048, 8192, 32768};
  const int64_t max_tokens = full ? (int64_t{1} << 22) : (int64_t{1} << 20);  // batch x ctx per shape
  std::vector<int> tpbs = full ? std::vector<int>{16, 32, 128} : std::vector<int>{16, 128};
  for (const Heads& hd : heads) {
    for (int b : batches) {
      for (int c : ctxs) {
        if (int64_t(b) * c > max_tokens) continue;
        for (const char* mix : {"uniform", "skewed"}) {
          if (std::string(mix) == "skewed" && b < 8) continue;
          for (bool paged : {false, true}) {
            for (int tpb : paged ? tpbs : std::vector<int>{16}) {
              DecodeSpec d;
              d.paged = paged;
              d.batch = b;
              d.q_heads = hd.q;
              d.kv_heads = hd.kv;
              d.head_dim = hd.d;
              d.tpb = tpb;
              d.mix = mix;
              d.ctx = c;
              const std::vector<int32_t> lens = context_lens(d);
              const int64_t sum = std::accumulate(lens.begin(), lens.end(), int64_t{0});
              const int planned = plan_decode_splits({.num_seqs = b, .num_kv_heads = hd.kv, .max_context_len = c,
                                                      .total_context_tokens = sum, .num_sms = dev.num_sms})
                                      .num_splits;
              g.push_back(decode_shape(d));
              if (planned > 1) {
                d.splits = planned;
                g.push_back(decode_shape(d));
              }
            }
          }
        }
      }
    }
  }
  if (full) {  // fp16 on the main configuration
    for (int b : {1, 32}) {
      DecodeSpec d;
      d.dtype = ElemType::kFP16;
      d.batch = b;
      d.ctx = 4096;
      g.push_back(decode_shape(d));
    }
  }

  // Prefill (scalar-FMA kernel, docs/kernels.md: not yet the production prefill cost).
  for (auto [b, l, pre] : std::vector<std::tuple<int, int, int>>{{1, 512, 0}, {1, 2048, 0}, {1, 8192, 0}, {4, 1024, 0},
                                                                 {16, 256, 0}, {1, 512, 4096}, {1, 512, 16384}}) {
    g.push_back(prefill_shape(b, l, pre, 32, 8, 128));
  }
  if (full) {
    for (auto [b, l, pre] : std::vector<std::tuple<int, int, int>>{{1, 4096, 0}, {8, 2048, 0}, {2, 1024, 8192}}) {
      g.push_back(prefill_shape(b, l, pre, 64, 8, 128));
    }
  }

  // KV write, 16-bit and quantized; quantized decode.
  const std::vector<CacheType> types = {CacheType::kBF16, CacheType::kFp8E4M3, CacheType::kInt8, CacheType::kInt4};
  for (CacheType t : types) {
    for (int tokens : full ? std::vector<int>{1, 16, 128, 1024, 4096, 16384, 65536} : std::vector<int>{1, 64, 512, 4096, 16384}) {
      g.push_back(kv_write_shape(t, tokens, 8, 128));
    }
  }
  for (CacheType t : {CacheType::kFp8E4M3, CacheType::kInt8, CacheType::kInt4}) {
    for (auto [b, c] : std::vector<std::pair<int, int>>{{1, 8192}, {32, 2048}, {128, 1024}}) {
      g.push_back(quant_decode_shape(t, b, c, 32, 8, 128));
    }
  }
  notes->push_back("KIVI-2 write/decode: not in the grid (its cache setup differs; kernels exist)");

  // Block copy and swaps.
  for (int pairs : full ? std::vector<int>{16, 256, 1024, 4096, 16384} : std::vector<int>{64, 1024, 8192}) {
    g.push_back(block_copy_shape(pairs, "block_copy"));
    if (pairs <= 4096) {
      g.push_back(block_copy_shape(pairs, "swap_out"));
      g.push_back(block_copy_shape(pairs, "swap_in"));
    }
  }

  // GEMMs in the presets' projection / MLP / LM-head shapes.
  std::vector<GemmDims> dims = {{4096, 6144}, {4096, 4096}, {4096, 28672}, {14336, 4096}, {4096, 128256}};  // Llama-3.1-8B
  if (full) {
    dims.insert(dims.end(), {{8192, 10240}, {8192, 8192}, {8192, 57344}, {28672, 8192},  // Llama-3.1-70B
                             {3584, 4608}, {3584, 3584}, {3584, 37888}, {18944, 3584}});  // Qwen2-7B
  }
  const std::vector<int64_t> tokens = full ? std::vector<int64_t>{1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
                                           : std::vector<int64_t>{1, 8, 32, 128, 512, 2048, 8192};
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (const GemmDims& d : dims) {
    for (int64_t t : tokens) {
      if (d.n > 100000 && t > 2048) continue;  // LM head: only the rows that emit logits
      if (seen.insert({t, d.k, d.n}).second) g.push_back(gemm_shape(t, d.k, d.n));
    }
  }
  notes->push_back("fp8 GEMM: not measured (cuBLASLt fp8 needs scale pointers and a TN fp8 layout; bf16 only)");

  // Copy bandwidth.
  const std::vector<int64_t> sizes = full ? std::vector<int64_t>{int64_t{1} << 16, int64_t{1} << 20, int64_t{1} << 24,
                                                                 int64_t{1} << 26, int64_t{1} << 28, int64_t{1} << 30}
                                          : std::vector<int64_t>{int64_t{1} << 20, int64_t{1} << 24, int64_t{1} << 28};
  for (int64_t n : sizes) {
    g.push_back(copy_shape("d2d", n));
    g.push_back(copy_shape("h2d", n));
    g.push_back(copy_shape("d2h", n));
  }
  if (full) g.push_back(copy_shape("d2d", int64_t{1} << 31));

  int count = 0;
  cudaGetDeviceCount(&count);
  notes->push_back(count > 1 ? "NCCL all-reduce: skipped (" + std::to_string(count) +
                                   " GPUs, but the multi-GPU collective sweep is not implemented yet)"
                             : "NCCL all-reduce: skipped (one GPU)");
  return g;
}

}  // namespace kvplan::calibration::internal
