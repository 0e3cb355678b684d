// kvplan/calibration/published_import.h — GPU operator timings published by others
// (data/measurements: NVIDIA's aiconfigurator tables measured inside vLLM, Vidur's profiles) read
// into calibration runs with their provenance, so that `kvplan calibrate fit` turns them into a
// PerfProfile labelled "published (<source>, <engine version>, <GPU>)", never "measured".
//
//   CalibrationStore db = CalibrationStore::open("h100-published.sqlite", OpenMode::kCreate);
//   PublishedImportResult r = import_published(db, "data/measurements", {.gpu = "h100-sxm"});
//
// Tables, recognised by file name (data/measurements/README.md has sources, units and caveats):
//   aiconfigurator_vllm_gemm_{h100_h200,a100_l40s}.csv            -> gemm (bf16, fp8 e4m3 per tensor)
//   aiconfigurator_vllm_decode_attention_{h100_h200,a100_l40s}.csv -> attention_decode
//   aiconfigurator_vllm_prefill_attention_h100_h200.csv            -> attention_prefill
//   vidur_h100_allreduce.csv (node h100_dgx only)                  -> collective
//   vidur_mlp_block_ops_h100_a100.csv + vidur_gemm_shapes_derived.csv -> elementwise (norms, RoPE,
//                                                                      activation, residual add)
//   azure_ai_benchmarking_guide_microbench.csv (MI300X rows)       -> gemm (fp8 hipBLASLt), elementwise
//                                                                      (BabelStream), collective (RCCL)
// One run per (table, GPU, engine version); RunInfo: mode "published", gpu_name the device the
// source names, host "published: <source>, <engine version>", gpu_uuid the source table (with its
// git blob), started_utc the date the table was published, git_commit the source snapshot.
// Each row: params_json with the shape (row_ops.h keys), FLOPs and bytes by row_ops.h (the
// formulas of step_ops.cpp), median_ns = the table's milliseconds · 1e6.
//
// Conventions applied: decode kv_len is the tokens attended per sequence; the vLLM 0.24.0
// collector's kv_len = step + 1 and the 0.14.0 collector's kv_len = step, and the importer checks
// the file's kv_len column against that (another version is refused until its collector is read).
// The H200 vLLM 0.19.x attention tables are known bad (README) and refused. head_dim is 128 for
// every aiconfigurator row kept (the README's filter). Malformed input throws ConfigError naming
// the file, the line, the field, the value and the rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/calibration/measurement.h"
#include "kvplan/calibration/store.h"

namespace kvplan::calibration {

struct PublishedRun {
  RunInfo info;
  std::string gpu_preset;            // kvplan GPU preset of the table's GPU, e.g. "h100-sxm"
  std::string table;                 // file name it was read from
  std::vector<KernelInfo> kernels;   // catalogue entries of its rows' kernels
  std::vector<Measurement> rows;
};

struct PublishedImportOptions {
  std::string gpu;  // a GPU preset id: only tables of that GPU; "" = every GPU
};

struct PublishedTables {
  std::vector<PublishedRun> runs;
  std::vector<std::string> tables;   // file names read
  std::vector<std::string> notes;    // rows left out on purpose, with why
};

// Every recognised table in `dir` (other files are ignored). Throws ConfigError when none is found.
PublishedTables read_published_tables(const std::string& dir, const PublishedImportOptions& options = {});

// One table; its kind comes from its file name (the names above). Throws ConfigError for an
// unrecognised name.
PublishedTables read_published_table(const std::string& path, const PublishedImportOptions& options = {});

struct PublishedImportResult {
  std::vector<int64_t> run_ids;
  int64_t rows = 0;
  std::vector<std::string> tables;
  std::vector<std::string> notes;
};

// Reads the tables and stores each run (complete) with its kernels and rows.
PublishedImportResult import_published(CalibrationStore& db, const std::string& dir,
                                       const PublishedImportOptions& options = {});

}  // namespace kvplan::calibration
