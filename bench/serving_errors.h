// bench/serving_errors.h — how far whole-model predictions are from published measurements:
// relative errors, their median / p90 / bias, and the markdown tables kvplan_validate_serving prints
// (one row per group of runs, TTFT and TPOT side by side).
//
// A run kvplan refuses to simulate (no preset, a split or layout it has no form for, a ConfigError)
// is a miss, not an absence: it counts in med|e| and p90|e| as an error larger than any answer
// (|e| = infinity, printed "miss" when a statistic lands on it), so a model kvplan cannot run
// raises the median instead of leaving the table. The bias (median signed error) is over the
// answered runs only. Runs whose record is at fault (ServingCase::excluded) are not scored.
//
//   std::vector<Result> results = ...;  // each run with its Prediction
//   print_table("By engine", results, [](const ServingCase& c) { return c.engine; });
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "serving_cases.h"

namespace kvplan::bench {

// One simulated run's answer.
struct Prediction {
  bool ok = false;
  std::string error;  // why the simulation could not run
  double ttft_ms = 0, tpot_ms = 0;
  int64_t measured = 0;  // requests the statistics cover
};

struct Result {
  const ServingCase* c = nullptr;
  Prediction pred;  // pred.ok false: kvplan refused the run (pred.error says why): a miss
};

double rel(double pred, double meas);  // (pred - meas) / meas
double median(std::vector<double> v);  // 0 when empty

// Of relative errors of the answered runs and `refused` misses: how many of each, median and p90
// (nearest rank) of |error| with every miss as +infinity, and the bias (median error of the answered).
struct Stats {
  size_t n = 0;        // answered
  size_t refused = 0;  // misses
  double med_abs = 0, p90_abs = 0, bias = 0;
};
Stats stats(const std::vector<double>& errors, size_t refused = 0);

std::string pc(double x);   // "+12%"
std::string upc(double x);  // "12%", "miss" when infinite

// The reason a refused run is listed under, grouped across rows: the text up to the first number
// that starts a word (after a space, '=' or '(') past the first 40 characters, so "... 192 must be a multiple of 128" and "... 384 ..." of the
// same rule share a line (at most 120 characters).
std::string reason_group(const std::string& why);

// One table: the runs grouped by `key`, TTFT and TPOT error statistics per group (and "all" when
// there is more than one group); refused runs (pred.ok false) count as misses and are listed
// under the table, grouped by reason.
void print_table(const std::string& title, const std::vector<Result>& results,
                 const std::function<std::string(const ServingCase&)>& key);

}  // namespace kvplan::bench
