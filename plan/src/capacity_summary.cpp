#include "kvplan/plan/capacity_summary.h"

#include <cmath>

#include <fmt/format.h>

#include "kvplan/plan/cost.h"

namespace kvplan::plan {

std::string latency_words(double ms) {
  if (ms >= 1000) return fmt::format("{:g} s", std::round(ms / 10.0) / 100.0);
  if (ms >= 100) return fmt::format("{:.0f} ms", ms);
  return fmt::format("{:g} ms", std::round(ms * 10.0) / 10.0);
}

std::string slo_sentence(const sim::Slo& slo) {
  std::vector<std::string> parts;
  auto add = [&](const char* name, double target) {
    if (target > 0) parts.push_back(fmt::format("p{:g} {} ≤ {}", slo.percentile, name, latency_words(target)));
  };
  add("TTFT", slo.ttft_ms);
  add("TPOT", slo.tpot_ms);
  add("E2E", slo.e2e_ms);
  if (parts.empty()) return "";
  std::string out = "meet " + parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += (i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

namespace {

std::string margin_words(const LimitMargin& m) {
  const std::string pct = fmt::format("{:.0f}%", m.use() * 100);
  if (m.unit == "ms") return fmt::format("{} {} of {} ({})", m.label, latency_words(m.value), latency_words(m.bound), pct);
  if (m.limit == "kv_memory") return fmt::format("{} {} of the KV cache", m.label, pct);
  return fmt::format("{} {:g} of {:g} {} ({})", m.label, m.value, m.bound, m.unit, pct);
}

std::string band_words(const ProfileBand& b) {
  if (b.ttft_p90_rel_error <= 0 && b.tpot_p90_rel_error <= 0) return "error band not validated";
  return fmt::format("validation p90 error TTFT ±{:.0f}%, TPOT ±{:.0f}%", b.ttft_p90_rel_error * 100,
                     b.tpot_p90_rel_error * 100);
}

}  // namespace

CapacitySummary summarize_capacity(const CapacityAnswer& a) {
  CapacitySummary s;
  const sim::CapacitySearch& search = a.search;
  s.users = a.users;
  s.load = search.best;
  s.slo = slo_sentence(a.config.slo);
  if (search.best > 0) {
    s.headline = a.users ? fmt::format("{:g} concurrent user{}", search.best, search.best == 1 ? "" : "s")
                         : fmt::format("{:.3g} requests/s", search.best);
    if (search.unbounded) s.headline += " or more";
  } else if (search.probes.empty()) {
    s.headline = "No load fits";
  } else {
    s.headline = "No load meets the SLO";
  }
  // The binding limit first, with its value at the answer; the others as margins.
  const LimitMargin* binding = nullptr;
  for (const LimitMargin& m : a.binding.margins) {
    if (m.limit == a.binding.kind) binding = &m;
  }
  if (binding != nullptr) {
    s.binding = fmt::format("binding: {}", margin_words(*binding));
  } else {
    s.binding = fmt::format("binding: {} — {}", a.binding.kind, a.binding.why);
  }
  for (const LimitMargin& m : a.binding.margins) {
    if (&m != binding) s.margins.push_back(margin_words(m));
  }
  const CostAtLoad cost = capacity_cost(a);
  if (cost.usd_per_hour) {
    s.cost = fmt::format("${:.2f}/hour for {} GPU{}", *cost.usd_per_hour, cost.deployment.gpus, cost.deployment.gpus == 1 ? "" : "s");
    if (cost.usd_per_load_unit) {
      s.cost += fmt::format(", ${:.4f}/hour per {}", *cost.usd_per_load_unit, a.users ? "user" : "request/s");
    }
  } else {
    s.cost = "no price for this GPU (set one with --gpu-price)";
  }
  s.source_kind = a.source.kind;
  s.source = fmt::format("{}; {}", a.source.summary, band_words(a.source.band));
  s.warnings = a.warnings;
  if (s.source_kind == "datasheet") {
    s.warnings.push_back("step times come from the GPU's datasheet (no published or measured profile): latency is "
                         "an unvalidated estimate");
  }
  return s;
}

}  // namespace kvplan::plan
