// Quantized-KV decode attention against its CPU reference (label gpu): caches built by the write
// references from fresh random K/V, poisoned outputs, every output element checked (NaN included)
// under the output dtype's tolerance. Shapes: batch 1 with context 1; mixed contexts around block
// (or KIVI group/residual) boundaries; odd head counts; GQA groups of 1, 3, 8, 12 and 16 (more than
// one CTA's 8 query heads); head_dim 64, 128, 256; tokens_per_block 8 to 128.
#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/quant_decode_attention.h"
#include "kvplan/kernels/reference/kv_write_ref.h"
#include "kvplan/kernels/reference/quant_decode_attention_ref.h"
#include "quant_cache_test_support.h"

namespace kvplan::kernels {
namespace {

using testing::as_float;
using testing::compare;
using testing::Comparison;
using testing::DeviceBuffer;
using testing::HostKiviCache;
using testing::HostQuantCache;
using testing::random_bits;
using testing::tolerance_for;

struct Heads {
  int kv, q;
};

std::vector<double> run_and_compare(QuantDecodeParams host_p, QuantDecodeParams dev_p, const std::vector<uint16_t>& q,
                                    size_t out_elems) {
  DeviceBuffer<uint16_t> dq(q), dout(out_elems);
  dout.poison();
  dev_p.q = dq.get();
  dev_p.out = dout.get();
  Status s = launch_quant_decode_attention(dev_p, nullptr);
  EXPECT_TRUE(s.ok()) << s.describe();
  std::vector<double> ref = quant_decode_attention_ref(host_p);
  Comparison c = compare(as_float(host_p.dtype, dout.download()), ref, tolerance_for(host_p.dtype));
  EXPECT_TRUE(c.passed) << c.describe();
  return ref;
}

void run_paged(ElemType dtype, CacheType type, int group_size, bool per_head, int head_dim, int tpb, Heads heads,
               const std::vector<int32_t>& lens, std::mt19937_64& rng) {
  std::ostringstream name;
  name << elem_type_name(dtype) << " " << cache_type_name(type) << " G=" << group_size << (per_head ? " per-head" : "")
       << " D=" << head_dim << " tpb=" << tpb << " heads " << heads.kv << "/" << heads.q << " lens";
  for (int L : lens) name << " " << L;
  SCOPED_TRACE(name.str());
  const int num_seqs = static_cast<int>(lens.size());
  int max_blocks = 1, used_blocks = 0;
  for (int L : lens) {
    max_blocks = std::max(max_blocks, (L + tpb - 1) / tpb);
    used_blocks += (L + tpb - 1) / tpb;
  }
  const int num_blocks = used_blocks + 3;  // spare blocks stay poisoned
  std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> table(static_cast<size_t>(num_seqs) * max_blocks, -1);  // unused entries must never be read
  std::vector<int64_t> slots;
  size_t next = 0;
  for (int s = 0; s < num_seqs; ++s) {
    for (int b = 0; b < (lens[static_cast<size_t>(s)] + tpb - 1) / tpb; ++b) table[static_cast<size_t>(s * max_blocks + b)] = perm[next++];
    for (int t = 0; t < lens[static_cast<size_t>(s)]; ++t) {
      slots.push_back(static_cast<int64_t>(table[static_cast<size_t>(s * max_blocks + t / tpb)]) * tpb + t % tpb);
    }
  }
  HostQuantCache host(type, CacheLayout::kPaged, static_cast<int64_t>(num_blocks) * tpb, heads.kv, head_dim, tpb, group_size, per_head);
  if (type == CacheType::kFp8E4M3) {
    std::uniform_real_distribution<float> sc(1.f / 400, 1.f / 200);  // |x| / scale up to 400: near the e4m3 top
    for (float& x : host.k_scale) x = sc(rng);
    for (float& x : host.v_scale) x = sc(rng);
  }
  const size_t n = std::max<size_t>(slots.size(), 1) * heads.kv * head_dim;
  std::vector<uint16_t> k = random_bits(dtype, n, rng), v = random_bits(dtype, n, rng);
  KvWriteParams w;
  w.dtype = dtype;
  w.k_new = k.data();
  w.v_new = v.data();
  w.slot_mapping = slots.data();
  w.cache = host.view();
  w.num_tokens = static_cast<int>(slots.size());
  kv_write_ref(w);

  DeviceBuffer<uint8_t> dk(host.k_data), dv(host.v_data);
  DeviceBuffer<uint16_t> dkm(host.k_meta), dvm(host.v_meta);
  DeviceBuffer<float> dks(host.k_scale), dvs(host.v_scale);
  DeviceBuffer<int32_t> dtable(table), dlens(lens);

  QuantDecodeParams p;
  p.dtype = dtype;
  p.cache = host.view();
  p.block_table = table.data();
  p.context_lens = lens.data();
  p.num_seqs = num_seqs;
  p.num_q_heads = heads.q;
  p.num_kv_heads = heads.kv;
  p.head_dim = head_dim;
  p.max_blocks_per_seq = max_blocks;
  p.softmax_scale = 1.f / std::sqrt(static_cast<float>(head_dim));
  std::vector<uint16_t> q = random_bits(dtype, static_cast<size_t>(num_seqs) * heads.q * head_dim, rng);
  p.q = q.data();
  p.out = reinterpret_cast<uint16_t*>(q.data());  // not written by the reference

  QuantDecodeParams d = p;
  d.cache.k_data = dk.get();
  d.cache.v_data = dv.get();
  d.cache.k_meta = has_group_meta(type) ? dkm.get() : nullptr;
  d.cache.v_meta = has_group_meta(type) ? dvm.get() : nullptr;
  d.cache.k_scale = type == CacheType::kFp8E4M3 ? dks.get() : nullptr;
  d.cache.v_scale = type == CacheType::kFp8E4M3 ? dvs.get() : nullptr;
  d.block_table = dtable.get();
  d.context_lens = dlens.get();
  run_and_compare(p, d, q, q.size());
}

TEST(QuantDecodeGpu, PagedFp8Int8Int4MatchReference) {
  KVPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(1130);
  struct Format {
    CacheType type;
    int group_size;
    bool per_head;
  };
  const Format formats[] = {{CacheType::kFp8E4M3, 0, true}, {CacheType::kFp8E4M3, 0, false}, {CacheType::kInt8, 32, false},
                            {CacheType::kInt8, 64, false},  {CacheType::kInt4, 32, false},   {CacheType::kInt4, 128, false}};
  const Heads head_sets[] = {{3, 9}, {1, 8}, {2, 32}, {4, 4}, {1, 12}};
  const int tpbs[] = {8, 16, 32, 64, 128};
  int i = 0;
  for (ElemType dtype : {ElemType::kBF16, ElemType::kFP16}) {
    for (const Format& f : formats) {
      for (int d : {64, 128, 256}) {
        if (f.group_size > d) continue;
        const int tpb = tpbs[i % 5];
        const Heads h = head_sets[i % 5];
        ++i;
        run_paged(dtype, f.type, f.group_size, f.per_head, d, tpb, h, {1}, rng);  // batch 1, context 1
        run_paged(dtype, f.type, f.group_size, f.per_head, d, tpb, h,
                  {1, tpb - 1, tpb, tpb + 1, 3 * tpb + 5, 517, 2 * tpb - 1}, rng);
      }
    }
  }
}

void run_kivi(ElemType dtype, int head_dim, Heads heads, int G, int R, std::mt19937_64& rng) {
  std::ostringstream name;
  name << elem_type_name(dtype) << " kivi D=" << head_dim << " heads " << heads.kv << "/" << heads.q << " G=" << G << " R=" << R;
  SCOPED_TRACE(name.str());
  const std::vector<int32_t> lens = {1, std::max(R, 1), R + G - 1, R + G, R + G + 1, 2 * R + 5 * G + 3, 7};
  const int S = 2 * R + 6 * G;
  const int num_seqs = static_cast<int>(lens.size());
  HostKiviCache host(dtype, num_seqs, heads.kv, head_dim, G, R, S);
  std::vector<int32_t> off = {0}, before(lens.size(), 0);
  for (int L : lens) off.push_back(off.back() + L);
  const size_t n = static_cast<size_t>(off.back()) * heads.kv * head_dim;
  std::vector<uint16_t> k = random_bits(dtype, n, rng), v = random_bits(dtype, n, rng);
  KiviWriteParams w;
  w.k_new = k.data();
  w.v_new = v.data();
  w.new_token_offsets = off.data();
  w.context_lens_before = before.data();
  w.cache = host.view();
  w.num_new_tokens = off.back();
  kivi_write_ref(w);

  DeviceBuffer<uint8_t> dkc(host.k_codes), dvc(host.v_codes);
  DeviceBuffer<uint16_t> dkm(host.k_meta), dvm(host.v_meta), dkr(host.k_residual), dvr(host.v_residual);
  DeviceBuffer<int32_t> dlens(lens);
  QuantDecodeParams p;
  p.dtype = dtype;
  p.kivi = true;
  p.kivi_cache = host.view();
  p.context_lens = lens.data();
  p.num_seqs = num_seqs;
  p.num_q_heads = heads.q;
  p.num_kv_heads = heads.kv;
  p.head_dim = head_dim;
  p.softmax_scale = 1.f / std::sqrt(static_cast<float>(head_dim));
  std::vector<uint16_t> q = random_bits(dtype, static_cast<size_t>(num_seqs) * heads.q * head_dim, rng);
  p.q = q.data();
  p.out = q.data();
  QuantDecodeParams d = p;
  d.kivi_cache.k_codes = dkc.get();
  d.kivi_cache.v_codes = dvc.get();
  d.kivi_cache.k_meta = dkm.get();
  d.kivi_cache.v_meta = dvm.get();
  d.kivi_cache.k_residual = dkr.get();
  d.kivi_cache.v_residual = dvr.get();
  d.context_lens = dlens.get();
  run_and_compare(p, d, q, q.size());
}

TEST(QuantDecodeGpu, KiviMatchesReference) {
  KVPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(77);
  for (ElemType dtype : {ElemType::kBF16, ElemType::kFP16}) {
    run_kivi(dtype, 64, {3, 9}, 32, 32, rng);
    run_kivi(dtype, 128, {1, 8}, 32, 64, rng);
    run_kivi(dtype, 128, {2, 32}, 128, 0, rng);
    run_kivi(dtype, 256, {4, 4}, 64, 16, rng);
    run_kivi(dtype, 64, {1, 12}, 8, 5, rng);
  }
}

TEST(QuantDecodeGpu, RejectsBadParamsWithStatus) {
  KVPLAN_REQUIRE_GPU();
  QuantDecodeParams p;
  p.num_seqs = 1;
  Status s = launch_quant_decode_attention(p, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.call(), "params");
}

}  // namespace
}  // namespace kvplan::kernels
