// kvplan/calibration/run_calibration.h — `kvplan calibrate run`: measure this machine's GPU into a
// calibration store (CUDA builds only; implementation in src/run_calibration.cpp, target
// kvplan::calibration_gpu).
//
//   CalibrationOptions o;  o.grid = GridSize::kQuick;  o.out_path = "h200.sqlite";  o.resume = true;
//   int rc = run_calibration(o);   // 0 all shapes stored, 1 a device/CUPTI/store error, 3 no GPU
//
// Progress (shape i/N, kernel, elapsed, ETA) goes to stderr. The GPU's clocks are read (NVML, else
// nvidia-smi) before and after, never set.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kvplan/calibration/measurement.h"
#include "kvplan/calibration/runner.h"

namespace kvplan::calibration {

enum class GridSize {
  kQuick,  // about 6 minutes on an H200 (an estimate until timed on one)
  kFull,   // larger grid: more heads/dims/dtypes/block sizes, more GEMM models and sizes
};

struct CalibrationOptions {
  GridSize grid = GridSize::kQuick;
  bool resume = false;       // continue the newest unfinished run of this GPU and grid in out_path
  std::string out_path;      // SQLite file (created when missing)
  int device = 0;            // CUDA device index
  int reps = 0;              // timed repetitions per shape; 0 = grid default (quick 20, full 50)
  int warmup = 0;            // 0 = grid default (3)
  bool list_only = false;    // print the shape grid (kernel + params) and exit without timing
  std::string only_kernel;   // measure only shapes of this kernel id ("" = all)
};

// Opens (creates) the store at options.out_path, begins or resumes a run with this machine's
// RunInfo, measures the grid shape by shape (one transaction per shape), ends the run.
int run_calibration(const CalibrationOptions& options);

// The same measurement with the caller's sink and resume callback instead of a store (the store
// variant above is built on it). `run` receives the RunInfo first (mode, clocks before).
int run_calibration_to_sink(const CalibrationOptions& options, const std::function<void(const RunInfo&)>& begin,
                            const Sink& sink, const HasShape& has_shape);

}  // namespace kvplan::calibration
