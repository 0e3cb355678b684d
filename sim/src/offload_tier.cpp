// Host / NVMe offload capacity and transfer times (see offload_tier.h).
#include "kvplan/sim/offload_tier.h"

#include <stdexcept>
#include <string>

#include "kvplan/core/error.h"

namespace kvplan::sim {

namespace {

TimeNs bytes_over(int64_t bytes, double bytes_per_s) {
  return seconds_to_ns(static_cast<double>(bytes) / bytes_per_s);
}

}  // namespace

HostOffloadTier::HostOffloadTier(const OffloadTierConfig& config) : config_(config) {
  if (config.host_capacity_bytes < 0) {
    throw ConfigError("offload tier: host_capacity_bytes=" + std::to_string(config.host_capacity_bytes) + " must be >= 0");
  }
  if (config.nvme_capacity_bytes < 0) {
    throw ConfigError("offload tier: nvme_capacity_bytes=" + std::to_string(config.nvme_capacity_bytes) + " must be >= 0");
  }
  if (!(config.host_bandwidth_bytes_per_s > 0)) {
    throw ConfigError("offload tier: host_bandwidth_bytes_per_s=" + std::to_string(config.host_bandwidth_bytes_per_s) +
                      " must be > 0");
  }
  if (config.nvme_capacity_bytes > 0 && !(config.nvme_bandwidth_bytes_per_s > 0)) {
    throw ConfigError("offload tier: nvme_bandwidth_bytes_per_s=" + std::to_string(config.nvme_bandwidth_bytes_per_s) +
                      " must be > 0 when nvme_capacity_bytes > 0");
  }
}

bool HostOffloadTier::swap_out(SeqId seq, int64_t bytes) {
  if (bytes < 0) throw std::logic_error("HostOffloadTier: negative bytes for sequence " + std::to_string(seq));
  if (entries_.count(seq) != 0) throw std::logic_error("HostOffloadTier: sequence " + std::to_string(seq) + " swapped out twice");
  if (host_used_bytes_ + bytes <= config_.host_capacity_bytes) {
    entries_.emplace(seq, Entry{bytes, OffloadLevel::kHost});
    host_used_bytes_ += bytes;
    return true;
  }
  if (nvme_used_bytes_ + bytes <= config_.nvme_capacity_bytes) {
    entries_.emplace(seq, Entry{bytes, OffloadLevel::kNvme});
    nvme_used_bytes_ += bytes;
    return true;
  }
  return false;
}

int64_t HostOffloadTier::swap_in(SeqId seq) {
  auto it = entries_.find(seq);
  if (it == entries_.end()) throw std::logic_error("HostOffloadTier: sequence " + std::to_string(seq) + " not swapped out");
  int64_t bytes = it->second.bytes;
  (it->second.level == OffloadLevel::kHost ? host_used_bytes_ : nvme_used_bytes_) -= bytes;
  entries_.erase(it);
  return bytes;
}

OffloadLevel HostOffloadTier::level(SeqId seq) const {
  auto it = entries_.find(seq);
  if (it == entries_.end()) throw std::logic_error("HostOffloadTier: sequence " + std::to_string(seq) + " not swapped out");
  return it->second.level;
}

TimeNs HostOffloadTier::transfer_ns(int64_t bytes) const { return bytes_over(bytes, config_.host_bandwidth_bytes_per_s); }

TimeNs HostOffloadTier::swap_in_ns(SeqId seq) const {
  auto it = entries_.find(seq);
  if (it == entries_.end()) throw std::logic_error("HostOffloadTier: sequence " + std::to_string(seq) + " not swapped out");
  TimeNs t = transfer_ns(it->second.bytes);
  if (it->second.level == OffloadLevel::kNvme) t += bytes_over(it->second.bytes, config_.nvme_bandwidth_bytes_per_s);
  return t;
}

void HostOffloadTier::check_invariants() const {
  int64_t host = 0;
  int64_t nvme = 0;
  for (const auto& [seq, e] : entries_) {
    if (e.bytes < 0) throw std::logic_error("HostOffloadTier invariant broken: negative entry");
    (e.level == OffloadLevel::kHost ? host : nvme) += e.bytes;
  }
  if (host != host_used_bytes_ || nvme != nvme_used_bytes_) {
    throw std::logic_error("HostOffloadTier invariant broken: used bytes differ from the entries");
  }
  if (host_used_bytes_ > config_.host_capacity_bytes || nvme_used_bytes_ > config_.nvme_capacity_bytes) {
    throw std::logic_error("HostOffloadTier invariant broken: a tier holds more than its capacity");
  }
}

}  // namespace kvplan::sim
