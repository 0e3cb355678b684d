// cli/profile_option.h — `--profile FILE` of `kvplan simulate` and `kvplan capacity`: a PerfProfile
// JSON (e.g. written by `kvplan calibrate fit --out`) or a calibration .sqlite, fitted on the fly
// (newest complete run). A profile measured on another GPU than --gpu is transferred to it and
// its classes say "transferred (from <gpu>)".
//
//   PerfProfile p = load_profile_option("h100.sqlite", resolve_gpu("h200"));
#pragma once

#include <string>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/perf_profile.h"

namespace kvplan::cli {

// Throws ConfigError naming --profile, the file and what is wrong.
PerfProfile load_profile_option(const std::string& path, const GpuSpec& gpu);

}  // namespace kvplan::cli
