// kvplan/calibration/cupti_activity.h — the CUPTI Activity API as an ActivitySource (CUDA builds
// only, target kvplan::calibration_gpu). cupti.h stays in src/cupti_activity.cpp.
//
//   Status s;
//   std::unique_ptr<CuptiActivitySource> src = CuptiActivitySource::create(&s);  // null + s when busy
//   src->start();  ...launches...;  cudaDeviceSynchronize();  src->flush(&records);
//
// CUPTI calls its buffer callbacks as plain C functions with no user pointer, so at most ONE
// source exists per process: the callbacks funnel into it (create() refuses a second one).
// Buffers are owned by unique_ptrs inside the source; every CUPTI failure is returned as a
// Status naming the call and the CUptiResult code.
#pragma once

#include <memory>

#include "kvplan/calibration/activity_tracer.h"

namespace kvplan::calibration {

class CuptiActivitySource : public ActivitySource {
 public:
  static std::unique_ptr<CuptiActivitySource> create(Status* status);
  ~CuptiActivitySource() override;
  CuptiActivitySource(const CuptiActivitySource&) = delete;
  CuptiActivitySource& operator=(const CuptiActivitySource&) = delete;

  // Records CONCURRENT_KERNEL, MEMCPY and MEMSET activity.
  Status start() override;
  // cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), then hands over the parsed records.
  Status flush(std::vector<KernelRecord>* out) override;
  Status stop() override;
  Status set_tracing(bool on) override;
  int64_t dropped_records() const override;
  std::string version() const override;

  struct Impl;  // public for the C callbacks in the .cpp; opaque here

 private:
  CuptiActivitySource();
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvplan::calibration
