// `kvplan memory`: the memory breakdown, side-by-side comparisons, and vLLM log checks.
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/error.h"
#include "kvplan/core/vllm_log_scenario.h"
#include "report_format.h"

namespace kvplan::cli {

namespace {

int run_compare(const MemoryRequest& r) {
  auto eq = r.compare.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == r.compare.size()) {
    throw ConfigError(fmt::format("--compare={} must look like KEY=V1,V2,... e.g. kv-cache-dtype=auto,fp8,int4", r.compare));
  }
  std::string key = r.compare.substr(0, eq);
  if (key.rfind("--", 0) == 0) key = key.substr(2);
  std::vector<std::string> values;
  std::string rest = r.compare.substr(eq + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    values.push_back(rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<MemoryAnswer> answers;
  for (const std::string& v : values) {
    FlagValues flags = r.flags;
    flags[key] = v;
    answers.push_back(answer_memory(build_scenario(flags)));
  }
  if (r.json) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < answers.size(); ++i) {
      nlohmann::json j = memory_json(answers[i]);
      j["compare"] = {{"key", key}, {"value", values[i]}};
      out.push_back(j);
    }
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  const MemoryAnswer& first = answers.front();
  std::cout << fmt::format("{} on {} (tp={}), {} — comparing {}\n\n", first.scenario.model.name, first.scenario.gpu.name,
                           first.scenario.parallel.tensor_parallel, first.plan.engine_label, key);
  std::cout << fmt::format("{:<16} {:>12} {:>12} {:>12} {:>14} {:>12} {:>10}", key, "KV B/token", "weights GiB",
                           "KV GiB", "KV tokens", "max conc.", "requests");
  bool fit = first.fit.has_value();
  if (fit) std::cout << fmt::format(" {:>10} {:>10}", "at mean", "at p99");
  std::cout << "\n";
  for (size_t i = 0; i < answers.size(); ++i) {
    const MemoryAnswer& a = answers[i];
    std::cout << fmt::format("{:<16} {:>12.1f} {:>12.2f} {:>12.2f} {:>14} {:>11.2f}x {:>10}", values[i],
                             a.kv_bytes_per_token, a.plan.term("weights") / 1073741824.0,
                             a.plan.kv_budget_bytes / 1073741824.0, with_commas(a.plan.kv_cache_tokens),
                             a.plan.max_concurrency, with_commas(a.plan.requests_at_max_len));
    if (fit) std::cout << fmt::format(" {:>10} {:>10}", with_commas(a.fit->requests_at_mean), with_commas(a.fit->requests_at_p99));
    if (!a.plan.fits) std::cout << "  does not fit" << (a.plan.problems.empty() ? "" : ": " + a.plan.problems.front());
    std::cout << "\n";
  }
  std::cout << fmt::format("\n(max_model_len {} tokens; 'requests' = requests of that length that fit)\n",
                           with_commas(first.plan.max_model_len));
  return 0;
}

int run_from_log(const MemoryRequest& r) {
  VllmLog log = load_vllm_log(r.from_vllm_log);
  LogOverrides overrides;
  if (auto it = r.flags.find("model"); it != r.flags.end()) overrides.model = it->second;
  if (auto it = r.flags.find("gpu"); it != r.flags.end()) overrides.gpu = it->second;
  LogScenario s = scenario_from_vllm_log(log, r.from_vllm_log, overrides);
  MemoryPlan plan = plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
  std::vector<LogComparisonRow> rows = compare_to_log(log, plan);
  if (r.json) {
    nlohmann::json j;
    j["log"] = r.from_vllm_log;
    j["model"] = s.model.id;
    j["gpu"] = s.gpu.id;
    j["engine"] = plan.engine_label;
    j["assumptions"] = s.assumptions;
    j["rows"] = nlohmann::json::array();
    for (const LogComparisonRow& row : rows) {
      nlohmann::json e = {{"term", row.term}, {"predicted", row.predicted}, {"unit", row.unit}};
      e["printed"] = row.printed ? nlohmann::json(*row.printed) : nlohmann::json(nullptr);
      j["rows"].push_back(e);
    }
    std::cout << json_text(j, 2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{}\n  model {} ({}), GPU {} x{}, {}, gpu_memory_utilization {:.2f}, max_model_len {}\n\n",
                           r.from_vllm_log, s.model.id, log.model, s.gpu.id, s.parallel.tensor_parallel,
                           plan.engine_label, s.serving.gpu_memory_utilization, with_commas(plan.max_model_len));
  std::cout << fmt::format("  {:<22} {:>14} {:>14} {:>9}\n", "term", "printed", "kvplan", "error");
  for (const LogComparisonRow& row : rows) {
    std::string printed = row.printed ? fmt::format("{:.2f}", *row.printed) : "-";
    std::string error = "";
    if (row.printed && *row.printed != 0) error = fmt::format("{:+.1f}%", 100.0 * (row.predicted - *row.printed) / *row.printed);
    std::cout << fmt::format("  {:<22} {:>14} {:>14.2f} {:>9}  {}\n", row.term, printed, row.predicted, error, row.unit);
  }
  for (const std::string& a : s.assumptions) std::cout << "  assumed: " << a << "\n";
  return 0;
}

}  // namespace

int run_memory(const MemoryRequest& r) {
  if (!r.from_vllm_log.empty()) return run_from_log(r);
  if (!r.compare.empty()) return run_compare(r);
  MemoryAnswer a = answer_memory(build_scenario(r.flags));
  if (r.json) {
    std::cout << json_text(memory_json(a), 2) << "\n";
  } else {
    std::cout << format_memory_text(a);
  }
  return 0;
}

}  // namespace kvplan::cli
