// kvplan/core/published_profiles.h — the PerfProfiles fitted from PUBLISHED operator timings
// (data/profiles/*.json, embedded in the binary; scripts/fit_published_profiles.sh regenerates
// them from data/measurements). A GPU without a kvplan calibration run can default to these.
//
//   const PerfProfile* p = published_profile("h100-sxm");   // nullptr: none published for this GPU
//   if (p != nullptr) cost = StepCostModel(model, gpu, scheme, parallel, *p);
//
// Classes fitted from published rows say "published (<source>, <engine version>, <GPU>)"; the
// others keep the datasheet defaults and say "datasheet" (docs/calibration.md §5).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kvplan/core/perf_profile.h"

namespace kvplan {

// The published profile of a GPU preset id (GpuSpec::id, e.g. "h100-sxm"; exact, lower case), or
// nullptr. Each GPU's file is parsed once, on the first use of that GPU; an embedded file that
// does not parse, or is not named after the gpu it profiles, is a build defect and throws
// ConfigError naming the file.
const PerfProfile* published_profile(std::string_view gpu_id);

// GPU preset ids that have a published profile, sorted.
std::vector<std::string> published_profile_gpus();

}  // namespace kvplan
