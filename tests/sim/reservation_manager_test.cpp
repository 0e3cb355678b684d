// Contiguous reservation managers: region sizes, first-fit placement and fragmentation by hand.
#include <gtest/gtest.h>

#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/reservation_manager.h"

namespace kvplan::sim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kTok = 131072;  // Llama-3.1-8B bf16 bytes per token

KvLayout llama8b() { return build_kv_layout(resolve_model("llama-3.1-8b"), KvScheme{}, Parallelism{}); }

SeqKvRequest req(SeqId seq, int64_t prompt, int64_t final_tokens) {
  SeqKvRequest r;
  r.seq = seq;
  r.prompt_tokens = prompt;
  r.final_tokens = final_tokens;
  return r;
}

TEST(KvReservation, OracleFirstFitAndExternalFragmentation) {
  KvLayout layout = llama8b();
  ASSERT_EQ(layout.request_bytes(1), kTok);
  ReservationKvManager kv(KvManagerConfig{.policy = KvPolicy::kReserveOracle, .capacity_bytes = 10 * kMiB,
                                          .layout = &layout, .max_model_len = 64});
  EXPECT_EQ(kv.name(), "oracle reservation");
  // A: 16 tokens = 2 MiB at 0; B: 8 tokens = 1 MiB at 2 MiB; C: 24 tokens = 3 MiB at 3 MiB.
  AdmitResult a = kv.admit(req(1, 10, 16), 10);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.capacity_tokens, 16);  // next 16-token boundary, within the region
  ASSERT_TRUE(kv.admit(req(2, 8, 8), 8).ok);
  ASSERT_TRUE(kv.admit(req(3, 24, 24), 24).ok);
  kv.check_invariants();
  EXPECT_EQ(kv.region_offset(1), 0);
  EXPECT_EQ(kv.region_offset(2), 2 * kMiB);
  EXPECT_EQ(kv.region_offset(3), 3 * kMiB);
  KvUsage u = kv.usage();
  EXPECT_EQ(u.token_bytes, (10 + 8 + 24) * kTok);
  EXPECT_EQ(u.reserved_bytes, 6 * kTok);  // A will still generate 6 tokens
  EXPECT_EQ(u.internal_fragmentation_bytes, 0);  // oracle: regions are exact
  EXPECT_EQ(u.free_bytes, 4 * kMiB);
  EXPECT_EQ(u.external_fragmentation_bytes, 0);  // one extent [6, 10) MiB
  // Free B: extents [2,3) and [6,10) MiB -> 5 MiB free, largest 4 MiB, 1 MiB external.
  kv.release(2, true);
  kv.check_invariants();
  u = kv.usage();
  EXPECT_EQ(u.free_bytes, 5 * kMiB);
  EXPECT_EQ(kv.largest_free_extent_bytes(), 4 * kMiB);
  EXPECT_EQ(u.external_fragmentation_bytes, 1 * kMiB);
  // D (2 MiB) skips the 1 MiB hole; E (0.5 MiB) takes the hole's start.
  ASSERT_TRUE(kv.admit(req(4, 16, 16), 16).ok);
  ASSERT_TRUE(kv.admit(req(5, 4, 4), 4).ok);
  kv.check_invariants();
  EXPECT_EQ(kv.region_offset(4), 6 * kMiB);
  EXPECT_EQ(kv.region_offset(5), 2 * kMiB);
  // Free [2.5, 3) and [8, 10): 2.5 MiB free, 0.5 MiB external. A 3 MiB region fits nowhere.
  EXPECT_EQ(kv.usage().external_fragmentation_bytes, kMiB / 2);
  EXPECT_FALSE(kv.can_admit(24));
  EXPECT_FALSE(kv.admit(req(6, 24, 24), 24).ok);
  EXPECT_TRUE(kv.can_admit(16));
  // Releasing everything coalesces back to one extent.
  for (SeqId s : {1, 3, 4, 5}) {
    kv.release(s, false);
    kv.check_invariants();
  }
  EXPECT_EQ(kv.num_free_extents(), 1);
  EXPECT_EQ(kv.usage().free_bytes, 10 * kMiB);
}

TEST(KvReservation, PowerOfTwoRegionsAndInternalFragmentation) {
  KvLayout layout = llama8b();
  ReservationKvManager kv(KvManagerConfig{.policy = KvPolicy::kReservePowerOfTwo, .capacity_bytes = 64 * kMiB,
                                          .layout = &layout, .max_model_len = 100});
  EXPECT_EQ(kv.region_tokens(1), 1);
  EXPECT_EQ(kv.region_tokens(9), 16);
  EXPECT_EQ(kv.region_tokens(16), 16);
  EXPECT_EQ(kv.region_tokens(17), 32);
  EXPECT_EQ(kv.region_tokens(65), 100);  // 128 capped at max_model_len
  ASSERT_TRUE(kv.admit(req(1, 5, 9), 5).ok);
  KvUsage u = kv.usage();
  EXPECT_EQ(u.token_bytes, 5 * kTok);
  EXPECT_EQ(u.reserved_bytes, 4 * kTok);
  EXPECT_EQ(u.internal_fragmentation_bytes, 7 * kTok);  // 16 - 9 slots never used
  EXPECT_EQ(kv.grow(1, 16), 16);
  EXPECT_EQ(kv.grow(1, 17), -1);  // past the region: unchanged
  kv.check_invariants();
  u = kv.usage();
  EXPECT_EQ(u.token_bytes, 16 * kTok);
  EXPECT_EQ(u.reserved_bytes, 0);
  EXPECT_EQ(u.internal_fragmentation_bytes, 0);  // it outgrew its expected 9 tokens inside the region
  EXPECT_EQ(kv.truncate(1, 3), 16);
  EXPECT_EQ(kv.usage().token_bytes, 3 * kTok);
  EXPECT_EQ(kv.sequence_bytes(1), 3 * kTok);
  kv.check_invariants();
}

TEST(KvReservation, MaxLengthRegionsLeaveATail) {
  KvLayout layout = llama8b();
  // 32-token regions are 4 MiB; 10 MiB holds two, and the 2 MiB tail is free but no request fits.
  auto kv = make_kv_manager(KvManagerConfig{.policy = KvPolicy::kReserveMaxLength, .capacity_bytes = 10 * kMiB,
                                            .layout = &layout, .max_model_len = 32});
  ASSERT_TRUE(kv->admit(req(1, 3, 4), 3).ok);
  ASSERT_TRUE(kv->admit(req(2, 3, 4), 3).ok);
  EXPECT_FALSE(kv->admit(req(3, 1, 1), 1).ok);
  EXPECT_FALSE(kv->can_admit(1));
  KvUsage u = kv->usage();
  EXPECT_EQ(u.token_bytes, 6 * kTok);
  EXPECT_EQ(u.reserved_bytes, 2 * kTok);
  EXPECT_EQ(u.internal_fragmentation_bytes, 2 * 28 * kTok);
  EXPECT_EQ(u.free_bytes, 2 * kMiB);
  EXPECT_EQ(u.external_fragmentation_bytes, 0);  // free - largest extent: the tail is one extent
  EXPECT_EQ(u.token_bytes + u.reserved_bytes + u.internal_fragmentation_bytes + u.free_bytes, 10 * kMiB);
  EXPECT_EQ(kv->grow(1, 32), 32);
  EXPECT_EQ(kv->grow(1, 33), -1);
  EXPECT_EQ(kv->match_prefix(16, {}), 0);
  kv->check_invariants();
}

TEST(KvReservation, ConfigErrors) {
  KvLayout layout = llama8b();
  EXPECT_THROW(make_kv_manager(KvManagerConfig{.policy = KvPolicy::kReserveOracle, .capacity_bytes = 0,
                                               .layout = &layout, .max_model_len = 8}),
               ConfigError);
  EXPECT_THROW(make_kv_manager(KvManagerConfig{.policy = KvPolicy::kReserveOracle, .capacity_bytes = kMiB,
                                               .layout = nullptr, .max_model_len = 8}),
               ConfigError);
  EXPECT_THROW(make_kv_manager(KvManagerConfig{.policy = KvPolicy::kReservePowerOfTwo, .capacity_bytes = kMiB,
                                               .layout = &layout, .max_model_len = 0}),
               ConfigError);
  EXPECT_THROW(make_kv_manager(KvManagerConfig{.policy = KvPolicy::kPaged, .capacity_bytes = -1, .layout = &layout}),
               ConfigError);
  try {
    parse_kv_policy("x");
    FAIL() << "no exception";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "kv-policy: value 'x' must be one of max-length, pow2, oracle, paged");
  }
  for (KvPolicy p : {KvPolicy::kReserveMaxLength, KvPolicy::kReservePowerOfTwo, KvPolicy::kReserveOracle, KvPolicy::kPaged}) {
    EXPECT_EQ(parse_kv_policy(kv_policy_name(p)), p);
  }
}

}  // namespace
}  // namespace kvplan::sim
