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

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

Percentiles summarize_values(std::vector<double> values) {
  Percentiles out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  out.mean = sum / static_cast<double>(values.size());
  auto at = [&](double p) {
    double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
    size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
    return values[std::min(index, values.size() - 1)];
  };
  out.p50 = at(50);
  out.p90 = at(90);
  out.p95 = at(95);
  out.p99 = at(99);
  out.max = values.back();
  return out;
}

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
  s.queue_ms = summarize_values(queue_ms_);
  s.ttft_ms = summarize_values(ttft_ms_);
  s.tpot_ms = summarize_values(tpot_ms_);
  s.e2e_ms = summarize_values(e2e_ms_);
  s.max_gap_ms = summarize_values(gap_ms_);
  s.meets_slo = rejected_ == 0 && s.finished > 0;
  if (slo_.ttft_ms > 0 && percentile(ttft_ms_, slo_.percentile) > slo_.ttft_ms) s.meets_slo = false;
  if (slo_.tpot_ms > 0 && percentile(tpot_ms_, slo_.percentile) > slo_.tpot_ms) s.meets_slo = false;
  if (slo_.e2e_ms > 0 && percentile(e2e_ms_, slo_.percentile) > slo_.e2e_ms) s.meets_slo = false;
  return s;
}

}  // namespace kvplan::sim
