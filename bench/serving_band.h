// bench/serving_band.h — the validation band a GPU's profile carries: the held-out p90 |error| of
// kvplan's shipped defaults against that GPU's whole-model runs.
//
//   Band b = held_out_band(shipped, "h200");
//   write_band("data/profiles/h200.json", b);   // --write-band
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "serving_errors.h"

namespace kvplan::bench {

// Over the answered held-out runs of one GPU (all engines pooled, and per engine); refused runs
// are counted apart: a band is how far an answer is off, and a refused run has none.
struct Band {
  std::string gpu;
  double ttft_p90 = 0, tpot_p90 = 0;
  size_t rows = 0, refused = 0;
  std::map<std::string, std::pair<double, double>> per_engine;  // TTFT p90, TPOT p90
  std::map<std::string, size_t> per_engine_rows;
};

Band held_out_band(const std::vector<Result>& results, const std::string& gpu);

// Writes `band` into the profile file (PerfProfile::set_band) atomically, rounded to 0.001 so the
// file does not change with the last bits of a median. ConfigError when the file cannot be read.
void write_band(const std::string& path, const Band& band);

}  // namespace kvplan::bench
