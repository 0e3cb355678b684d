// plan/src/binding.cpp — the binding constraint of a capacity answer and the margins of the other
// limits (binding.h).
#include "kvplan/plan/binding.h"

#include <optional>

#include <fmt/format.h>

#include "kvplan/plan/summary_percentile.h"
#include "kvplan/sim/metrics.h"

namespace kvplan::plan {

namespace {

struct Target {
  const char* kind;   // "ttft"
  const char* label;  // "TTFT"
  double target_ms;
  const sim::Percentiles sim::RunSummary::*metric;
};

std::vector<Target> targets(const sim::Slo& slo) {
  std::vector<Target> out;
  if (slo.ttft_ms > 0) out.push_back({"ttft", "TTFT", slo.ttft_ms, &sim::RunSummary::ttft_ms});
  if (slo.tpot_ms > 0) out.push_back({"tpot", "TPOT", slo.tpot_ms, &sim::RunSummary::tpot_ms});
  if (slo.e2e_ms > 0) out.push_back({"e2e", "E2E", slo.e2e_ms, &sim::RunSummary::e2e_ms});
  return out;
}

std::string load_text(double load, bool users) {
  return users ? fmt::format("{:g} users", load) : fmt::format("{:g} req/s", load);
}

std::string limits_text(const sim::EngineLimitUse& l) {
  return fmt::format("{:.0f}% of steps held back by KV memory, {:.0f}% at max_num_seqs", l.kv_limited_share() * 100,
                     l.seq_limited_share() * 100);
}

}  // namespace

std::string LimitMargin::text() const {
  if (unit == "ms") return fmt::format("{} {:.1f} ms of {:g} ms = {:.0f}%", label, value, bound, use() * 100);
  if (limit == "kv_memory") return fmt::format("KV memory peak {:.1f}% of capacity", value * 100);
  return fmt::format("running sequences peak {:g} of {:g} max_num_seqs = {:.0f}%", value, bound, use() * 100);
}

BindingConstraint binding_constraint(const sim::Slo& slo, const sim::CapacitySearch& search, bool users,
                                     const MemoryPlan& plan) {
  BindingConstraint b;
  if (!plan.fits && search.probes.empty()) {
    const std::string problem = plan.problems.empty() ? std::string("no KV budget") : plan.problems.front();
    if (problem.rfind("one request of max_model_len", 0) == 0) {
      // The weights fit; the context length the engine must guarantee does not (vLLM refuses to
      // start: "max seq len ... is larger than the maximum number of tokens that can be stored in
      // KV cache"). Llama-4-Scout's 10M-token default on 4 x H100 is one.
      b.kind = "max_model_len";
      b.why = "max_model_len does not fit: " + problem + "; lower --max-model-len";
    } else {
      b.kind = "weights";
      b.why = "weights do not fit: " + problem;
    }
    return b;
  }
  // Margins at the answer.
  if (search.best > 0) {
    const sim::RunSummary& s = search.at_best;
    for (const Target& t : targets(slo)) {
      if (auto v = summary_percentile(s.*t.metric, slo.percentile)) {
        b.margins.push_back({t.kind, fmt::format("p{:g} {}", slo.percentile, t.label), *v, t.target_ms, "ms"});
      }
    }
    b.margins.push_back({"kv_memory", "KV memory peak", s.limits.peak_kv_used, 1.0, "share of KV capacity"});
    b.margins.push_back({"max_num_seqs", "running sequences peak", static_cast<double>(s.limits.peak_running),
                         static_cast<double>(s.limits.max_num_seqs), "sequences"});
  }
  if (search.unbounded) {
    b.kind = "none";
    b.why = fmt::format("every load met the SLO up to the search limit ({})", load_text(search.best, users));
    return b;
  }
  const sim::CapacityProbe* failing = nullptr;
  for (const sim::CapacityProbe& p : search.probes) {
    if (!p.meets && p.load == search.first_failing) failing = &p;
  }
  if (failing == nullptr) {
    b.kind = "none";
    b.why = "no failing load was simulated";
    return b;
  }
  const sim::RunSummary& f = failing->summary;
  const std::string at = "at " + load_text(failing->load, users);
  const std::string passing = search.best > 0 ? fmt::format("; at {}: {}, {} preemptions", load_text(search.best, users),
                                                            limits_text(search.at_best.limits), search.at_best.preemptions)
                                              : std::string();
  // Which latency targets fail there, and by how much (worst first).
  std::string worst_kind, worst_text;
  double worst = 0;
  bool queueing_fails = false;  // TTFT or E2E: what a request kept waiting shows first
  for (const Target& t : targets(slo)) {
    auto v = summary_percentile(f.*t.metric, slo.percentile);
    if (!v || *v <= t.target_ms) continue;
    if (std::string(t.kind) != "tpot") queueing_fails = true;
    if (*v / t.target_ms > worst) {
      worst = *v / t.target_ms;
      worst_kind = t.kind;
      worst_text = fmt::format("p{:g} {} {:.1f} ms > {:g} ms", slo.percentile, t.label, *v, t.target_ms);
    }
  }
  if (f.rejected > 0) {
    b.kind = "rejected";
    b.why = fmt::format("{}: {} requests longer than max_model_len were rejected", at, f.rejected);
    return b;
  }
  const sim::EngineLimitUse& l = f.limits;
  const bool held_back = queueing_fails || f.unfinished > 0;
  // Preemptions slow every token of the preempted requests (recompute or swap): more of them than
  // at the best passing load make KV bind whichever target fails. KV kept out of admission, or the
  // sequence limit, only delays first tokens.
  const int64_t preemptions_passing = search.best > 0 ? search.at_best.preemptions : 0;
  if (f.preemptions > preemptions_passing || (held_back && l.kv_limited_share() >= kLimitedStepShare)) {
    b.kind = "kv_memory";
    b.why = fmt::format("{}: {} preemptions, {}; KV peak {:.0f}%{}{}", at, f.preemptions, limits_text(l),
                        l.peak_kv_used * 100, worst_text.empty() ? "" : "; " + worst_text, passing);
    return b;
  }
  if (held_back && l.seq_limited_share() >= kLimitedStepShare) {
    b.kind = "max_num_seqs";
    b.why = fmt::format("{}: {} (limit {}); running peak {}{}{}", at, limits_text(l), l.max_num_seqs, l.peak_running,
                        worst_text.empty() ? "" : "; " + worst_text, passing);
    return b;
  }
  if (!worst_kind.empty()) {
    b.kind = worst_kind;
    b.why = fmt::format("{}: {}, with {}{}", at, worst_text, limits_text(l), passing);
    return b;
  }
  b.kind = f.unfinished > 0 ? "unfinished" : "none";
  b.why = f.unfinished > 0 ? fmt::format("{}: {} requests unfinished at the horizon (the engine fell behind); {}", at,
                                         f.unfinished, limits_text(l))
                           : fmt::format("{}: no target failed at the reported percentiles", at);
  return b;
}

nlohmann::json binding_json(const BindingConstraint& b) {
  nlohmann::json margins = nlohmann::json::array();
  for (const LimitMargin& m : b.margins) {
    margins.push_back({{"limit", m.limit}, {"label", m.label}, {"value", m.value}, {"bound", m.bound}, {"unit", m.unit}, {"use", m.use()}});
  }
  return {{"binding_constraint", {{"kind", b.kind}, {"why", b.why}}}, {"margins", margins}};
}

std::string binding_text(const BindingConstraint& b) {
  std::string out = fmt::format("binding constraint: {} — {}\n", b.kind, b.why);
  if (!b.margins.empty()) {
    out += "at the answer:";
    for (size_t i = 0; i < b.margins.size(); ++i) out += (i == 0 ? " " : "; ") + b.margins[i].text();
    out += "\n";
  }
  return out;
}

}  // namespace kvplan::plan
