// plan/src/report_document.cpp — build_report_document: the capacity answer (headline, binding,
// margins, cost, step-time source), warnings, assumptions with sources, inputs, results (capacity
// probes, memory per scheme, requests vs context, simulation), notes. Numbers are formatted as the
// CLI prints them (thousands separators, GiB with two decimals) so a reader can cross-check.
#include "kvplan/plan/report_document.h"

#include <fmt/format.h>

#include "kvplan/plan/summary_percentile.h"
#include "kvplan/plan/binding.h"
#include "kvplan/plan/settings.h"
#include "kvplan/plan/text.h"

namespace kvplan::plan {

namespace {

constexpr double kGiB = 1073741824.0;

std::string bytes_per_token_text(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) return with_commas(static_cast<int64_t>(v));
  return fmt::format("{:.2f}", v);
}

ReportSection inputs_section(const ReportInput& in) {
  ReportSection s{"Inputs", {}, {}};
  s.paragraphs.push_back("Settings the scenario file sets; every other setting takes its `kvplan` default.");
  ReportTable t{{"part", "setting", "flag", "value"}, {}};
  for (const Setting& row : settings()) {
    if (!row.is_default(in.scenario.scenario)) {
      t.rows.push_back({row.section, row.key, "--" + row.flag, row.text(in.scenario.scenario)});
    }
  }
  for (size_t i = 0; i < in.scenario.compare.size(); ++i) {
    for (const auto& [k, v] : in.scenario.compare[i]) {
      const Setting* row = find_setting(k);
      t.rows.push_back({fmt::format("compare[{}]", i), row != nullptr ? row->file_key() : k, "--" + k, v});
    }
  }
  if (t.rows.empty()) t.rows.push_back({"scenario", "(none)", "", "all defaults"});
  s.tables.push_back(std::move(t));
  return s;
}

ReportSection memory_section(const ReportInput& in) {
  ReportSection s{"Results: memory per KV scheme", {}, {}};
  const MemoryAnswer& base = in.answers.front();
  s.paragraphs.push_back(fmt::format("{} on {} (tp={}, pp={}), {}; max_model_len {} tokens.", base.scenario.model.name,
                                     base.scenario.gpu.name, base.scenario.parallel.tensor_parallel,
                                     base.scenario.parallel.pipeline_parallel, base.plan.engine_label,
                                     with_commas(base.plan.max_model_len)));
  ReportTable t{{"scheme", "KV scheme", "KV B/token", "weights GiB", "KV budget GiB", "blocks", "KV tokens",
                 "max concurrency", "requests at max len"},
                {}};
  const bool fit = base.fit.has_value();
  if (fit) {
    t.header.push_back("requests at mean length");
    t.header.push_back("requests at p99 length");
  }
  for (size_t i = 0; i < in.answers.size(); ++i) {
    const MemoryAnswer& a = in.answers[i];
    const MemoryPlan& p = a.plan;
    std::vector<std::string> row = {in.scheme_labels[i], a.scenario.scheme.describe(), bytes_per_token_text(a.kv_bytes_per_token),
                                    fmt::format("{:.2f}", p.term("weights") / kGiB), fmt::format("{:.2f}", p.kv_budget_bytes / kGiB),
                                    with_commas(p.num_blocks), with_commas(p.kv_cache_tokens),
                                    fmt::format("{:.2f}x", p.max_concurrency), with_commas(p.requests_at_max_len)};
    if (fit) {
      row.push_back(a.fit ? with_commas(a.fit->requests_at_mean) : "-");
      row.push_back(a.fit ? with_commas(a.fit->requests_at_p99) : "-");
    }
    t.rows.push_back(std::move(row));
  }
  s.tables.push_back(std::move(t));
  if (fit) {
    s.paragraphs.push_back(fmt::format("Lengths {}: mean {:.0f} tokens, p99 {} tokens.", base.fit->distribution,
                                       base.fit->mean_tokens, with_commas(base.fit->p99_tokens)));
  }
  // The first scheme's memory terms, as `kvplan memory` prints them.
  ReportTable terms{{"term (" + in.scheme_labels.front() + ")", "GiB", "subtracted", "how"}, {}};
  terms.rows.push_back({"total the driver reports", fmt::format("{:.2f}", base.plan.gpu_total_bytes / kGiB), "",
                        base.scenario.gpu.usable_memory_source});
  terms.rows.push_back({"engine budget", fmt::format("{:.2f}", base.plan.engine_budget_bytes / kGiB), "", ""});
  for (const MemoryTerm& m : base.plan.terms) {
    terms.rows.push_back({m.label, fmt::format("{:.2f}", m.bytes / kGiB), m.subtracted ? "yes" : "no (shown only)", m.how});
  }
  terms.rows.push_back({"KV cache budget", fmt::format("{:.2f}", base.plan.kv_budget_bytes / kGiB), "", ""});
  s.tables.push_back(std::move(terms));
  // Requests that fit against context length.
  if (!in.users_vs_context.context_tokens.empty()) {
    ReportTable u{{"tokens per request"}, {}};
    for (const std::string& l : in.scheme_labels) u.header.push_back(l);
    for (size_t k = 0; k < in.users_vs_context.context_tokens.size(); ++k) {
      std::vector<std::string> row = {with_commas(in.users_vs_context.context_tokens[k])};
      for (const auto& per_scheme : in.users_vs_context.users) row.push_back(with_commas(per_scheme[k]));
      u.rows.push_back(std::move(row));
    }
    s.tables.push_back(std::move(u));
  }
  return s;
}

ReportSection simulation_section(const ReportInput& in) {
  const sim::SimulationConfig& c = *in.simulation_config;
  const sim::SimulationResult& r = *in.simulation;
  const sim::RunSummary& m = r.summary;
  ReportSection s{"Results: simulated serving (" + in.scheme_labels.front() + ")", {}, {}};
  s.paragraphs.push_back(fmt::format("{} on {}, scheduler {}, KV policy {}; KV capacity per replica {:.2f} GiB.",
                                     c.model.name, c.gpu.name, sim::scheduler_kind_name(c.scheduler.kind),
                                     sim::kv_policy_name(c.kv_policy), r.kv_capacity_bytes / kGiB));
  if (c.slo.any()) {
    s.paragraphs.push_back(fmt::format("SLO {}: {}; {:.1f}% of requests meet every target.", c.slo.describe(),
                                       m.meets_slo ? "met" : "NOT met", m.slo_attainment * 100));
  }
  ReportTable t{{"metric", "value"}, {}};
  t.rows = {{"finished requests", with_commas(m.finished)},
            {"unfinished requests", with_commas(m.unfinished)},
            {"rejected requests", with_commas(m.rejected)},
            {"preemptions", with_commas(m.preemptions)},
            {"duration (s)", fmt::format("{:.1f}", m.duration_s)},
            {"throughput (req/s)", fmt::format("{:.2f}", m.requests_per_s)},
            {"output tokens/s", fmt::format("{:.0f}", m.output_tokens_per_s)},
            {"goodput (req/s)", fmt::format("{:.2f}", m.goodput_requests_per_s)},
            {"peak active requests", with_commas(r.peak_active_requests)}};
  s.tables.push_back(std::move(t));
  const ProfileBand& band = r.latency_band;
  auto band_cell = [](double e) { return e > 0 ? fmt::format("±{:.0f}%", e * 100) : std::string("not validated"); };
  s.paragraphs.push_back(fmt::format("Step times: {}. Band: p90 |error| of this source against real serving runs{}.",
                                     r.step_time_source, band.how.empty() ? "" : " (" + band.how + ")"));
  ReportTable lat{{"ms", "mean", "p50", "p90", "p95", "p99", "max", "band"}, {}};
  auto row = [&](const char* name, const sim::Percentiles& p, const std::string& b) {
    lat.rows.push_back({name, fmt::format("{:.1f}", p.mean), fmt::format("{:.1f}", p.p50), fmt::format("{:.1f}", p.p90),
                        fmt::format("{:.1f}", p.p95), fmt::format("{:.1f}", p.p99), fmt::format("{:.1f}", p.max), b});
  };
  row("queue", m.queue_ms, "");
  row("TTFT", m.ttft_ms, band_cell(band.ttft_p90_rel_error));
  row("TPOT", m.tpot_ms, band_cell(band.tpot_p90_rel_error));
  row("E2E", m.e2e_ms, "");
  s.tables.push_back(std::move(lat));
  return s;
}

// The answer's details, in the order a planner asks about them: what binds, how far the other
// limits are, what it costs, and how far the step times can be trusted. The strings are
// summarize_capacity's, the same the planner's answer panel prints.
ReportSection capacity_section(const CapacitySummary& c) {
  ReportSection s{"Capacity answer", {c.binding}, {}};
  if (!c.margins.empty()) {
    std::string margins;
    for (const std::string& m : c.margins) margins += (margins.empty() ? "" : "; ") + m;
    s.paragraphs.push_back("other limits at the answer: " + margins);
  }
  s.paragraphs.push_back("cost: " + c.cost);
  s.paragraphs.push_back(fmt::format("step times ({}): {}", c.source_kind, c.source));
  return s;
}

// Every load the search simulated, so the answer can be checked against its evidence.
ReportSection probes_section(const CapacityAnswer& a) {
  ReportSection s{"Results: capacity search", {}, {}};
  s.paragraphs.push_back(fmt::format("{} {} simulated, in the order they ran; the answer is the largest that met "
                                     "the SLO ({}).",
                                     a.search.probes.size(), a.users ? "numbers of users" : "rates",
                                     a.config.slo.describe()));
  const double pct = summary_percentile(sim::Percentiles{}, a.config.slo.percentile) ? a.config.slo.percentile : 90;
  auto ms = [&](const sim::Percentiles& p) { return fmt::format("{:.1f}", *summary_percentile(p, pct)); };
  ReportTable t{{a.users ? "users" : "requests/s", "meets SLO", fmt::format("p{:g} TTFT ms", pct),
                 fmt::format("p{:g} TPOT ms", pct), fmt::format("p{:g} E2E ms", pct), "finished", "unfinished",
                 "preemptions"},
                {}};
  for (const sim::CapacityProbe& p : a.search.probes) {
    const sim::RunSummary& m = p.summary;
    t.rows.push_back({fmt::format("{:g}", p.load), p.meets ? "yes" : "no", ms(m.ttft_ms), ms(m.tpot_ms), ms(m.e2e_ms),
                      with_commas(m.finished), with_commas(m.unfinished), with_commas(m.preemptions)});
  }
  s.tables.push_back(std::move(t));
  return s;
}

ReportSection assumptions_section(const ReportInput& in) {
  ReportSection s{"Assumptions and sources", {}, {}};
  s.paragraphs.push_back(
      "Source words: measured (a kvplan calibration run on this GPU), published (fitted from public measurements, "
      "data/measurements), fitted to your runs (kvplan calibrate from-runs on a deployment's own benchmark runs), "
      "transferred (a profile of another GPU scaled to this one), datasheet "
      "(vendor figures, or the datasheet-default cost model), config (the model's published config), computed "
      "(exact arithmetic on the shapes), estimate (kvplan's approximation), input (set by the scenario).");
  ReportTable t{{"what", "value", "source", "note"}, {}};
  for (const Assumption& a : in.sourced) t.rows.push_back({a.what, a.value, a.source, a.note});
  s.tables.push_back(std::move(t));
  return s;
}

ReportSection notes_section(const ReportInput& in) {
  ReportSection s{"Notes", {}, {}};
  for (size_t i = 0; i < in.answers.size(); ++i) {
    const MemoryPlan& p = in.answers[i].plan;
    for (const std::string& why : p.problems) s.paragraphs.push_back(fmt::format("{}: DOES NOT FIT: {}", in.scheme_labels[i], why));
  }
  for (const std::string& n : in.answers.front().plan.notes) s.paragraphs.push_back(n);
  for (const std::string& w : in.answers.front().scenario.model.warnings) s.paragraphs.push_back("warning: " + w);
  if (in.simulation) {
    for (const std::string& n : in.simulation->notes) s.paragraphs.push_back("simulation: " + n);
  }
  return s;
}

}  // namespace

ReportDocument build_report_document(const ReportInput& in) {
  ReportDocument d;
  d.title = "kvplan report: " + (in.scenario.name.empty() ? std::string("scenario") : in.scenario.name);
  d.subtitle = fmt::format("kvplan {} — {} compared KV scheme{}{}", in.kvplan_version, in.answers.size(),
                           in.answers.size() == 1 ? "" : "s", in.simulation ? ", with a simulated workload" : "");
  // The answer leads, then everything that qualifies it (warnings, assumptions), then the charts,
  // then the details it was computed from.
  if (in.capacity_summary) {
    d.headline = in.capacity_summary->headline;
    d.headline_detail = in.capacity_summary->slo;
    d.sections.push_back(capacity_section(*in.capacity_summary));
  } else {
    d.headline = "No capacity answer";
    d.headline_detail = in.no_capacity_why;
  }
  const std::vector<std::string> warnings = report_warnings(in);
  if (!warnings.empty()) {
    ReportSection w{"Warnings: read before trusting these figures", warnings, {}};
    w.prominent = true;
    d.sections.push_back(std::move(w));
  }
  d.sections.push_back(assumptions_section(in));
  d.sections.back().charts_after = true;
  d.sections.push_back(inputs_section(in));
  if (in.capacity && !in.capacity->search.probes.empty()) d.sections.push_back(probes_section(*in.capacity));
  d.sections.push_back(memory_section(in));
  if (in.simulation && in.simulation_config) d.sections.push_back(simulation_section(in));
  ReportSection notes = notes_section(in);
  if (!notes.paragraphs.empty()) d.sections.push_back(std::move(notes));
  return d;
}

}  // namespace kvplan::plan
