// plan/src/internal/report_capacity.h — the capacity answer a report leads with: searched with
// plan::find_capacity on the report's base variant, taken as given (the planner's), or the reason
// the scenario has none. Used by make_report_input (report_input.cpp).
//
//   internal::add_capacity(in, report_base_scenario(file), std::nullopt);  // searches when it can
//   in.capacity ? in.capacity_summary->headline : in.no_capacity_why;
#pragma once

#include <optional>
#include <string>

#include "kvplan/plan/report.h"

namespace kvplan::plan::internal {

// Why `in` cannot have a capacity answer ("no SLO target given: ..."), or "" when it can be
// searched. Needs in.scenario and, when it simulates, in.simulation_config.
std::string why_no_capacity(const ReportInput& in, const Scenario& base);

// Sets in.capacity and in.capacity_summary from `known`, or from find_capacity(base) when the
// scenario can be searched; else sets in.no_capacity_why. A search that cannot run throws
// ConfigError "scenario 'NAME': capacity search: <why>".
void add_capacity(ReportInput& in, const Scenario& base, std::optional<CapacityAnswer> known);

}  // namespace kvplan::plan::internal
