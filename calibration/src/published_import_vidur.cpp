// Vidur's published tables -> calibration runs (published_tables.h): the H100 DGX all-reduce
// table and the MLP-block elementwise ops (norms, RoPE, activation, residual add) in real model
// shapes. Facts about the source (commits, dates) are from data/measurements/README.md §2.
#include <filesystem>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/error.h"
#include "published_tables.h"

namespace kvplan::calibration::internal {

namespace {

using Json = nlohmann::json;

constexpr const char* kVidurSnapshot = "microsoft/vidur@7d47513363ec";

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

}  // namespace

void read_vidur_all_reduce(TableSink& sink, CsvReader& csv) {
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
    if (!sink.wanted(csv.file(), "h100-sxm")) continue;
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
    sink.out.notes.push_back(fmt::format("{}: {} h100_pairwise_nvlink row(s) not imported (NVLink-bridged pairs, not "
                                    "the NVSwitch node of an H100 SXM)",
                                    csv.file(), other_topology));
  }
  sink.append(runs.take());
}

void read_vidur_mlp(TableSink& sink, CsvReader& csv, const std::string& dir) {
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
    if (!sink.wanted(csv.file(), preset)) continue;
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
    sink.out.notes.push_back(fmt::format("{}: {} empty cell(s) skipped (ops the model does not have, e.g. phi-2's "
                                    "post-attention norm)",
                                    csv.file(), empty_cells));
  }
  sink.append(runs.take());
}

}  // namespace kvplan::calibration::internal
