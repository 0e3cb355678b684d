// plan/src/report_data.cpp — the report as data. CSV: one long table (section, scheme, metric,
// value, unit, source) so every row has the same columns whatever was compared or simulated.
// JSON: the capacity answer, inputs (the scenario file itself), assumptions with sources, results,
// kvplan version. Both lead with the capacity answer, as the HTML and PDF do.
#include <algorithm>

#include <fmt/format.h>

#include "kvplan/plan/report.h"
#include "kvplan/sim/output_files.h"

namespace kvplan::plan {

namespace {

// RFC 4180: quote a field holding a comma, a quote or a line break; double inner quotes.
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

struct CsvWriter {
  std::string text = "section,scheme,metric,value,unit,source\n";
  void row(const std::string& section, const std::string& scheme, const std::string& metric, const std::string& value,
           const std::string& unit, const std::string& source) {
    text += csv_field(section) + "," + csv_field(scheme) + "," + csv_field(metric) + "," + csv_field(value) + "," +
            csv_field(unit) + "," + csv_field(source) + "\n";
  }
};

std::string num(double v) { return fmt::format("{}", v); }
std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

std::vector<std::string> report_warnings(const ReportInput& in) {
  std::vector<std::string> out;
  auto add = [&](const std::vector<std::string>& warnings) {
    for (const std::string& w : warnings) {
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
    }
  };
  if (in.capacity_summary) add(in.capacity_summary->warnings);
  for (const MemoryPlan& p : in.plans) add(p.warnings);
  return out;
}

namespace {

nlohmann::json summary_json(const CapacitySummary& s) {
  return {{"headline", s.headline}, {"slo", s.slo},         {"binding", s.binding},
          {"margins", s.margins},   {"cost", s.cost},       {"source_kind", s.source_kind},
          {"source", s.source},     {"warnings", s.warnings}};
}

// The answer's rows lead the CSV as it leads the other formats: the number, then its sentences.
void capacity_csv(const ReportInput& in, CsvWriter& w) {
  if (!in.capacity || !in.capacity_summary) {
    w.row("capacity", "", "no_capacity_answer", in.no_capacity_why, "", "kvplan");
    return;
  }
  const CapacityAnswer& a = *in.capacity;
  const CapacitySummary& s = *in.capacity_summary;
  const std::string scheme = in.scheme_labels.empty() ? "" : in.scheme_labels.front();
  w.row("capacity", scheme, "best", num(a.search.best), a.users ? "users" : "req/s", "computed");
  w.row("capacity", scheme, "headline", s.headline, "", "computed");
  w.row("capacity", scheme, "slo", s.slo, "", "input");
  w.row("capacity", scheme, "binding_constraint", a.binding.kind, "", "computed");
  w.row("capacity", scheme, "binding", s.binding, "", "computed");
  for (const std::string& m : s.margins) w.row("capacity", scheme, "margin", m, "", "computed");
  w.row("capacity", scheme, "cost", s.cost, "", "computed");
  w.row("capacity", scheme, "step_time_source", s.source, "", s.source_kind);
}

}  // namespace

std::string report_csv(const ReportInput& in) {
  CsvWriter w;
  capacity_csv(in, w);
  for (const std::string& warning : report_warnings(in)) w.row("warning", "", "warning", warning, "", "kvplan");
  for (size_t i = 0; i < in.answers.size(); ++i) {
    const MemoryAnswer& a = in.answers[i];
    const MemoryPlan& p = a.plan;
    const std::string& s = in.scheme_labels[i];
    w.row("memory", s, "kv_scheme", a.scenario.scheme.describe(), "", "input");
    w.row("memory", s, "kv_bytes_per_token", num(a.kv_bytes_per_token), "B", "computed");
    w.row("memory", s, "gpu_total_bytes", num(p.gpu_total_bytes), "B", "datasheet");
    w.row("memory", s, "engine_budget_bytes", num(p.engine_budget_bytes), "B", "computed");
    for (const MemoryTerm& t : p.terms) {
      w.row("memory", s, "term:" + t.key, num(t.bytes), "B", t.how.find("estimate") != std::string::npos ? "estimate" : "computed");
    }
    w.row("memory", s, "kv_budget_bytes", num(p.kv_budget_bytes), "B", "computed");
    w.row("memory", s, "block_bytes", num(p.block_bytes), "B", "computed");
    w.row("memory", s, "num_blocks", num(p.num_blocks), "blocks", "computed");
    w.row("memory", s, "kv_cache_tokens", num(p.kv_cache_tokens), "tokens", "computed");
    w.row("memory", s, "max_model_len", num(p.max_model_len), "tokens", "input");
    w.row("memory", s, "max_concurrency", num(p.max_concurrency), "x", "computed");
    w.row("memory", s, "requests_at_max_len", num(p.requests_at_max_len), "requests", "computed");
    if (a.fit) {
      w.row("memory", s, "requests_at_mean_length", num(a.fit->requests_at_mean), "requests", "computed");
      w.row("memory", s, "requests_at_p99_length", num(a.fit->requests_at_p99), "requests", "computed");
    }
    for (size_t k = 0; k < in.users_vs_context.context_tokens.size() && i < in.users_vs_context.users.size(); ++k) {
      w.row("fit", s, fmt::format("requests_at_{}_tokens", in.users_vs_context.context_tokens[k]),
            num(in.users_vs_context.users[i][k]), "requests", "computed");
    }
  }
  if (in.simulation) {
    const sim::RunSummary& m = in.simulation->summary;
    const std::string& s = in.scheme_labels.front();
    w.row("simulation", s, "finished", num(m.finished), "requests", "computed");
    w.row("simulation", s, "unfinished", num(m.unfinished), "requests", "computed");
    w.row("simulation", s, "rejected", num(m.rejected), "requests", "computed");
    w.row("simulation", s, "preemptions", num(m.preemptions), "", "computed");
    w.row("simulation", s, "duration_s", num(m.duration_s), "s", "computed");
    w.row("simulation", s, "requests_per_s", num(m.requests_per_s), "req/s", "computed");
    w.row("simulation", s, "output_tokens_per_s", num(m.output_tokens_per_s), "tok/s", "computed");
    w.row("simulation", s, "goodput_requests_per_s", num(m.goodput_requests_per_s), "req/s", "computed");
    w.row("simulation", s, "slo_attainment", num(m.slo_attainment), "share", "computed");
    w.row("simulation", s, "meets_slo", m.meets_slo ? "true" : "false", "", "computed");
    auto pct = [&](const char* name, const sim::Percentiles& p) {
      for (auto [label, v] : {std::pair{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p95", p.p95}, {"p99", p.p99}, {"max", p.max}}) {
        w.row("simulation", s, fmt::format("{}_{}_ms", name, label), num(v), "ms", "computed");
      }
    };
    pct("ttft", m.ttft_ms);
    pct("tpot", m.tpot_ms);
    pct("e2e", m.e2e_ms);
  }
  for (const Assumption& a : in.sourced) w.row("assumption", "", a.what, a.value, "", a.source);
  return w.text;
}

nlohmann::json report_json(const ReportInput& in) {
  nlohmann::json j;
  j["kvplan_version"] = in.kvplan_version;
  j["name"] = in.scenario.name;
  // The answer first: capacity_json (what `kvplan capacity --json` prints) with the sentences the
  // other formats lead with; null with the reason when the scenario cannot be searched.
  if (in.capacity && in.capacity_summary) {
    j["capacity"] = capacity_json(*in.capacity);
    j["capacity"]["summary"] = summary_json(*in.capacity_summary);
  } else {
    j["capacity"] = nullptr;
    j["no_capacity_answer"] = in.no_capacity_why;
  }
  j["warnings"] = report_warnings(in);
  j["inputs"] = scenario_to_json(in.scenario);
  j["assumptions"] = nlohmann::json::array();
  for (const Assumption& a : in.sourced) {
    j["assumptions"].push_back({{"what", a.what}, {"value", a.value}, {"source", a.source}, {"note", a.note}});
  }
  nlohmann::json results;
  results["schemes"] = nlohmann::json::array();
  for (size_t i = 0; i < in.answers.size(); ++i) {
    nlohmann::json m = memory_json(in.answers[i]);
    m["label"] = in.scheme_labels[i];
    if (i < in.users_vs_context.users.size()) {
      m["requests_vs_context"] = {{"context_tokens", in.users_vs_context.context_tokens},
                                  {"requests", in.users_vs_context.users[i]}};
    }
    results["schemes"].push_back(std::move(m));
  }
  if (in.simulation && in.simulation_config) {
    results["simulation"] = sim::summary_json(*in.simulation_config, *in.simulation);
  }
  j["results"] = std::move(results);
  return j;
}

}  // namespace kvplan::plan
