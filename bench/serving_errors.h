// bench/serving_errors.h — how far whole-model predictions are from published measurements:
// relative errors, their median / p90 / bias, and the markdown tables kvplan_validate_serving prints
// (one row per group of runs, TTFT and TPOT side by side).
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
  Prediction pred;
};

double rel(double pred, double meas);  // (pred - meas) / meas
double median(std::vector<double> v);  // 0 when empty

// Of relative errors: how many, median and p90 (nearest rank) of |error|, and the bias (median error).
struct Stats {
  size_t n = 0;
  double med_abs = 0, p90_abs = 0, bias = 0;
};
Stats stats(const std::vector<double>& errors);

std::string pc(double x);   // "+12%"
std::string upc(double x);  // "12%"

// One table: the runs that simulated, grouped by `key`, TTFT and TPOT error statistics per group
// (and "all" when there is more than one group).
void print_table(const std::string& title, const std::vector<Result>& results,
                 const std::function<std::string(const ServingCase&)>& key);

}  // namespace kvplan::bench
