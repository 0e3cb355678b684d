// The validation band of a GPU's profile (serving_band.h).
#include "serving_band.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/perf_profile.h"
#include "serving_fit.h"

namespace kvplan::bench {

Band held_out_band(const std::vector<Result>& results, const std::string& gpu) {
  Band b;
  b.gpu = gpu;
  std::vector<double> t, p;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> per;
  for (const Result& r : results) {
    if (r.c->gpu != gpu || in_fit_half(*r.c)) continue;
    if (!r.pred.ok) {
      ++b.refused;
      continue;
    }
    const double et = rel(r.pred.ttft_ms, r.c->measured_ttft_ms), ep = rel(r.pred.tpot_ms, r.c->measured_tpot_ms);
    t.push_back(et);
    p.push_back(ep);
    per[r.c->engine].first.push_back(et);
    per[r.c->engine].second.push_back(ep);
  }
  b.rows = t.size();
  b.ttft_p90 = stats(t).p90_abs;
  b.tpot_p90 = stats(p).p90_abs;
  for (const auto& [engine, e] : per) {
    b.per_engine[engine] = {stats(e.first).p90_abs, stats(e.second).p90_abs};
    b.per_engine_rows[engine] = e.first.size();
  }
  return b;
}

void write_band(const std::string& path, const Band& band) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("--write-band: cannot read '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  PerfProfile profile = PerfProfile::from_json(parse_json_input(text.str(), path), path);
  ProfileBand b;
  b.ttft_p90_rel_error = std::round(band.ttft_p90 * 1000) / 1000;
  b.tpot_p90_rel_error = std::round(band.tpot_p90 * 1000) / 1000;
  std::string per;
  for (const auto& [engine, e] : band.per_engine) {
    per += fmt::format("{}{} {} runs: TTFT {:.0f}%, TPOT {:.0f}%", per.empty() ? "" : "; ", engine,
                       band.per_engine_rows.at(engine), e.first * 100, e.second * 100);
  }
  const std::string file = band.gpu == "h200" ? "aiconfigurator_silicon_e2e_h200.csv" : "aiconfigurator_silicon_e2e_h100.csv";
  b.how = fmt::format(
      "p90 |error| of mean TTFT and TPOT, kvplan's defaults against {} answered held-out whole-model runs of NVIDIA "
      "aiconfigurator's {} e2e set (data/measurements/{}, agg, attention-DP and disaggregated; vLLM, SGLang, "
      "TensorRT-LLM; {}; {} held-out runs kvplan refuses are not in the band); per engine: {} "
      "(bench/validate_serving.cpp, --write-band)",
      band.rows, band.gpu == "h200" ? "H200 SXM" : "H100 SXM", file,
      band.gpu == "h200" ? "no H200 run was fitted: the serving terms come from the H100 set's fit half"
                         : "held out by sweep, the other sweeps of the H100 set fitted the per-engine serving terms",
      band.refused, per);
  profile.set_band(b);
  write_file_atomically(path, json_text_flat_arrays(profile.to_json()) + "\n");
}

}  // namespace kvplan::bench
