// `kvplan calibrate inspect | import | import-published | fit | run`.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kvplan/calibration/fit_run.h"
#include "kvplan/calibration/published_import.h"
#include "kvplan/calibration/store.h"
#include "kvplan/config.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/number_text.h"
#include "kvplan/core/presets.h"

#include "sibling_exec.h"

namespace kvplan::cli {

namespace {

namespace cal = kvplan::calibration;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string run_line(const cal::StoredRun& r) {
  const cal::RunInfo& i = r.info;
  std::string out = fmt::format(
      "  run {} [{}] {} ({}), driver {}, CUDA {}, CUPTI {}, {} SMs, {:.1f} GiB; mode {}; started {}{}; kvplan {} "
      "({}) on {}; {} rows",
      r.id, cal::run_status_name(r.status), i.gpu_name, i.gpu_uuid, i.driver_version, i.cuda_version, i.cupti_version,
      i.num_sms, static_cast<double>(i.memory_bytes) / kGiB, i.mode, i.started_utc,
      r.finished_utc.empty() ? "" : ", finished " + r.finished_utc, i.kvplan_version, i.git_commit, i.host, r.num_rows);
  if (!r.imported_from.empty()) out += fmt::format("; imported from {}", r.imported_from);
  out += "\n";
  if (!i.clocks_seen.empty()) out += fmt::format("      clocks seen: {}\n", i.clocks_seen);
  return out;
}

std::string fit_line(const cal::StoredFit& f) {
  return fmt::format(
      "  fit {} (run {}) {:<18} compute e_max {:.3f} half {:.3g} FLOP; memory e_max {:.3f} half {:.3g} B; "
      "MAPE {:.1f}%, p90 {:.1f}%, {} points; {}\n",
      f.id, f.run_ids, f.op_class, f.compute_e_max, f.compute_half_size, f.memory_e_max, f.memory_half_size,
      f.mape * 100, f.p90_rel_error * 100, f.num_points, f.source);
}

nlohmann::json run_json(const cal::StoredRun& r) {
  const cal::RunInfo& i = r.info;
  return {{"id", r.id},
          {"status", cal::run_status_name(r.status)},
          {"gpu_name", i.gpu_name},
          {"gpu_uuid", i.gpu_uuid},
          {"driver_version", i.driver_version},
          {"cuda_version", i.cuda_version},
          {"cupti_version", i.cupti_version},
          {"clocks_seen", i.clocks_seen},
          {"kvplan_version", i.kvplan_version},
          {"git_commit", i.git_commit},
          {"host", i.host},
          {"started_utc", i.started_utc},
          {"finished_utc", r.finished_utc},
          {"mode", i.mode},
          {"num_sms", i.num_sms},
          {"memory_bytes", i.memory_bytes},
          {"imported_from", r.imported_from},
          {"rows", r.num_rows}};
}

nlohmann::json fit_json(const cal::StoredFit& f) {
  return {{"id", f.id},
          {"run_ids", f.run_ids},
          {"op_class", f.op_class},
          {"compute", {{"e_max", f.compute_e_max}, {"half_size", f.compute_half_size}}},
          {"memory", {{"e_max", f.memory_e_max}, {"half_size", f.memory_half_size}}},
          {"launch_overhead_ns", f.launch_overhead_ns},
          {"mape", f.mape},
          {"p90_rel_error", f.p90_rel_error},
          {"num_points", f.num_points},
          {"source", f.source},
          {"note", f.note},
          {"created_utc", f.created_utc}};
}

}  // namespace

int run_calibrate_inspect(const std::string& file, bool json) {
  cal::CalibrationStore db = cal::CalibrationStore::open(file, cal::OpenMode::kExisting);
  cal::StoreSummary s = db.summary();
  if (json) {
    nlohmann::json j;
    j["file"] = file;
    j["schema_version"] = s.schema_version;
    j["runs"] = nlohmann::json::array();
    for (const auto& r : s.runs) j["runs"].push_back(run_json(r));
    j["kernels"] = nlohmann::json::array();
    for (const auto& k : s.kernels) j["kernels"].push_back({{"kernel", k.kernel}, {"op_class", k.op_class}, {"rows", k.rows}});
    j["cupti_event_agreement"] = {{"rows", s.agreement.rows},     {"min", s.agreement.min},
                                  {"median", s.agreement.median}, {"max", s.agreement.max},
                                  {"within_5_percent", s.agreement.within_5_percent}};
    j["fits"] = nlohmann::json::array();
    for (const auto& f : s.fits) j["fits"].push_back(fit_json(f));
    std::cout << json_text(j, 2) << "\n";
    return 0;
  }
  std::cout << fmt::format("calibration database {} (schema version {})\n", file, s.schema_version);
  std::cout << fmt::format("runs: {}\n", s.runs.size());
  for (const auto& r : s.runs) std::cout << run_line(r);
  std::map<std::string, std::vector<int64_t>> gpus;  // "name (uuid)" -> run ids
  for (const auto& r : s.runs) gpus[fmt::format("{} ({})", r.info.gpu_name, r.info.gpu_uuid)].push_back(r.id);
  std::cout << fmt::format("GPUs: {}\n", gpus.size());
  for (const auto& [gpu, ids] : gpus) std::cout << fmt::format("  {}: run(s) {}\n", gpu, fmt::join(ids, ", "));
  std::cout << fmt::format("kernels: {}\n", s.kernels.size());
  for (const auto& k : s.kernels) std::cout << fmt::format("  {:<24} {:<18} {:>6} rows\n", k.kernel, k.op_class, k.rows);
  if (s.agreement.rows > 0) {
    std::cout << fmt::format(
        "CUPTI/event agreement: {} rows, CUPTI/event time ratio median {:.3f} (min {:.3f}, max {:.3f}); {:.1f}% within "
        "±5%\n",
        s.agreement.rows, s.agreement.median, s.agreement.min, s.agreement.max, s.agreement.within_5_percent * 100);
  } else {
    std::cout << "CUPTI/event agreement: no rows with both times\n";
  }
  std::cout << fmt::format("fits: {}\n", s.fits.size());
  for (const auto& f : s.fits) std::cout << fit_line(f);
  return 0;
}

int run_calibrate_import(const std::string& dest, const std::string& src) {
  cal::CalibrationStore db = cal::CalibrationStore::open(dest, cal::OpenMode::kCreate);
  cal::ImportResult r = db.import_database(src);
  std::cout << fmt::format("imported {} run(s), {} rows, from {} into {}", r.new_run_ids.size(), r.rows, src, dest);
  if (!r.new_run_ids.empty()) std::cout << fmt::format(" (new run ids {})", fmt::join(r.new_run_ids, ", "));
  std::cout << "\n";
  if (!r.skipped_runs.empty()) {
    std::cout << fmt::format("skipped {} run(s) already in {} (same GPU UUID, start time and mode): {} run(s) {}\n",
                             r.skipped_runs.size(), dest, src, fmt::join(r.skipped_runs, ", "));
  }
  return 0;
}

int run_calibrate_import_published(const CalibrateImportPublishedRequest& request) {
  cal::PublishedImportOptions options;
  if (!request.gpu.empty()) options.gpu = resolve_gpu(request.gpu).id;  // aliases work, unknown ids are refused
  cal::CalibrationStore db = cal::CalibrationStore::open(request.out, cal::OpenMode::kCreate);
  cal::PublishedImportResult r = cal::import_published(db, request.dir, options);
  std::cout << fmt::format("imported {} published run(s), {} rows, from {} ({}) into {}", r.run_ids.size(), r.rows,
                           request.dir, fmt::join(r.tables, ", "), request.out);
  if (!r.run_ids.empty()) std::cout << fmt::format(" (new run ids {})", fmt::join(r.run_ids, ", "));
  std::cout << "\n";
  for (const std::string& n : r.notes) std::cout << "  note: " << n << "\n";
  return 0;
}

int run_calibrate_fit(const CalibrateFitRequest& request) {
  std::vector<int64_t> run_ids;  // empty with --run all: every complete run
  bool all = false;
  if (request.run == "all") {
    all = true;
  } else if (!request.run.empty()) {
    size_t begin = 0;
    while (begin <= request.run.size()) {
      const size_t comma = std::min(request.run.find(',', begin), request.run.size());
      const std::string one = request.run.substr(begin, comma - begin);
      const std::optional<int64_t> parsed = parse_int64_text(one);
      if (!parsed) throw ConfigError(fmt::format("--run={} must be an integer (at most 19 digits)", one));
      const int64_t id = *parsed;
      if (id < 1) throw ConfigError(fmt::format("--run={}: run id {} must be >= 1", request.run, one));
      run_ids.push_back(id);
      begin = comma + 1;
    }
  }
  cal::CalibrationStore db = cal::CalibrationStore::open(request.file, cal::OpenMode::kExisting);
  cal::RunFit fit = all || run_ids.size() > 1 ? cal::fit_runs(db, run_ids, request.gpu)
                                               : cal::fit_run(db, run_ids.empty() ? std::nullopt
                                                                                  : std::optional<int64_t>(run_ids[0]),
                                                              request.gpu);
  // All or nothing: the profile is written to <out>.partial and checked, the fits are stored, and
  // only then is the file moved into place. A failure leaves neither a fit.json nor stored fits.
  AtomicFile out(request.out);
  out.stream() << json_text_flat_arrays(fit.report.profile.to_json());
  out.stream() << "\n";
  int64_t stored = cal::record_fits(db, fit);
  out.commit();

  for (const std::string& w : fit.report.warnings) std::cerr << "kvplan: warning: " << w << "\n";
  int64_t rows = 0;
  for (const cal::StoredRun& r : fit.runs) {
    rows += r.num_rows;
    if (r.status != cal::RunStatus::kComplete) {
      std::cerr << fmt::format("kvplan: warning: run {} is {}, not complete: fitting the rows it has\n", r.id,
                               cal::run_status_name(r.status));
    }
  }
  if (fit.runs.size() == 1) {
    std::cout << fmt::format("fitted run {} of {} ({}, {} rows) against the {} datasheet roofs\n", fit.run.id,
                             request.file, fit.run.info.gpu_name, fit.run.num_rows, fit.gpu.id);
  } else {
    std::vector<int64_t> ids;
    for (const cal::StoredRun& r : fit.runs) ids.push_back(r.id);
    std::cout << fmt::format("fitted runs {} of {} ({} rows) against the {} datasheet roofs\n", fmt::join(ids, ", "),
                             request.file, rows, fit.gpu.id);
  }
  std::cout << fmt::format("  {:<18}{:>7}{:>10}{:>12}{:>10}{:>12}{:>8}{:>8}{:>9}{:>10}\n", "class", "rows", "e_c max",
                           "e_c half", "e_m max", "e_m half", "MAPE", "p90", "held-out", "ho p90");
  for (const cal::ClassFit& c : fit.report.classes) {
    std::cout << fmt::format("  {:<18}{:>7}{:>10.3f}{:>12.3g}{:>10.3f}{:>12.3g}{:>7.1f}%{:>7.1f}%{:>9}{:>9.1f}%\n",
                             op_class_name(c.op_class), c.num_points, c.profile.compute.e_max,
                             c.profile.compute.half_size, c.profile.memory.e_max, c.profile.memory.half_size,
                             c.mape * 100, c.p90_rel_error * 100, c.heldout.rows, c.heldout.p90 * 100);
    std::cout << fmt::format("      compute: {}; memory: {}; floor {:.0f} ns\n", c.compute.how, c.memory.how,
                             c.floor_ns);
    for (const cal::VariantFit& v : c.variants) {
      std::cout << fmt::format("      grid {}: {} cells, smoothing {}; held-out {} rows, median {:.1f}%, p90 {:.1f}%\n",
                               v.variant, v.cells, v.smoothing, v.heldout.rows, v.heldout.median * 100,
                               v.heldout.p90 * 100);
    }
    std::cout << fmt::format("      source: {}\n", c.profile.source);
  }
  std::cout << fmt::format("{} class(es) fitted ({}), the others datasheet; wrote {}; stored {} fit(s) in {}\n",
                           fit.report.classes.size(), fit.label, request.out, stored, request.file);
  return 0;
}

int run_calibrate_run(const CalibrateRunRequest& request) {
  // The measuring run lives in kvplan-calibrate-run (calibration/src/calibrate_main.cpp), the only
  // executable that links CUDA, CUPTI and cuBLAS; kvplan hands the command to it.
  if (request.out.empty() && !request.list_only) throw ConfigError("calibrate run: --out FILE is required");
  std::vector<std::string> args{request.full ? "--full" : "--quick"};
  if (!request.out.empty()) args.insert(args.end(), {"--out", request.out});
  if (request.resume) args.emplace_back("--resume");
  if (request.list_only) args.emplace_back("--list");
  if (request.reps != 0) args.insert(args.end(), {"--reps", std::to_string(request.reps)});
  if (request.warmup != 0) args.insert(args.end(), {"--warmup", std::to_string(request.warmup)});
  if (request.device != 0) args.insert(args.end(), {"--device", std::to_string(request.device)});
  if (!request.kernel.empty()) args.insert(args.end(), {"--only", request.kernel});
  exec_sibling("kvplan-calibrate-run", args,
               KVPLAN_ENABLE_CUDA ? "calibration needs a build with CUDA and CUPTI (KVPLAN_ENABLE_CUPTI=ON)"
                                  : "this kvplan was built without CUDA; calibration needs a GPU build");
}

}  // namespace kvplan::cli
