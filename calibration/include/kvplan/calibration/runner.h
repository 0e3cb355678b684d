// kvplan/calibration/runner.h — the calibration runner's host logic: for each shape of a grid,
// warm up, time N repetitions (CUPTI durations, cross-checked with CUDA events), and hand the
// shape's rows to a sink before the next shape starts, so a crash loses no completed shape.
//
//   Runner runner(source, timer, KernelNameTable::standard(), RunnerOptions{.reps = 20});
//   RunReport r = runner.run(shapes, [&](const std::vector<Measurement>& rows) { store.record_shape(run_id, rows); });
//
// The device parts come in through interfaces: ActivitySource (CUPTI or a mock), RepetitionTimer
// (CUDA events or a fake) and each Shape's `prepare` (allocates inputs, returns the launch of one
// repetition). Tests drive everything with MockActivitySource and fake launches.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "kvplan/calibration/activity_tracer.h"
#include "kvplan/calibration/measurement.h"

namespace kvplan::calibration {

// Exact parameters of a shape. std::map keeps keys sorted, so to_json() is canonical:
// {"B":4,"dtype":"bf16","lens":[1,2]} — sorted keys, no spaces, integers without a decimal point,
// doubles in shortest round-trip form, strings JSON-escaped.
using ParamValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;
class Params {
 public:
  Params& set(const std::string& key, int64_t v) { return put(key, v); }
  Params& set(const std::string& key, int v) { return put(key, int64_t{v}); }
  Params& set(const std::string& key, double v) { return put(key, v); }
  Params& set(const std::string& key, const char* v) { return put(key, std::string(v)); }
  Params& set(const std::string& key, std::string v) { return put(key, std::move(v)); }
  Params& set(const std::string& key, std::vector<int64_t> v) { return put(key, std::move(v)); }
  std::string to_json() const;
  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  Params& put(const std::string& key, ParamValue v) {
    values_[key] = std::move(v);
    return *this;
  }
  std::map<std::string, ParamValue> values_;
};

// Enqueues one repetition of a shape on the runner's stream.
using Launch = std::function<Status()>;

struct Shape {
  enum class Mode {
    kTimed,          // warm-up, N timed repetitions, one row for the shape (+ one per component kernel)
    kCuptiOverhead,  // the same launches with tracing on and off: one "cupti_overhead" row
  };
  std::string kernel;    // catalogue id recorded in Measurement::kernel, e.g. "decode_paged"
  std::string op_class;  // PerfProfile class name ("" for machine-level rows: launch/CUPTI overhead)
  Params params;
  double bytes = 0;      // each input read once, each output written once
  double flops = 0;
  Mode mode = Mode::kTimed;
  int kernels_per_rep = 1;  // kCuptiOverhead: launches in one repetition; the row is per launch
  // Allocates the inputs (fresh random data) and sets *launch; the launch's captures own the
  // device memory, so dropping it frees the shape. Called only when the shape is not resumed.
  std::function<Status(Launch* launch)> prepare;
};

// CUDA events around each repetition (N+1 events back to back, one synchronization at the end).
class RepetitionTimer {
 public:
  virtual ~RepetitionTimer() = default;
  // Runs `launch` reps times; per_rep_ns[i] is the event time of repetition i. Synchronizes.
  virtual Status time_repetitions(int reps, const Launch& launch, std::vector<double>* per_rep_ns) = 0;
  virtual Status synchronize() = 0;
};

// Summary of n durations. median: mean of the two middle values for even n; p90: linear
// interpolation between order statistics at rank 0.9·(n−1) (numpy's default).
struct DurationStats {
  int n = 0;
  double min_ns = 0, median_ns = 0, p90_ns = 0, mean_ns = 0;
};
DurationStats compute_stats(std::vector<double> values_ns);

using Sink = std::function<void(const std::vector<Measurement>&)>;
// Resume: true when the store already holds a row for (kernel, params_json).
using HasShape = std::function<bool(const std::string& kernel, const std::string& params_json)>;

struct RunnerOptions {
  int warmup = 3;
  int reps = 20;
  std::ostream* progress = nullptr;         // progress lines; nullptr = std::cerr
  std::function<double()> now_s;            // monotonic seconds; empty = steady_clock
  HasShape has_shape;                       // empty = measure every shape
};

struct RunReport {
  Status status;                 // first hard error (launch, CUPTI, events); shapes before it are in the sink
  int shapes_total = 0;
  int shapes_measured = 0;       // handed to the sink
  int shapes_resumed = 0;        // skipped: has_shape said done
  int shapes_rejected = 0;       // measured but inconsistent records (dropped by CUPTI, count mismatch)
  std::map<std::string, int64_t> unknown_kernels;  // name -> records no rule matched
  std::vector<std::string> warnings;
};

class Runner {
 public:
  Runner(ActivitySource& source, RepetitionTimer& timer, KernelNameTable names, RunnerOptions options);
  // Measures `shapes` in order; stops at the first hard error (returned in RunReport::status).
  RunReport run(const std::vector<Shape>& shapes, const Sink& sink);

  // One timed shape's rows from its records and event times (exposed for tests).
  // Records are grouped into repetitions of records.size()/reps consecutive records (by start
  // time); a repetition's duration is the sum of its records' durations (device busy time).
  // Returns false with `why` when the records cannot be split into reps equal groups.
  bool rows_for_shape(const Shape& shape, std::vector<KernelRecord> records, const std::vector<double>& event_ns,
                      int reps, std::vector<Measurement>* rows, std::string* why, RunReport* report) const;

 private:
  Status measure(const Shape& shape, std::vector<Measurement>* rows, bool* rejected, RunReport* report);
  Status measure_overhead(const Shape& shape, const Launch& launch, std::vector<Measurement>* rows);
  void progress_line(int index, int total, const std::string& kernel, const char* what, double start_s);

  ActivitySource& source_;
  RepetitionTimer& timer_;
  KernelNameTable names_;
  RunnerOptions options_;
};

}  // namespace kvplan::calibration
