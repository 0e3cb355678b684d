// Host / NVMe offload tier: capacity booking and transfer times by hand.
#include <gtest/gtest.h>

#include <stdexcept>

#include "kvplan/core/error.h"
#include "kvplan/sim/offload_tier.h"

namespace kvplan::sim {
namespace {

TEST(KvOffload, HostThenNvmeThenRefuse) {
  HostOffloadTier tier(OffloadTierConfig{.host_capacity_bytes = 1000, .host_bandwidth_bytes_per_s = 1e9,
                                         .nvme_capacity_bytes = 500, .nvme_bandwidth_bytes_per_s = 2.5e8});
  EXPECT_TRUE(tier.swap_out(1, 600));
  EXPECT_TRUE(tier.swap_out(2, 400));  // host exactly full
  EXPECT_TRUE(tier.swap_out(3, 300));  // spills to NVMe
  EXPECT_FALSE(tier.swap_out(4, 300)); // neither has room: unchanged
  tier.check_invariants();
  EXPECT_EQ(tier.level(3), OffloadLevel::kNvme);
  EXPECT_EQ(tier.host_used_bytes(), 1000);
  EXPECT_EQ(tier.nvme_used_bytes(), 300);
  EXPECT_EQ(tier.num_seqs(), 3);
  // 1,000 B at 1 GB/s = 1,000 ns; NVMe adds 300 B / 250 MB/s = 1,200 ns to the 300 ns PCIe copy.
  EXPECT_EQ(tier.transfer_ns(1000), 1000);
  EXPECT_EQ(tier.swap_in_ns(1), 600);
  EXPECT_EQ(tier.swap_in_ns(3), 300 + 1200);
  EXPECT_EQ(tier.swap_in(1), 600);
  EXPECT_FALSE(tier.holds(1));
  EXPECT_TRUE(tier.swap_out(4, 300));
  EXPECT_EQ(tier.level(4), OffloadLevel::kHost);
  tier.check_invariants();
  EXPECT_THROW(tier.swap_in(1), std::logic_error);
}

TEST(KvOffload, RoundsTransferTimesToTheNearestNanosecond) {
  HostOffloadTier tier(OffloadTierConfig{.host_capacity_bytes = 1 << 20, .host_bandwidth_bytes_per_s = 3e9});
  EXPECT_EQ(tier.transfer_ns(1), 0);   // 0.333 ns
  EXPECT_EQ(tier.transfer_ns(2), 1);   // 0.667 ns
  EXPECT_EQ(tier.transfer_ns(3'000'000'000), 1'000'000'000);
  EXPECT_FALSE(tier.swap_out(1, (1 << 20) + 1));  // no NVMe tier
}

TEST(KvOffload, ConfigErrors) {
  EXPECT_THROW(HostOffloadTier(OffloadTierConfig{.host_capacity_bytes = 10, .host_bandwidth_bytes_per_s = 0}), ConfigError);
  EXPECT_THROW(HostOffloadTier(OffloadTierConfig{.host_capacity_bytes = -1, .host_bandwidth_bytes_per_s = 1}), ConfigError);
  EXPECT_THROW(HostOffloadTier(OffloadTierConfig{.host_capacity_bytes = 10, .host_bandwidth_bytes_per_s = 1,
                                                 .nvme_capacity_bytes = 10}),
               ConfigError);
}

}  // namespace
}  // namespace kvplan::sim
