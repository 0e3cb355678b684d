// bench/serving_public.h — kvplan's shipped defaults against the public serving runs
// (data/serving_measurements/public_runs.csv: other GPUs and sources; nothing is fitted on them).
//
//   std::vector<Result> pub = validate_public_runs("data");   // prints the tables, returns the runs
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "serving_errors.h"

namespace kvplan::bench {

// Prints every public row (measured, predicted, error; with the bench client's per-in-flight term
// too), the tables by source, engine and GPU, the rows not expressible and the sources. Returns the
// runs with the shipped defaults (refused ones as misses), for the goals.
std::vector<Result> validate_public_runs(const std::string& data);

// --public GPU: only the public runs on one GPU preset (e.g. mi300x, which has no e2e set of its
// own), with the default step-time source or --profile; per row, per source and engine, and pooled.
// Nothing is fitted on them, so every run is out of sample. With `write` the pooled p90 |error| of
// mean TTFT and TPOT becomes data/profiles/<GPU>.json's band when at least kMinPublicBandRuns runs
// from at least two sources could be simulated (else the profile stays "not validated", said so).
// Returns the exit status.
inline constexpr size_t kMinPublicBandRuns = 20;
int validate_public_gpu(const std::string& data, const std::string& gpu, bool write);

}  // namespace kvplan::bench
