// bench/serving_consistency.h — published runs whose own numbers rule out the closed-loop steady
// state kvplan's bench client simulates.
//
//   std::vector<ServingCase> cases = read_aiconfigurator_e2e(path);
//   mark_inconsistent_runs(cases);  // sets why_not on rows that contradict their own sweep
//
// The check uses measurements only (never a prediction), so it cannot favour kvplan's answer:
//   - Little's law on the row itself: with C users and zero think time, the mean number of
//     requests in decode is D = C · decode / (TTFT + decode), decode = (osl − 1) · TPOT.
//   - A decode step over more sequences of the same lengths is not faster (it reads the same
//     weights and more KV). So a row whose D is at least the concurrency Cs of a sibling run (same
//     engine, model, precision, parallelism and lengths; any engine version) cannot have a TPOT
//     below the sibling's. Versions differ in kernel speed, so only a TPOT below HALF the
//     sibling's is called a contradiction.
// Such a row did not measure what its columns say (requests failed or waited outside the engine,
// or the statistic covers a different set of requests); no batch limit reproduces both its TTFT
// and its TPOT, so kvplan reports it as not expressible with the numbers that show it.
#pragma once

#include <vector>

#include "serving_cases.h"

namespace kvplan::bench {

// Decode step time may not fall below this share of a sibling's with fewer sequences.
inline constexpr double kMinTpotRatioToSibling = 0.5;

// Mean requests in decode by Little's law (per engine instance); 0 when the row lacks numbers.
double requests_in_decode(const ServingCase& c);

// Sets why_not (with the numbers) on every expressible row that contradicts a sibling as above.
void mark_inconsistent_runs(std::vector<ServingCase>& cases);

}  // namespace kvplan::bench
