// Prefill -> decode KV transfer of a disaggregated deployment (kv_transfer.h says where each number
// comes from).
#include "kvplan/sim/kv_transfer.h"

#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

std::string KvLink::describe() const {
  return fmt::format("{} {:.1f} GB/s per GPU ({})", kind, bytes_per_s / 1e9, source);
}

KvLink resolve_kv_link(const GpuSpec& gpu, int64_t deployment_gpus, double set_bytes_per_s) {
  if (!(set_bytes_per_s >= 0) || !std::isfinite(set_bytes_per_s)) {
    throw ConfigError(fmt::format("kv-link-gbps: {} GB/s must be a non-negative number (0: kvplan's default link)",
                                  set_bytes_per_s / 1e9));
  }
  KvLink link;
  if (set_bytes_per_s > 0) {
    link.bytes_per_s = set_bytes_per_s;
    link.kind = "set";
    link.source = "--kv-link-gbps";
    return link;
  }
  if (gpu.interconnect_bytes_per_s > 0 && deployment_gpus <= gpu.scale_up_domain_gpus) {
    link.bytes_per_s = gpu.interconnect_bytes_per_s;
    link.kind = "NVLink";
    link.source = fmt::format("datasheet: {}'s interconnect; both pools ({} GPUs) in one {}-GPU scale-up domain",
                              gpu.name, deployment_gpus, gpu.scale_up_domain_gpus);
    return link;
  }
  link.bytes_per_s = kConnectX7BytesPerS;
  link.kind = "RDMA";
  link.source = fmt::format(
      "datasheet: one NVIDIA ConnectX-7 port per GPU, 400 Gb/s line rate (DGX H100 datasheet); the pools' {} GPUs "
      "span more than one {}-GPU scale-up domain",
      deployment_gpus, gpu.scale_up_domain_gpus);
  return link;
}

TimeNs kv_transfer_ns(int64_t bytes, const KvLink& link) {
  if (bytes <= 0) return 0;
  return static_cast<TimeNs>(std::ceil(static_cast<double>(bytes) / link.bytes_per_s * 1e9));
}

}  // namespace kvplan::sim
