// kvplan/plan/profile_option.h — the `profile` setting (`--profile` of `kvplan simulate` and
// `kvplan capacity`, engine.profile in a scenario file): a PerfProfile
// JSON (e.g. written by `kvplan calibrate fit --out`) or a calibration .sqlite, fitted on the fly
// (newest complete run), or one of the words
//   auto       the default (core/default_profile.h: published > transferred > datasheet)
//   published  this GPU's published profile (refused when none is shipped)
//   datasheet  the datasheet defaults
// A profile measured on another GPU than --gpu is transferred to it and its classes say
// "transferred (from <gpu>)".
//
//   PerfProfile p = load_profile_option("h100.sqlite", resolve_gpu("h200"));
//   std::string label = profile_option_label("h100.sqlite", p);   // for the outputs
#pragma once

#include <string>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/perf_profile.h"

namespace kvplan::plan {

// Throws ConfigError naming --profile, the file and what is wrong.
PerfProfile load_profile_option(const std::string& path, const GpuSpec& gpu);

// One line for the outputs: what the step times rest on ("measured profile from h100.sqlite ...").
std::string profile_option_label(const std::string& path, const PerfProfile& profile, const GpuSpec& gpu);

}  // namespace kvplan::plan
