// plan/src/report_charts.cpp — report_svg_charts: the report's charts as SVG, built from a
// ReportInput: latency against load of the capacity search first, then memory and the simulation.
// HTML embeds them inline; the PDF paints the same documents.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "kvplan/plan/binding.h"
#include "kvplan/plan/report.h"
#include "kvplan/plan/summary_percentile.h"
#include "internal/report_svg.h"

namespace kvplan::plan {

namespace {

constexpr double kGiB = 1073741824.0;
constexpr size_t kMaxLinePoints = 400;  // time series are down-sampled to this many points

internal::BarChart memory_chart(const ReportInput& in) {
  internal::BarChart c;
  c.title = "Memory of one GPU per KV scheme";
  c.unit = "GiB";
  c.categories = in.scheme_labels;
  // Subtracted terms in first-seen order, then the KV cache, then what the engine leaves unused.
  std::vector<std::string> keys;
  std::map<std::string, std::string> labels;
  for (const MemoryPlan& p : in.plans) {
    for (const MemoryTerm& t : p.terms) {
      if (!t.subtracted || labels.count(t.key) > 0) continue;
      keys.push_back(t.key);
      labels[t.key] = t.label;
    }
  }
  for (const std::string& k : keys) {
    internal::Series s{labels[k], {}};
    for (const MemoryPlan& p : in.plans) s.values.push_back(static_cast<double>(p.term(k)) / kGiB);
    c.series.push_back(std::move(s));
  }
  internal::Series kv{"KV cache", {}}, headroom{"not given to the engine", {}};
  for (const MemoryPlan& p : in.plans) {
    kv.values.push_back(static_cast<double>(std::max<int64_t>(0, p.kv_budget_bytes)) / kGiB);
    headroom.values.push_back(static_cast<double>(std::max<int64_t>(0, p.gpu_total_bytes - p.engine_budget_bytes)) / kGiB);
  }
  c.series.push_back(std::move(kv));
  c.series.push_back(std::move(headroom));
  return c;
}

internal::LineChart users_chart(const ReportInput& in) {
  internal::LineChart c;
  c.title = "Requests that fit at once vs context length";
  c.x_label = "tokens per request (prompt + output)";
  c.y_label = "requests";
  c.log2_x = true;
  for (int64_t t : in.users_vs_context.context_tokens) c.x.push_back(static_cast<double>(t));
  for (size_t i = 0; i < in.users_vs_context.users.size(); ++i) {
    internal::Series s{in.scheme_labels[i], {}};
    for (int64_t u : in.users_vs_context.users[i]) s.values.push_back(static_cast<double>(u));
    c.series.push_back(std::move(s));
  }
  return c;
}

internal::BarChart percentile_chart(const std::string& title, const sim::Percentiles& p) {
  internal::BarChart c;
  c.title = title;
  c.unit = "ms";
  c.stacked = false;
  c.categories = {"mean", "p50", "p90", "p95", "p99", "max"};
  c.series = {{"simulated", {p.mean, p.p50, p.p90, p.p95, p.p99, p.max}}};
  return c;
}

internal::LineChart kv_usage_chart(const sim::SimulationResult& r) {
  internal::LineChart c;
  c.title = "KV cache use over time (share of capacity)";
  c.x_label = "simulated time (s)";
  c.y_label = "% of KV capacity";
  internal::Series tokens{"holding tokens", {}}, allocated{"allocated to live requests", {}};
  const size_t n = r.timeseries.size();
  const size_t stride = std::max<size_t>(1, (n + kMaxLinePoints - 1) / kMaxLinePoints);
  for (size_t i = 0; i < n; i += stride) {
    const sim::TimeSeriesRow& row = r.timeseries[i];
    double cap = row.kv_capacity_bytes > 0 ? static_cast<double>(row.kv_capacity_bytes) : 1.0;
    c.x.push_back(sim::ns_to_seconds(row.time_ns));
    tokens.values.push_back(100.0 * static_cast<double>(row.kv_token_bytes) / cap);
    allocated.values.push_back(100.0 * static_cast<double>(row.kv_allocated_bytes) / cap);
  }
  c.series = {std::move(tokens), std::move(allocated)};
  return c;
}

// One latency metric of every capacity probe against its load, at the SLO's percentile, with the
// target and the answer marked: the reader sees how close the answer runs to the target and how
// steeply latency rises past it.
internal::LineChart load_chart(const ReportInput& in, const char* name, const char* words,
                               sim::Percentiles sim::RunSummary::*metric, double target_ms) {
  const CapacityAnswer& a = *in.capacity;
  const double slo_pct = a.config.slo.percentile;
  // A percentile a RunSummary does not keep: plot p90 and draw no target (it would not compare).
  const bool kept = summary_percentile(sim::Percentiles{}, slo_pct).has_value();
  const double pct = kept ? slo_pct : 90;
  std::vector<sim::CapacityProbe> probes = a.search.probes;
  std::stable_sort(probes.begin(), probes.end(), [](const auto& l, const auto& r) { return l.load < r.load; });
  internal::LineChart c;
  c.title = fmt::format("p{:g} {} against load (capacity search)", pct, words);
  c.x_label = a.users ? "concurrent users (each point one simulated run)" : "requests per second (each point one simulated run)";
  c.y_label = "ms";
  c.x_from_zero = true;
  internal::Series s{fmt::format("p{:g} {}", pct, name), {}};
  double passing_max = 0;
  for (const sim::CapacityProbe& p : probes) {
    const double v = *summary_percentile(p.summary.*metric, pct);
    c.x.push_back(p.load);
    s.values.push_back(v);
    if (p.meets) passing_max = std::max(passing_max, v);
  }
  c.series.push_back(std::move(s));
  // The target in the palette's second colour, apart from the curve's first.
  if (target_ms > 0 && kept) c.y_lines.push_back({"SLO " + latency_words(target_ms), target_ms, 1});
  c.y_cap = target_ms > 0 ? 2 * target_ms : 2 * passing_max;
  c.x_mark = a.search.best;
  c.x_mark_label = "capacity: " + in.capacity_summary->headline;
  return c;
}

SvgChart bar(const internal::BarChart& c) {
  return {c.title, internal::render_bar_chart(c), internal::kChartWidth, internal::bar_chart_height(c)};
}
SvgChart line(const internal::LineChart& c) {
  return {c.title, internal::render_line_chart(c), internal::kChartWidth, internal::kLineChartHeight};
}

}  // namespace

std::vector<SvgChart> report_svg_charts(const ReportInput& in) {
  std::vector<SvgChart> out;
  // The capacity answer's charts first, as the answer leads the report.
  if (in.capacity && in.capacity_summary && !in.capacity->search.probes.empty()) {
    const sim::Slo& slo = in.capacity->config.slo;
    out.push_back(line(load_chart(in, "TTFT", "time to first token", &sim::RunSummary::ttft_ms, slo.ttft_ms)));
    out.push_back(line(load_chart(in, "TPOT", "time per output token", &sim::RunSummary::tpot_ms, slo.tpot_ms)));
    if (slo.e2e_ms > 0) {
      out.push_back(line(load_chart(in, "E2E", "end-to-end latency", &sim::RunSummary::e2e_ms, slo.e2e_ms)));
    }
  }
  out.push_back(bar(memory_chart(in)));
  if (!in.users_vs_context.context_tokens.empty()) out.push_back(line(users_chart(in)));
  if (in.simulation) {
    out.push_back(bar(percentile_chart("Time to first token (ms)", in.simulation->summary.ttft_ms)));
    out.push_back(bar(percentile_chart("Time per output token (ms)", in.simulation->summary.tpot_ms)));
    if (!in.simulation->timeseries.empty()) out.push_back(line(kv_usage_chart(*in.simulation)));
  }
  return out;
}

}  // namespace kvplan::plan
