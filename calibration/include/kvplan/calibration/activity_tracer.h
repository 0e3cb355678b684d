// kvplan/calibration/activity_tracer.h — where the calibration runner gets kernel durations from:
// CUPTI activity records on a GPU (CuptiActivitySource, CUDA builds only) or scripted records in
// tests (MockActivitySource), and how mangled kernel names map to kernel ids of the catalogue.
//
//   std::unique_ptr<ActivitySource> src = make_cupti_activity_source();   // cupti_activity.h
//   src->start();  launch(...);  std::vector<KernelRecord> recs;  src->flush(&recs);  src->stop();
//   std::optional<KernelId> id = KernelNameTable::standard().classify(recs[0].name);  // "decode_paged"
//
// cupti.h stays out of this header: the CUPTI implementation lives in src/cupti_activity.cpp.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvplan/kernels/status.h"

namespace kvplan::calibration {

// Ok, or the failed call, its code and the place (the CUPTI/CUDA call name, e.g.
// "cuptiActivityFlushAll"; "params" for bad input; "launch" for a kernel launcher's error): the same
// Status the kernel launchers return.
using Status = kernels::Status;

// One kernel (or memory copy / memset) the device ran, as CUPTI reports it. Copies get synthetic
// names: "memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memcpy_other", "memset".
struct KernelRecord {
  std::string name;           // demangled where possible (CUDA names are mangled templates)
  uint64_t start_ns = 0;      // device timestamps (CUPTI clock), end > start
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;  // links the record to its runtime API call
  uint32_t stream_id = 0;
  int64_t bytes = 0;          // copies and memsets; 0 for kernels
  double duration_ns() const { return static_cast<double>(end_ns - start_ns); }
};

// A source of device activity records. Not thread-safe: one runner drives it.
class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  // Begins recording kernels and copies (idempotent).
  virtual Status start() = 0;
  // Waits for every record of work already completed on the device (the caller synchronizes
  // first) and appends the records received since the previous flush, oldest first.
  virtual Status flush(std::vector<KernelRecord>* out) = 0;
  // Stops recording and releases what start() took; records not flushed are lost.
  virtual Status stop() = 0;
  // Overhead hooks: with tracing off the same launches run untraced, so the runner can time
  // CUPTI's own cost per kernel (tracing on vs off). set_tracing(false) keeps the source started.
  virtual Status set_tracing(bool on) = 0;
  // Records CUPTI had to drop (buffer full); a non-zero count invalidates the shape's numbers.
  virtual int64_t dropped_records() const = 0;
  // "CUPTI 130000" or "mock": recorded in RunInfo::cupti_version.
  virtual std::string version() const = 0;
};

// Scripted records for tests: each flush() returns the next scripted batch (empty when none is
// left, or while tracing is off).
class MockActivitySource : public ActivitySource {
 public:
  void script_flush(std::vector<KernelRecord> batch) { batches_.push_back(std::move(batch)); }
  // Scripted error for the n-th call of flush() (0-based).
  void fail_flush_at(int call_index) { fail_flush_at_ = call_index; }
  void set_dropped(int64_t n) { dropped_ = n; }

  Status start() override {
    started_ = true;
    return Status::success();
  }
  Status flush(std::vector<KernelRecord>* out) override;
  Status stop() override {
    started_ = false;
    return Status::success();
  }
  Status set_tracing(bool on) override {
    tracing_ = on;
    return Status::success();
  }
  int64_t dropped_records() const override { return dropped_; }
  std::string version() const override { return "mock"; }

  bool started() const { return started_; }
  bool tracing() const { return tracing_; }
  int flush_calls() const { return flush_calls_; }

 private:
  std::deque<std::vector<KernelRecord>> batches_;
  bool started_ = false;
  bool tracing_ = true;
  int flush_calls_ = 0;
  int fail_flush_at_ = -1;
  int64_t dropped_ = 0;
};

// The catalogue id of a device kernel and the PerfProfile operator class it calibrates.
struct KernelId {
  std::string id;        // "decode_paged", "gemm", "copy_h2d", ...
  std::string op_class;  // op_class_name() spelling: "attention_decode", "gemm", ...; "" = machine-level
};

// Maps kernel names to ids by substring rules, first match wins. Why substrings: CUDA names are
// mangled templates ("_Z23decode_attention_kernelI13__nv_bfloat16Li128ELi4E9PagedRowsEv..."), and
// library kernels (cuBLAS "nvjet_..." / "sm90_xmma_gemm_...") change with versions.
class KernelNameTable {
 public:
  struct Rule {
    std::vector<std::string> all_of;  // every one of these must occur in the name
    KernelId kernel;
  };
  void add(Rule rule) { rules_.push_back(std::move(rule)); }
  // nullopt for a name no rule matches: the runner reports it, never drops it silently.
  std::optional<KernelId> classify(const std::string& name) const;
  // kvplan's kernels, cuBLAS GEMMs, NCCL, copies and the runner's own probes.
  static KernelNameTable standard();

 private:
  std::vector<Rule> rules_;
};

}  // namespace kvplan::calibration
