// kvplan/sim/reservation_manager.h — contiguous per-request KV reservation (HF generate, Orca,
// FasterTransformer style), placed first-fit in a simulated address space so that reservation
// waste, internal fragmentation and external fragmentation all show.
//
//   ReservationKvManager kv(KvManagerConfig{.policy = KvPolicy::kReservePowerOfTwo, .capacity_bytes = c,
//                                           .layout = &layout, .max_model_len = 8192});
//   AdmitResult a = kv.admit(SeqKvRequest{.seq = 1, .prompt_tokens = 900, .final_tokens = 1200}, 900);
//
// Region of a request (region_tokens):
//   kReserveMaxLength   max_model_len
//   kReservePowerOfTwo  std::bit_ceil(final_tokens), capped at max_model_len
//   kReserveOracle      final_tokens (capped at max_model_len)
// Region bytes = layout.request_bytes(region_tokens): exact bytes of that many tokens on this GPU.
// The region is placed at the lowest address whose free extent is large enough (first fit); freeing
// coalesces with both neighbours. A sequence can never outgrow its region: grow beyond it is -1.
// No prefix caching (match_prefix is 0). See docs/kv-managers.md for the usage() definitions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "kvplan/sim/kv_manager.h"

namespace kvplan::sim {

class ReservationKvManager final : public KvManager {
 public:
  // Throws ConfigError (capacity_bytes <= 0, no layout, max_model_len <= 0, paged policy).
  explicit ReservationKvManager(const KvManagerConfig& config);

  std::string_view name() const override { return name_; }
  int64_t match_prefix(int32_t hash_block_tokens, std::span<const uint64_t> hashes) const override;
  // ok=false (unchanged) when no free extent holds the region, or when initial_tokens exceeds it.
  AdmitResult admit(const SeqKvRequest& request, int64_t initial_tokens) override;
  int64_t grow(SeqId seq, int64_t tokens) override;
  int64_t truncate(SeqId seq, int64_t tokens) override;
  void release(SeqId seq, bool cache_prefix) override;
  // The token states (request_bytes(tokens)): what a swap moves; the region is re-reserved on
  // swap-in.
  int64_t sequence_bytes(SeqId seq) const override;
  // True when a free extent holds the region of a request whose final length is `tokens`.
  bool can_admit(int64_t tokens) const override;
  KvUsage usage() const override;
  // Throws std::logic_error naming the broken invariant.
  void check_invariants() const override;

  // Region a request of final length `final_tokens` reserves under this policy.
  int64_t region_tokens(int64_t final_tokens) const;
  int64_t largest_free_extent_bytes() const;
  int64_t num_free_extents() const { return static_cast<int64_t>(free_extents_.size()); }
  // Start address of a sequence's region (tests check first-fit placement).
  int64_t region_offset(SeqId seq) const;

 private:
  struct Region {
    int64_t offset = 0;
    int64_t bytes = 0;          // request_bytes(region_tokens)
    int64_t region_tokens = 0;
    int64_t final_tokens = 0;   // expected final length (capped at region_tokens)
    int64_t tokens = 0;         // current length, <= region_tokens
    int64_t token_bytes = 0;    // request_bytes(tokens)
    int64_t expected_bytes = 0; // request_bytes(max(tokens, final_tokens))
  };

  // First free extent (lowest address) of at least `bytes`, or end().
  std::map<int64_t, int64_t>::const_iterator first_fit(int64_t bytes) const;
  void set_tokens(Region& region, int64_t tokens);
  int64_t capacity_tokens(const Region& region) const;
  Region& find(SeqId seq);
  const Region& find(SeqId seq) const;

  KvPolicy policy_;
  int64_t capacity_bytes_;
  const KvLayout* layout_;
  int64_t max_model_len_;
  int64_t tokens_per_block_;
  std::string name_;
  std::map<int64_t, int64_t> free_extents_;  // offset -> length; sorted, disjoint, coalesced
  std::unordered_map<SeqId, Region> regions_;
  int64_t free_bytes_ = 0;
  int64_t token_bytes_ = 0;     // sum of Region::token_bytes
  int64_t expected_bytes_ = 0;  // sum of Region::expected_bytes
  int64_t region_bytes_ = 0;    // sum of Region::bytes
};

}  // namespace kvplan::sim
