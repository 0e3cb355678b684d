// kvplan/sim/kv_transfer.h — prefill/decode disaggregation's KV transfer: the link each prompt's KV
// cache crosses from the prefill pool to the decode pool, where its bandwidth comes from, and when
// the client sees the first token.
//
//   KvLink link = resolve_kv_link(gpu, /*deployment_gpus=*/32, /*set_bytes_per_s=*/0);  // RDMA, ConnectX-7
//   TimeNs t = kv_transfer_ns(70'272 * 8'192, link);   // one 8k-token DeepSeek-R1 prompt
//
// The link, when not set (--kv-link-gbps):
//  - NVLink (the GPU's datasheet interconnect, GpuSpec::interconnect_bytes_per_s) when every GPU of
//    both pools sits in one scale-up domain (GpuSpec::scale_up_domain_gpus: an HGX board's 8);
//  - otherwise RDMA at 400 Gb/s = 50 GB/s per GPU, one direction: the line rate of one NVIDIA
//    ConnectX-7 port, and the DGX H100 / HGX H200 nodes the published disaggregated runs used pair
//    one such port with each GPU ("8x single-port NVIDIA ConnectX-7 VPI, 400 Gb/s InfiniBand/Ethernet",
//    NVIDIA DGX H100 datasheet; ConnectX-7 product brief: "up to 400Gb/s"). Line rate, no protocol
//    efficiency: transfers are not slower than this, and kvplan says so in the source.
// Each GPU of a prefill engine sends its own shard of the KV over its own link (tensor-parallel
// shards move in parallel), so a transfer takes bytes-per-GPU / link-bandwidth-per-GPU; the
// transfers of one prefill engine queue behind each other on its link.
//
// The first token: the decode engine streams every output token, the first once the KV has
// arrived (SGLang's disaggregation, standalone and in NVIDIA Dynamo: the client talks to the
// decode worker, which starts after "KV received" — ai-dynamo/dynamo
// components/backends/sglang/docs/sglang-kv-transfer-explainer.md; Dynamo's vLLM and TensorRT-LLM
// workers route the same way, decode first). So a disaggregated TTFT is queue + prefill + transfer.
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/sim/time.h"

namespace kvplan::sim {

// One NVIDIA ConnectX-7 port: 400 Gb/s line rate (ConnectX-7 product brief; DGX H100 datasheet).
inline constexpr double kConnectX7BytesPerS = 400e9 / 8;

struct KvLink {
  double bytes_per_s = 0;  // per GPU, one direction
  std::string kind;        // "NVLink", "RDMA" or "set"
  std::string source;      // where the bandwidth comes from, for the outputs
  std::string describe() const;  // "RDMA 50.0 GB/s per GPU (...source...)"
};

// The link between the pools of a disaggregated deployment of `deployment_gpus` GPUs in all (both
// pools), or the one set (set_bytes_per_s > 0). ConfigError when set_bytes_per_s is negative or not
// finite.
KvLink resolve_kv_link(const GpuSpec& gpu, int64_t deployment_gpus, double set_bytes_per_s);

// Time to move `bytes` (per GPU) over the link: ceil to the nanosecond.
TimeNs kv_transfer_ns(int64_t bytes, const KvLink& link);

}  // namespace kvplan::sim
