// kvplan/sim/output_files.h — a simulation's files: summary.json, requests.csv, timeseries.csv.
// Every file is written to <name>.partial and renamed when complete (core/atomic_file.h);
// summary.json is written last and is the completion marker.
//
//   clear_outputs(dir);
//   RequestCsvWriter requests(dir + "/requests.csv");      // streams rows as requests finish
//   hooks.on_request = [&](const RequestRecord& r) { requests.write(r); };
//   requests.commit();
//   write_timeseries_csv(dir + "/timeseries.csv", result.timeseries);
//   write_summary_json(dir + "/summary.json", config, result);
//
// Output is deterministic: fixed column order, integers as integers, times in ns (and ms with
// fixed precision for reading), no wall-clock timestamps.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvplan/core/atomic_file.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::sim {

// Streams to <path>.partial; commit() renames it to <path> (checked), keep_partial() leaves the
// rows written so far under the .partial name (an interrupted run).
class RequestCsvWriter {
 public:
  explicit RequestCsvWriter(const std::string& path);  // throws ConfigError if unwritable
  void write(const RequestRecord& r);
  void commit();
  void keep_partial();

 private:
  AtomicFile file_;
};

// Removes an earlier run's summary.json, requests.csv, timeseries.csv (and .partial files) from
// `dir`, the marker first. Other files are left alone.
void clear_outputs(const std::string& dir);
// `complete` false keeps the file as <path>.partial.
void write_timeseries_csv(const std::string& path, const std::vector<TimeSeriesRow>& rows, bool complete = true);
// `interrupted` non-empty: the run was stopped early; summary.json says "complete": false and why.
nlohmann::json summary_json(const SimulationConfig& config, const SimulationResult& result,
                            const std::string& interrupted = {});
void write_summary_json(const std::string& path, const SimulationConfig& config, const SimulationResult& result,
                        const std::string& interrupted = {});
nlohmann::json run_summary_json(const RunSummary& s);

}  // namespace kvplan::sim
