// CudaEventTimer (runner_gpu.h): CUDA events around every repetition on the default stream.
#include <cuda_runtime_api.h>

#include <string>

#include "runner_gpu.h"

namespace kvplan::calibration::internal {

Status cuda_status(int error, const char* call, int line) {
  if (error == cudaSuccess) return Status::success();
  return Status::error(call, error, cudaGetErrorString(static_cast<cudaError_t>(error)),
                       "calibration (line " + std::to_string(line) + ")");
}

CudaEventTimer::~CudaEventTimer() {
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

Status CudaEventTimer::time_repetitions(int reps, const Launch& launch, std::vector<double>* per_rep_ns) {
  per_rep_ns->clear();
  while (events_.size() < size_t(reps) + 1) {
    cudaEvent_t e = nullptr;
    if (Status s = cuda_status(cudaEventCreate(&e), "cudaEventCreate", __LINE__); !s.ok()) return s;
    events_.push_back(e);
  }
  if (Status s = cuda_status(cudaEventRecord(static_cast<cudaEvent_t>(events_[0]), nullptr), "cudaEventRecord", __LINE__);
      !s.ok())
    return s;
  for (int i = 0; i < reps; ++i) {
    if (Status s = launch(); !s.ok()) return s;
    if (Status s = cuda_status(cudaGetLastError(), "launch (cudaGetLastError)", __LINE__); !s.ok()) return s;
    if (Status s = cuda_status(cudaEventRecord(static_cast<cudaEvent_t>(events_[size_t(i) + 1]), nullptr),
                               "cudaEventRecord", __LINE__);
        !s.ok())
      return s;
  }
  if (Status s = synchronize(); !s.ok()) return s;
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    if (Status s = cuda_status(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(events_[size_t(i)]),
                                                    static_cast<cudaEvent_t>(events_[size_t(i) + 1])),
                               "cudaEventElapsedTime", __LINE__);
        !s.ok())
      return s;
    per_rep_ns->push_back(double(ms) * 1e6);
  }
  return Status::success();
}

Status CudaEventTimer::synchronize() {
  return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize", __LINE__);
}

}  // namespace kvplan::calibration::internal
