// plan/src/report_input.cpp — make_report_input: the analysis a report shows. One memory answer per
// compared scheme, requests-that-fit against context length, the simulation of the base scheme when
// the scenario has a workload, its capacity answer (report_capacity.cpp), and every assumption with
// its source.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "kvplan/core/build_info.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/report.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/plan/text.h"
#include "internal/report_capacity.h"

namespace kvplan::plan {

namespace {

constexpr double kGiB = 1073741824.0;

// Runs `f`; a ConfigError from it is re-thrown with the scenario and the section it came from, so
// the message names the field ("scenario 'chat': memory: --gpu-memory-utilization=2 must be ...").
template <typename F>
auto in_section(const ScenarioFile& s, const std::string& section, F&& f) {
  try {
    return f();
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("scenario '{}': {}: {}", s.name.empty() ? "(unnamed)" : s.name, section, e.what()));
  }
}

std::string scheme_label(const SettingValues& overrides) {
  if (overrides.empty()) return "base";
  std::string out;
  for (const auto& [k, v] : overrides) out += (out.empty() ? "" : ", ") + k + "=" + v;
  return out;
}

// "measured (h100-sxm run 3)" -> "measured"; anything unknown is reported as datasheet only if it
// says so, else kept as "estimate" (never silently promoted to measured).
std::string source_word(const std::string& label) {
  for (const char* w : {"measured", "published", "transferred", "datasheet"}) {
    if (label.rfind(w, 0) == 0) return w;
  }
  return "estimate";
}

std::string term_source(const MemoryTerm& t) {
  if (t.how.find("estimate") != std::string::npos) return "estimate";
  if (t.how.find("measured") != std::string::npos) return "measured";
  return "computed";
}

void add(ReportInput& in, Assumption a) {
  in.assumptions.push_back(fmt::format("[{}] {}: {}{}", a.source, a.what, a.value, a.note.empty() ? "" : " (" + a.note + ")"));
  in.sourced.push_back(std::move(a));
}

void add_band(ReportInput& in, const ProfileBand& b) {
  const bool validated = b.ttft_p90_rel_error > 0 || b.tpot_p90_rel_error > 0;
  add(in, {"latency band (p90 |error| against real serving runs)",
           validated ? fmt::format("TTFT ±{:.0f}%, TPOT ±{:.0f}%", b.ttft_p90_rel_error * 100, b.tpot_p90_rel_error * 100)
                     : std::string("not validated"),
           validated ? "published" : "estimate",
           validated ? b.how : "this step-time source has not been compared with real serving runs"});
}

void add_assumptions(ReportInput& in) {
  const MemoryAnswer& base = in.answers.front();
  const GpuSpec& gpu = base.scenario.gpu;
  const ModelConfig& model = base.scenario.model;
  add(in, {fmt::format("GPU memory ({})", gpu.name), fmt::format("{:.2f} GiB", gpu.memory_bytes / kGiB), "datasheet", gpu.source});
  add(in, {"GPU memory the driver reports", fmt::format("{:.2f} GiB", gpu.usable_memory_bytes / kGiB), "datasheet",
           gpu.usable_memory_source});
  add(in, {"GPU memory bandwidth", fmt::format("{:.0f} GB/s", gpu.memory_bandwidth_bytes_per_s / 1e9), "datasheet", gpu.source});
  add(in, {"GPU peak bf16 tensor FLOP/s", fmt::format("{:.0f} TFLOP/s", gpu.peak_flops_bf16 / 1e12), "datasheet", gpu.source});
  add(in, {fmt::format("model shapes ({})", model.name),
           fmt::format("{} parameters", with_commas(base.params.total())), "config",
           model.source.empty() ? "the given config file" : model.source});
  for (size_t i = 0; i < in.answers.size(); ++i) {
    const MemoryAnswer& a = in.answers[i];
    add(in, {fmt::format("KV bytes per token ({})", in.scheme_labels[i]), fmt::format("{:g} B", a.kv_bytes_per_token),
             "computed", a.scenario.scheme.describe()});
  }
  for (const MemoryTerm& t : base.plan.terms) {
    add(in, {fmt::format("{} ({})", t.label, in.scheme_labels.front()), fmt::format("{:.2f} GiB", t.bytes / kGiB),
             term_source(t), t.how});
  }
  // Every setting the scenario sets (others take their defaults), by its flag and its file key.
  for (const Setting& row : settings()) {
    if (row.is_default(in.scenario.scenario)) continue;
    add(in, {fmt::format("setting --{} ({})", row.flag, row.file_key()), row.text(in.scenario.scenario), "input", ""});
  }
  if (in.capacity) {
    const CapacityAnswer& c = *in.capacity;
    const sim::CapacitySearch& search = c.search;
    add(in, {"capacity search", fmt::format("the largest {} simulated that met the SLO", c.users ? "number of users" : "rate"),
             "estimate",
             search.best > 0 && search.first_failing > 0
                 ? fmt::format("loads grow until one fails, then bisect: {:g} met the SLO, {:g} did not ({} probes)",
                               search.best, search.first_failing, search.probes.size())
                 : fmt::format("{} probes", search.probes.size())});
    const DeploymentCost& cost = c.cost;
    if (cost.priced()) {
      // A price the scenario gives is an input; a preset's is the vendor's list price.
      const bool given = cost.source.rfind("given", 0) == 0;
      add(in, {fmt::format("GPU price ({})", cost.gpu), fmt::format("${:.3f}/GPU-hour", cost.usd_per_gpu_hour),
               given ? "input" : "datasheet", cost.source});
    }
    if (!in.simulation) {
      add(in, {"step times", c.source.summary, source_word(c.source.kind), ""});
      add_band(in, c.source.band);
    }
  }
  if (in.simulation) {
    const sim::SimulationResult& r = *in.simulation;
    add(in, {"step times", r.step_time_source, source_word(r.step_time_source.substr(0, r.step_time_source.find(' '))),
             ""});
    add_band(in, r.latency_band);
    for (const std::string& line : in.simulation->cost_sources) {
      auto colon = line.find(": ");
      std::string cls = colon == std::string::npos ? "step cost" : line.substr(0, colon);
      std::string rest = colon == std::string::npos ? line : line.substr(colon + 2);
      std::string label = rest.substr(0, rest.find(" — "));
      std::string note = rest.find(" — ") == std::string::npos ? "" : rest.substr(rest.find(" — ") + 5);
      add(in, {"step cost of " + cls, label, source_word(label), note});
    }
  }
}

FitCurve users_vs_context(const std::vector<MemoryAnswer>& answers) {
  FitCurve curve;
  int64_t max_len = 0;
  for (const MemoryAnswer& a : answers) max_len = std::max(max_len, a.plan.max_model_len);
  for (int64_t len = 1024; len < max_len; len *= 2) curve.context_tokens.push_back(len);
  if (max_len > 0) curve.context_tokens.push_back(max_len);
  for (const MemoryAnswer& a : answers) {
    std::vector<int64_t> row;
    for (int64_t len : curve.context_tokens) {
      if (len > a.plan.max_model_len || a.plan.kv_budget_bytes <= 0) {
        row.push_back(0);
        continue;
      }
      DistributionFit f = fit_distribution(a.plan, a.layout, LengthDistribution::fixed(len));
      row.push_back(f.requests_at_mean);
    }
    curve.users.push_back(std::move(row));
  }
  return curve;
}

}  // namespace

Scenario report_base_scenario(const ScenarioFile& scenario) {
  return scenario.compare.empty() ? scenario.scenario : with_values(scenario.scenario, scenario.compare.front());
}

ReportInput make_report_input(const ScenarioFile& scenario) { return make_report_input(scenario, std::nullopt); }

ReportInput make_report_input(const ScenarioFile& scenario, std::optional<CapacityAnswer> known) {
  ReportInput in;
  in.scenario = scenario;
  in.kvplan_version = version_stamp();
  std::vector<SettingValues> schemes = scenario.compare;
  if (schemes.empty()) schemes.emplace_back();
  const std::string base_part = scenario.version_read == 1 ? "memory" : "scenario";
  for (size_t i = 0; i < schemes.size(); ++i) {
    const std::string section =
        scenario.compare.empty() ? base_part : fmt::format("compare[{}] (on top of {})", i, base_part);
    MemoryAnswer a = in_section(scenario, section, [&] { return answer_memory(with_values(scenario.scenario, schemes[i])); });
    in.scheme_labels.push_back(scheme_label(schemes[i]));
    in.plans.push_back(a.plan);
    in.answers.push_back(std::move(a));
  }
  in.users_vs_context = users_vs_context(in.answers);
  if (scenario.simulate) {
    // The base variant (the scenario plus the first compared variant's settings) is simulated.
    const Scenario base = report_base_scenario(scenario);
    const std::string section = scenario.version_read == 1 ? "simulate" : "workload";
    in.simulation_config = in_section(scenario, section, [&] { return simulation_config(base, in.answers.front().scenario); });
    in.simulation = in_section(scenario, section, [&] { return sim::run_simulation(*in.simulation_config); });
  }
  in_section(scenario, "capacity search",
             [&] { internal::add_capacity(in, report_base_scenario(scenario), std::move(known)); });
  add_assumptions(in);
  return in;
}

}  // namespace kvplan::plan
