// kvplan/calibration/measurement.h — what a calibration run produces: the run's provenance and one
// row per (kernel, exact parameters). Shared by the runner (which measures), the store (SQLite) and
// the fitter.
//
//   RunInfo run = describe_this_machine();            // runner: GPU, driver, CUDA, clocks seen...
//   Measurement m{.kernel = "decode_paged", .op_class = "attention_decode", .params_json = R"({"B":1,...})"};
//   sink.record_shape(run_id, {m});                    // one transaction per shape
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvplan::calibration {

// Provenance of one calibration run. Everything is read from the machine, never set.
struct RunInfo {
  std::string gpu_name;
  std::string gpu_uuid;
  std::string driver_version;   // e.g. "580.159.04"
  std::string cuda_version;     // runtime, e.g. "13.0"
  std::string cupti_version;    // CUPTI API version, e.g. "130000"
  std::string clocks_seen;      // JSON text: SM / memory clocks read before and after, never changed
  std::string kvplan_version;
  std::string git_commit;
  std::string host;
  std::string started_utc;      // ISO 8601
  std::string mode;             // "quick", "full", "mock"
  int num_sms = 0;
  int64_t memory_bytes = 0;
};

// One shape of one kernel, timed n times.
struct Measurement {
  std::string kernel;       // kernel id in the catalogue, e.g. "decode_paged", "gemm_bf16", "copy_d2d"
  std::string op_class;     // PerfProfile operator class it calibrates, e.g. "attention_decode", "gemm"
  std::string params_json;  // exact parameters, canonical JSON (sorted keys, no spaces)
  int n = 0;                // timed repetitions
  double min_ns = 0, median_ns = 0, p90_ns = 0, mean_ns = 0;  // CUPTI kernel durations
  double bytes = 0;         // computed from the shapes (each input read once, each output written once)
  double flops = 0;
  double event_median_ns = 0;   // CUDA-event time of the same repetitions (cross-check)
  double cupti_event_ratio = 0; // median_ns / event_median_ns (1.0 = perfect agreement)
};

}  // namespace kvplan::calibration
