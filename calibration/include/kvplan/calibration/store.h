// kvplan/calibration/store.h — calibration rows and their provenance in one SQLite file.
//
//   CalibrationStore db = CalibrationStore::open("h100.sqlite", OpenMode::kCreate);
//   int64_t run = db.begin_run(info);
//   if (!db.has_shape(run, m.kernel, m.params_json)) db.record_shape(run, {m});   // --resume
//   db.end_run(run, RunStatus::kComplete);
//
// One transaction per shape: a run that dies keeps every completed shape, and its status stays
// "running" (docs/calibration.md has the schema). sqlite3.h stays in store.cpp (pimpl). Every
// failure throws StoreError (a ConfigError) whose message names the file and what is wrong.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/calibration/measurement.h"
#include "kvplan/core/error.h"

namespace kvplan::calibration {

// A ConfigError so that the CLI reports it and exits with status 2.
class StoreError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

enum class RunStatus { kRunning, kComplete, kFailed };
std::string_view run_status_name(RunStatus s);  // "running", "complete", "failed"

enum class OpenMode {
  kCreate,    // create the file and schema when missing
  kExisting,  // the file must exist and be a kvplan calibration database
};

struct StoredRun {
  int64_t id = 0;
  RunInfo info;
  RunStatus status = RunStatus::kRunning;
  std::string finished_utc;   // "" while running
  std::string imported_from;  // "" when measured into this file; else "<file> run <id>"
  int64_t num_rows = 0;       // measurements of this run
};

struct KernelInfo {
  std::string kernel;    // id, e.g. "decode_paged"
  std::string op_class;  // PerfProfile class name, e.g. "attention_decode"
  std::string description;
};

// One stored row: the measurement and the run it belongs to.
struct StoredMeasurement {
  int64_t run_id = 0;
  Measurement m;
};

// Empty fields match everything.
struct MeasurementFilter {
  std::optional<int64_t> run_id;
  std::string kernel;
  std::string op_class;
};

// One fitted operator class (written by `kvplan calibrate fit`).
struct StoredFit {
  int64_t id = 0;            // assigned by record_fit
  std::string run_ids;       // runs the rows came from, e.g. "3" or "3,5"
  std::string op_class;
  double compute_e_max = 0, compute_half_size = 0;  // half size in FLOPs
  double memory_e_max = 0, memory_half_size = 0;    // half size in bytes
  double launch_overhead_ns = 0;
  double mape = 0;           // mean |predicted - measured| / measured
  double p90_rel_error = 0;  // 90th percentile of that ratio
  int64_t num_points = 0;
  std::string source;        // the profile label, e.g. "measured (h100-sxm run 3)"
  std::string note;
  std::string created_utc;
};

struct KernelRowCount {
  std::string kernel;
  std::string op_class;
  int64_t rows = 0;
};

// CUPTI kernel time / CUDA-event time over rows that have both (1.0 = perfect agreement).
struct AgreementStats {
  int64_t rows = 0;
  double min = 0, median = 0, max = 0;
  double within_5_percent = 0;  // fraction of rows with |ratio - 1| <= 0.05
};

struct StoreSummary {
  int schema_version = 0;
  std::vector<StoredRun> runs;
  std::vector<KernelRowCount> kernels;  // catalogue, with rows per kernel (all runs)
  AgreementStats agreement;
  std::vector<StoredFit> fits;
};

struct ImportResult {
  std::vector<int64_t> new_run_ids;    // in this file
  std::vector<int64_t> skipped_runs;   // ids in the other file already here (same GPU UUID, start, mode)
  int64_t rows = 0;                    // measurements copied
};

class CalibrationStore {
 public:
  // Schema version this kvplan writes; a file with a newer one is refused, never modified.
  static constexpr int kSchemaVersion = 1;

  static CalibrationStore open(const std::string& path, OpenMode mode);
  static CalibrationStore in_memory();  // tests

  CalibrationStore(CalibrationStore&&) noexcept;
  CalibrationStore& operator=(CalibrationStore&&) noexcept;
  ~CalibrationStore();

  const std::string& path() const;  // ":memory:" for in_memory()
  int schema_version() const;

  // Runs. begin_run stores `info` with status running and returns the new run id.
  int64_t begin_run(const RunInfo& info);
  // Marks a run complete or failed with the finished time (UTC, ISO 8601).
  void end_run(int64_t run_id, RunStatus status);
  // Sets a stopped run back to running (for --resume); returns false for an unknown id.
  bool reopen_run(int64_t run_id);
  std::vector<StoredRun> runs() const;
  std::optional<StoredRun> find_run(int64_t run_id) const;
  // The run or StoreError "unknown run id" listing the known ids.
  StoredRun run(int64_t run_id) const;

  // Kernel catalogue: insert or update the description. record_shape adds unknown kernels itself.
  void register_kernel(const KernelInfo& kernel);
  std::vector<KernelInfo> kernels() const;

  // All rows of one shape in ONE transaction: either all are stored or none. A row that repeats
  // (run, kernel, params_json) of a stored one fails the whole shape with StoreError.
  void record_shape(int64_t run_id, const std::vector<Measurement>& rows);
  bool has_shape(int64_t run_id, std::string_view kernel, std::string_view params_json) const;
  // Ordered by run, kernel, params_json.
  std::vector<StoredMeasurement> measurements(const MeasurementFilter& filter = {}) const;

  int64_t record_fit(const StoredFit& fit);
  // The fits of one `kvplan calibrate fit` in ONE transaction: either every class is stored or
  // none (a kill or an error midway leaves the file as it was). Returns how many were stored.
  int64_t record_fits(const std::vector<StoredFit>& fits);
  std::vector<StoredFit> fits() const;

  // Copies every run of `other_path` (an existing kvplan database) into this file as new runs,
  // with its rows and kernels; never overwrites. A run already here (same gpu_uuid, started_utc
  // and mode) is skipped. Fits are not copied (refit: `kvplan calibrate fit`).
  ImportResult import_database(const std::string& other_path);

  StoreSummary summary() const;

 private:
  struct Impl;
  explicit CalibrationStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Current UTC time, ISO 8601 with seconds ("2025-01-31T12:00:00Z").
std::string utc_now_iso8601();

}  // namespace kvplan::calibration
