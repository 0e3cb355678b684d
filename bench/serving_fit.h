// bench/serving_fit.h — simulating published runs with given serving terms, and fitting the
// per-engine terms (plan::fit_serving_terms) on the fit half, for kvplan_validate_serving.
//
//   Regime staggered{Client::kBench, "staggered"};
//   staggered.none = ...;      // the fit and held-out runs simulated with no terms
//   fit_terms(staggered);      // per engine: step factor, step overhead, request terms
#pragma once

#include <map>
#include <optional>
#include <string>
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

enum class Client { kBench, kBurst, kAsGiven };

// One run simulated: pred.ok false with pred.error when kvplan refuses it.
Prediction simulate(const ServingCase& c, Client client, std::optional<Terms> terms);

bool in_fit_half(const ServingCase& c);  // by options().split

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

// Whether the shipped terms of `engine` are this regime's fit, to the digits --fit-overheads prints
// (and the same bench start rule).
bool shipped_matches(const std::string& engine, const Regime& g);

// --fit-overheads: the chosen fit per engine as the lines of sim/src/serving_overheads.cpp.
void print_fitted_source(const std::map<std::string, const Regime*>& chosen, const std::vector<ServingCase>& cases);

}  // namespace kvplan::bench
