// Internal (calibration/src): the CUDA side of the runner — event timer, shape grids, machine
// description. Used by run_calibration.cpp; not a public header (it is CUDA-build-only).
#pragma once

#include <string>
#include <vector>

#include "kvplan/calibration/measurement.h"
#include "kvplan/calibration/run_calibration.h"
#include "kvplan/calibration/runner.h"

namespace kvplan::calibration::internal {

// A CUDA runtime error code (cudaError_t) as a Status naming the call; ok for cudaSuccess.
Status cuda_status(int error, const char* call, int line);

// CUDA events on the default stream: N+1 events back to back, one synchronization at the end.
class CudaEventTimer : public RepetitionTimer {
 public:
  CudaEventTimer() = default;
  ~CudaEventTimer() override;
  Status time_repetitions(int reps, const Launch& launch, std::vector<double>* per_rep_ns) override;
  Status synchronize() override;

 private:
  std::vector<void*> events_;  // cudaEvent_t, created on demand
};

// The grid for `size` on device `device`; `notes` receives what is left out and why (fp8 GEMM,
// NCCL without several GPUs, ...).
std::vector<Shape> build_shape_grid(GridSize size, int device, std::vector<std::string>* notes);

// GPU state read, never set: name, UUID, driver, clocks (NVML via dlopen, else nvidia-smi).
struct GpuState {
  std::string name, uuid, driver;
  std::string clocks_json;  // {"mem_mhz":..,"power_w":..,"sm_mhz":..,"source":"nvml","temp_c":..}
};
GpuState read_gpu_state(int device);

RunInfo describe_this_machine(int device, const std::string& mode, const std::string& cupti_version);

}  // namespace kvplan::calibration::internal
