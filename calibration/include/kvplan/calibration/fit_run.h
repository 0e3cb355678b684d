// kvplan/calibration/fit_run.h — fit one stored run: pick the run, find its GPU preset, fit.
//
//   CalibrationStore db = CalibrationStore::open("h100.sqlite", OpenMode::kExisting);
//   RunFit f = fit_run(db, std::nullopt);        // latest complete run, GPU matched from its name
//   record_fits(db, f);                          // `kvplan calibrate fit` keeps them in the file
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvplan/calibration/fitter.h"
#include "kvplan/calibration/store.h"
#include "kvplan/core/gpu_spec.h"

namespace kvplan::calibration {

struct RunFit {
  StoredRun run;
  GpuSpec gpu;        // preset the efficiencies are relative to
  std::string label;  // "h100-sxm run 3" ("MOCK h100-sxm run 3" for a mock run)
  FitReport report;
};

// run_id empty: the newest complete run (StoreError when the file has none). gpu_id empty: the
// preset matched from the run's GPU name (ConfigError asking for a GPU id when none matches).
RunFit fit_run(const CalibrationStore& store, std::optional<int64_t> run_id, std::string_view gpu_id = "",
               const FitOptions& options = {});

// Stores one row per fitted class in the `fits` table; returns how many.
int64_t record_fits(CalibrationStore& store, const RunFit& fit);

}  // namespace kvplan::calibration
