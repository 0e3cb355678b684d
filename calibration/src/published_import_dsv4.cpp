// aiconfigurator's DeepSeek-V4 tables, vLLM 0.24.0 (shared/data/measurements README §7b, §7f): the
// whole attention module of one CSA or HCA layer (dsv4_attention) and the hyper-connections' two
// sites (mhc). Each row becomes the operator of core/mixer_ops.h that the step's operator list uses
// for the same work (dsv4_attention_op, mhc_op).
#include <string>

#include <fmt/format.h>

#include "aic_tables.h"
#include "kvplan/calibration/row_ops.h"
#include "published_tables.h"

namespace kvplan::calibration::internal {

// §7b: one row is vLLM's DeepseekV4Attention forward of one layer, built with compress_ratios [4]
// (CSA) or [128] (HCA), every cache bound, CUDA graphs; no mHC, norm, MoE or collectives.
// `num_heads` is the timed GPU's (native / tp_size); `step` the cached prefix (context) or the past
// without the new token (generation, isl 1).
void read_aic_dsv4(TableSink& sink, CsvReader& csv) {
  Runs runs;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string op(csv.text("op_name"));
    const bool csa = op.rfind("dsv4_csa_", 0) == 0;
    const bool prefill = op.find("_context_") != std::string::npos;
    if (op != "dsv4_csa_context_module" && op != "dsv4_csa_generation_module" && op != "dsv4_hca_context_module" &&
        op != "dsv4_hca_generation_module") {
      csv.fail("op_name", "must be dsv4_{csa,hca}_{context,generation}_module");
    }
    if (csv.text("architecture") != "DeepseekV4ForCausalLM") csv.fail("architecture", "must be DeepseekV4ForCausalLM");
    if (csv.integer("compress_ratio", 1) != (csa ? 4 : 128)) csv.fail("compress_ratio", "must be 4 for CSA, 128 for HCA");
    if (csv.text("gemm_type") != "fp8_block") csv.fail("gemm_type", "must be fp8_block (the copied rows)");
    if (csv.text("kv_cache_dtype") != "fp8") csv.fail("kv_cache_dtype", "must be fp8 (DeepSeek-V4's cache)");
    const int64_t heads = csv.integer("num_heads", 1), tp = csv.integer("tp_size", 1);
    const int64_t native = heads * tp;
    if (native != 64 && native != 128) {
      csv.fail("num_heads", "x tp_size must be 64 (V4-Flash) or 128 (V4-Pro), the geometries the tables were built on");
    }
    const int64_t batch = csv.integer("batch_size", 1), isl = csv.integer("isl", 1), past = csv.integer("step", 0);
    if (!prefill && isl != 1) csv.fail("isl", "must be 1 in generation rows");
    const double ms = csv.positive("latency");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    const std::string table =
        fmt::format("dsv4_{}_{}_module_perf", csa ? "csa" : "hca", prefill ? "context" : "generation");
    PublishedRun& run = run_of(runs, csv, gpu, fmt::format("sparse_attention/vllm/0.24.0/{}", table),
                               "aiconfigurator, vLLM 0.24.0 (DeepSeek-V4 attention modules)");
    const std::string kernel = fmt::format("aic_{}", table);
    add_kernel(run, kernel, OpClass::kDsv4Attention,
               fmt::format("vLLM DeepseekV4Attention, one {} layer ({}): q LoRA, latent, RoPE, compressor{}, cache "
                           "writes, FlashMLA sparse over the 128-token window and the {}, grouped output; fp8 block "
                           "projections, fp8 cache, CUDA graphs",
                           csa ? "CSA" : "HCA", prefill ? "prefill" : "decode",
                           csa ? ", indexer and top-k (dummy weights: the top-k is not corrected, README 7b)" : "",
                           csa ? "top-k compressed latents" : "compressed latents"));
    const nlohmann::json params = {{"dsv4", csa ? "csa" : "hca"}, {"batch", batch}, {"isl", isl}, {"past", past},
                                   {"heads", heads}, {"native_heads", native}};
    add_row(run, kernel, dsv4_row_op(csa, batch, isl, past, native, heads), params, ms * kNsPerMs);
  }
  sink.append(runs.take());
}

// §7f: one row is two back-to-back calls (num_sites 2) of vLLM's TileLang mhc_pre or mhc_post, the
// two sites of one decoder layer.
void read_aic_mhc(TableSink& sink, CsvReader& csv) {
  Runs runs;
  while (csv.next()) {
    const AicGpu& gpu = gpu_of(csv);
    const std::string op(csv.text("op_name"));
    if (op != "pre" && op != "post") csv.fail("op_name", "must be pre or post");
    if (csv.integer("num_sites", 1) != 2) csv.fail("num_sites", "must be 2 (the two sites of a layer)");
    const int64_t tokens = csv.integer("num_tokens", 1), hc = csv.integer("hc_mult", 1),
                  hidden = csv.integer("hidden_size", 1);
    const double ms = csv.positive("latency");
    if (!sink.wanted(csv.file(), gpu.preset)) continue;
    PublishedRun& run = run_of(runs, csv, gpu, "mhc/vllm/0.24.0/mhc_module_perf",
                               "aiconfigurator, vLLM 0.24.0 (DeepSeek-V4 hyper-connections)");
    const std::string kernel = fmt::format("aic_mhc_{}", op);
    add_kernel(run, kernel, OpClass::kMhc,
               fmt::format("vLLM TileLang mhc_{}: {} both sites of one layer (two calls, 20 Sinkhorn iterations, no "
                           "fused norm)",
                           op, op == "pre" ? "mixing the residual streams into the inputs of" : "folding the outputs of"));
    const nlohmann::json params = {{"mhc", op}, {"tokens", tokens}, {"hc", hc}, {"hidden", hidden}};
    add_row(run, kernel, mhc_row_op(op == "pre", tokens, static_cast<int>(hc), hidden), params, ms * kNsPerMs);
  }
  sink.append(runs.take());
}

}  // namespace kvplan::calibration::internal
