// kvplan/sim/offload_tier.h — where preempted sequences' KV goes when the engine swaps instead of
// recomputing: host (CPU) memory over PCIe, with an optional NVMe tier behind it.
//
//   HostOffloadTier tier(OffloadTierConfig{.host_capacity_bytes = 64LL << 30, .host_bandwidth_bytes_per_s = 25e9});
//   if (tier.swap_out(seq, kv.sequence_bytes(seq))) { kv.release(seq, false); t += tier.transfer_ns(bytes); }
//
// The engine frees the GPU blocks itself (KvManager::release(seq, false)) and re-admits the
// sequence on swap-in; this class only books host/NVMe capacity and prices transfers.
// Placement: host memory if the sequence fits there, else NVMe (if configured), else it does not
// fit (false, unchanged). NVMe-resident KV comes back staged through host memory, so its swap-in
// costs the NVMe read plus the PCIe copy (serial: no overlap between the two is modelled).
// Times are int64 ns, rounded to the nearest ns (ties away from zero): deterministic.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/time.h"

namespace kvplan::sim {

struct OffloadTierConfig {
  int64_t host_capacity_bytes = 0;
  double host_bandwidth_bytes_per_s = 0;  // GPU <-> host (PCIe), one direction
  int64_t nvme_capacity_bytes = 0;        // 0: no NVMe tier
  double nvme_bandwidth_bytes_per_s = 0;  // host <-> NVMe
};

enum class OffloadLevel { kHost, kNvme };

class HostOffloadTier {
 public:
  // Throws ConfigError: negative capacities, a non-positive bandwidth for a tier with capacity.
  explicit HostOffloadTier(const OffloadTierConfig& config);

  // Books `bytes` for `seq` (host first, then NVMe). False, unchanged, when neither has room.
  bool swap_out(SeqId seq, int64_t bytes);
  // Removes the sequence and returns its bytes. Throws std::logic_error for an unknown sequence.
  int64_t swap_in(SeqId seq);
  bool holds(SeqId seq) const { return entries_.count(seq) != 0; }
  OffloadLevel level(SeqId seq) const;  // throws std::logic_error for an unknown sequence
  // GPU <-> host copy of `bytes` over PCIe.
  TimeNs transfer_ns(int64_t bytes) const;
  // Bringing `seq` back to the GPU: PCIe, plus the NVMe read when it spilled there.
  TimeNs swap_in_ns(SeqId seq) const;

  int64_t host_used_bytes() const { return host_used_bytes_; }
  int64_t host_capacity_bytes() const { return config_.host_capacity_bytes; }
  int64_t nvme_used_bytes() const { return nvme_used_bytes_; }
  int64_t nvme_capacity_bytes() const { return config_.nvme_capacity_bytes; }
  int64_t used_bytes() const { return host_used_bytes_ + nvme_used_bytes_; }
  int64_t capacity_bytes() const { return config_.host_capacity_bytes + config_.nvme_capacity_bytes; }
  int64_t num_seqs() const { return static_cast<int64_t>(entries_.size()); }
  // Throws std::logic_error: used bytes equal the entries' sums and stay within each capacity.
  void check_invariants() const;

 private:
  struct Entry {
    int64_t bytes = 0;
    OffloadLevel level = OffloadLevel::kHost;
  };
  OffloadTierConfig config_;
  std::unordered_map<SeqId, Entry> entries_;
  int64_t host_used_bytes_ = 0;
  int64_t nvme_used_bytes_ = 0;
};

}  // namespace kvplan::sim
