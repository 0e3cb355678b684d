// Published operator tables -> calibration runs (published_import.h): the dispatch by file name and
// aiconfigurator's tables (Vidur's are in published_import_vidur.cpp). Facts about each source
// (device strings, dates, snapshots, blobs) are from data/measurements/README.md.
#include "kvplan/calibration/published_import.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/build_info.h"
#include "kvplan/core/error.h"
#include "kvplan/core/fused_moe.h"
#include "published_tables.h"

namespace kvplan::calibration {

namespace {

using internal::add_kernel;
using internal::add_row;
using internal::CsvReader;
using internal::kNsPerMs;
using internal::published_info;
using internal::Runs;
using internal::TableSink;
using Json = nlohmann::json;

constexpr int kAicHeadDim = 128;  // every aiconfigurator row kept in data/measurements (README §1)

// aiconfigurator's GPU keys: the device string its collector logged and kvplan's preset.
struct AicGpu {
  const char* key;
  const char* device;
  const char* preset;
};
constexpr AicGpu kAicGpus[] = {{"h100_sxm", "NVIDIA H100 80GB HBM3", "h100-sxm"},
                               {"h200_sxm", "NVIDIA H200", "h200"},
                               {"a100_sxm", "NVIDIA A100-SXM4-80GB", "a100-80gb"},
                               {"l40s", "NVIDIA L40S", "l40s"},
                               {"b200_sxm", "NVIDIA B200", "b200"}};

// The collector versions read so far: when each table was added and how its decode kv_len
// relates to `step` (0.24.0 builds seq_lens = [step + 1], 0.14.0 seq_lens = [step]).
struct AicVersion {
  const char* version;
  const char* added_utc;
  int kv_len_minus_step;
};
constexpr AicVersion kAicVersions[] = {{"0.24.0", "2026-07-13T00:00:00Z", 1}, {"0.14.0", "2026-02-19T00:00:00Z", 0}};
// L40S decode cells whose KV fits in its 96 MB L2 are read from L2 on every CUDA-graph replay of
// the one benchmarked layer (apparent bandwidth up to 2.4 TB/s, 2.8x its 864 GB/s HBM; README §1d).
// In serving the same layer's KV is read once per step with gigabytes of other traffic in between,
// so it comes from HBM: those cells are not imported. Below 1 MiB the kernel's fixed latency
// dominates either way (< 1.6 us of HBM reads), so the smallest cells are kept for the latency.
constexpr double kL40sL2Bytes = 96.0 * 1024 * 1024;
constexpr double kL2IrrelevantBytes = 1024.0 * 1024;
constexpr const char* kAicSnapshot = "ai-dynamo/aiconfigurator@095f58a51c4c";

// Git blobs (first 12 hex) of the parquet tables, by "<gpu key>/<family>/<version>".
const std::map<std::string, std::string>& aic_blobs() {
  static const std::map<std::string, std::string> blobs = {
      {"h100_sxm/generation_attention/0.24.0", "97915fccf136"}, {"h200_sxm/generation_attention/0.24.0", "c73bdf90f4d2"},
      {"h100_sxm/context_attention/0.24.0", "d4ca8efad23c"},    {"h200_sxm/context_attention/0.24.0", "a5d1cdced762"},
      {"h100_sxm/gemm/0.24.0", "a5225c8185be"},                 {"h200_sxm/gemm/0.24.0", "ebd4c8faca64"},
      {"a100_sxm/generation_attention/0.14.0", "5b0d50579eac"}, {"a100_sxm/gemm/0.14.0", "c7e685bdc793"},
      {"l40s/generation_attention/0.24.0", "62550ba5f286"},     {"l40s/gemm/0.24.0", "78ac917d0604"},
      {"h100_sxm/moe/0.24.0", "a87eaeae3ef3"},                  {"h200_sxm/moe/0.24.0", "ee9f64a5ca5c"},
      {"b200_sxm/moe/0.24.0", "ab9add0a28ae"},                  {"b200_sxm/gemm/0.24.0", "d3565f445836"},
      {"b200_sxm/generation_attention/0.24.0", "06b368708eb1"}, {"b200_sxm/context_attention/0.24.0", "3ac257112b34"},
      {"h100_sxm/nccl/2.29.2", "5c9b49bbe965"},                 {"h200_sxm/nccl/2.29.2", "3e019ff76dd1"},
      {"b200_sxm/nccl/2.29.2", "758ab2d49cb9"},                 {"h100_sxm/deepep_ll/0.5.12", "bec6c63210f3"},
      {"h200_sxm/deepep_ll/0.5.12", "9cc5a120f4d4"},            {"b200_sxm/deepep_ll/0.5.12", "0adc23868227"},
      {"h100_sxm/deepep_normal/0.5.12", "f35d3846fac7"},        {"h200_sxm/deepep_normal/0.5.12", "3a56e9aa511c"},
      {"b200_sxm/deepep_normal/0.5.12", "85aec2a651b0"}};
  return blobs;
}

enum class Kind {
  kAicGemm,
  kAicDecode,
  kAicPrefill,
  kAicMoe,
  kAicNccl,
  kAicDeepEpLl,
  kAicDeepEpNormal,
  kAicMlaAttention,
  kAicMlaBmm,
  kAicGdn,
  kAicKda,
  kAicMamba2,
  kAicVllmAllReduce,
  kAicGlm5Dsa,
  kAicGlm5Topk,
  kAicDsv4,
  kAicMhc,
  kAicMsa,
  kVidurAllReduce,
  kVidurMlp,
  kAzureMicrobench
};

bool kind_of(const std::string& name, Kind& kind) {
  static const std::map<std::string, Kind> kinds = {
      {"aiconfigurator_vllm_gemm_h100_h200.csv", Kind::kAicGemm},
      {"aiconfigurator_vllm_gemm_a100_l40s.csv", Kind::kAicGemm},
      {"aiconfigurator_vllm_decode_attention_h100_h200.csv", Kind::kAicDecode},
      {"aiconfigurator_vllm_decode_attention_a100_l40s.csv", Kind::kAicDecode},
      {"aiconfigurator_vllm_prefill_attention_h100_h200.csv", Kind::kAicPrefill},
      {"aiconfigurator_vllm_gemm_b200.csv", Kind::kAicGemm},
      {"aiconfigurator_vllm_decode_attention_b200.csv", Kind::kAicDecode},
      {"aiconfigurator_vllm_prefill_attention_b200.csv", Kind::kAicPrefill},
      {"aiconfigurator_moe_vllm_h100_h200_b200.csv", Kind::kAicMoe},
      {"aiconfigurator_nccl_h100_h200_b200.csv", Kind::kAicNccl},
      {"aiconfigurator_deepep_ll_sglang_h100_h200_b200.csv", Kind::kAicDeepEpLl},
      {"aiconfigurator_deepep_normal_sglang_h100_h200_b200.csv", Kind::kAicDeepEpNormal},
      {"aiconfigurator_mla_attention_sglang_trtllm_h100_h200_b200.csv", Kind::kAicMlaAttention},
      {"aiconfigurator_mla_bmm_h100_h200_b200.csv", Kind::kAicMlaBmm},
      {"aiconfigurator_gdn_vllm_h100_h200_b200.csv", Kind::kAicGdn},
      {"aiconfigurator_kda_h100_h200_b200.csv", Kind::kAicKda},
      {"aiconfigurator_mamba2_trtllm_h100_h200_b200.csv", Kind::kAicMamba2},
      {"aiconfigurator_custom_allreduce_vllm_h100_h200_b200.csv", Kind::kAicVllmAllReduce},
      {"aiconfigurator_glm5_dsa_sglang_h100_h200_b200.csv", Kind::kAicGlm5Dsa},
      {"aiconfigurator_glm5_topk_sglang_h100_h200_b200.csv", Kind::kAicGlm5Topk},
      {"aiconfigurator_dsv4_attention_vllm_h100_h200_b200.csv", Kind::kAicDsv4},
      {"aiconfigurator_mhc_vllm_h100_h200_b200.csv", Kind::kAicMhc},
      {"aiconfigurator_msa_module_vllm_h100_h200_b200.csv", Kind::kAicMsa},
      {"vidur_h100_allreduce.csv", Kind::kVidurAllReduce},
      {"vidur_mlp_block_ops_h100_a100.csv", Kind::kVidurMlp},
      {"azure_ai_benchmarking_guide_microbench.csv", Kind::kAzureMicrobench}};
  auto it = kinds.find(name);
  if (it == kinds.end()) return false;
  kind = it->second;
  return true;
}

// The aiconfigurator columns every table shares: GPU, collector version and the run they go to.
struct AicRow {
  const AicGpu* gpu = nullptr;
  const AicVersion* version = nullptr;
};

AicRow aic_row(const CsvReader& csv) {
  AicRow r;
  const std::string_view key = csv.text("gpu");
  for (const AicGpu& g : kAicGpus) {
    if (key == g.key) r.gpu = &g;
  }
  if (r.gpu == nullptr) csv.fail("gpu", "is not a GPU kvplan maps (h100_sxm, h200_sxm, a100_sxm, l40s, b200_sxm)");
  const std::string_view v = csv.text("vllm_version");
  for (const AicVersion& av : kAicVersions) {
    if (v == av.version) r.version = &av;
  }
  if (r.version == nullptr) {
    csv.fail("vllm_version",
             "is a collector version whose conventions kvplan has not checked (known: 0.24.0 with kv_len = step + 1, "
             "0.14.0 with kv_len = step); read its collector before adding it");
  }
  return r;
}

DType aic_dtype(const CsvReader& csv, const char* column) {
  const std::string_view t = csv.text(column);
  if (t == "bfloat16") return DType::kBF16;
  if (t == "fp8") return DType::kFp8E4M3;
  // B200 only (README §6k): FlashInfer CuTe-DSL W4A4 nvfp4 GEMM, fp8 scales per 16 weights.
  if (t == "nvfp4" && std::string_view(column) == "gemm_dtype") return DType::kFp4E2M1;
  csv.fail(column, "must be bfloat16 or fp8 (nvfp4 for gemm_dtype; other variants, e.g. fp8_block, are not imported)");
}

PublishedRun& aic_run(Runs& runs, const AicRow& r, const char* family, const std::string& table) {
  const std::string key = fmt::format("{}/{}/{}", r.gpu->key, family, r.version->version);
  const bool fresh = !runs.has(key);
  PublishedRun& run = runs.get(key);
  if (fresh) {
    auto blob = aic_blobs().find(key);
    const std::string source_table =
        fmt::format("{}/{}/vllm/{}/{}_perf.parquet ({}; copied as {})", r.gpu->key,
                    std::string_view(family) == "gemm" ? "gemm" : "attention", r.version->version, family,
                    blob != aic_blobs().end() ? "blob " + blob->second : std::string("blob not recorded"), table);
    run.info = published_info(r.gpu->device, source_table, fmt::format("aiconfigurator, vLLM {}", r.version->version),
                              r.version->added_utc, kAicSnapshot);
    run.gpu_preset = r.gpu->preset;
    run.table = table;
  }
  return run;
}

// aiconfigurator's tables read here; Vidur's in published_import_vidur.cpp.
struct Reader : TableSink {
  void aic_gemm(CsvReader& csv) {
    Runs runs;
    while (csv.next()) {
      const AicRow r = aic_row(csv);
      const DType dtype = aic_dtype(csv, "gemm_dtype");
      const int64_t m = csv.integer("m", 1), n = csv.integer("n", 1), k = csv.integer("k", 1);
      const double ms = csv.positive("latency_ms");
      if (!wanted(csv.file(), r.gpu->preset)) continue;
      PublishedRun& run = aic_run(runs, r, "gemm", csv.file());
      const bool fp4 = dtype == DType::kFp4E2M1;
      const std::string kernel = fp4 ? "aic_gemm_nvfp4" : is_fp8(dtype) ? "aic_gemm_fp8" : "aic_gemm_bf16";
      add_kernel(run, kernel, OpClass::kGemm,
                 fp4 ? "vLLM nvfp4 linear (FlashInfer CuTe-DSL W4A4, fp8 scales per 16 weights; dynamic activation "
                       "quantisation inside the timed call), bf16 in and out"
                 : is_fp8(dtype) ? "vLLM fp8 linear (CUTLASS scaled_mm, per-tensor weight scale; the dynamic activation "
                                 "quantisation kernel is inside the timed call), bf16 in and out"
                               : "vLLM bf16 linear (F.linear / cuBLAS)");
      const Json params = {{"m", m}, {"n", n}, {"k", k}, {"dtype", std::string(dtype_name(dtype))}};
      add_row(run, kernel, gemm_op(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k), dtype),
              params, ms * kNsPerMs);
    }
    append(runs.take());
  }

  void aic_decode(CsvReader& csv) {
    Runs runs;
    int64_t l2_resident_rows = 0;
    while (csv.next()) {
      const AicRow r = aic_row(csv);
      const int64_t batch = csv.integer("batch_size", 1), step = csv.integer("step", 0);
      const int64_t kv_len = csv.integer("kv_len", 1);
      const int64_t hq = csv.integer("num_heads", 1), hkv = csv.integer("num_kv_heads", 1);
      const DType kv = aic_dtype(csv, "kv_cache_dtype");
      const double ms = csv.positive("latency_ms");
      if (kv_len != step + r.version->kv_len_minus_step) {
        csv.fail("kv_len", fmt::format("must be step + {} = {} for the vLLM {} collector (tokens attended per sequence)",
                                       r.version->kv_len_minus_step, step + r.version->kv_len_minus_step,
                                       r.version->version));
      }
      if (hq % hkv != 0) csv.fail("num_kv_heads", fmt::format("must divide num_heads={}", hq));
      if (std::string_view(r.gpu->key) == "h200_sxm" && std::string_view(r.version->version).rfind("0.19", 0) == 0) {
        csv.fail("vllm_version", "is the known-bad H200 0.19 attention collection (data/measurements/README.md)");
      }
      if (!wanted(csv.file(), r.gpu->preset)) continue;
      const StepOp op = decode_attention_op(static_cast<double>(batch), static_cast<double>(kv_len),
                                            static_cast<int>(hq), static_cast<int>(hkv), kAicHeadDim, kv);
      const double kv_bytes = op.bytes - static_cast<double>(batch * hq * 2 * kAicHeadDim * 2);
      if (std::string_view(r.gpu->key) == "l40s" && kv_bytes > kL2IrrelevantBytes && kv_bytes <= kL40sL2Bytes) {
        ++l2_resident_rows;
        continue;
      }
      PublishedRun& run = aic_run(runs, r, "generation_attention", csv.file());
      const std::string kernel = csv.has_column("kernel_source") ? "aic_decode_" + std::string(csv.text("kernel_source"))
                                 : std::string_view(r.gpu->key) == "b200_sxm"
                                     ? std::string("aic_decode_vllm_flashinfer_trtllmdecode")
                                     : std::string("aic_decode_vllm_flash_attn_fa3");
      add_kernel(run, kernel, OpClass::kAttentionDecode,
                 "vLLM FlashAttentionImpl.forward on a decode batch (paged KV, block 64, one query token per "
                 "sequence, head_dim 128), CUDA-graph replay mean; includes the new token's KV-cache write");
      const Json params = {{"batch", batch},       {"kv_len", kv_len}, {"num_heads", hq}, {"num_kv_heads", hkv},
                           {"head_dim", kAicHeadDim}, {"kv_dtype", std::string(dtype_name(kv))}, {"src_step", step}};
      add_row(run, kernel, op, params, ms * kNsPerMs);
    }
    if (l2_resident_rows > 0) {
      out.notes.push_back(fmt::format("{}: {} L40S row(s) whose KV (1 MiB to 96 MiB) fits in the L2 not imported: "
                                      "the benchmark re-reads it from L2, serving reads it from HBM",
                                      csv.file(), l2_resident_rows));
    }
    append(runs.take());
  }

  void aic_prefill(CsvReader& csv) {
    Runs runs;
    while (csv.next()) {
      const AicRow r = aic_row(csv);
      const int64_t batch = csv.integer("batch_size", 1), isl = csv.integer("isl", 1);
      const int64_t hq = csv.integer("num_heads", 1), hkv = csv.integer("num_kv_heads", 1);
      const DType kv = aic_dtype(csv, "kv_cache_dtype");
      const double ms = csv.positive("latency_ms");
      if (hq % hkv != 0) csv.fail("num_kv_heads", fmt::format("must divide num_heads={}", hq));
      if (std::string_view(r.gpu->key) == "h200_sxm" && std::string_view(r.version->version).rfind("0.19", 0) == 0) {
        csv.fail("vllm_version", "is the known-bad H200 0.19 attention collection (data/measurements/README.md)");
      }
      if (!wanted(csv.file(), r.gpu->preset)) continue;
      PublishedRun& run = aic_run(runs, r, "context_attention", csv.file());
      const bool flashinfer = std::string_view(r.gpu->key) == "b200_sxm";
      const char* prefill_kernel = flashinfer ? "aic_prefill_vllm_flashinfer_trtllm" : "aic_prefill_vllm_flash_attn_fa3";
      add_kernel(run, prefill_kernel, OpClass::kAttentionPrefill,
                 flashinfer ? "vLLM FlashInfer TRT-LLM-gen causal prefill (decode kernel for isl 1), no cached prefix, "
                              "head_dim 128"
                            : "vLLM FlashAttention-3 causal prefill, no cached prefix, head_dim 128");
      const Json params = {{"batch", batch},       {"isl", isl}, {"num_heads", hq}, {"num_kv_heads", hkv},
                           {"head_dim", kAicHeadDim}, {"kv_dtype", std::string(dtype_name(kv))}};
      add_row(run, prefill_kernel,
              prefill_attention_op(static_cast<double>(batch), static_cast<double>(isl), static_cast<int>(hq),
                                   static_cast<int>(hkv), kAicHeadDim, kv),
              params, ms * kNsPerMs);
    }
    append(runs.take());
  }

  const AicGpu& section6_gpu(const CsvReader& csv) {
    const std::string_view key = csv.text("gpu");
    for (const AicGpu& g : kAicGpus) {
      if (key == g.key) return g;
    }
    csv.fail("gpu", "is not a GPU kvplan maps (h100_sxm, h200_sxm, b200_sxm)");
  }

  // The run of a §6 table for one GPU: `family` names the blob, `path` the parquet, `what` the engine.
  PublishedRun& section6_run(Runs& runs, const CsvReader& csv, const AicGpu& gpu, const std::string& family,
                             const std::string& version, const std::string& path, const std::string& what) {
    const std::string run_key = fmt::format("{}/{}/{}", gpu.key, family, version);
    const bool fresh = !runs.has(run_key);
    PublishedRun& run = runs.get(run_key);
    if (fresh) {
      auto blob = aic_blobs().find(fmt::format("{}/{}/{}", gpu.key, family, family == "moe" ? "0.24.0" : version));
      run.info = published_info(gpu.device,
                                fmt::format("{}/{} ({}; copied as {})", gpu.key, path,
                                            blob != aic_blobs().end() ? "blob " + blob->second : "blob not recorded",
                                            csv.file()),
                                what, kAicVersions[0].added_utc, kAicSnapshot);
      run.gpu_preset = gpu.preset;
      run.table = csv.file();
    }
    return run;
  }

  // nccl-tests on one node (README §6h): message_size in ELEMENTS of nccl_dtype; half rows only
  // (the int8 rows time the same bytes with an int8 reduction, which no engine step runs).
  void aic_nccl(CsvReader& csv) {
    Runs runs;
    int64_t int8_rows = 0;
    while (csv.next()) {
      const AicGpu& gpu = section6_gpu(csv);
      const std::string op(csv.text("op_name"));
      if (op != "all_reduce" && op != "all_gather" && op != "reduce_scatter" && op != "alltoall") {
        csv.fail("op_name", "must be all_reduce, all_gather, reduce_scatter or alltoall");
      }
      const std::string dtype(csv.text("nccl_dtype"));
      if (dtype != "half" && dtype != "int8") csv.fail("nccl_dtype", "must be half or int8");
      const int64_t ranks = csv.integer("num_gpus", 2), elements = csv.integer("message_size", 1);
      const double ms = csv.positive("latency");
      if (dtype == "int8") {
        ++int8_rows;
        continue;
      }
      if (!wanted(csv.file(), gpu.preset)) continue;
      PublishedRun& run = section6_run(runs, csv, gpu, "nccl", std::string(csv.text("version")),
                                       "comm/nccl/2.29.2/nccl_perf.parquet", "aiconfigurator, NCCL 2.29.2 nccl-tests");
      const std::string kernel = "aic_nccl_" + op;
      add_kernel(run, kernel, OpClass::kCollective,
                 "nccl-tests " + op + "_perf, one node, out-of-place time averaged over ranks, fp16 buffer");
      const CollectiveKind kind = op == "all_gather"       ? CollectiveKind::kAllGather
                                  : op == "reduce_scatter" ? CollectiveKind::kReduceScatter
                                  : op == "alltoall"       ? CollectiveKind::kAllToAll
                                                           : CollectiveKind::kAllReduce;
      const Json params = {{"bytes", 2 * elements}, {"ranks", ranks}, {"collective", op}};
      add_row(run, kernel, collective_op(kind, 2.0 * static_cast<double>(elements), static_cast<int>(ranks)), params,
              ms * kNsPerMs);
    }
    if (int8_rows > 0) {
      out.notes.push_back(fmt::format("{}: {} int8 row(s) not imported (engines reduce fp16/bf16 activations)",
                                      csv.file(), int8_rows));
    }
    append(runs.take());
  }

  // DeepEP dispatch and combine, EP 8 on one node (README §6j): num_token is per rank. Normal mode
  // is read at AIC's default budget of 12 SMs (the other budgets are the same kernels tuned apart).
  void aic_deepep(CsvReader& csv, bool low_latency) {
    Runs runs;
    int64_t other_sms = 0;
    while (csv.next()) {
      const AicGpu& gpu = section6_gpu(csv);
      if (csv.integer("node_num", 1) != 1) csv.fail("node_num", "must be 1 (one node of 8 GPUs)");
      const int64_t hidden = csv.integer("hidden_size", 1), tokens = csv.integer("num_token", 1);
      const int64_t top_k = csv.integer("num_topk", 1);
      double dispatch_us = 0, combine_us = 0;
      if (low_latency) {
        dispatch_us = csv.positive("dispatch_avg_t_us");
        combine_us = csv.positive("combine_avg_t_us");
      } else {
        if (csv.integer("dispatch_sms", 1) != 12) {
          ++other_sms;
          continue;
        }
        dispatch_us = csv.positive("dispatch_transmit_us");
        combine_us = csv.positive("combine_transmit_us");
      }
      if (!wanted(csv.file(), gpu.preset)) continue;
      const std::string mode = low_latency ? "ll" : "normal";
      PublishedRun& run = section6_run(runs, csv, gpu, "deepep_" + mode, "0.5.12",
                                       fmt::format("comm/sglang/0.5.12/wideep_deepep_{}_perf.parquet", mode),
                                       "aiconfigurator, DeepEP (SGLang 0.5.12 image)");
      for (DeepEpPhase phase : {DeepEpPhase::kDispatch, DeepEpPhase::kCombine}) {
        const bool dispatch = phase == DeepEpPhase::kDispatch;
        const std::string kernel = fmt::format("aic_deepep_{}_{}", mode, dispatch ? "dispatch" : "combine");
        add_kernel(run, kernel, OpClass::kCollective,
                   fmt::format("DeepEP {} {} over 8 GPUs of one node ({}), per call", mode,
                               dispatch ? "dispatch" : "combine", low_latency ? "mean" : "tuned best at 12 SMs"));
        const Json params = {{"tokens", tokens}, {"hidden", hidden}, {"top_k", top_k}, {"ranks", 8},
                             {"deepep", dispatch ? "dispatch" : "combine"}, {"mode", mode},
                             {"src_experts", csv.integer("num_experts", 1)}};
        add_row(run, kernel,
                deepep_op(phase, low_latency, static_cast<double>(tokens), static_cast<int>(top_k), hidden, 8), params,
                (dispatch ? dispatch_us : combine_us) * 1e3);
      }
    }
    if (other_sms > 0) {
      out.notes.push_back(
          fmt::format("{}: {} row(s) at SM budgets other than AIC's default 12 not imported", csv.file(), other_sms));
    }
    append(runs.take());
  }

  // The vLLM FusedMoE table (README §6a): one row = one FusedMoE forward on one GPU given the
  // router logits, for `num_tokens` tokens entering the layer, under one routing distribution.
  void aic_moe(CsvReader& csv) {
    Runs runs;
    while (csv.next()) {
      const AicGpu& gpu = section6_gpu(csv);
      MoeFormat format{};
      if (!parse_moe_table_dtype(csv.text("moe_dtype"), format)) {
        csv.fail("moe_dtype", "must be bfloat16, fp8, fp8_block, nvfp4, w4a16_mxfp4, int4_wo or w4a8_mxfp4_mxfp8");
      }
      const MoeRouting routing = parse_moe_routing(csv.text("distribution"), csv.file() + ": distribution");
      const int64_t tokens = csv.integer("num_tokens", 1), hidden = csv.integer("hidden_size", 1);
      const int64_t inter = csv.integer("inter_size", 1), top_k = csv.integer("topk", 1);
      const int64_t experts = csv.integer("num_experts", 1);
      const int64_t tp = csv.integer("moe_tp_size", 1), ep = csv.integer("moe_ep_size", 1);
      const double ms = csv.positive("latency");
      if (inter % tp != 0) csv.fail("moe_tp_size", fmt::format("must divide inter_size={}", inter));
      if (experts % ep != 0) csv.fail("moe_ep_size", fmt::format("must divide num_experts={}", experts));
      if (top_k > experts) csv.fail("topk", fmt::format("must be <= num_experts={}", experts));
      if (!wanted(csv.file(), gpu.preset)) continue;
      const std::string version(csv.text("version"));
      // 972 B200 Kimi-K3 rows come from a vLLM preview build merged into the 0.24.0 table by the
      // table's owner (README §6a): a run of their own, labelled as the table they are part of.
      PublishedRun& run = section6_run(
          runs, csv, gpu, "moe", version,
          "moe/vllm/0.24.0/moe_perf.parquet" + (version == "0.24.0" ? std::string() : ", vLLM build " + version),
          "aiconfigurator, vLLM 0.24.0");
      const std::string kernel = "aic_moe_" + std::string(csv.text("kernel_source"));
      add_kernel(run, kernel, OpClass::kMoeGemm,
                 "vLLM FusedMoE forward given the router logits (top-k, permute, gate/up and down grouped GEMMs, "
                 "activation, combine; no router GEMM, shared experts or communication), CUDA-graph replay mean");
      Json params = {{"tokens", tokens},   {"hidden", hidden}, {"inter", inter},
                     {"top_k", top_k},     {"experts", experts}, {"moe_tp", tp},
                     {"moe_ep", ep},       {"format", std::string(moe_format_name(format))},
                     {"routing", std::string(moe_routing_name(routing))}};
      const bool gated =
          published_moe_shape_gated(hidden, inter, static_cast<int>(experts), static_cast<int>(top_k));
      if (!gated) params["gated"] = false;  // the other rows' parameters stay as they were
      add_row(run, kernel,
              fused_moe_row_op(static_cast<double>(tokens), hidden, inter, static_cast<int>(top_k),
                               static_cast<int>(experts), static_cast<int>(tp), static_cast<int>(ep), format, routing,
                               gated),
              params, ms * kNsPerMs);
    }
    append(runs.take());
  }

  void read(const std::string& path, Kind kind) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    switch (kind) {
      case Kind::kAicGemm: {
        CsvReader csv(path, {"gpu", "vllm_version", "gemm_dtype", "m", "n", "k", "latency_ms"});
        aic_gemm(csv);
        break;
      }
      case Kind::kAicDecode: {
        CsvReader csv(path, {"gpu", "vllm_version", "batch_size", "step", "kv_len", "num_heads", "num_kv_heads",
                             "kv_cache_dtype", "latency_ms"});
        aic_decode(csv);
        break;
      }
      case Kind::kAicPrefill: {
        CsvReader csv(path, {"gpu", "vllm_version", "batch_size", "isl", "num_heads", "num_kv_heads", "kv_cache_dtype",
                             "latency_ms"});
        aic_prefill(csv);
        break;
      }
      case Kind::kAicMoe: {
        CsvReader csv(path, {"gpu", "version", "kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size",
                             "topk", "num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency"});
        aic_moe(csv);
        break;
      }
      case Kind::kAicNccl: {
        CsvReader csv(path, {"gpu", "version", "op_name", "nccl_dtype", "num_gpus", "message_size", "latency"});
        aic_nccl(csv);
        break;
      }
      case Kind::kAicDeepEpLl: {
        CsvReader csv(path, {"gpu", "framework", "node_num", "hidden_size", "num_token", "num_topk", "num_experts",
                             "combine_avg_t_us", "dispatch_avg_t_us"});
        aic_deepep(csv, true);
        break;
      }
      case Kind::kAicDeepEpNormal: {
        CsvReader csv(path, {"gpu", "framework", "node_num", "hidden_size", "num_token", "num_topk", "num_experts",
                             "dispatch_sms", "dispatch_transmit_us", "combine_transmit_us"});
        aic_deepep(csv, false);
        break;
      }
      case Kind::kAicMlaAttention: {
        CsvReader csv(path, {"gpu", "framework", "version", "op_name", "kernel_source", "mla_dtype", "kv_cache_dtype",
                             "num_heads", "batch_size", "isl", "step", "latency"});
        internal::read_aic_mla_attention(*this, csv);
        break;
      }
      case Kind::kAicMlaBmm: {
        CsvReader csv(path, {"gpu", "framework", "version", "op_name", "kernel_source", "bmm_dtype", "num_tokens",
                             "num_heads", "latency"});
        internal::read_aic_mla_bmm(*this, csv);
        break;
      }
      case Kind::kAicGdn: {
        CsvReader csv(path, {"gpu", "phase", "kernel_source", "batch_size", "seq_len", "num_tokens", "d_conv",
                             "num_k_heads", "head_k_dim", "num_v_heads", "head_v_dim", "model_name", "latency"});
        internal::read_aic_gdn(*this, csv);
        break;
      }
      case Kind::kAicKda: {
        CsvReader csv(path, {"gpu", "framework", "version", "phase", "kernel_source", "batch_size", "seq_len",
                             "num_tokens", "d_conv", "num_k_heads", "head_k_dim", "num_v_heads", "head_v_dim",
                             "latency"});
        internal::read_aic_kda(*this, csv);
        break;
      }
      case Kind::kAicMamba2: {
        CsvReader csv(path, {"gpu", "phase", "kernel_source", "batch_size", "seq_len", "d_state", "d_conv", "nheads",
                             "head_dim", "n_groups", "latency"});
        internal::read_aic_mamba2(*this, csv);
        break;
      }
      case Kind::kAicVllmAllReduce: {
        CsvReader csv(path, {"gpu", "allreduce_dtype", "num_gpus", "message_size", "latency", "backend"});
        internal::read_aic_vllm_all_reduce(*this, csv);
        break;
      }
      case Kind::kAicGlm5Dsa:
      case Kind::kAicGlm5Topk: {
        const bool topk = kind == Kind::kAicGlm5Topk;
        std::vector<std::string> columns = {"gpu", "op_name", "kernel_source", "architecture", "num_heads",
                                            "batch_size", "isl", "step", "compress_ratio", "latency"};
        if (topk) columns.push_back("score_mode");
        CsvReader csv(path, columns);
        internal::read_aic_glm5_dsa(*this, csv, topk);
        break;
      }
      case Kind::kAicDsv4: {
        CsvReader csv(path, {"gpu", "op_name", "architecture", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size",
                             "isl", "tp_size", "step", "compress_ratio", "latency"});
        internal::read_aic_dsv4(*this, csv);
        break;
      }
      case Kind::kAicMsa: {
        CsvReader csv(path, {"gpu", "op_name", "architecture", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size",
                             "isl", "tp_size", "step", "latency"});
        internal::read_aic_msa(*this, csv);
        break;
      }
      case Kind::kAicMhc: {
        CsvReader csv(path, {"gpu", "op_name", "num_tokens", "num_sites", "hc_mult", "hidden_size", "latency"});
        internal::read_aic_mhc(*this, csv);
        break;
      }
      case Kind::kVidurAllReduce: {
        CsvReader csv(path, {"node", "num_workers", "size_fp16_elements", "min_ms", "median_ms"});
        read_vidur_all_reduce(*this, csv);
        break;
      }
      case Kind::kVidurMlp: {
        CsvReader csv(path, {"gpu", "model", "tp", "num_tokens", "source_row", "input_layernorm_median_ms",
                             "post_attention_layernorm_median_ms", "attn_rope_median_ms", "mlp_act_median_ms",
                             "add_median_ms"});
        read_vidur_mlp(*this, csv, dir.empty() ? "." : dir);
        break;
      }
      case Kind::kAzureMicrobench: {
        CsvReader csv(path, {"gpu", "source_repo", "source_commit", "software", "benchmark", "dtype", "params", "value",
                             "unit"});
        read_azure_microbench(*this, csv);
        break;
      }
    }
    out.tables.push_back(std::filesystem::path(path).filename().string());
  }

  void finish() {
    for (const auto& [table, n] : other_gpu_rows) {
      out.notes.push_back(fmt::format("{}: {} row(s) of other GPUs than {} not imported", table, n, options.gpu));
    }
  }
};

}  // namespace

PublishedTables read_published_table(const std::string& path, const PublishedImportOptions& options) {
  const std::string name = std::filesystem::path(path).filename().string();
  Kind kind{};
  if (!kind_of(name, kind)) {
    throw ConfigError(fmt::format("published table '{}': file name '{}' is not a table kvplan reads "
                                  "(data/measurements/README.md lists them)",
                                  path, name));
  }
  PublishedTables out;
  Reader r{{options, out, {}}};
  r.read(path, kind);
  r.finish();
  return out;
}

PublishedTables read_published_tables(const std::string& dir, const PublishedImportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw ConfigError(fmt::format("published tables: '{}' is not a directory", dir));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    Kind kind{};
    if (e.is_regular_file() && kind_of(e.path().filename().string(), kind)) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    throw ConfigError(fmt::format("published tables: '{}' holds none of the tables kvplan reads "
                                  "(aiconfigurator_vllm_*.csv, vidur_*.csv; data/measurements/README.md)",
                                  dir));
  }
  PublishedTables out;
  Reader r{{options, out, {}}};
  for (const auto& f : files) {
    Kind kind{};
    kind_of(f.filename().string(), kind);
    r.read(f.string(), kind);
  }
  r.finish();
  if (!options.gpu.empty() && out.runs.empty()) {
    throw ConfigError(fmt::format("published tables in '{}': no table has rows for --gpu={}", dir, options.gpu));
  }
  return out;
}

PublishedImportResult import_published(CalibrationStore& db, const std::string& dir,
                                       const PublishedImportOptions& options) {
  PublishedTables tables = read_published_tables(dir, options);
  PublishedImportResult result;
  result.tables = tables.tables;
  result.notes = tables.notes;
  for (const PublishedRun& run : tables.runs) {
    for (const KernelInfo& k : run.kernels) db.register_kernel(k);
    const int64_t id = db.begin_run(run.info);
    db.record_shape(id, run.rows);  // one transaction: a published table is stored whole or not at all
    db.end_run(id, RunStatus::kComplete);
    result.run_ids.push_back(id);
    result.rows += static_cast<int64_t>(run.rows.size());
  }
  return result;
}

}  // namespace kvplan::calibration
