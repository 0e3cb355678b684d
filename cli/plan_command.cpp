// `kvplan plan`: the cheapest deployment for a target load (plan::search_deployments), printed as a
// table, JSON, or written to --out DIR (plan.json, candidates.csv, front.csv); a progress bar on a
// terminal; Ctrl-C stops between rounds and keeps the finished candidates (exit 130).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "interrupt_guard.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/number_text.h"
#include "kvplan/plan/deployment.h"
#include "kvplan/plan/text.h"

namespace kvplan::cli {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<int32_t> parse_sizes(const std::string& text, const char* flag) {
  std::vector<int32_t> out;
  for (const std::string& item : split_list(text)) {
    const std::optional<int64_t> v = parse_int64_text(item);
    if (!v || *v < 1 || *v > 1024) {
      throw ConfigError(fmt::format("--{}={}: '{}' must be a whole number in [1, 1024] (a comma-separated list)", flag,
                                    text, item));
    }
    out.push_back(static_cast<int32_t>(*v));
  }
  if (out.empty()) throw ConfigError(fmt::format("--{}={} must list at least one size, e.g. 1,2,4,8", flag, text));
  return out;
}

// --disaggregation off,1:1,1:2: "off" is aggregated, P:D prefill and decode engines per unit.
std::vector<std::pair<int32_t, int32_t>> parse_splits(const std::string& text) {
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const std::string& item : split_list(text)) {
    if (item == "off") {
      out.emplace_back(0, 0);
      continue;
    }
    const size_t colon = item.find(':');
    const std::optional<int64_t> p = colon == std::string::npos ? std::nullopt : parse_int64_text(item.substr(0, colon));
    const std::optional<int64_t> d = colon == std::string::npos ? std::nullopt : parse_int64_text(item.substr(colon + 1));
    if (!p || !d || *p < 1 || *d < 1 || *p > 64 || *d > 64) {
      throw ConfigError(fmt::format("--disaggregation={}: '{}' must be 'off' or P:D (prefill and decode engines per "
                                    "unit, 1 to 64 each), e.g. off,1:1,1:2",
                                    text, item));
    }
    out.emplace_back(static_cast<int32_t>(*p), static_cast<int32_t>(*d));
  }
  if (out.empty()) throw ConfigError(fmt::format("--disaggregation={} must list at least one split, e.g. off,1:1", text));
  return out;
}

// --gpu-price GPU=USD (repeatable, or comma-separated).
std::map<std::string, double> parse_prices(const std::vector<std::string>& texts) {
  std::map<std::string, double> out;
  for (const std::string& text : texts) {
    for (const std::string& item : split_list(text)) {
      const size_t eq = item.find('=');
      const std::optional<double> usd = eq == std::string::npos ? std::nullopt : parse_double_text(item.substr(eq + 1));
      if (eq == std::string::npos || eq == 0 || !usd || !(*usd > 0) || *usd > 1e6) {
        throw ConfigError(fmt::format("--gpu-price {}: must be GPU=USD with a GPU preset id and a price in (0, 1e6] "
                                      "USD per GPU-hour, e.g. h200=3.50",
                                      item));
      }
      out[item.substr(0, eq)] = *usd;
    }
  }
  return out;
}

void write_out_dir(const std::string& dir, const plan::DeploymentPlan& p) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("--out {}: cannot create the directory ({})", dir, ec.message()));
  // plan.json last: the completion marker, as simulate's summary.json.
  write_file_atomically(dir + "/candidates.csv", plan::deployment_candidates_csv(p));
  write_file_atomically(dir + "/front.csv", plan::deployment_front_csv(p));
  write_file_atomically(dir + "/plan.json", json_text(plan::deployment_plan_json(p), 2) + "\n");
}

}  // namespace

PlanDistribution& plan_distribution() {
  static PlanDistribution d;
  return d;
}

int run_plan(const PlanRequest& request) {
  const PlanDistribution& distribution = plan_distribution();
  plan::DeploymentSearch q;
  q.base = request.scenario;
  q.target_users = request.target_users;
  q.target_rate = request.target_rate;
  q.space.gpus = split_list(request.gpus);
  q.space.max_gpus = request.max_gpus;
  if (!request.tp.empty()) q.space.tensor_parallel = parse_sizes(request.tp, "tp");
  if (!request.pp.empty()) q.space.pipeline_parallel = parse_sizes(request.pp, "pp");
  if (!request.disaggregation.empty()) q.space.disaggregation = parse_splits(request.disaggregation);
  for (const std::string& text : request.vary) {
    q.space.axes.push_back(plan::parse_setting_axis(text, plan::Command::kSimulate, "plan"));
  }
  q.space.gpu_prices = parse_prices(request.gpu_prices);
  q.tolerance = request.tolerance;
  q.exact_front = request.exact_front;
  q.threads = request.threads > 0 ? request.threads : 1;
  if (request.threads < 0 || request.threads > 256) {
    throw ConfigError(fmt::format("--threads={} must be in [0, 256] (0: one)", request.threads));
  }
  if (distribution.run_round) q.run_round = distribution.run_round;

  InterruptGuard interrupt;
  q.should_stop = [&] { return distribution.any_rank(interrupt.requested()); };
  const bool bar = distribution.root && request.progress && !request.json && isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  if (bar) {
    q.on_progress = [](size_t done, size_t total) {
      const int width = 30;
      const int filled = static_cast<int>(width * done / std::max<size_t>(total, 1));
      std::cerr << fmt::format("\r  [{}{}] {}/{} candidates", std::string(filled, '#'), std::string(width - filled, '.'),
                               done, total)
                << std::flush;
    };
  }
  const plan::DeploymentPlan p = plan::search_deployments(q);
  if (bar) std::cerr << "\r" << std::string(60, ' ') << "\r";
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!distribution.root) return p.partial ? kInterruptedExit : 0;
  if (!request.out_dir.empty()) write_out_dir(request.out_dir, p);
  if (request.json) {
    std::cout << json_text(plan::deployment_plan_json(p), 2) << "\n";
  } else {
    std::cout << fmt::format("kvplan plan: {}\nworkload: {}\nSLO: {}\n\n", p.model, p.workload, p.slo);
    std::cout << plan::deployment_plan_text(p, request.explain);
    if (!request.out_dir.empty()) std::cout << "wrote " << request.out_dir << "/{plan.json,candidates.csv,front.csv}\n";
  }
  std::cerr << fmt::format("(plan: {} simulations in {:.2f} s{})\n", p.simulations, wall,
                           distribution.ranks > 1 ? fmt::format(" on {} MPI ranks", distribution.ranks) : "");
  if (p.partial) {
    std::cerr << "kvplan plan: interrupted; the answer covers the candidates finished before Ctrl-C (marked partial)\n";
    return kInterruptedExit;
  }
  return 0;
}

}  // namespace kvplan::cli
