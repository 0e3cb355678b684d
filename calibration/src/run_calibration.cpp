// `kvplan calibrate run` (run_calibration.h): the grid of runner_gpu.cpp, measured with CUPTI
// and CUDA events, stored shape by shape through CalibrationStore. CUDA builds only.
#include "kvplan/calibration/run_calibration.h"

#include <cuda_runtime_api.h>

#include <exception>
#include <iostream>

#include "kvplan/calibration/cupti_activity.h"
#include "kvplan/calibration/store.h"
#include "kvplan/kernels/device.h"
#include "runner_gpu.h"

namespace kvplan::calibration {

namespace {
const char* mode_name(GridSize g) { return g == GridSize::kFull ? "full" : "quick"; }
}  // namespace

int run_calibration_to_sink(const CalibrationOptions& options, const std::function<void(const RunInfo&)>& begin,
                            const Sink& sink, const HasShape& has_shape) {
  std::string why;
  if (!kernels::cuda_device_available(&why)) {
    std::cerr << "calibrate: no usable CUDA device: " << why << "\n";
    return 3;
  }
  if (cudaSetDevice(options.device) != cudaSuccess) {
    std::cerr << "calibrate: cudaSetDevice(" << options.device << ") failed\n";
    return 3;
  }
  std::vector<std::string> notes;
  std::vector<Shape> shapes = internal::build_shape_grid(options.grid, options.device, &notes);
  if (!options.only_kernel.empty()) {
    std::erase_if(shapes, [&](const Shape& s) { return s.kernel != options.only_kernel; });
  }
  for (const std::string& n : notes) std::cerr << "[calibrate] note: " << n << "\n";
  if (options.list_only) {
    for (const Shape& s : shapes) std::cout << s.kernel << " " << s.op_class << " " << s.params.to_json() << "\n";
    std::cerr << "[calibrate] " << shapes.size() << " shapes\n";
    return 0;
  }
  Status st;
  std::unique_ptr<CuptiActivitySource> source = CuptiActivitySource::create(&st);
  if (!source) {
    std::cerr << "calibrate: " << st.describe() << "\n";
    return 1;
  }
  RunInfo info = internal::describe_this_machine(options.device, mode_name(options.grid), source->version());
  std::cerr << "[calibrate] " << info.gpu_name << " " << info.gpu_uuid << " driver " << info.driver_version
            << " CUDA " << info.cuda_version << " CUPTI " << info.cupti_version << " clocks " << info.clocks_seen
            << "\n";
  try {
    begin(info);
  } catch (const std::exception& e) {
    std::cerr << "calibrate: " << e.what() << "\n";
    return 1;
  }
  internal::CudaEventTimer timer;
  RunnerOptions ro;
  ro.reps = options.reps > 0 ? options.reps : (options.grid == GridSize::kFull ? 50 : 20);
  ro.warmup = options.warmup > 0 ? options.warmup : 3;
  ro.has_shape = has_shape;
  Runner runner(*source, timer, KernelNameTable::standard(), ro);
  RunReport report = runner.run(shapes, sink);
  // Clocks after: RunInfo is stored at the start (crash safety), so the after-reading is one
  // machine-level row of its own.
  const internal::GpuState after = internal::read_gpu_state(options.device);
  if (report.status.ok()) {
    Measurement m;
    m.kernel = "gpu_state_after";
    m.op_class = "";
    m.params_json = after.clocks_json;
    try {
      if (!has_shape || !has_shape(m.kernel, m.params_json)) sink({m});
    } catch (const std::exception& e) {
      std::cerr << "[calibrate] could not store the clocks after: " << e.what() << "\n";
    }
  }
  std::cerr << "[calibrate] clocks after: " << after.clocks_json << "\n";
  for (const std::string& w : report.warnings) std::cerr << "[calibrate] rejected: " << w << "\n";
  std::cerr << "[calibrate] " << report.shapes_measured << " measured, " << report.shapes_resumed << " resumed, "
            << report.shapes_rejected << " rejected of " << report.shapes_total << " shapes; "
            << report.unknown_kernels.size() << " unknown kernel names\n";
  if (!report.status.ok()) {
    std::cerr << "calibrate: stopped: " << report.status.describe()
              << " (every shape before it is stored; rerun with --resume)\n";
    return 1;
  }
  return 0;
}

int run_calibration(const CalibrationOptions& options) {
  if (options.out_path.empty() && !options.list_only) {
    std::cerr << "calibrate: --out FILE.sqlite is required\n";
    return 2;
  }
  if (options.list_only) return run_calibration_to_sink(options, [](const RunInfo&) {}, [](const auto&) {}, {});
  std::string why;
  if (!kernels::cuda_device_available(&why)) {  // before the store: no empty file without a GPU
    std::cerr << "calibrate: no usable CUDA device: " << why << "\n";
    return 3;
  }
  try {
    CalibrationStore db = CalibrationStore::open(options.out_path, OpenMode::kCreate);
    int64_t run_id = -1;
    auto begin = [&](const RunInfo& info) {
      if (options.resume) {
        // The newest unfinished run of this GPU and grid continues; otherwise a new run.
        for (const StoredRun& r : db.runs()) {
          if (r.status != RunStatus::kComplete && r.info.gpu_uuid == info.gpu_uuid && r.info.mode == info.mode &&
              r.imported_from.empty() && r.id > run_id) {
            run_id = r.id;
          }
        }
        if (run_id >= 0) {
          db.reopen_run(run_id);
          std::cerr << "[calibrate] resuming run " << run_id << " in " << options.out_path << "\n";
          return;
        }
      }
      run_id = db.begin_run(info);
      std::cerr << "[calibrate] run " << run_id << " in " << options.out_path << "\n";
    };
    auto sink = [&](const std::vector<Measurement>& rows) { db.record_shape(run_id, rows); };
    auto has = [&](const std::string& kernel, const std::string& params) {
      return options.resume && db.has_shape(run_id, kernel, params);
    };
    const int rc = run_calibration_to_sink(options, begin, sink, has);
    if (run_id >= 0) db.end_run(run_id, rc == 0 ? RunStatus::kComplete : RunStatus::kFailed);
    return rc;
  } catch (const std::exception& e) {
    std::cerr << "calibrate: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace kvplan::calibration
