// bench/serving_groups.h — the groups whole-model validation reports runs by: architecture family,
// concurrency bucket, deployment kind.
//
//   print_table("by family", results, [](const ServingCase& c) { return model_family(c); });
#pragma once

#include <string>

#include "serving_cases.h"

namespace kvplan::bench {

// The architecture family of the run's model: "DSA" (MLA with DeepSeek sparse attention),
// "MLA + MoE" (DeepSeek-style), "MLA", "hybrid" (linear attention or Mamba layers), "MoE", "dense";
// "no preset" when kvplan has no preset for the model. Memoised per preset.
std::string model_family(const ServingCase& c);

// Concurrency per engine instance: c<=8, c16-32, c64-128, c>128.
std::string concurrency_bucket(const ServingCase& c);

}  // namespace kvplan::bench
