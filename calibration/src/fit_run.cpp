// fit_run: run selection, GPU preset matching and fitting of one stored run.
#include "kvplan/calibration/fit_run.h"

#include <fmt/format.h>

#include "kvplan/calibration/gpu_match.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan::calibration {

RunFit fit_run(const CalibrationStore& store, std::optional<int64_t> run_id, std::string_view gpu_id,
               const FitOptions& options) {
  RunFit out;
  if (run_id) {
    out.run = store.run(*run_id);
  } else {
    std::optional<StoredRun> latest;
    for (const StoredRun& r : store.runs()) {
      if (r.status == RunStatus::kComplete) latest = r;
    }
    if (!latest) {
      throw StoreError(fmt::format("calibration database '{}': no complete run to fit ({} run(s) in the file); "
                                   "name one with --run",
                                   store.path(), store.runs().size()));
    }
    out.run = *latest;
  }
  if (!gpu_id.empty()) {
    out.gpu = resolve_gpu(gpu_id);
  } else {
    std::optional<std::string> id = match_gpu_preset(out.run.info.gpu_name, out.run.info.memory_bytes);
    if (!id) {
      throw ConfigError(fmt::format("calibration database '{}': run {}: GPU '{}' matches no GPU preset; give the "
                                    "preset its efficiencies are relative to (--gpu, see `kvplan gpus`)",
                                    store.path(), out.run.id, out.run.info.gpu_name));
    }
    out.gpu = resolve_gpu(*id);
  }
  out.label = fmt::format("{}{} run {}", out.run.info.mode == "mock" ? "MOCK " : "", out.gpu.id, out.run.id);
  MeasurementFilter filter;
  filter.run_id = out.run.id;
  std::vector<Measurement> rows;
  for (StoredMeasurement& m : store.measurements(filter)) rows.push_back(std::move(m.m));
  out.report = fit_profile(rows, out.gpu, out.label, options);
  return out;
}

int64_t record_fits(CalibrationStore& store, const RunFit& fit) {
  const std::string created = utc_now_iso8601();
  for (const ClassFit& c : fit.report.classes) {
    StoredFit s;
    s.run_ids = std::to_string(fit.run.id);
    s.op_class = std::string(op_class_name(c.op_class));
    s.compute_e_max = c.profile.compute.e_max;
    s.compute_half_size = c.profile.compute.half_size;
    s.memory_e_max = c.profile.memory.e_max;
    s.memory_half_size = c.profile.memory.half_size;
    s.launch_overhead_ns = c.profile.launch_overhead_ns;
    s.mape = c.mape;
    s.p90_rel_error = c.p90_rel_error;
    s.num_points = c.num_points;
    s.source = c.profile.source;
    s.note = c.profile.note;
    s.created_utc = created;
    store.record_fit(s);
  }
  return static_cast<int64_t>(fit.report.classes.size());
}

}  // namespace kvplan::calibration
