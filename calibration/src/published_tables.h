// calibration/src/published_tables.h — what every reader of a published operator table shares
// (published_import.cpp: aiconfigurator's tables and the dispatch; published_import_vidur.cpp:
// Vidur's; published_import_amd.cpp: the Azure guide's MI300X microbenchmarks): the runs of one table, their provenance, kernels and rows, and where they go.
//
//   TableSink sink{options, out, {}};
//   read_vidur_all_reduce(sink, csv);   // appends its runs to out.runs, its notes to out.notes
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "csv_reader.h"
#include "kvplan/calibration/published_import.h"
#include "kvplan/core/step_ops.h"

namespace kvplan::calibration::internal {

inline constexpr double kNsPerMs = 1e6;

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

// A published run's provenance: no GPU UUID, driver or CUDA version is published, so the source
// table stands in for the UUID.
RunInfo published_info(std::string gpu_name, const std::string& source_table, std::string source_and_version,
                       std::string date_utc, const std::string& snapshot);
// Registers a kernel of the run once.
void add_kernel(PublishedRun& run, const std::string& kernel, OpClass c, const std::string& description);
// One row: the op's FLOPs and bytes, the params as canonical JSON (sorted keys, no spaces).
void add_row(PublishedRun& run, const std::string& kernel, const StepOp& op, const nlohmann::json& params,
             double median_ns, double min_ns = 0);

// Where the readers put their runs and notes, and which GPU they keep.
struct TableSink {
  const PublishedImportOptions& options;
  PublishedTables& out;
  std::map<std::string, int64_t> other_gpu_rows;  // table -> rows of GPUs not asked for

  // Whether a row of `preset` is imported (counted for the note when it is not).
  bool wanted(const std::string& table, const char* preset);
  void append(std::vector<PublishedRun> runs);
};

// Vidur's tables (published_import_vidur.cpp).
void read_vidur_all_reduce(TableSink& sink, CsvReader& csv);
// `dir` holds vidur_gemm_shapes_derived.csv, the layers' shapes.
void read_vidur_mlp(TableSink& sink, CsvReader& csv, const std::string& dir);

// The Azure AI benchmarking guide's MI300X rows (published_import_amd.cpp).
void read_azure_microbench(TableSink& sink, CsvReader& csv);
// aiconfigurator's MLA, Gated DeltaNet, Mamba-2, GLM-5 DSA and vLLM all-reduce tables
// (published_import_mixers.cpp).
void read_aic_mla_attention(TableSink& sink, CsvReader& csv);
void read_aic_mla_bmm(TableSink& sink, CsvReader& csv);
void read_aic_gdn(TableSink& sink, CsvReader& csv);
void read_aic_kda(TableSink& sink, CsvReader& csv);
void read_aic_mamba2(TableSink& sink, CsvReader& csv);
void read_aic_vllm_all_reduce(TableSink& sink, CsvReader& csv);
// SGLang's GLM-5 DSA kernel tables (README §7c): `topk_file` for the top-k file (it adds score_mode).
void read_aic_glm5_dsa(TableSink& sink, CsvReader& csv, bool topk_file);
// DeepSeek-V4's attention modules and hyper-connections, vLLM 0.24.0 (README §7b, §7f;
// published_import_dsv4.cpp).
void read_aic_dsv4(TableSink& sink, CsvReader& csv);
void read_aic_mhc(TableSink& sink, CsvReader& csv);
// MiniMax-M3's sparse attention module, vLLM 0.24.0 (README §7d; published_import_msa.cpp).
void read_aic_msa(TableSink& sink, CsvReader& csv);

}  // namespace kvplan::calibration::internal
