// plan/src/report_capacity.cpp — the capacity answer of a report (internal/report_capacity.h): the
// question kvplan exists to answer, so a report searches for it whenever the scenario allows and
// otherwise says on its first page why it could not.
#include "internal/report_capacity.h"

#include "kvplan/plan/simulate.h"

namespace kvplan::plan::internal {

std::string why_no_capacity(const ReportInput& in, const Scenario& base) {
  const bool slo = base.slo.ttft_ms > 0 || base.slo.tpot_ms > 0 || base.slo.e2e_ms > 0;
  // A report simulates only when the file has a workload section (docs/reports.md); without one the
  // workload would be the default preset, which the scenario never asked about.
  const bool workload = in.scenario.simulate;
  const char* set_slo = "set slo.ttft_ms, slo.tpot_ms or slo.e2e_ms for the capacity answer";
  const char* set_workload = "add a workload section (users, or a rate or trace) for the capacity answer";
  if (!slo && !workload) {
    return std::string("no SLO target and no workload given: memory answer only (") + set_slo + ", and " + set_workload + ")";
  }
  if (!slo) return std::string("no SLO target given: memory answer and one simulation only (") + set_slo + ")";
  if (!workload) return std::string("no workload given: memory answer only (") + set_workload + ")";
  if (in.simulation_config && in.simulation_config->workload.kind == sim::WorkloadKind::kList) {
    return "the workload is a fixed list of requests: it has no load to search, memory answer and one simulation only";
  }
  return "";
}

void add_capacity(ReportInput& in, const Scenario& base, std::optional<CapacityAnswer> known) {
  if (!known) {
    in.no_capacity_why = why_no_capacity(in, base);
    if (!in.no_capacity_why.empty()) return;
    known = find_capacity(base);
  }
  in.capacity_summary = summarize_capacity(*known);
  in.capacity = std::move(known);
}

}  // namespace kvplan::plan::internal
