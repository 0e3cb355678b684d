// Published operator tables -> calibration runs (published_import.h). Facts about each source
// (device strings, dates, snapshots, blobs) are from data/measurements/README.md.
#include "kvplan/calibration/published_import.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "csv_reader.h"
#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/build_info.h"
#include "kvplan/core/error.h"

namespace kvplan::calibration {

namespace {

using internal::CsvReader;
using Json = nlohmann::json;

constexpr double kNsPerMs = 1e6;
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
                               {"l40s", "NVIDIA L40S", "l40s"}};

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
constexpr const char* kVidurSnapshot = "microsoft/vidur@7d47513363ec";

// Git blobs (first 12 hex) of the parquet tables, by "<gpu key>/<family>/<version>".
const std::map<std::string, std::string>& aic_blobs() {
  static const std::map<std::string, std::string> blobs = {
      {"h100_sxm/generation_attention/0.24.0", "97915fccf136"}, {"h200_sxm/generation_attention/0.24.0", "c73bdf90f4d2"},
      {"h100_sxm/context_attention/0.24.0", "d4ca8efad23c"},    {"h200_sxm/context_attention/0.24.0", "a5d1cdced762"},
      {"h100_sxm/gemm/0.24.0", "a5225c8185be"},                 {"h200_sxm/gemm/0.24.0", "ebd4c8faca64"},
      {"a100_sxm/generation_attention/0.14.0", "5b0d50579eac"}, {"a100_sxm/gemm/0.14.0", "c7e685bdc793"},
      {"l40s/generation_attention/0.24.0", "62550ba5f286"},     {"l40s/gemm/0.24.0", "78ac917d0604"}};
  return blobs;
}

enum class Kind { kAicGemm, kAicDecode, kAicPrefill, kVidurAllReduce, kVidurMlp };

bool kind_of(const std::string& name, Kind& kind) {
  static const std::map<std::string, Kind> kinds = {
      {"aiconfigurator_vllm_gemm_h100_h200.csv", Kind::kAicGemm},
      {"aiconfigurator_vllm_gemm_a100_l40s.csv", Kind::kAicGemm},
      {"aiconfigurator_vllm_decode_attention_h100_h200.csv", Kind::kAicDecode},
      {"aiconfigurator_vllm_decode_attention_a100_l40s.csv", Kind::kAicDecode},
      {"aiconfigurator_vllm_prefill_attention_h100_h200.csv", Kind::kAicPrefill},
      {"vidur_h100_allreduce.csv", Kind::kVidurAllReduce},
      {"vidur_mlp_block_ops_h100_a100.csv", Kind::kVidurMlp}};
  auto it = kinds.find(name);
  if (it == kinds.end()) return false;
  kind = it->second;
  return true;
}

// Runs of one table by (GPU, engine version), in first-seen order.
class Runs {
 public:
  PublishedRun& get(const std::string& key) {
    auto [it, inserted] = index_.try_emplace(key, runs_.size());
    if (inserted) runs_.emplace_back();
    return runs_[it->second];
  }
  bool has(const std::string& key) const { return index_.count(key) > 0; }
  std::vector<PublishedRun> take() { return std::move(runs_); }

 private:
  std::map<std::string, size_t> index_;
  std::vector<PublishedRun> runs_;
};

RunInfo published_info(std::string gpu_name, const std::string& source_table, std::string source_and_version,
                       std::string date_utc, const std::string& snapshot) {
  RunInfo i;
  i.gpu_name = std::move(gpu_name);
  // No GPU UUID, driver or CUDA version is published: the source table stands in for the UUID.
  i.gpu_uuid = fmt::format("published: {} {}", snapshot, source_table);
  i.driver_version = i.cuda_version = i.cupti_version = "not published";
  i.kvplan_version = std::string(build_version());
  i.git_commit = std::string(build_commit());  // the kvplan that imported the table
  i.host = "published: " + std::move(source_and_version);
  i.started_utc = std::move(date_utc);
  i.mode = "published";
  return i;
}

void add_kernel(PublishedRun& run, const std::string& kernel, OpClass c, const std::string& description) {
  for (const KernelInfo& k : run.kernels) {
    if (k.kernel == kernel) return;
  }
  run.kernels.push_back(KernelInfo{kernel, std::string(op_class_name(c)), description});
}

void add_row(PublishedRun& run, const std::string& kernel, const StepOp& op, const Json& params, double median_ns,
             double min_ns = 0) {
  Measurement m;
  m.kernel = kernel;
  m.op_class = std::string(op_class_name(op.op_class));
  m.params_json = params.dump();  // sorted keys, no spaces: canonical
  m.median_ns = median_ns;
  m.min_ns = min_ns;
  m.flops = op.flops;
  m.bytes = op.bytes;
  run.rows.push_back(std::move(m));
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
  if (r.gpu == nullptr) csv.fail("gpu", "is not a GPU kvplan maps (h100_sxm, h200_sxm, a100_sxm, l40s)");
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
  csv.fail(column, "must be bfloat16 or fp8 (other variants, e.g. fp8_block, are not imported)");
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

struct Reader {
  const PublishedImportOptions& options;
  PublishedTables& out;
  std::map<std::string, int64_t> other_gpu_rows;  // table -> rows of GPUs not asked for

  bool wanted(const std::string& table, const char* preset) {
    if (options.gpu.empty() || options.gpu == preset) return true;
    ++other_gpu_rows[table];
    return false;
  }

  void aic_gemm(CsvReader& csv) {
    Runs runs;
    while (csv.next()) {
      const AicRow r = aic_row(csv);
      const DType dtype = aic_dtype(csv, "gemm_dtype");
      const int64_t m = csv.integer("m", 1), n = csv.integer("n", 1), k = csv.integer("k", 1);
      const double ms = csv.positive("latency_ms");
      if (!wanted(csv.file(), r.gpu->preset)) continue;
      PublishedRun& run = aic_run(runs, r, "gemm", csv.file());
      const std::string kernel = is_fp8(dtype) ? "aic_gemm_fp8" : "aic_gemm_bf16";
      add_kernel(run, kernel, OpClass::kGemm,
                 is_fp8(dtype) ? "vLLM fp8 linear (CUTLASS scaled_mm, per-tensor weight scale; the dynamic activation "
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
      add_kernel(run, "aic_prefill_vllm_flash_attn_fa3", OpClass::kAttentionPrefill,
                 "vLLM FlashAttention-3 causal prefill, no cached prefix, head_dim 128");
      const Json params = {{"batch", batch},       {"isl", isl}, {"num_heads", hq}, {"num_kv_heads", hkv},
                           {"head_dim", kAicHeadDim}, {"kv_dtype", std::string(dtype_name(kv))}};
      add_row(run, "aic_prefill_vllm_flash_attn_fa3",
              prefill_attention_op(static_cast<double>(batch), static_cast<double>(isl), static_cast<int>(hq),
                                   static_cast<int>(hkv), kAicHeadDim, kv),
              params, ms * kNsPerMs);
    }
    append(runs.take());
  }

  void vidur_all_reduce(CsvReader& csv) {
    Runs runs;
    int64_t other_topology = 0;
    int64_t row = -1;
    while (csv.next()) {
      ++row;
      const std::string node(csv.text("node"));
      const int64_t ranks = csv.integer("num_workers", 2);
      const int64_t elements = csv.integer("size_fp16_elements", 1);
      const double median = csv.positive("median_ms"), min = csv.positive("min_ms");
      if (node != "h100_dgx") {
        // H100 pairs over NVLink bridges are another topology than the NVSwitch node an H100 SXM
        // preset stands for.
        if (node != "h100_pairwise_nvlink") csv.fail("node", "must be h100_dgx or h100_pairwise_nvlink");
        ++other_topology;
        continue;
      }
      if (!wanted(csv.file(), "h100-sxm")) continue;
      PublishedRun& run = runs.get(node);
      if (run.rows.empty()) {
        run.info = published_info("h100_dgx",  // vidur names the node, not the device
                                  fmt::format("data/profiling/network/h100_dgx/all_reduce.csv (commit "
                                              "e26eb8f; copied as {})",
                                              csv.file()),
                                  "vidur, torch.distributed all_reduce (NCCL, CUDA graph)", "2024-05-14T00:00:00Z",
                                  kVidurSnapshot);
        run.gpu_preset = "h100-sxm";
        run.table = csv.file();
        add_kernel(run, "vidur_all_reduce", OpClass::kCollective,
                   "torch.distributed.all_reduce of a CUDA-graphed fp16 buffer, rank-0 time");
      }
      const double payload = 2.0 * static_cast<double>(elements);
      const Json params = {{"bytes", 2 * elements}, {"ranks", ranks}, {"src_row", row}};
      add_row(run, "vidur_all_reduce", all_reduce_op(payload, static_cast<int>(ranks)), params, median * kNsPerMs,
              min * kNsPerMs);
    }
    if (other_topology > 0) {
      out.notes.push_back(fmt::format("{}: {} h100_pairwise_nvlink row(s) not imported (NVLink-bridged pairs, not "
                                      "the NVSwitch node of an H100 SXM)",
                                      csv.file(), other_topology));
    }
    append(runs.take());
  }

  // Per (model, TP) shapes of Vidur's layers, from vidur_gemm_shapes_derived.csv.
  struct VidurShape {
    int64_t hidden = 0, head_dim = 0, heads = 0, kv_heads = 0, intermediate = 0;  // per GPU where split
    bool gated = true;
  };

  std::map<std::string, VidurShape> vidur_shapes(const std::string& dir) {
    const std::string path = (std::filesystem::path(dir) / "vidur_gemm_shapes_derived.csv").string();
    if (!std::filesystem::exists(path)) {
      throw ConfigError(fmt::format("vidur_mlp_block_ops_h100_a100.csv needs vidur_gemm_shapes_derived.csv (the "
                                    "layers' shapes) in the same folder: '{}' does not exist",
                                    path));
    }
    CsvReader csv(path, {"model", "tp", "op", "gemm_k", "n_head", "n_kv_head", "n_embd", "use_gated_mlp"});
    std::map<std::string, VidurShape> shapes;
    while (csv.next()) {
      const int64_t tp = csv.integer("tp", 1);
      VidurShape& s = shapes[fmt::format("{}|{}", csv.text("model"), tp)];
      s.hidden = csv.integer("n_embd", 1);
      const int64_t heads = csv.integer("n_head", 1), kv = csv.integer("n_kv_head", 1);
      if (heads % tp != 0) csv.fail("n_head", fmt::format("must be divisible by tp={}", tp));
      if (s.hidden % heads != 0) csv.fail("n_embd", fmt::format("must be divisible by n_head={}", heads));
      s.head_dim = s.hidden / heads;
      s.heads = heads / tp;
      s.kv_heads = kv >= tp ? (kv + tp - 1) / tp : 1;  // DESIGN §3: replicated when H_kv < tp
      s.gated = csv.text("use_gated_mlp") == "True";
      // The activation runs on the down projection's input: k of mlp_down_proj (ffn / TP).
      if (csv.text("op") == "mlp_down_proj") s.intermediate = csv.integer("gemm_k", 1);
    }
    return shapes;
  }

  void vidur_mlp(CsvReader& csv, const std::string& dir) {
    const std::map<std::string, VidurShape> shapes = vidur_shapes(dir);
    Runs runs;
    int64_t empty_cells = 0;
    while (csv.next()) {
      const std::string gpu(csv.text("gpu"));
      const char* preset = gpu == "h100" ? "h100-sxm" : gpu == "a100" ? "a100-80gb" : nullptr;
      if (preset == nullptr) csv.fail("gpu", "must be h100 or a100");
      const std::string model(csv.text("model"));
      const int64_t tp = csv.integer("tp", 1), tokens = csv.integer("num_tokens", 1);
      const int64_t source_row = csv.integer("source_row", 0);
      auto shape = shapes.find(fmt::format("{}|{}", model, tp));
      if (shape == shapes.end() || shape->second.intermediate == 0) {
        csv.fail("model", fmt::format("with tp={} has no shapes (mlp_down_proj row) in vidur_gemm_shapes_derived.csv", tp));
      }
      const VidurShape& s = shape->second;
      if (!wanted(csv.file(), preset)) continue;
      PublishedRun& run = runs.get(gpu);
      if (run.rows.empty()) {
        run.info = published_info(gpu,  // vidur names the GPU folder ("h100", "a100"), not the device
                                  fmt::format("data/profiling/compute/{}/<model>/mlp.csv (commit {}; "
                                              "copied as {})",
                                              gpu, gpu == "h100" ? "e26eb8f" : "bee57da", csv.file()),
                                  "vidur, sarathi-serve layers fp16", "2024-05-14T00:00:00Z", kVidurSnapshot);
        run.gpu_preset = preset;
        run.table = csv.file();
      }
      const double t = static_cast<double>(tokens);
      const Json base = {{"tokens", tokens}, {"src_model", model}, {"src_tp", tp}, {"src_row", source_row}};
      struct Op {
        const char* column;
        const char* kernel;
        StepOp op;
        Json shape;
      };
      const Op ops[] = {
          {"input_layernorm_median_ms", "vidur_input_layernorm", rms_norm_op(t, static_cast<double>(s.hidden)),
           {{"hidden", s.hidden}}},
          {"post_attention_layernorm_median_ms", "vidur_post_attention_layernorm",
           rms_norm_op(t, static_cast<double>(s.hidden)), {{"hidden", s.hidden}}},
          {"attn_rope_median_ms", "vidur_attn_rope",
           rope_op(t, static_cast<int>(s.heads), static_cast<int>(s.kv_heads), static_cast<int>(s.head_dim)),
           {{"num_heads", s.heads}, {"num_kv_heads", s.kv_heads}, {"head_dim", s.head_dim}}},
          {"mlp_act_median_ms", s.gated ? "vidur_mlp_act_mul" : "vidur_mlp_act",
           s.gated ? act_mul_op(t, static_cast<double>(s.intermediate)) : act_op(t, static_cast<double>(s.intermediate)),
           {{"intermediate", s.intermediate}}},
          {"add_median_ms", "vidur_add", residual_add_op(t, static_cast<double>(s.hidden)), {{"hidden", s.hidden}}}};
      for (const Op& o : ops) {
        if (csv.text(o.column).empty()) {  // the model has no such op (phi-2's parallel block)
          ++empty_cells;
          continue;
        }
        const double ms = csv.positive(o.column);
        add_kernel(run, o.kernel, OpClass::kElementwise,
                   fmt::format("Vidur (sarathi-serve, fp16) {} median, CUDA timer / Kineto", o.column));
        Json params = base;
        params.update(o.shape);
        add_row(run, o.kernel, o.op, params, ms * kNsPerMs);
      }
    }
    if (empty_cells > 0) {
      out.notes.push_back(fmt::format("{}: {} empty cell(s) skipped (ops the model does not have, e.g. phi-2's "
                                      "post-attention norm)",
                                      csv.file(), empty_cells));
    }
    append(runs.take());
  }

  void append(std::vector<PublishedRun> runs) {
    for (PublishedRun& r : runs) out.runs.push_back(std::move(r));
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
      case Kind::kVidurAllReduce: {
        CsvReader csv(path, {"node", "num_workers", "size_fp16_elements", "min_ms", "median_ms"});
        vidur_all_reduce(csv);
        break;
      }
      case Kind::kVidurMlp: {
        CsvReader csv(path, {"gpu", "model", "tp", "num_tokens", "source_row", "input_layernorm_median_ms",
                             "post_attention_layernorm_median_ms", "attn_rope_median_ms", "mlp_act_median_ms",
                             "add_median_ms"});
        vidur_mlp(csv, dir.empty() ? "." : dir);
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
  Reader r{options, out, {}};
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
  Reader r{options, out, {}};
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
