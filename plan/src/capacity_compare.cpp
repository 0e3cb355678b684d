// plan/src/capacity_compare.cpp — `capacity --compare`: the capacity answer of every combination of
// the varied settings, side by side with its binding constraint and costs (simulate.h).
#include <algorithm>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::plan {

namespace {

std::string combination_text(const std::vector<SettingAxis>& axes, const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < axes.size(); ++i) out += fmt::format("{}{}={}", i == 0 ? "" : ", ", axes[i].setting, values[i]);
  return out;
}

// "$1.2345" or "-" (no price, or nothing to divide by).
std::string money(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("${:.{}f}", *v, decimals) : std::string("-");
}

}  // namespace

CapacityComparison compare_capacity(const Scenario& base, const std::vector<SettingAxis>& axes,
                                    const CapacityRequest& request) {
  if (axes.empty()) throw ConfigError("--compare: give at least one KEY=V1,V2,...");
  CapacityComparison c;
  c.axes = axes;
  // The cartesian product, the last axis fastest.
  std::vector<size_t> index(axes.size(), 0);
  while (true) {
    std::vector<std::string> values;
    for (size_t i = 0; i < axes.size(); ++i) values.push_back(axes[i].values[index[i]]);
    c.combinations.push_back(values);
    size_t i = axes.size();
    while (i > 0 && ++index[i - 1] == axes[i - 1].values.size()) index[--i] = 0;
    if (i == 0) break;
  }
  // Every combination is checked before the first (slow) search runs.
  std::vector<Scenario> scenarios;
  for (const std::vector<std::string>& values : c.combinations) {
    Scenario s = base;
    try {
      for (size_t i = 0; i < axes.size(); ++i) setting(axes[i].setting).set(s, values[i]);
      (void)simulation_config(s);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("--compare {}: {}", combination_text(axes, values), e.what()));
    }
    scenarios.push_back(std::move(s));
  }
  for (const Scenario& s : scenarios) c.answers.push_back(find_capacity(s, request));
  return c;
}

nlohmann::json capacity_comparison_json(const CapacityComparison& c) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t k = 0; k < c.answers.size(); ++k) {
    nlohmann::json j = capacity_json(c.answers[k]);
    nlohmann::json compare = nlohmann::json::object();
    for (size_t i = 0; i < c.axes.size(); ++i) compare[c.axes[i].setting] = c.combinations[k][i];
    j["compare"] = compare;
    out.push_back(j);
  }
  return out;
}

std::string capacity_comparison_text(const CapacityComparison& c) {
  if (c.answers.empty()) return "";
  const CapacityAnswer& first = c.answers.front();
  const bool users = first.users;
  std::string out = fmt::format("kvplan capacity — comparing {} combinations; SLO: {}\n\n", c.answers.size(),
                                first.config.slo.describe());
  std::vector<size_t> widths;
  for (size_t i = 0; i < c.axes.size(); ++i) {
    size_t w = c.axes[i].setting.size();
    for (const auto& combo : c.combinations) w = std::max(w, combo[i].size());
    widths.push_back(w);
    out += fmt::format("{:<{}}  ", c.axes[i].setting, w);
  }
  out += fmt::format("{:>10}  {:<13} {:>10} {:>10} {:>10} {:>12} {:>10}\n", users ? "users" : "req/s", "binding",
                     "p90 TTFT", "p90 TPOT", "$/hour", users ? "$/user-hour" : "$/(req/s)", "$/M tok");
  for (size_t k = 0; k < c.answers.size(); ++k) {
    const CapacityAnswer& a = c.answers[k];
    for (size_t i = 0; i < c.axes.size(); ++i) out += fmt::format("{:<{}}  ", c.combinations[k][i], widths[i]);
    const CostAtLoad cost = capacity_cost(a);
    const bool answered = a.search.best > 0;
    const std::string load = answered ? fmt::format("{:g}{}", a.search.best, a.search.unbounded ? "+" : "") : "none";
    out += fmt::format("{:>10}  {:<13} {:>10} {:>10} {:>10} {:>12} {:>10}\n", load, a.binding.kind,
                       answered ? fmt::format("{:.0f} ms", a.search.at_best.ttft_ms.p90) : "-",
                       answered ? fmt::format("{:.1f} ms", a.search.at_best.tpot_ms.p90) : "-",
                       money(cost.usd_per_hour, 2), money(cost.usd_per_load_unit, 4),
                       money(cost.usd_per_million_output_tokens, 3));
  }
  // Each price once, with its source.
  std::vector<std::string> priced;
  for (const CapacityAnswer& a : c.answers) {
    const DeploymentCost& d = a.cost;
    const std::string line = d.priced() ? fmt::format("price of {}: ${:g}/GPU-hour — {}\n", d.gpu, d.usd_per_gpu_hour, d.source)
                                        : fmt::format("price of {}: none in its preset (give --gpu-price)\n", d.gpu);
    if (std::find(priced.begin(), priced.end(), line) == priced.end()) priced.push_back(line);
  }
  out += "\n";
  for (const std::string& line : priced) out += line;
  out += "('binding': the limit that fails first above the answer — kv_memory, max_num_seqs, ttft, tpot, e2e, "
         "weights; '-': no price for the GPU (give --gpu-price) or no answer)\n";
  return out;
}

}  // namespace kvplan::plan
