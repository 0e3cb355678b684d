// launch_block_copy and launch_swap_out / launch_swap_in against the CPU references, byte for byte
// over the whole caches (moved blocks and untouched ones). Fresh random contents every run (seed
// printed on failure); destination blocks are poisoned first so a block never written shows up.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "gpu_support.h"
#include "kernel_test_support.h"
#include "kvplan/kernels/block_copy.h"
#include "kvplan/kernels/reference/block_copy_ref.h"

namespace kvplan::kernels {
namespace {

using testing::cuda_check;
using testing::DeviceBuffer;
using testing::kPoison16;

std::vector<uint16_t> random_words(size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(0, 0xFFFF);  // any bit pattern: the copy is bitwise
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = static_cast<uint16_t>(d(rng));
  return v;
}

size_t mismatches(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want) {
  if (got.size() != want.size()) return std::max(got.size(), want.size());
  size_t n = 0;
  for (size_t i = 0; i < got.size(); ++i) n += got[i] != want[i];
  return n;
}

void poison_block(std::vector<uint16_t>& cache, int64_t block, size_t block_elems) {
  std::fill(cache.begin() + static_cast<long>(block * block_elems), cache.begin() + static_cast<long>((block + 1) * block_elems),
            kPoison16);
}

struct CopyCase {
  std::string name;
  int num_blocks, num_kv_heads, tokens_per_block, head_dim;
  int num_pairs;
  bool with_v;
  bool shared_src;  // every pair copies the same source block (a sequence forked into several)
};

class BlockCopyGpu : public ::testing::TestWithParam<CopyCase> {};

TEST_P(BlockCopyGpu, MatchesReference) {
  KVPLAN_REQUIRE_GPU();
  const CopyCase& c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t block = static_cast<size_t>(block_elems(c.num_kv_heads, c.tokens_per_block, c.head_dim));
  std::vector<uint16_t> k = random_words(c.num_blocks * block, rng);
  std::vector<uint16_t> v = c.with_v ? random_words(k.size(), rng) : std::vector<uint16_t>{};
  std::vector<int64_t> perm(static_cast<size_t>(c.num_blocks));
  for (int i = 0; i < c.num_blocks; ++i) perm[static_cast<size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  ASSERT_LE(2 * c.num_pairs, c.num_blocks);
  std::vector<int64_t> pairs;
  for (int i = 0; i < c.num_pairs; ++i) {
    const int64_t src = c.shared_src ? perm[0] : perm[static_cast<size_t>(i)];
    const int64_t dst = perm[static_cast<size_t>(c.num_pairs + i)];
    pairs.push_back(src);
    pairs.push_back(dst);
    poison_block(k, dst, block);
    if (c.with_v) poison_block(v, dst, block);
  }

  BlockCopyParams host;
  host.k_cache = k.data();
  host.v_cache = c.with_v ? v.data() : nullptr;
  host.block_pairs = pairs.data();
  host.num_pairs = c.num_pairs;
  host.num_blocks = c.num_blocks;
  host.num_kv_heads = c.num_kv_heads;
  host.tokens_per_block = c.tokens_per_block;
  host.head_dim = c.head_dim;
  const CacheBytes want = block_copy_ref(host);

  DeviceBuffer<uint16_t> dk(k);
  DeviceBuffer<uint16_t> dv(c.with_v ? v : std::vector<uint16_t>(1));
  DeviceBuffer<int64_t> dpairs(pairs.empty() ? std::vector<int64_t>(2) : pairs);
  BlockCopyParams dev = host;
  dev.k_cache = dk.get();
  dev.v_cache = c.with_v ? dv.get() : nullptr;
  dev.block_pairs = dpairs.get();
  const Status s = launch_block_copy(dev, nullptr);
  ASSERT_TRUE(s.ok()) << s.describe();
  EXPECT_EQ(mismatches(dk.download(), want.k_cache), 0u) << "k_cache elements differ";
  if (c.with_v) {
    EXPECT_EQ(mismatches(dv.download(), want.v_cache), 0u) << "v_cache elements differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlockCopyGpu,
                         ::testing::ValuesIn(std::vector<CopyCase>{
                             {"no_pairs", 4, 2, 16, 128, 0, true, false},
                             {"one_pair", 4, 2, 16, 128, 1, true, false},
                             {"two_pairs_k_only", 8, 1, 16, 64, 2, false, false},
                             {"many_pairs_odd_heads", 300, 3, 16, 128, 150, true, false},
                             {"fork_one_src", 20, 8, 16, 128, 9, true, true},
                             {"one_token_blocks", 64, 1, 1, 8, 32, true, false},
                             {"big_blocks_d256", 10, 8, 32, 256, 5, true, false},
                         }),
                         [](const ::testing::TestParamInfo<CopyCase>& i) { return i.param.name; });

// Page-locked host memory for the swap tests.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t n) : n_(n) {
    cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(n, 1) * sizeof(uint16_t), cudaHostAllocDefault),
               "cudaHostAlloc");
  }
  ~PinnedBuffer() { cudaFreeHost(ptr_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  uint16_t* get() { return ptr_; }
  void assign(const std::vector<uint16_t>& v) { std::copy(v.begin(), v.end(), ptr_); }
  std::vector<uint16_t> to_vector() const { return std::vector<uint16_t>(ptr_, ptr_ + n_); }

 private:
  uint16_t* ptr_ = nullptr;
  size_t n_;
};

class TestStream {
 public:
  TestStream() { cuda_check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~TestStream() { cudaStreamDestroy(s_); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { cuda_check(cudaStreamSynchronize(s_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t s_ = nullptr;
};

enum class Mapping { kSingles, kOneRun, kMixed };

struct SwapCase {
  std::string name;
  int num_device_blocks, num_host_blocks, num_kv_heads, tokens_per_block, head_dim;
  int num_pairs;
  Mapping mapping;
};

// (src, dst) pairs with distinct ids on each side. kOneRun: src s0.., dst d0.. consecutive (one
// copy); kMixed: a run of 3 followed by scattered singles.
std::vector<int64_t> make_pairs(int n, int src_blocks, int dst_blocks, Mapping m, std::mt19937_64& rng) {
  std::vector<int64_t> src(static_cast<size_t>(src_blocks)), dst(static_cast<size_t>(dst_blocks));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int64_t>(i);
  for (size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<int64_t>(i);
  std::shuffle(src.begin(), src.end(), rng);
  std::shuffle(dst.begin(), dst.end(), rng);
  if (m == Mapping::kOneRun) {
    const int64_t s0 = src_blocks - n, d0 = dst_blocks - n;
    for (int i = 0; i < n; ++i) src[static_cast<size_t>(i)] = s0 + i, dst[static_cast<size_t>(i)] = d0 + i;
  } else if (m == Mapping::kMixed && n >= 3) {
    // Ids 0..2 on both sides as the run; the singles take shuffled ids above 2.
    std::vector<int64_t> s_rest, d_rest;
    for (int64_t x : src) if (x > 2) s_rest.push_back(x);
    for (int64_t x : dst) if (x > 2) d_rest.push_back(x);
    for (int i = 0; i < 3; ++i) src[static_cast<size_t>(i)] = i, dst[static_cast<size_t>(i)] = i;
    std::copy(s_rest.begin(), s_rest.end(), src.begin() + 3);
    std::copy(d_rest.begin(), d_rest.end(), dst.begin() + 3);
  }
  std::vector<int64_t> pairs;
  for (int i = 0; i < n; ++i) {
    pairs.push_back(src[static_cast<size_t>(i)]);
    pairs.push_back(dst[static_cast<size_t>(i)]);
  }
  return pairs;
}

class BlockSwapGpu : public ::testing::TestWithParam<SwapCase> {};

TEST_P(BlockSwapGpu, OutThenInMatchReference) {
  KVPLAN_REQUIRE_GPU();
  const SwapCase& c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t block = static_cast<size_t>(block_elems(c.num_kv_heads, c.tokens_per_block, c.head_dim));
  const size_t dev_n = c.num_device_blocks * block, host_n = c.num_host_blocks * block;

  // Device caches random, host caches random with the swap-out targets poisoned.
  const std::vector<uint16_t> dk0 = random_words(dev_n, rng), dv0 = random_words(dev_n, rng);
  std::vector<uint16_t> hk0 = random_words(host_n, rng), hv0 = random_words(host_n, rng);
  const std::vector<int64_t> out_pairs = make_pairs(c.num_pairs, c.num_device_blocks, c.num_host_blocks, c.mapping, rng);
  for (size_t i = 1; i < out_pairs.size(); i += 2) {
    poison_block(hk0, out_pairs[i], block);
    poison_block(hv0, out_pairs[i], block);
  }
  DeviceBuffer<uint16_t> dk(dk0), dv(dv0);
  PinnedBuffer hk(host_n), hv(host_n);
  hk.assign(hk0);
  hv.assign(hv0);
  TestStream stream;

  BlockSwapParams host;  // all-host mirror for the reference
  std::vector<uint16_t> dk_mirror = dk0, dv_mirror = dv0;
  host.device_k_cache = dk_mirror.data();
  host.device_v_cache = dv_mirror.data();
  host.host_k_cache = hk0.data();
  host.host_v_cache = hv0.data();
  host.block_pairs = out_pairs.data();
  host.num_pairs = c.num_pairs;
  host.num_device_blocks = c.num_device_blocks;
  host.num_host_blocks = c.num_host_blocks;
  host.num_kv_heads = c.num_kv_heads;
  host.tokens_per_block = c.tokens_per_block;
  host.head_dim = c.head_dim;
  const CacheBytes want_host = swap_out_ref(host);

  BlockSwapParams dev = host;
  dev.device_k_cache = dk.get();
  dev.device_v_cache = dv.get();
  dev.host_k_cache = hk.get();
  dev.host_v_cache = hv.get();
  Status s = launch_swap_out(dev, stream.get());
  ASSERT_TRUE(s.ok()) << s.describe();
  stream.sync();
  EXPECT_EQ(mismatches(hk.to_vector(), want_host.k_cache), 0u) << "host k after swap_out";
  EXPECT_EQ(mismatches(hv.to_vector(), want_host.v_cache), 0u) << "host v after swap_out";
  EXPECT_EQ(mismatches(dk.download(), dk0), 0u) << "swap_out changed the device cache";

  // Swap back in to other device blocks: (host_block, device_block) pairs, device targets poisoned.
  std::vector<int64_t> in_pairs = make_pairs(c.num_pairs, c.num_host_blocks, c.num_device_blocks, c.mapping, rng);
  for (size_t i = 0; i < in_pairs.size(); i += 2) in_pairs[i] = out_pairs[i + 1];  // read what was swapped out
  for (size_t i = 1; i < in_pairs.size(); i += 2) {
    poison_block(dk_mirror, in_pairs[i], block);
    poison_block(dv_mirror, in_pairs[i], block);
  }
  dk.upload(dk_mirror);
  dv.upload(dv_mirror);
  std::vector<uint16_t> hk1 = hk.to_vector(), hv1 = hv.to_vector();
  host.host_k_cache = hk1.data();
  host.host_v_cache = hv1.data();
  host.block_pairs = in_pairs.data();
  const CacheBytes want_dev = swap_in_ref(host);
  dev.block_pairs = in_pairs.data();
  s = launch_swap_in(dev, stream.get());
  ASSERT_TRUE(s.ok()) << s.describe();
  stream.sync();
  EXPECT_EQ(mismatches(dk.download(), want_dev.k_cache), 0u) << "device k after swap_in";
  EXPECT_EQ(mismatches(dv.download(), want_dev.v_cache), 0u) << "device v after swap_in";
  // Round trip: every swapped-in block equals the device block it was swapped out from.
  const std::vector<uint16_t> dk_after = dk.download();
  for (size_t i = 0; i < out_pairs.size(); i += 2)
    EXPECT_TRUE(std::equal(dk0.begin() + static_cast<long>(out_pairs[i] * block),
                           dk0.begin() + static_cast<long>((out_pairs[i] + 1) * block),
                           dk_after.begin() + static_cast<long>(in_pairs[i + 1] * block)))
        << "pair " << i / 2;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlockSwapGpu,
                         ::testing::ValuesIn(std::vector<SwapCase>{
                             {"one_block", 4, 4, 2, 16, 128, 1, Mapping::kSingles},
                             {"singles_odd_heads", 40, 64, 3, 16, 64, 17, Mapping::kSingles},
                             {"one_run", 32, 32, 8, 16, 128, 12, Mapping::kOneRun},
                             {"run_then_singles", 50, 30, 2, 8, 256, 10, Mapping::kMixed},
                             {"token_blocks", 16, 16, 1, 1, 8, 8, Mapping::kMixed},
                         }),
                         [](const ::testing::TestParamInfo<SwapCase>& i) { return i.param.name; });

TEST(BlockSwapGpuChecks, RejectsPageableHostMemory) {
  KVPLAN_REQUIRE_GPU();
  const size_t block = 2 * 16 * 64;
  DeviceBuffer<uint16_t> dk(2 * block);
  std::vector<uint16_t> pageable(2 * block);
  const std::vector<int64_t> pairs = {0, 1};
  BlockSwapParams p;
  p.device_k_cache = dk.get();
  p.host_k_cache = pageable.data();
  p.block_pairs = pairs.data();
  p.num_pairs = 1;
  p.num_device_blocks = 2;
  p.num_host_blocks = 2;
  p.num_kv_heads = 2;
  p.tokens_per_block = 16;
  p.head_dim = 64;
  const Status s = launch_swap_out(p, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.call(), "params");
  EXPECT_NE(s.message().find("pinned"), std::string::npos) << s.describe();
}

// Host-side checks that return before any CUDA call: these run without a GPU.
TEST(BlockCopyLaunch, RejectsBadParamsBeforeLaunching) {
  auto* fake = reinterpret_cast<uint16_t*>(uintptr_t{256});
  const auto* fake_pairs = reinterpret_cast<const int64_t*>(uintptr_t{256});
  BlockCopyParams ok;
  ok.k_cache = fake;
  ok.v_cache = fake;
  ok.block_pairs = fake_pairs;
  ok.num_pairs = 0;  // nothing to copy: valid, nothing launched
  ok.num_blocks = 4;
  ok.num_kv_heads = 2;
  ok.tokens_per_block = 16;
  ok.head_dim = 128;
  EXPECT_TRUE(launch_block_copy(ok, nullptr).ok());
  auto rejected = [](const BlockCopyParams& p) {
    const Status s = launch_block_copy(p, nullptr);
    return !s.ok() && s.call() == "params";
  };
  BlockCopyParams p = ok;
  p.num_kv_heads = 1;
  p.tokens_per_block = 1;
  p.head_dim = 3;  // 3 elements per block: not a whole number of 16-byte words
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.v_cache = reinterpret_cast<uint16_t*>(uintptr_t{258});
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.k_cache = nullptr;
  EXPECT_TRUE(rejected(p));
  p = ok;
  p.num_pairs = -1;
  EXPECT_TRUE(rejected(p));

  // Swap ids are host memory: checked before anything is enqueued.
  const std::vector<int64_t> pairs = {0, 5};
  BlockSwapParams sp;
  sp.device_k_cache = fake;
  sp.host_k_cache = fake;
  sp.block_pairs = pairs.data();
  sp.num_pairs = 1;
  sp.num_device_blocks = 4;
  sp.num_host_blocks = 4;
  sp.num_kv_heads = 2;
  sp.tokens_per_block = 16;
  sp.head_dim = 128;
  Status s = launch_swap_out(sp, nullptr);
  EXPECT_EQ(s.call(), "params") << s.describe();
  s = launch_swap_in(sp, nullptr);
  EXPECT_EQ(s.call(), "params") << s.describe();
}

}  // namespace
}  // namespace kvplan::kernels
