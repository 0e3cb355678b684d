// Host parts of activity_tracer.h: the mock source and the kernel-name table (always built).
#include "kvplan/calibration/activity_tracer.h"

namespace kvplan::calibration {

Status MockActivitySource::flush(std::vector<KernelRecord>* out) {
  const int call = flush_calls_++;
  if (call == fail_flush_at_) return Status::error("cuptiActivityFlushAll", 1, "scripted failure", "mock");
  if (!started_) return Status::error("flush", 2, "source not started", "mock");
  if (batches_.empty()) return Status::success();
  for (KernelRecord& r : batches_.front()) out->push_back(std::move(r));
  batches_.pop_front();
  return Status::success();
}

std::optional<KernelId> KernelNameTable::classify(const std::string& name) const {
  for (const Rule& rule : rules_) {
    bool all = true;
    for (const std::string& part : rule.all_of) {
      if (name.find(part) == std::string::npos) {
        all = false;
        break;
      }
    }
    if (all) return rule.kernel;
  }
  return std::nullopt;
}

KernelNameTable KernelNameTable::standard() {
  KernelNameTable t;
  // More specific rules first: the decode kernel is one template over ContiguousRows / PagedRows.
  t.add({{"decode_combine_kernel"}, {"decode_combine", "attention_decode"}});
  t.add({{"decode_attention_kernel", "PagedRows"}, {"decode_paged", "attention_decode"}});
  t.add({{"decode_attention_kernel"}, {"decode_contiguous", "attention_decode"}});
  t.add({{"quant_decode_kernel"}, {"decode_quant", "attention_decode"}});
  t.add({{"prefill_attention_kernel"}, {"prefill", "attention_prefill"}});
  t.add({{"kivi_write_kernel"}, {"kv_write_kivi2", "kv_write"}});
  t.add({{"kv_write_kernel"}, {"kv_write", "kv_write"}});
  // A device-to-device block move is memory-bound like an elementwise op (no D2D copy class).
  t.add({{"block_copy_kernel"}, {"block_copy", "elementwise"}});
  // The runner's own probes and the validation harness's stand-in for norms / RoPE / activations.
  t.add({{"kvplan_empty_kernel"}, {"launch_empty", ""}});
  t.add({{"kvplan_elementwise_kernel"}, {"elementwise", "elementwise"}});
  // cuBLAS / cuBLASLt: Hopper "nvjet" kernels, CUTLASS / xmma GEMMs, split-K reductions.
  t.add({{"nvjet"}, {"gemm", "gemm"}});
  t.add({{"gemm"}, {"gemm", "gemm"}});
  t.add({{"cutlass"}, {"gemm", "gemm"}});
  t.add({{"splitKreduce"}, {"gemm", "gemm"}});
  t.add({{"nccl"}, {"all_reduce", "collective"}});
  // Synthetic names given to copy records by the CUPTI source.
  t.add({{"memcpy_h2d"}, {"copy_h2d", "copy_h2d"}});
  t.add({{"memcpy_d2h"}, {"copy_d2h", "copy_d2h"}});
  t.add({{"memcpy_d2d"}, {"copy_d2d", "elementwise"}});
  t.add({{"memset"}, {"memset", "elementwise"}});
  return t;
}

}  // namespace kvplan::calibration
