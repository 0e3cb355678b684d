// bench/serving_public.h — kvplan's shipped defaults against the public serving runs
// (data/serving_measurements/public_runs.csv: other GPUs and sources; nothing is fitted on them).
//
//   std::vector<Result> pub = validate_public_runs("data");   // prints the tables, returns the runs
#pragma once

#include <string>
#include <vector>

#include "serving_errors.h"

namespace kvplan::bench {

// Prints every public row (measured, predicted, error; with the bench client's per-in-flight term
// too), the tables by source, engine and GPU, the rows not expressible and the sources. Returns the
// runs with the shipped defaults (refused ones as misses), for the goals.
std::vector<Result> validate_public_runs(const std::string& data);

}  // namespace kvplan::bench
