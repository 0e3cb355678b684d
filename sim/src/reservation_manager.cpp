// Contiguous reservation with first-fit placement (see reservation_manager.h).
#include "kvplan/sim/reservation_manager.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <vector>

#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"

namespace kvplan::sim {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::logic_error("ReservationKvManager invariant broken: " + what);
}

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

ReservationKvManager::ReservationKvManager(const KvManagerConfig& config)
    : policy_(config.policy),
      capacity_bytes_(config.capacity_bytes),
      layout_(config.layout),
      max_model_len_(config.max_model_len),
      tokens_per_block_(1) {
  if (policy_ == KvPolicy::kPaged) throw ConfigError("kv manager: reservation manager cannot run policy 'paged'");
  if (capacity_bytes_ <= 0) {
    throw ConfigError("kv manager: capacity_bytes=" + std::to_string(capacity_bytes_) + " must be > 0");
  }
  if (layout_ == nullptr) throw ConfigError("kv manager: layout must be set");
  if (max_model_len_ <= 0) {
    throw ConfigError("kv manager: max_model_len=" + std::to_string(max_model_len_) +
                      " must be > 0 for reservation policy '" + std::string(kv_policy_name(policy_)) + "'");
  }
  tokens_per_block_ = std::max(1, layout_->scheme().tokens_per_block);
  name_ = std::string(kv_policy_name(policy_)) + " reservation";
  free_extents_.emplace(0, capacity_bytes_);
  free_bytes_ = capacity_bytes_;
}

int64_t ReservationKvManager::match_prefix(int32_t, std::span<const uint64_t>) const { return 0; }

int64_t ReservationKvManager::region_tokens(int64_t final_tokens) const {
  final_tokens = std::max<int64_t>(final_tokens, 1);
  switch (policy_) {
    case KvPolicy::kReserveMaxLength:
      return max_model_len_;
    case KvPolicy::kReservePowerOfTwo:
      return std::min(max_model_len_, static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(final_tokens))));
    case KvPolicy::kReserveOracle:
    case KvPolicy::kPaged:
      break;
  }
  return std::min(max_model_len_, final_tokens);
}

std::map<int64_t, int64_t>::const_iterator ReservationKvManager::first_fit(int64_t bytes) const {
  // Linear in the number of free extents, which is at most live sequences + 1.
  for (auto it = free_extents_.begin(); it != free_extents_.end(); ++it) {
    if (it->second >= bytes) return it;
  }
  return free_extents_.end();
}

int64_t ReservationKvManager::capacity_tokens(const Region& region) const {
  // The next tokens_per_block boundary (so usage() tracks tokens to within a block, at the same call
  // rate as the paged manager), never past the region.
  return std::min(region.region_tokens, round_up(region.tokens, tokens_per_block_));
}

void ReservationKvManager::set_tokens(Region& region, int64_t tokens) {
  token_bytes_ -= region.token_bytes;
  expected_bytes_ -= region.expected_bytes;
  region.tokens = tokens;
  region.token_bytes = layout_->request_bytes(tokens);
  region.expected_bytes = layout_->request_bytes(std::max(tokens, region.final_tokens));
  token_bytes_ += region.token_bytes;
  expected_bytes_ += region.expected_bytes;
}

ReservationKvManager::Region& ReservationKvManager::find(SeqId seq) {
  auto it = regions_.find(seq);
  if (it == regions_.end()) throw std::logic_error("ReservationKvManager: unknown sequence " + std::to_string(seq));
  return it->second;
}

const ReservationKvManager::Region& ReservationKvManager::find(SeqId seq) const {
  auto it = regions_.find(seq);
  if (it == regions_.end()) throw std::logic_error("ReservationKvManager: unknown sequence " + std::to_string(seq));
  return it->second;
}

AdmitResult ReservationKvManager::admit(const SeqKvRequest& request, int64_t initial_tokens) {
  if (regions_.count(request.seq) != 0) {
    throw std::logic_error("ReservationKvManager: sequence " + std::to_string(request.seq) + " admitted twice");
  }
  if (initial_tokens < 0) throw std::logic_error("ReservationKvManager: negative initial_tokens");
  int64_t final_tokens = std::max({request.final_tokens, request.prompt_tokens, initial_tokens});
  int64_t tokens = region_tokens(final_tokens);
  if (initial_tokens > tokens) return AdmitResult{};
  int64_t bytes = layout_->request_bytes(tokens);
  Region region;
  region.bytes = bytes;
  region.region_tokens = tokens;
  region.final_tokens = std::min(final_tokens, tokens);
  if (bytes > 0) {  // a layout without per-request bytes places empty regions nowhere
    auto it = first_fit(bytes);
    if (it == free_extents_.end()) return AdmitResult{};
    region.offset = it->first;
    int64_t extent_offset = it->first;
    int64_t extent_bytes = it->second;
    free_extents_.erase(it);
    if (extent_bytes > bytes) free_extents_.emplace(extent_offset + bytes, extent_bytes - bytes);
  }
  free_bytes_ -= bytes;
  region_bytes_ += bytes;
  Region& stored = regions_.emplace(request.seq, region).first->second;
  set_tokens(stored, initial_tokens);
  return AdmitResult{.ok = true, .cached_tokens = 0, .capacity_tokens = capacity_tokens(stored)};
}

int64_t ReservationKvManager::grow(SeqId seq, int64_t tokens) {
  Region& region = find(seq);
  if (tokens > region.region_tokens) return -1;
  if (tokens > region.tokens) set_tokens(region, tokens);
  return capacity_tokens(region);
}

int64_t ReservationKvManager::truncate(SeqId seq, int64_t tokens) {
  Region& region = find(seq);
  if (tokens < 0) throw std::logic_error("ReservationKvManager: negative truncate length");
  if (tokens < region.tokens) set_tokens(region, tokens);
  return capacity_tokens(region);
}

void ReservationKvManager::release(SeqId seq, bool) {
  auto found = regions_.find(seq);
  if (found == regions_.end()) throw std::logic_error("ReservationKvManager: unknown sequence " + std::to_string(seq));
  const Region& region = found->second;
  token_bytes_ -= region.token_bytes;
  expected_bytes_ -= region.expected_bytes;
  region_bytes_ -= region.bytes;
  free_bytes_ += region.bytes;
  int64_t offset = region.offset;
  int64_t bytes = region.bytes;
  regions_.erase(found);
  if (bytes == 0) return;
  // Coalesce with the extent that ends where this region starts and the one that starts where it ends.
  auto next = free_extents_.lower_bound(offset);
  if (next != free_extents_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      bytes += prev->second;
      free_extents_.erase(prev);
    }
  }
  auto after = free_extents_.find(offset + bytes);
  if (after != free_extents_.end()) {
    bytes += after->second;
    free_extents_.erase(after);
  }
  free_extents_.emplace(offset, bytes);
}

int64_t ReservationKvManager::sequence_bytes(SeqId seq) const { return find(seq).token_bytes; }

bool ReservationKvManager::can_admit(int64_t tokens) const {
  int64_t bytes = layout_->request_bytes(region_tokens(tokens));
  return bytes == 0 || first_fit(bytes) != free_extents_.end();
}

int64_t ReservationKvManager::largest_free_extent_bytes() const {
  int64_t largest = 0;
  for (const auto& [offset, bytes] : free_extents_) largest = std::max(largest, bytes);
  return largest;
}

int64_t ReservationKvManager::region_offset(SeqId seq) const { return find(seq).offset; }

KvUsage ReservationKvManager::usage() const {
  KvUsage u;
  u.capacity_bytes = capacity_bytes_;
  u.token_bytes = token_bytes_;
  u.reserved_bytes = expected_bytes_ - token_bytes_;
  u.internal_fragmentation_bytes = region_bytes_ - expected_bytes_;
  u.free_bytes = free_bytes_;
  // External fragmentation: free bytes outside the largest free extent (the common definition,
  // 1 - largest/total as a fraction): no single request can use them together.
  u.external_fragmentation_bytes = free_bytes_ - largest_free_extent_bytes();
  u.num_seqs = static_cast<int64_t>(regions_.size());
  return u;
}

void ReservationKvManager::check_invariants() const {
  // Free extents: positive, inside [0, capacity), sorted (std::map), disjoint and never adjacent
  // (release coalesces both neighbours, admit only splits an extent).
  int64_t free_sum = 0;
  int64_t prev_end = -1;
  std::vector<std::pair<int64_t, int64_t>> pieces;  // (offset, bytes) of extents and regions
  pieces.reserve(free_extents_.size() + regions_.size());
  for (const auto& [offset, bytes] : free_extents_) {
    if (bytes <= 0) fail("free extent at " + std::to_string(offset) + " has length " + std::to_string(bytes));
    if (offset < 0 || offset + bytes > capacity_bytes_) fail("free extent outside [0, capacity)");
    if (offset == prev_end) fail("adjacent free extents at " + std::to_string(offset) + " not coalesced");
    if (offset < prev_end) fail("free extents overlap at " + std::to_string(offset));
    prev_end = offset + bytes;
    free_sum += bytes;
    pieces.emplace_back(offset, bytes);
  }
  if (free_sum != free_bytes_) fail("free_bytes " + std::to_string(free_bytes_) + " != sum of extents " + std::to_string(free_sum));
  int64_t token_sum = 0;
  int64_t expected_sum = 0;
  int64_t region_sum = 0;
  for (const auto& [seq, r] : regions_) {
    if (r.bytes != layout_->request_bytes(r.region_tokens)) fail("region bytes of sequence " + std::to_string(seq));
    if (r.region_tokens != region_tokens(r.final_tokens)) fail("region size of sequence " + std::to_string(seq));
    if (r.tokens < 0 || r.tokens > r.region_tokens) fail("sequence " + std::to_string(seq) + " outgrew its region");
    if (r.final_tokens > r.region_tokens) fail("final length past the region");
    if (r.token_bytes != layout_->request_bytes(r.tokens)) fail("token bytes of sequence " + std::to_string(seq));
    if (r.expected_bytes != layout_->request_bytes(std::max(r.tokens, r.final_tokens))) fail("expected bytes");
    if (r.expected_bytes > r.bytes) fail("expected bytes exceed the region");
    token_sum += r.token_bytes;
    expected_sum += r.expected_bytes;
    region_sum += r.bytes;
    if (r.bytes > 0) pieces.emplace_back(r.offset, r.bytes);
  }
  if (token_sum != token_bytes_ || expected_sum != expected_bytes_ || region_sum != region_bytes_) {
    fail("cached byte sums differ from the regions");
  }
  // Extents and regions tile [0, capacity) exactly: sorted by offset, each starts where the last ended.
  std::sort(pieces.begin(), pieces.end());
  int64_t at = 0;
  for (const auto& [offset, bytes] : pieces) {
    if (offset != at) fail("address space not tiled at " + std::to_string(at) + " (next piece at " + std::to_string(offset) + ")");
    at += bytes;
  }
  if (at != capacity_bytes_) fail("address space tiles " + std::to_string(at) + " of " + std::to_string(capacity_bytes_) + " bytes");
  if (free_bytes_ + region_bytes_ != capacity_bytes_) fail("free + regions != capacity");
}

}  // namespace kvplan::sim
