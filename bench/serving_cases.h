// bench/serving_cases.h — published whole-model serving runs (TTFT, TPOT) turned into kvplan
// simulations: which model preset, quantization, parallelism, engine, GPU and client each run used,
// or why kvplan cannot express it. Used by kvplan_validate_serving.
//
//   std::vector<ServingCase> cases = read_aiconfigurator_e2e("data/measurements/aiconfigurator_silicon_e2e_h100.csv");
//   for (const ServingCase& c : cases) if (c.why_not.empty()) { ... c.memory_flags, c.sim_flags ... }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/plan/settings.h"

namespace kvplan::bench {

struct ServingCase {
  std::string id;           // the row's id (aiconfigurator) or "<source_id> row <row_id>" (public runs)
  std::string source;       // where the measurement is from
  std::string engine;       // vllm | sglang | trtllm
  std::string model;        // Hugging Face id as the row gives it
  std::string gpu;          // kvplan GPU preset
  int64_t concurrency = 0;  // requests in flight over all replicas (burst: the burst size)
  int64_t replicas = 1;     // independent engine instances (data-parallel ranks)
  bool burst = false;       // every request sent at t = 0 (request_rate inf): no steady state
  double rate = 0;          // > 0: open-loop Poisson arrivals at this many requests/s (finite request_rate)
  int64_t isl = 0, osl = 0;
  double measured_ttft_ms = 0, measured_tpot_ms = 0;
  std::string notes;        // approximations kvplan makes for this row
  std::string why_not;      // non-empty: kvplan cannot express the run (the reason)
  // The run's record rules out what it claims (a closed-loop steady state contradicting its own
  // sweep, serving_consistency.h) or lacks what a run needs (prefill/decode worker counts): the
  // measurement, not kvplan, is at fault. Such rows are listed, not scored (why_not says why).
  // Every other row with a why_not is one kvplan refuses: scored as a miss (serving_errors.h).
  bool excluded = false;
  std::string sweep_key;    // the columns that name the run's sweep (serving_split.h); "" for public runs
  std::string deployment = "agg";  // agg | attention DP | disagg (prefill/decode disaggregated)
  // The run as kvplan settings by flag (memory flags pick model/GPU/engine/parallelism; simulation
  // flags the client). Overhead flags are added by the caller.
  plan::SettingValues memory_flags, sim_flags;
  // Concurrency per engine instance (what "low concurrency" is judged on).
  int64_t concurrency_per_replica() const { return replicas > 0 ? concurrency / replicas : concurrency; }
  // The equivalent command line, for reproducing one row by hand.
  std::string command() const;
};

// Every row (mode=agg and mode=disagg) of aiconfigurator's silicon_sample.csv as shipped per GPU
// (aiconfigurator_silicon_e2e_h100.csv, _h200.csv). Throws ConfigError when the file cannot be read
// or lacks a column. Each row's GPU is its `system` column (h100_sxm, h200_sxm); `gpu`, when not
// empty, is the preset every row must have run on (a ConfigError otherwise).
std::vector<ServingCase> read_aiconfigurator_e2e(const std::string& path, const std::string& gpu = "");

// Every row of data/serving_measurements/public_runs.csv.
std::vector<ServingCase> read_public_runs(const std::string& path);

// Requests for a steady-state bench run at total concurrency C: warm-up C + cool-down C + at least
// max(2C, 32) measured.
int64_t steady_state_prompts(int64_t concurrency);

}  // namespace kvplan::bench
