// KV write kernels against their CPU references (label gpu). Every byte of every cache array is
// compared exactly: the caches start poisoned (0xFF) on both sides, so a byte the kernel should not
// have written, or failed to write, differs. Exactness (not "within one code") is required because
// the kernels perform the same IEEE-rounded fp32 operations as the reference (kv_cache.h: min/max
// are order-independent, and (x - zero) / scale uses __fsub_rn/__fdiv_rn, never contracted).
#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/kv_write.h"
#include "kvplan/kernels/reference/kv_write_ref.h"
#include "quant_cache_test_support.h"

namespace kvplan::kernels {
namespace {

using testing::DeviceBuffer;
using testing::HostKiviCache;
using testing::HostQuantCache;
using testing::random_bits;

template <typename T>
::testing::AssertionResult same_bytes(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << want.size();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " differ, first at " << first
                                       << " (got " << +got[first] << ", want " << +want[first] << ")";
}

struct WriteCase {
  ElemType dtype;
  CacheType type;
  CacheLayout layout;
  int num_kv_heads, head_dim, tokens_per_block, group_size;
  bool fp8_per_head;
  int num_tokens;
};

std::string describe(const WriteCase& c) {
  std::ostringstream s;
  s << elem_type_name(c.dtype) << " -> " << cache_type_name(c.type) << (c.layout == CacheLayout::kPaged ? " paged" : " contiguous")
    << " H=" << c.num_kv_heads << " D=" << c.head_dim << " tpb=" << c.tokens_per_block << " G=" << c.group_size
    << (c.fp8_per_head ? " per-head" : "") << " tokens=" << c.num_tokens;
  return s.str();
}

void run_write_case(const WriteCase& wc, std::mt19937_64& rng) {
  SCOPED_TRACE(describe(wc));
  const bool paged = wc.layout == CacheLayout::kPaged;
  const int64_t num_slots = paged ? 6 * wc.tokens_per_block : 3 * 40;  // 6 blocks, or 3 sequences of 40
  HostQuantCache host(wc.type, wc.layout, num_slots, wc.num_kv_heads, wc.head_dim, wc.tokens_per_block, wc.group_size,
                      wc.fp8_per_head);
  if (wc.type == CacheType::kFp8E4M3) {
    // Scales around 1/300 put |x| / scale up to ~500: codes span the e4m3 range and some saturate.
    std::uniform_real_distribution<float> s(0.002f, 0.006f);
    for (float& x : host.k_scale) x = s(rng);
    for (float& x : host.v_scale) x = s(rng);
  }
  // Distinct slots (a duplicate would race): block boundaries first, then a shuffle; every fifth token is padding.
  std::vector<int64_t> all(static_cast<size_t>(num_slots));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  const int64_t b = paged ? wc.tokens_per_block : 40;
  std::vector<int64_t> front = {b - 1, b, b + 1, 0, num_slots - 1};
  std::vector<int64_t> slots;
  for (int64_t x : front) slots.push_back(x);
  for (int64_t x : all) {
    if (std::find(front.begin(), front.end(), x) == front.end()) slots.push_back(x);
  }
  slots.resize(static_cast<size_t>(wc.num_tokens));
  for (size_t i = 4; i < slots.size(); i += 5) slots[i] = -1;

  const size_t n = static_cast<size_t>(wc.num_tokens) * wc.num_kv_heads * wc.head_dim;
  std::vector<uint16_t> k = random_bits(wc.dtype, n, rng), v = random_bits(wc.dtype, n, rng);

  DeviceBuffer<uint16_t> dk(k), dv(v);
  DeviceBuffer<int64_t> dslots(slots);
  DeviceBuffer<uint8_t> dk_data(host.k_data.size()), dv_data(host.v_data.size());
  DeviceBuffer<uint16_t> dk_meta(host.k_meta.size()), dv_meta(host.v_meta.size());
  DeviceBuffer<float> dk_scale(host.k_scale), dv_scale(host.v_scale);
  dk_data.poison();
  dv_data.poison();
  dk_meta.poison();
  dv_meta.poison();

  KvWriteParams p;
  p.dtype = wc.dtype;
  p.k_new = k.data();
  p.v_new = v.data();
  p.slot_mapping = slots.data();
  p.cache = host.view();
  p.num_tokens = wc.num_tokens;
  kv_write_ref(p);

  KvWriteParams d = p;
  d.k_new = dk.get();
  d.v_new = dv.get();
  d.slot_mapping = dslots.get();
  d.cache.k_data = dk_data.get();
  d.cache.v_data = dv_data.get();
  d.cache.k_meta = has_group_meta(wc.type) ? dk_meta.get() : nullptr;
  d.cache.v_meta = has_group_meta(wc.type) ? dv_meta.get() : nullptr;
  d.cache.k_scale = wc.type == CacheType::kFp8E4M3 ? dk_scale.get() : nullptr;
  d.cache.v_scale = wc.type == CacheType::kFp8E4M3 ? dv_scale.get() : nullptr;
  Status s = launch_kv_write(d, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  EXPECT_TRUE(same_bytes(dk_data.download(), host.k_data, "k_data"));
  EXPECT_TRUE(same_bytes(dv_data.download(), host.v_data, "v_data"));
  if (has_group_meta(wc.type)) {
    EXPECT_TRUE(same_bytes(dk_meta.download(), host.k_meta, "k_meta"));
    EXPECT_TRUE(same_bytes(dv_meta.download(), host.v_meta, "v_meta"));
    // A NaN scale or zero would mean an unwritten group inside a written row.
    for (size_t i = 0; i < host.k_meta.size(); i += 2) {
      if (host.k_meta[i] != 0xFFFF) {
        ASSERT_FALSE(std::isnan(fp16_to_float(host.k_meta[i]))) << i;
      }
    }
  }
}

TEST(KvWriteGpu, MatchesReferenceByteForByte) {
  KVPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(20261130);
  const CacheLayout P = CacheLayout::kPaged, C = CacheLayout::kContiguous;
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    const CacheType same = t == ElemType::kBF16 ? CacheType::kBF16 : CacheType::kFP16;
    const std::vector<WriteCase> cases = {
        {t, same, P, 3, 128, 16, 0, false, 37},
        {t, same, C, 1, 64, 0, 0, false, 1},
        {t, CacheType::kFp8E4M3, P, 8, 128, 8, 0, false, 40},
        {t, CacheType::kFp8E4M3, P, 3, 256, 128, 0, true, 130},
        {t, CacheType::kFp8E4M3, C, 2, 64, 0, 0, true, 21},
        {t, CacheType::kInt8, P, 3, 128, 32, 32, false, 33},
        {t, CacheType::kInt8, C, 1, 64, 0, 64, false, 1},
        {t, CacheType::kInt8, P, 2, 256, 64, 128, false, 65},
        {t, CacheType::kInt4, P, 8, 128, 16, 32, false, 17},
        {t, CacheType::kInt4, P, 3, 64, 128, 64, false, 129},
        {t, CacheType::kInt4, C, 4, 256, 0, 128, false, 50},
        {t, CacheType::kInt4, P, 1, 64, 8, 8, false, 48},
    };
    for (const WriteCase& c : cases) run_write_case(c, rng);
  }
}

// KIVI: several appends (prefill of mixed lengths, decode steps, small bursts) applied to the
// reference and the kernel; after each, every live code, metadata word and ring row must match.
struct KiviCase {
  ElemType dtype;
  int num_kv_heads, head_dim, group_size, residual_tokens;
};

::testing::AssertionResult same_live_state(const KiviCache& got, const KiviCache& want, const std::vector<int32_t>& lens) {
  const int D = got.head_dim, G = got.group_size;
  for (int s = 0; s < got.num_seqs; ++s) {
    const int L = lens[static_cast<size_t>(s)];
    const int Q = kivi_quantized_tokens(L, got.residual_tokens, G);
    for (int h = 0; h < got.num_kv_heads; ++h) {
      for (int t = 0; t < L; ++t) {
        auto fail = [&](const char* what, int i) {
          return ::testing::AssertionFailure() << what << " differs: seq " << s << " (length " << L << ", quantized " << Q
                                               << ") head " << h << " token " << t << " index " << i;
        };
        if (t < Q) {
          for (int j = 0; j < D / 4; ++j) {
            if (got.k_codes[kivi_code_offset(got, s, h, t) + j] != want.k_codes[kivi_code_offset(want, s, h, t) + j]) return fail("key code", j);
            if (got.v_codes[kivi_code_offset(got, s, h, t) + j] != want.v_codes[kivi_code_offset(want, s, h, t) + j]) return fail("value code", j);
          }
          for (int c = 0; c < D; ++c) {
            for (int w = 0; w < 2; ++w) {
              if (t % G == 0 && got.k_meta[kivi_key_meta_offset(got, s, h, t, c) + w] != want.k_meta[kivi_key_meta_offset(want, s, h, t, c) + w]) {
                return fail("key meta", c);
              }
              if (c % G == 0 && got.v_meta[kivi_value_meta_offset(got, s, h, t, c) + w] != want.v_meta[kivi_value_meta_offset(want, s, h, t, c) + w]) {
                return fail("value meta", c);
              }
            }
          }
        } else {
          for (int c = 0; c < D; ++c) {
            if (got.k_residual[kivi_residual_offset(got, s, h, t) + c] != want.k_residual[kivi_residual_offset(want, s, h, t) + c]) return fail("key ring", c);
            if (got.v_residual[kivi_residual_offset(got, s, h, t) + c] != want.v_residual[kivi_residual_offset(want, s, h, t) + c]) return fail("value ring", c);
          }
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

void run_kivi_case(const KiviCase& kc, std::mt19937_64& rng) {
  const int G = kc.group_size, R = kc.residual_tokens, S = 8 * G + 2 * R;
  std::ostringstream name;
  name << elem_type_name(kc.dtype) << " H=" << kc.num_kv_heads << " D=" << kc.head_dim << " G=" << G << " R=" << R;
  SCOPED_TRACE(name.str());
  std::vector<int32_t> lens = {0, 0, 0, 0, 0};
  HostKiviCache host(kc.dtype, 5, kc.num_kv_heads, kc.head_dim, G, R, S);
  HostKiviCache dev_image = host;  // downloaded device state
  DeviceBuffer<uint8_t> dkc(host.k_codes.size()), dvc(host.v_codes.size());
  DeviceBuffer<uint16_t> dkm(host.k_meta.size()), dvm(host.v_meta.size()), dkr(host.k_residual.size()), dvr(host.v_residual.size());
  dkc.poison();
  dvc.poison();
  dkm.poison();
  dvm.poison();
  dkr.poison();
  dvr.poison();

  // Step 0: prefill 0, 1, R+G-1, R+G and a long prompt; then decode steps and bursts.
  std::vector<std::vector<int>> steps = {{0, 1, R + G - 1, R + G, 3 * G + R + 5}, {1, 1, 1, 1, 1}, {G + 3, 0, 2, G, 1},
                                         {1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}};
  std::uniform_int_distribution<int> burst(0, G + 3);
  steps.push_back({burst(rng), burst(rng), burst(rng), burst(rng), burst(rng)});
  for (size_t step = 0; step < steps.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<int32_t> off = {0};
    for (int n : steps[step]) off.push_back(off.back() + n);
    const int total = off.back();
    const size_t n = static_cast<size_t>(std::max(total, 1)) * kc.num_kv_heads * kc.head_dim;
    std::vector<uint16_t> k = random_bits(kc.dtype, n, rng), v = random_bits(kc.dtype, n, rng);
    KiviWriteParams p;
    p.k_new = k.data();
    p.v_new = v.data();
    p.new_token_offsets = off.data();
    p.context_lens_before = lens.data();
    p.cache = host.view();
    p.num_new_tokens = total;
    kivi_write_ref(p);

    DeviceBuffer<uint16_t> dk(k), dv(v);
    DeviceBuffer<int32_t> doff(off), dlens(lens);
    KiviWriteParams d = p;
    d.k_new = dk.get();
    d.v_new = dv.get();
    d.new_token_offsets = doff.get();
    d.context_lens_before = dlens.get();
    d.cache.k_codes = dkc.get();
    d.cache.v_codes = dvc.get();
    d.cache.k_meta = dkm.get();
    d.cache.v_meta = dvm.get();
    d.cache.k_residual = dkr.get();
    d.cache.v_residual = dvr.get();
    Status s = launch_kivi_write(d, nullptr);
    ASSERT_TRUE(s.ok()) << s.describe();
    for (size_t i = 0; i < lens.size(); ++i) lens[i] += steps[step][i];
    dev_image.k_codes = dkc.download();
    dev_image.v_codes = dvc.download();
    dev_image.k_meta = dkm.download();
    dev_image.v_meta = dvm.download();
    dev_image.k_residual = dkr.download();
    dev_image.v_residual = dvr.download();
    ASSERT_TRUE(same_live_state(dev_image.view(), host.view(), lens));
  }
}

TEST(KiviWriteGpu, AppendsMatchReferenceExactly) {
  KVPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(42);
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    for (const KiviCase& c : {KiviCase{t, 1, 64, 32, 32}, KiviCase{t, 3, 128, 32, 64}, KiviCase{t, 2, 256, 64, 0},
                              KiviCase{t, 3, 128, 128, 128}, KiviCase{t, 1, 64, 8, 5}}) {
      run_kivi_case(c, rng);
    }
  }
}

}  // namespace
}  // namespace kvplan::kernels
