// bench/serving_fit.h — simulating published runs with given serving terms, and fitting the
// per-engine terms (plan::fit_serving_terms) on the fit half, for kvplan_validate_serving.
//
//   Regime staggered{Client::kBench, "staggered"};
//   staggered.none = ...;      // the fit and held-out runs simulated with no terms
//   fit_terms(staggered);      // per engine: step factor, step overhead, request terms
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kvplan/sim/serving_overheads.h"
#include "serving_cases.h"
#include "serving_errors.h"
#include "serving_split.h"

namespace kvplan::bench {

inline constexpr int64_t kFitMaxConcurrency = 128;  // per engine instance: rows the step terms are fitted on

// What every simulation of one kvplan_validate_serving run shares (its command-line options).
struct ValidateOptions {
  std::string profile;          // --profile: "" = kvplan's default step-time source
  bool split_prefill = false;   // --split-prefill-factor (an experiment)
  SplitRule split = SplitRule::kSweep;  // --split
};
ValidateOptions& options();

// The per-engine terms a pass runs with (ServingOverheads); nullopt in simulate(): the shipped defaults.
struct Terms {
  double request_ms = 0, per_in_flight_ms = 0, step_ms = 0, factor = 1.0;
  double prefill_share = 0;     // per other request in flight, as a share of the prompt's prefill
  double prefill_factor = 1.0;  // the prefill part of a step
};

// kBench: every user staggered; kBurst: every user at t = 0; kByRelease: the start the shipped rule
// gives each run's engine and release (sim::default_bench_start); kAsGiven: the shipped defaults,
// start and terms.
enum class Client { kBench, kBurst, kByRelease, kAsGiven };

// One run simulated: pred.ok false with pred.error when kvplan refuses it.
Prediction simulate(const ServingCase& c, Client client, std::optional<Terms> terms);

bool in_fit_half(const ServingCase& c);  // by options().split

// Threads a pass simulates on: KVPLAN_JOBS, else the hardware's threads (at least 1).
size_t jobs();

// fn(0) ... fn(n - 1) on up to jobs() threads, result i at index i: every simulation is deterministic
// and independent of the others, so the output is the same for any number of threads.
template <class T, class F>
std::vector<T> parallel_map(size_t n, F fn) {
  std::vector<T> out(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) out[i] = fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(n, jobs()); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return out;
}

// Every case of `cases` simulated (parallel_map), in order.
std::vector<Result> simulate_all(const std::vector<const ServingCase*>& cases, Client client,
                                 const std::function<std::optional<Terms>(const ServingCase&)>& terms);

// One start rule: its runs without and with its own fitted terms.
struct Regime {
  Client client = Client::kBench;
  std::string name;
  std::vector<Result> none, fitted;                      // in `runnable` order
  std::map<std::string, Terms> fit;                      // per engine
  std::map<std::string, sim::StepTermsFit> step;         // per engine: the TPOT fit
  std::map<std::string, sim::RequestTermsFit> request;   // per engine: the TTFT fit
  std::map<std::string, bool> prefill_shaped;            // per engine: the per-in-flight form kept
  std::map<std::string, double> score;                   // per engine: fit-half score after fitting
};

// Steps 2-5 of the fit (validate_serving.cpp's header) on the fit half of g.none, per engine, all
// GPUs together: one set of terms per engine (plan::fit_serving_terms).
void fit_terms(Regime& g);

// Median + p90 of |e|, TTFT and TPOT summed, per engine over the answered fit-half runs.
std::map<std::string, double> fit_half_scores(const std::vector<Result>& results);

// The bench start the shipped rule (sim::default_bench_start, by engine and release) gives the
// rows of `engine` that g's terms were fitted on (fit half, answered, concurrency <=
// kFitMaxConcurrency per instance): "staggered" or "burst", or "by release" when it gives their
// releases different starts.
std::string shipped_start(const std::string& engine, const Regime& g);

// Whether the shipped terms of `engine` are this regime's fit, to the digits --fit-overheads prints,
// and the shipped start rule gives the fit rows this regime's start.
bool shipped_matches(const std::string& engine, const Regime& g);

// --fit-overheads: the chosen fit per engine as the lines of sim/src/serving_overheads.cpp.
void print_fitted_source(const std::map<std::string, const Regime*>& chosen, const std::vector<ServingCase>& cases);

}  // namespace kvplan::bench
