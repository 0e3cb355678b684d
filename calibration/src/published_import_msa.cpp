// aiconfigurator's MiniMax sparse attention table, vLLM 0.24.0 (shared/data/measurements README §7d):
// the whole attention module of one MiniMax-M3 sparse layer. Each row becomes the operator the step
// builds for the same work (core/mixer_ops.h msa_attention_op).
#include <string>

#include <fmt/format.h>

#include "aic_tables.h"
#include "kvplan/calibration/row_ops.h"
#include "published_tables.h"

namespace kvplan::calibration::internal {

// §7d: one row is vLLM's MiniMaxM3SparseAttention forward (fused projections, norms, RoPE, cache
// inserts, indexer, top-k blocks, block-sparse attention, o_proj), CUDA graphs; no input norm,
// residual, all-reduce or MoE. `num_heads` is the timed GPU's query heads (the collector sets its KV
// heads to max(1, heads / 16)); `step` the cached prefix (context: 0 or 128) or the tokens cached
// before the new one (generation, isl 1).
void read_aic_msa(TableSink& sink, CsvReader& csv) {
  Runs runs;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string op(csv.text("op_name"));
    const bool prefill = op == "msa_context_module";
    if (!prefill && op != "msa_generation_module") csv.fail("op_name", "must be msa_context_module or msa_generation_module");
    if (csv.text("architecture") != "MiniMaxM3ForCausalLM") csv.fail("architecture", "must be MiniMaxM3ForCausalLM");
    if (csv.text("gemm_type") != "fp8_block") csv.fail("gemm_type", "must be fp8_block (the copied rows)");
    const std::string kv(csv.text("kv_cache_dtype"));
    if (kv != "bfloat16" && kv != "fp8") csv.fail("kv_cache_dtype", "must be bfloat16 or fp8");
    if (csv.integer("tp_size", 1) != 1) csv.fail("tp_size", "must be 1 (rank-local head counts, README 7d)");
    const int64_t heads = csv.integer("num_heads", 1);
    if (heads != 64 && heads != 32 && heads != 16 && heads != 8) {
      csv.fail("num_heads", "must be 64, 32, 16 or 8 (MiniMax-M3's 64 query heads at TP 1-8)");
    }
    const int64_t batch = csv.integer("batch_size", 1), isl = csv.integer("isl", 1), past = csv.integer("step", 0);
    if (!prefill && isl != 1) csv.fail("isl", "must be 1 in generation rows");
    const double ms = csv.positive("latency");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    const std::string table = prefill ? "msa_context_module_perf" : "msa_generation_module_perf";
    PublishedRun& run = run_of(runs, csv, gpu, fmt::format("msa/vllm/0.24.0/{}", table),
                               "aiconfigurator, vLLM 0.24.0 (MiniMax-M3 sparse attention modules)");
    const std::string kernel = fmt::format("aic_{}", table);
    const bool fp8 = kv == "fp8";
    add_kernel(run, kernel, OpClass::kMsaAttention,
               fmt::format("vLLM MiniMaxM3SparseAttention, one sparse layer ({}): fused q/k/v/index projections, "
                           "per-head norms, partial RoPE, K/V and index-key inserts, indexer top-16 blocks of 128, "
                           "block-sparse GQA, o_proj; fp8 block projections, CUDA graphs",
                           prefill ? "prefill" : "decode"));
    const nlohmann::json params = {{"msa", prefill ? "prefill" : "decode"}, {"batch", batch}, {"isl", isl},
                                   {"past", past}, {"heads", heads}, {"kv", fp8 ? "fp8" : "bf16"}};
    add_row(run, kernel, msa_row_op(batch, isl, past, heads, fp8), params, ms * kNsPerMs);
  }
  sink.append(runs.take());
}

}  // namespace kvplan::calibration::internal
