// `kvplan calibrate from-runs FILE... [--log LOG] [--gpu G] ... [--out fit.json] [--explain]`:
// reads the runs (calibration/serving_run.h), fixes the deployment (log and flags), fits
// (plan/runs_fit.h), prints the before/after errors and writes the profile file.
#include <iostream>

#include "commands.h"
#include "kvplan/calibration/serving_run.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/runs_fit.h"

namespace kvplan::cli {

int run_calibrate_from_runs(const CalibrateFromRunsRequest& request) {
  const std::vector<calibration::ServingRun> runs = calibration::read_serving_runs(request.files, request.where);
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
