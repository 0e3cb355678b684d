// kvplan/plan/summary_percentile.h — one percentile of a run's latencies as sim::RunSummary keeps
// them (p50, p90, p95, p99 and the max): what the binding constraint's margins, the planner's knee
// chart and its Compare view read at the SLO's percentile.
//
//   std::optional<double> v = plan::summary_percentile(run.ttft_ms, slo.percentile);  // none for p75
#pragma once

#include <optional>

#include "kvplan/sim/metrics.h"

namespace kvplan::plan {

// Another percentile has no figure in the summary: none (the search's meets/fails verdict still
// uses the exact one, from every request).
inline std::optional<double> summary_percentile(const sim::Percentiles& p, double percentile) {
  if (percentile == 50) return p.p50;
  if (percentile == 90) return p.p90;
  if (percentile == 95) return p.p95;
  if (percentile == 99) return p.p99;
  if (percentile == 100) return p.max;
  return std::nullopt;
}

}  // namespace kvplan::plan
