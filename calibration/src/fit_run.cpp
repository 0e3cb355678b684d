// fit_run / fit_runs: run selection, GPU preset matching, class labels and fitting of stored runs.
#include "kvplan/calibration/fit_run.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kvplan/calibration/gpu_match.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan::calibration {

namespace {

constexpr std::string_view kPublishedHost = "published: ";

bool is_published(const StoredRun& r) { return r.info.mode == "published"; }

GpuSpec gpu_of(const CalibrationStore& store, const StoredRun& run) {
  std::optional<std::string> id = match_gpu_preset(run.info.gpu_name, run.info.memory_bytes);
  if (!id) {
    throw ConfigError(fmt::format("calibration database '{}': run {}: GPU '{}' matches no GPU preset; give the "
                                  "preset its efficiencies are relative to (--gpu, see `kvplan gpus`)",
                                  store.path(), run.id, run.info.gpu_name));
  }
  return resolve_gpu(*id);
}

// "published (a; b)" from "published (a)" and "published (b)"; measured labels must be alone.
std::string class_label(const std::set<std::string>& labels, OpClass c, const std::string& runs) {
  if (labels.size() == 1) return *labels.begin();
  std::vector<std::string> inner;
  for (const std::string& l : labels) {
    if (l.rfind("published (", 0) != 0) {
      throw ConfigError(fmt::format("class {}: rows of runs {} mix published and measured data; fit them "
                                    "separately (--run)",
                                    op_class_name(c), runs));
    }
    inner.push_back(l.substr(11, l.size() - 12));
  }
  return fmt::format("published ({})", fmt::join(inner, "; "));
}

}  // namespace

std::string run_source_label(const StoredRun& run, const GpuSpec& gpu) {
  if (is_published(run)) {
    std::string what = run.info.host;
    if (what.rfind(kPublishedHost, 0) == 0) what = what.substr(kPublishedHost.size());
    return fmt::format("published ({}, {})", what, run.info.gpu_name);
  }
  return fmt::format("measured ({}{} run {})", run.info.mode == "mock" ? "MOCK " : "", gpu.id, run.id);
}

RunFit fit_run(const CalibrationStore& store, std::optional<int64_t> run_id, std::string_view gpu_id,
               const FitOptions& options) {
  int64_t id = 0;
  if (run_id) {
    id = store.run(*run_id).id;
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
    id = latest->id;
  }
  return fit_runs(store, {id}, gpu_id, options);
}

RunFit fit_runs(const CalibrationStore& store, const std::vector<int64_t>& run_ids, std::string_view gpu_id,
                const FitOptions& options) {
  RunFit out;
  if (run_ids.empty()) {
    for (const StoredRun& r : store.runs()) {
      if (r.status == RunStatus::kComplete) out.runs.push_back(r);
    }
    if (out.runs.empty()) {
      throw StoreError(fmt::format("calibration database '{}': no complete run to fit ({} run(s) in the file)",
                                   store.path(), store.runs().size()));
    }
  } else {
    std::set<int64_t> seen;
    for (int64_t id : run_ids) {
      if (seen.insert(id).second) out.runs.push_back(store.run(id));
    }
    std::sort(out.runs.begin(), out.runs.end(), [](const StoredRun& a, const StoredRun& b) { return a.id < b.id; });
  }
  out.run = out.runs.front();
  if (!gpu_id.empty()) {
    out.gpu = resolve_gpu(gpu_id);
  } else {
    out.gpu = gpu_of(store, out.runs.front());
    for (const StoredRun& r : out.runs) {
      const GpuSpec g = gpu_of(store, r);
      if (g.id != out.gpu.id) {
        throw ConfigError(fmt::format("calibration database '{}': run {} is GPU '{}' ({}) but run {} is '{}' ({}); "
                                      "fit one GPU at a time or name the preset (--gpu)",
                                      store.path(), out.runs.front().id, out.runs.front().info.gpu_name, out.gpu.id,
                                      r.id, r.info.gpu_name, g.id));
      }
    }
  }
  std::vector<int64_t> ids;
  for (const StoredRun& r : out.runs) ids.push_back(r.id);
  const bool mock = std::any_of(out.runs.begin(), out.runs.end(), [](const StoredRun& r) { return r.info.mode == "mock"; });
  out.label = fmt::format("{}{} run{} {}", mock ? "MOCK " : "", out.gpu.id, ids.size() > 1 ? "s" : "", fmt::join(ids, ","));

  // Rows, and per class the labels and ids of the runs they come from.
  std::vector<Measurement> rows;
  std::map<OpClass, std::set<std::string>> labels;
  std::map<OpClass, std::set<int64_t>> class_ids;
  for (const StoredRun& r : out.runs) {
    const std::string label = run_source_label(r, out.gpu);
    MeasurementFilter filter;
    filter.run_id = r.id;
    for (StoredMeasurement& m : store.measurements(filter)) {
      try {
        const OpClass c = parse_op_class(m.m.op_class, "calibration row");
        labels[c].insert(label);
        class_ids[c].insert(r.id);
      } catch (const ConfigError&) {
        // fit_profile warns about rows of unknown classes
      }
      rows.push_back(std::move(m.m));
    }
  }
  for (const auto& [c, set] : class_ids) out.class_runs[c] = fmt::format("{}", fmt::join(set, ","));
  out.report = fit_profile(
      rows, out.gpu, [&](OpClass c) { return class_label(labels[c], c, out.class_runs[c]); }, options);
  return out;
}

int64_t record_fits(CalibrationStore& store, const RunFit& fit) {
  const std::string created = utc_now_iso8601();
  std::vector<StoredFit> rows;
  for (const ClassFit& c : fit.report.classes) {
    StoredFit s;
    auto runs = fit.class_runs.find(c.op_class);
    s.run_ids = runs != fit.class_runs.end() ? runs->second : std::to_string(fit.run.id);
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
    rows.push_back(std::move(s));
  }
  return store.record_fits(rows);  // one transaction: all classes of this fit or none
}

}  // namespace kvplan::calibration
