// kvplan/calibration/fit_run.h — fit stored runs: pick the runs, find their GPU preset, label
// each class by where its rows come from, fit.
//
//   CalibrationStore db = CalibrationStore::open("h100.sqlite", OpenMode::kExisting);
//   RunFit f = fit_run(db, std::nullopt);        // latest complete run, GPU matched from its name
//   RunFit p = fit_runs(db, {}, "h100-sxm");     // every complete run of the file, pooled
//   record_fits(db, f);                          // `kvplan calibrate fit` keeps them in the file
//
// Labels: a class fitted from kvplan's own runs is "measured (<gpu> run <id>)" ("MOCK ..." for a
// mock run); from published runs (mode "published", published_import.h) it is
// "published (<source>, <engine version>, <GPU the source names>)" — the run's host after
// "published: ", then its GPU name; rows of several published runs join their parts with "; ".
// One class never mixes published and measured rows (ConfigError: fit them separately).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/calibration/fitter.h"
#include "kvplan/calibration/store.h"
#include "kvplan/core/gpu_spec.h"

namespace kvplan::calibration {

struct RunFit {
  StoredRun run;                 // the (first) run fitted
  std::vector<StoredRun> runs;   // every run fitted, in id order
  GpuSpec gpu;                   // preset the efficiencies are relative to
  std::string label;             // "h100-sxm run 3", "h100-sxm runs 1,2,5" ("MOCK ..." for a mock run)
  std::map<OpClass, std::string> class_runs;  // run ids each fitted class's rows come from, e.g. "1,2"
  FitReport report;
};

// run_id empty: the newest complete run (StoreError when the file has none). gpu_id empty: the
// preset matched from the run's GPU name (ConfigError asking for a GPU id when none matches).
RunFit fit_run(const CalibrationStore& store, std::optional<int64_t> run_id, std::string_view gpu_id = "",
               const FitOptions& options = {});

// Several runs fitted together (their rows pooled per class). run_ids empty: every complete run of
// the file. Without gpu_id every run's GPU must match the same preset.
RunFit fit_runs(const CalibrationStore& store, const std::vector<int64_t>& run_ids, std::string_view gpu_id = "",
                const FitOptions& options = {});

// The label of one run's rows, e.g. "published (aiconfigurator, vLLM 0.24.0, NVIDIA H100 80GB HBM3)"
// or "measured (h100-sxm run 3)".
std::string run_source_label(const StoredRun& run, const GpuSpec& gpu);

// Stores one row per fitted class in the `fits` table; returns how many.
int64_t record_fits(CalibrationStore& store, const RunFit& fit);

}  // namespace kvplan::calibration
