// tests/gui/small_scenario.h — the small closed-loop scenario of tests/plan/capacity_test.cpp
// (fixed lengths, 60 s per probe) and a quick search request: a real capacity search in well under
// a second, for the planner tests that need one.
#pragma once

#include "kvplan/plan/simulate.h"

namespace kvplan::gui::testing {

inline plan::Scenario small_users(double slo_tpot_ms) {
  plan::Scenario s;
  s.workload.users = 4;
  s.workload.think_time_s = 1;
  s.workload.prompt_lengths = "fixed:256";
  s.workload.output_lengths = "fixed:64";
  s.workload.duration_s = 60;
  s.slo.tpot_ms = slo_tpot_ms;
  return s;
}

inline plan::CapacityRequest quick_search() {
  plan::CapacityRequest r;
  r.tolerance = 0.1;
  r.start = 4;
  return r;
}

}  // namespace kvplan::gui::testing
