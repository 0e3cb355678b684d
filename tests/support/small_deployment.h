// tests/support/small_deployment.h — the base scenario of the deployment-search tests (plan/ and the
// planner's Deployments view): Llama-3.1-8B chat users with short fixed lengths and 20 s probes, so
// each capacity search takes milliseconds and a space of a few GPUs x TP 1, 2 searches in a second.
#pragma once

#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"

namespace kvplan::test {

inline plan::Scenario small_deployment_base() {
  plan::Scenario s;
  plan::set_values(s, {{"model", "llama-3.1-8b"},
                       {"max-model-len", "4096"},
                       {"users", "8"},
                       {"think-time", "2"},
                       {"prompt-lengths", "fixed:512"},
                       {"output-lengths", "fixed:64"},
                       {"duration", "20"},
                       {"seed", "3"},
                       {"slo-ttft-ms", "400"},
                       {"slo-tpot-ms", "40"}});
  return s;
}

}  // namespace kvplan::test
