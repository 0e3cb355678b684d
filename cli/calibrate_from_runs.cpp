// `kvplan calibrate from-runs FILE... [--log LOG] [--gpu G] ... [--out fit.json] [--explain]`:
// reads the runs (calibration/serving_run.h), fixes the deployment (log and flags), fits
// (plan/runs_fit.h), prints the before/after errors and writes the profile file.
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "kvplan/calibration/serving_run.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/runs_fit.h"

namespace kvplan::cli {

int run_calibrate_from_runs(const CalibrateFromRunsRequest& request) {
  std::vector<std::pair<std::string, std::string>> where;
  for (const std::string& w : request.where) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError(fmt::format("--where={} must be KEY=VALUE", w));
    where.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  std::vector<calibration::ServingRun> runs;
  for (const std::string& f : request.files) {
    for (calibration::ServingRun& r : calibration::read_serving_runs(f)) {
      bool keep = true;
      for (const auto& [k, v] : where) {
        auto it = r.fields.find(k);
        keep = keep && it != r.fields.end() && it->second == v;
      }
      if (keep) runs.push_back(std::move(r));
    }
  }
  if (runs.empty()) throw ConfigError("calibrate from-runs: no run left to fit (check the files and --where)");
  plan::RunsDeploymentOptions o;
  o.log = request.log;
  o.model = request.model;
  o.gpu = request.gpu;
  o.engine = request.engine;
  o.engine_version = request.engine_version;
  o.tensor_parallel_size = request.tensor_parallel_size;
  o.pipeline_parallel_size = request.pipeline_parallel_size;
  const plan::RunsDeployment d = plan::resolve_runs_deployment(runs, o);
  const plan::RunsFit fit = plan::fit_runs(runs, d);
  if (!request.out.empty()) {
    AtomicFile out(request.out);
    out.stream() << json_text_flat_arrays(plan::runs_profile_json(fit)) << "\n";
    out.commit();
  }
  if (request.json) {
    nlohmann::json j = plan::runs_fit_json(fit);
    if (!request.out.empty()) j["profile"] = request.out;
    std::cout << json_text(j, 2) << "\n";
    return 0;
  }
  std::cout << plan::runs_fit_text(fit, request.explain);
  if (!request.out.empty()) {
    std::cout << "wrote " << request.out << " (fitted to your runs): use it with --profile " << request.out
              << " in simulate, capacity, plan and report\n";
  }
  return 0;
}

}  // namespace kvplan::cli
