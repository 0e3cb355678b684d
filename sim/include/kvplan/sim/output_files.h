// kvplan/sim/output_files.h — a simulation's files: summary.json, requests.csv, timeseries.csv.
//
//   RequestCsvWriter requests(dir + "/requests.csv");      // streams rows as requests finish
//   hooks.on_request = [&](const RequestRecord& r) { requests.write(r); };
//   write_summary_json(dir + "/summary.json", config, result);
//   write_timeseries_csv(dir + "/timeseries.csv", result.timeseries);
//
// Output is deterministic: fixed column order, integers as integers, times in ns (and ms with
// fixed precision for reading), no wall-clock timestamps.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvplan/sim/simulation.h"

namespace kvplan::sim {

class RequestCsvWriter {
 public:
  explicit RequestCsvWriter(const std::string& path);  // throws ConfigError if unwritable
  void write(const RequestRecord& r);

 private:
  std::ofstream out_;
  std::string path_;
};

void write_timeseries_csv(const std::string& path, const std::vector<TimeSeriesRow>& rows);
nlohmann::json summary_json(const SimulationConfig& config, const SimulationResult& result);
void write_summary_json(const std::string& path, const SimulationConfig& config, const SimulationResult& result);
nlohmann::json run_summary_json(const RunSummary& s);

}  // namespace kvplan::sim
