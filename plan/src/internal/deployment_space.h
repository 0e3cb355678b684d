// plan/src/internal/deployment_space.h — which TP x PP splits `kvplan plan` searches on one GPU
// (deployment.h DeploymentSpace): the given lists or the defaults, within the GPU limit, and the
// base scenario's own deployment.
//
//   GpuSplits g = gpu_splits(search, "h100-sxm");   // DeepSeek-R1: tp1..tp8 pp1, then tp8 pp2
#pragma once

#include <string>
#include <vector>

#include "kvplan/plan/deployment.h"

namespace kvplan::plan::internal {

struct GpuSplits {
  int32_t max_gpus = 0;               // the limit applied on this GPU
  bool fitted = false;                // max_gpus was raised to the smallest split that fits
  std::vector<ReplicaSplit> splits;   // in search order; the scenario's own last when added
  bool added_scenario_split = false;  // the scenario's own split is outside the space, added
};

GpuSplits gpu_splits(const DeploymentSearch& search, const std::string& gpu);

}  // namespace kvplan::plan::internal
