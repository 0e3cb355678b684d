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

void MetricsCollector::exclude(int64_t warmup, int64_t cooldown) {
  warmup_ = std::max<int64_t>(0, warmup);
  cooldown_ = std::max<int64_t>(0, cooldown);
}

void MetricsCollector::record(const RequestRecord& r) {
  Row row;
  row.queue_ms = ns_to_ms(r.queue_ns());
  row.ttft_ms = ns_to_ms(r.ttft_ns());
  row.tpot_ms = r.tpot_ns() * 1e-6;
  row.e2e_ms = ns_to_ms(r.e2e_ns());
  row.gap_ms = ns_to_ms(r.max_gap_ns);
  row.arrival_ns = r.arrival_ns;
  row.finish_ns = r.finish_ns;
  row.prompt_tokens = r.prompt_tokens;
  row.output_tokens = r.output_tokens;
  row.preemptions = r.preemptions;
  row.good = slo_.request_meets(r);
  rows_.push_back(row);
}

RunSummary MetricsCollector::summarize(int64_t unfinished, double prefix_hit_rate) const {
  RunSummary s;
  const int64_t n = static_cast<int64_t>(rows_.size());
  s.finished = n;
  s.unfinished = unfinished;
  s.rejected = rejected_;
  s.prefix_hit_rate = prefix_hit_rate;
  // Finish order: record order is already by finish time except where a policy reports a request
  // after its last token (static batching), so rank by finish time, keeping record order on ties.
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  if (warmup_ > 0 || cooldown_ > 0) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return rows_[static_cast<size_t>(a)].finish_ns < rows_[static_cast<size_t>(b)].finish_ns;
    });
  }
  const int64_t first = std::min(warmup_, n);
  const int64_t last = n - std::min(cooldown_, n - first);  // measured: order[first, last)
  s.warmup_excluded = first;
  s.cooldown_excluded = n - last;
  s.measured = last - first;

  std::vector<double> queue, ttft, tpot, e2e, gap;
  for (auto* v : {&queue, &ttft, &tpot, &e2e, &gap}) v->reserve(static_cast<size_t>(s.measured));
  int64_t good = 0, prompt_tokens = 0, output_tokens = 0;
  TimeNs first_arrival_ns = kNever, last_finish_ns = 0;
  for (int64_t k = first; k < last; ++k) {
    const Row& r = rows_[static_cast<size_t>(order[static_cast<size_t>(k)])];
    queue.push_back(r.queue_ms);
    ttft.push_back(r.ttft_ms);
    tpot.push_back(r.tpot_ms);
    e2e.push_back(r.e2e_ms);
    gap.push_back(r.gap_ms);
    if (r.good) ++good;
    s.preemptions += r.preemptions;
    prompt_tokens += r.prompt_tokens;
    output_tokens += r.output_tokens;
    first_arrival_ns = std::min(first_arrival_ns, r.arrival_ns);
    last_finish_ns = std::max(last_finish_ns, r.finish_ns);
  }
  // With a warm-up the window opens at the last warm-up finish: from then on the measured
  // requests are the only ones finishing, so count / window is their rate.
  const TimeNs window_start_ns =
      first > 0 ? rows_[static_cast<size_t>(order[static_cast<size_t>(first - 1)])].finish_ns : first_arrival_ns;
  if (s.measured > 0 && last_finish_ns > window_start_ns) {
    s.duration_s = ns_to_seconds(last_finish_ns - window_start_ns);
    s.requests_per_s = static_cast<double>(s.measured) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(output_tokens) / s.duration_s;
    s.total_tokens_per_s = static_cast<double>(output_tokens + prompt_tokens) / s.duration_s;
    s.goodput_requests_per_s = static_cast<double>(good) / s.duration_s;
  }
  s.slo_attainment = s.measured > 0 ? static_cast<double>(good) / static_cast<double>(s.measured) : 0;
  // Each metric is sorted once: its percentiles and its SLO check read the same sorted copy.
  std::sort(ttft.begin(), ttft.end());
  std::sort(tpot.begin(), tpot.end());
  std::sort(e2e.begin(), e2e.end());
  s.queue_ms = summarize_values(std::move(queue));
  s.ttft_ms = summarize_sorted(ttft);
  s.tpot_ms = summarize_sorted(tpot);
  s.e2e_ms = summarize_sorted(e2e);
  s.max_gap_ms = summarize_values(std::move(gap));
  s.meets_slo = rejected_ == 0 && s.measured > 0;
  if (slo_.ttft_ms > 0 && nearest_rank(ttft, slo_.percentile) > slo_.ttft_ms) s.meets_slo = false;
  if (slo_.tpot_ms > 0 && nearest_rank(tpot, slo_.percentile) > slo_.tpot_ms) s.meets_slo = false;
  if (slo_.e2e_ms > 0 && nearest_rank(e2e, slo_.percentile) > slo_.e2e_ms) s.meets_slo = false;
  return s;
}

}  // namespace kvplan::sim
