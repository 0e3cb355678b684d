#include "kvplan/sim/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kvplan::sim {

bool Slo::request_meets(const RequestRecord& r) const {
  if (ttft_ms > 0 && ns_to_ms(r.ttft_ns()) > ttft_ms) return false;
  if (tpot_ms > 0 && r.tpot_ns() * 1e-6 > tpot_ms) return false;
  if (e2e_ms > 0 && ns_to_ms(r.e2e_ns()) > e2e_ms) return false;
  return true;
}

std::string Slo::describe() const {
  if (!any()) return "none";
  std::string out;
  auto add = [&](const char* name, double v) {
    if (v <= 0) return;
    if (!out.empty()) out += ", ";
    out += fmt::format("p{:g} {} <= {:g} ms", percentile, name, v);
  };
  add("TTFT", ttft_ms);
  add("TPOT", tpot_ms);
  add("E2E", e2e_ms);
  return out;
}

namespace {

// Nearest rank on ascending values: the smallest value with at least p% of the values at or below it.
double nearest_rank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

Percentiles summarize_sorted(const std::vector<double>& sorted) {
  Percentiles out;
  if (sorted.empty()) return out;
  double sum = 0;
  for (double v : sorted) sum += v;
  out.mean = sum / static_cast<double>(sorted.size());
  out.p50 = nearest_rank(sorted, 50);
  out.p90 = nearest_rank(sorted, 90);
  out.p95 = nearest_rank(sorted, 95);
  out.p99 = nearest_rank(sorted, 99);
  out.max = sorted.back();
  return out;
}

std::vector<double> sorted_copy(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values;
}

}  // namespace

double percentile(std::vector<double> values, double p) { return nearest_rank(sorted_copy(std::move(values)), p); }

Percentiles summarize_values(std::vector<double> values) { return summarize_sorted(sorted_copy(std::move(values))); }

void MetricsCollector::record(const RequestRecord& r) {
  queue_ms_.push_back(ns_to_ms(r.queue_ns()));
  ttft_ms_.push_back(ns_to_ms(r.ttft_ns()));
  tpot_ms_.push_back(r.tpot_ns() * 1e-6);
  e2e_ms_.push_back(ns_to_ms(r.e2e_ns()));
  gap_ms_.push_back(ns_to_ms(r.max_gap_ns));
  if (slo_.request_meets(r)) ++good_;
  preemptions_ += r.preemptions;
  prompt_tokens_ += r.prompt_tokens;
  output_tokens_ += r.output_tokens;
  first_arrival_ns_ = std::min(first_arrival_ns_, r.arrival_ns);
  last_finish_ns_ = std::max(last_finish_ns_, r.finish_ns);
}

RunSummary MetricsCollector::summarize(int64_t unfinished, double prefix_hit_rate) const {
  RunSummary s;
  s.finished = static_cast<int64_t>(ttft_ms_.size());
  s.unfinished = unfinished;
  s.rejected = rejected_;
  s.preemptions = preemptions_;
  s.prefix_hit_rate = prefix_hit_rate;
  if (s.finished > 0 && last_finish_ns_ > first_arrival_ns_) {
    s.duration_s = ns_to_seconds(last_finish_ns_ - first_arrival_ns_);
    s.requests_per_s = static_cast<double>(s.finished) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(output_tokens_) / s.duration_s;
    s.total_tokens_per_s = static_cast<double>(output_tokens_ + prompt_tokens_) / s.duration_s;
    s.goodput_requests_per_s = static_cast<double>(good_) / s.duration_s;
  }
  s.slo_attainment = s.finished > 0 ? static_cast<double>(good_) / static_cast<double>(s.finished) : 0;
  // Each metric is sorted once: its percentiles and its SLO check read the same sorted copy.
  const std::vector<double> ttft = sorted_copy(ttft_ms_);
  const std::vector<double> tpot = sorted_copy(tpot_ms_);
  const std::vector<double> e2e = sorted_copy(e2e_ms_);
  s.queue_ms = summarize_values(queue_ms_);
  s.ttft_ms = summarize_sorted(ttft);
  s.tpot_ms = summarize_sorted(tpot);
  s.e2e_ms = summarize_sorted(e2e);
  s.max_gap_ms = summarize_values(gap_ms_);
  s.meets_slo = rejected_ == 0 && s.finished > 0;
  if (slo_.ttft_ms > 0 && nearest_rank(ttft, slo_.percentile) > slo_.ttft_ms) s.meets_slo = false;
  if (slo_.tpot_ms > 0 && nearest_rank(tpot, slo_.percentile) > slo_.tpot_ms) s.meets_slo = false;
  if (slo_.e2e_ms > 0 && nearest_rank(e2e, slo_.percentile) > slo_.e2e_ms) s.meets_slo = false;
  return s;
}

}  // namespace kvplan::sim
