// kvplan/sim/metrics.h — what a simulation measures: per request, per run, and over time.
//
//   MetricsCollector m(slo);
//   m.record(request_record);                    // when a request finishes
//   RunSummary s = m.summarize(horizon_ns);       // exact percentiles, throughput, goodput
//
// Percentiles are exact order statistics of the finished requests (nearest-rank on the sorted
// values, p in [0, 100]), not histogram estimates. Memory: one RequestRecord per finished request is
// kept only while an output sink wants them; the collector itself keeps 4 doubles per request for
// the percentile columns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kvplan/sim/time.h"

namespace kvplan::sim {

struct RequestRecord {
  int64_t id = 0;
  int32_t replica = 0;
  int32_t user = -1;
  int32_t turn = 0;
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
  int64_t cached_tokens = 0;     // prompt tokens served from the prefix cache
  TimeNs arrival_ns = 0;
  TimeNs scheduled_ns = 0;       // first admitted into a batch
  TimeNs first_token_ns = 0;
  TimeNs finish_ns = 0;
  TimeNs max_gap_ns = 0;         // longest gap between consecutive output tokens
  int32_t preemptions = 0;

  TimeNs queue_ns() const { return scheduled_ns - arrival_ns; }
  TimeNs ttft_ns() const { return first_token_ns - arrival_ns; }
  TimeNs e2e_ns() const { return finish_ns - arrival_ns; }
  // Time per output token after the first; 0 for single-token outputs.
  double tpot_ns() const {
    return output_tokens > 1 ? static_cast<double>(finish_ns - first_token_ns) / (output_tokens - 1) : 0.0;
  }
};

// Latency targets. A target of 0 is not checked. Percentile targets apply to the run; a request
// is "good" (goodput) when it meets every per-request target.
struct Slo {
  double ttft_ms = 0;
  double tpot_ms = 0;
  double e2e_ms = 0;
  double percentile = 90;  // the run meets the SLO when this percentile of each metric meets it

  bool any() const { return ttft_ms > 0 || tpot_ms > 0 || e2e_ms > 0; }
  bool request_meets(const RequestRecord& r) const;
  std::string describe() const;  // e.g. "p90 TTFT <= 2000 ms, p90 TPOT <= 100 ms"
};

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};

// Nearest-rank percentile of unsorted values (copied and sorted). Empty -> 0.
double percentile(std::vector<double> values, double p);
Percentiles summarize_values(std::vector<double> values);

// How close the engine's own limits came over a run: what a capacity answer's binding constraint
// is judged from (replica.h StepStats). Steps are summed over replicas; peaks are the largest of
// any replica. Filled by the simulation (MetricsCollector leaves it empty).
struct EngineLimitUse {
  int64_t steps = 0;
  int64_t seq_limited_steps = 0;  // requests waited while running sequences were at max_num_seqs
  int64_t kv_limited_steps = 0;   // a preemption, or a waiting request kept out for KV memory
  int64_t peak_running = 0;       // most sequences running on one replica when a step started
  int64_t max_num_seqs = 0;       // the engine's limit per replica
  double peak_kv_used = 0;        // most KV held by live sequences, share of a replica's capacity
  double seq_limited_share() const { return steps > 0 ? static_cast<double>(seq_limited_steps) / static_cast<double>(steps) : 0; }
  double kv_limited_share() const { return steps > 0 ? static_cast<double>(kv_limited_steps) / static_cast<double>(steps) : 0; }
};

struct RunSummary {
  int64_t finished = 0;          // every finished request, measured or not
  int64_t measured = 0;          // finished requests the statistics below cover
  int64_t warmup_excluded = 0;   // first finished requests left out (bench client's warm-up)
  int64_t cooldown_excluded = 0; // last finished requests left out (bench client's cool-down)
  int64_t unfinished = 0;        // still queued or running at the horizon
  int64_t rejected = 0;          // longer than the engine's max_model_len
  double duration_s = 0;         // first arrival (with a warm-up: the last warm-up finish) to last
                                 // measured finish
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0; // prompt + output
  double goodput_requests_per_s = 0;  // requests meeting every SLO target, per second
  double slo_attainment = 0;     // share of finished requests meeting every target
  bool meets_slo = true;         // percentile targets met, nothing rejected, something finished
  Percentiles queue_ms, ttft_ms, tpot_ms, e2e_ms, max_gap_ms;
  int64_t preemptions = 0;
  double prefix_hit_rate = 0;    // prompt tokens from the prefix cache / prompt tokens looked up
  EngineLimitUse limits;
};

class MetricsCollector {
 public:
  explicit MetricsCollector(Slo slo) : slo_(slo) {}
  // Leaves the first `warmup` and last `cooldown` finished requests out of the statistics (>= 0).
  void exclude(int64_t warmup, int64_t cooldown);
  void record(const RequestRecord& r);
  void add_rejected() { ++rejected_; }
  RunSummary summarize(int64_t unfinished, double prefix_hit_rate) const;
  const Slo& slo() const { return slo_; }

 private:
  struct Row {
    double queue_ms = 0, ttft_ms = 0, tpot_ms = 0, e2e_ms = 0, gap_ms = 0;
    TimeNs arrival_ns = 0, finish_ns = 0;
    int32_t prompt_tokens = 0, output_tokens = 0, preemptions = 0;
    bool good = false;
  };
  Slo slo_;
  std::vector<Row> rows_;  // in record order
  int64_t rejected_ = 0;
  int64_t warmup_ = 0;
  int64_t cooldown_ = 0;
};

// One time-series row: the state of the whole cluster (summed over replicas) at a sample time.
// Rows are taken every sample interval while the engine has work; an idle stretch gives no rows
// (the state holds until the next row), and a series that reaches kMaxTimeSeriesRows keeps every
// other row and samples half as often, so its memory is bounded by the work, not by the simulated
// time. Averages over the series weight each row by the time until the next one.
inline constexpr size_t kMaxTimeSeriesRows = size_t{1} << 17;  // ~18 MB of rows at most
struct TimeSeriesRow {
  TimeNs time_ns = 0;
  int64_t kv_token_bytes = 0;      // KV used: bytes holding token states
  int64_t kv_allocated_bytes = 0;  // held by live sequences (token + reserved + internal)
  int64_t kv_reserved_bytes = 0;   // reservation for tokens still to come
  int64_t kv_internal_fragmentation_bytes = 0;
  int64_t kv_external_fragmentation_bytes = 0;
  int64_t kv_cached_bytes = 0;     // prefix cache, unreferenced
  int64_t kv_capacity_bytes = 0;
  double prefix_hit_rate = 0;      // cumulative
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t swapped = 0;
  int64_t preemptions = 0;         // cumulative
  int64_t batch_tokens = 0;        // tokens in the last step
  int64_t batch_seqs = 0;          // sequences in the last step
  int64_t host_kv_bytes = 0;       // offload tier
};

}  // namespace kvplan::sim
