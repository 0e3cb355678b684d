// Public runs on other GPUs and from other sources (serving_public.h).
#include "serving_public.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/atomic_file.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/sim/serving_overheads.h"
#include "kvplan/sim/time.h"
#include "serving_cases.h"
#include "serving_errors.h"
#include "serving_fit.h"

namespace kvplan::bench {

std::vector<Result> validate_public_runs(const std::string& data) {
  // Public runs on other GPUs: shipped defaults (no fitting on them), each row with its source.
  const std::string public_path = data + "/serving_measurements/public_runs.csv";
  static std::vector<ServingCase> pub;  // the Results returned point into it
  std::vector<Result> all_results;
  try {
    pub = read_public_runs(public_path);
  } catch (const kvplan::ConfigError& e) {
    fmt::print("\npublic runs: {} ({})\n", public_path, e.what());
  }
  if (!pub.empty()) {
    fmt::print("\nPublic runs ({}), shipped default overheads; error = (pred - meas) / meas of the mean:\n", public_path);
    // The last TTFT column adds the bench client's per-in-flight request term (fitted on closed-loop
    // sweeps with equal lengths; kvplan applies it to the bench client only), to show what it does to
    // traffic that is not such a sweep.
    fmt::print("| row | engine | GPU | model | load | isl/osl | TTFT meas | TTFT pred | err | TPOT meas | TPOT pred | err | "
               "TTFT pred with the bench client's per-in-flight term | err | notes |\n");
    fmt::print("|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    std::vector<Result> pub_with_term;
    std::vector<Result> pub_results;
    std::map<std::string, std::vector<std::string>> pub_reasons;
    for (const ServingCase& c : pub) {
      if (!c.why_not.empty()) {
        pub_reasons[c.why_not].push_back(c.id);
        if (!c.excluded) {  // kvplan has no form for it: a miss in the tables below
          Prediction refused;
          refused.error = c.why_not;
          pub_results.push_back({&c, refused});
          pub_with_term.push_back({&c, refused});
        }
        continue;
      }
      Prediction p = simulate(c, Client::kAsGiven, std::nullopt);
      if (!p.ok) {
        pub_reasons["kvplan refuses the run: " + p.error].push_back(c.id);
        pub_results.push_back({&c, p});  // a miss in the tables below
        pub_with_term.push_back({&c, p});
        continue;
      }
      pub_results.push_back({&c, p});
      ServingCase with_term = c;
      const sim::ServingOverheads bench_terms =
          sim::default_serving_overheads(kvplan::parse_engine(c.engine), true);
      with_term.sim_flags["request-overhead-per-in-flight-ms"] =
          fmt::format("{}", sim::ns_to_ms(bench_terms.request_per_in_flight.ns));
      with_term.sim_flags["request-overhead-per-in-flight-prefill-share"] =
          fmt::format("{}", bench_terms.request_per_in_flight_prefill_share.value);
      const Prediction q = simulate(with_term, Client::kAsGiven, std::nullopt);
      pub_with_term.push_back({&c, q});
      const std::string load = c.rate > 0 ? fmt::format("rate {}", c.rate)
                                          : fmt::format("{} {}", c.burst ? "burst" : "c", c.concurrency);
      fmt::print("| {} | {} | {} | {} | {} | {}/{} | {:.0f} | {:.0f} | {} | {:.1f} | {:.1f} | {} | {:.0f} | {} | {} |\n",
                 c.id, c.engine, c.gpu, c.memory_flags.at("model"), load, c.isl, c.osl, c.measured_ttft_ms, p.ttft_ms,
                 pc(rel(p.ttft_ms, c.measured_ttft_ms)), c.measured_tpot_ms, p.tpot_ms,
                 pc(rel(p.tpot_ms, c.measured_tpot_ms)), q.ttft_ms, pc(rel(q.ttft_ms, c.measured_ttft_ms)), c.notes);
    }
    const auto by_source = [](const ServingCase& c) {
      return c.id.substr(0, c.id.find(" row ")) + " " + c.engine + " " + c.gpu;
    };
    print_table("Public runs by source, engine and GPU (shipped defaults)", pub_results, by_source);
    all_results = pub_results;
    print_table("Public runs by source, engine and GPU (shipped defaults plus the bench client's per-in-flight term)",
                pub_with_term, by_source);
    fmt::print("\nPublic rows not expressible:\n");
    for (const auto& [why, ids] : pub_reasons) {
      fmt::print("- {} ({} rows): ", why, ids.size());
      for (size_t i = 0; i < ids.size(); ++i) fmt::print("{}{}", i ? ", " : "", ids[i]);
      fmt::print("\n");
    }
    fmt::print("sources: ");
    std::map<std::string, std::set<std::string>> srcs;
    for (const ServingCase& c : pub) srcs[c.id.substr(0, c.id.find(" row "))].insert(c.source.substr(0, c.source.find(" line ")));
    for (const auto& [id, urls] : srcs) {
      for (const std::string& url : urls) fmt::print("\n  {}: {}", id, url);
    }
    fmt::print("\n");
  }
  return all_results;
}

int validate_public_gpu(const std::string& data, const std::string& gpu, bool write) {
  if (write && !options().profile.empty()) {
    std::fprintf(stderr, "kvplan_validate_serving: --public --write-band measures the GPU's shipped profile; drop "
                         "--profile\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string path = data + "/serving_measurements/public_runs.csv";
  std::vector<ServingCase> pub;
  try {
    pub = read_public_runs(path);
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "kvplan_validate_serving: %s\n", e.what());
    return 2;
  }
  fmt::print("kvplan_validate_serving --public {}: {} ({}), step times: {}\n", gpu, path, "shipped serving terms",
             options().profile.empty() ? std::string("kvplan's default for the GPU") : "--profile " + options().profile);
  fmt::print("| row | engine | model | load | isl/osl | TTFT meas | TTFT pred | err | TPOT meas | TPOT pred | err |\n");
  fmt::print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|\n");
  std::vector<Result> results;
  std::map<std::string, std::vector<std::string>> reasons;
  std::set<std::string> sources;
  size_t on_gpu = 0;
  for (const ServingCase& c : pub) {
    if (c.gpu != gpu) continue;
    ++on_gpu;
    if (!c.why_not.empty()) {
      reasons[c.why_not].push_back(c.id);
      continue;
    }
    const Prediction p = simulate(c, Client::kAsGiven, std::nullopt);
    if (!p.ok) {
      reasons["kvplan refuses the run: " + p.error].push_back(c.id);
      continue;
    }
    results.push_back({&c, p});
    sources.insert(c.id.substr(0, c.id.find(" row ")));
    const std::string load = c.rate > 0 ? fmt::format("rate {}", c.rate)
                                        : fmt::format("{} {}", c.burst ? "burst" : "c", c.concurrency);
    fmt::print("| {} | {} | {} | {} | {}/{} | {:.0f} | {:.0f} | {} | {:.1f} | {:.1f} | {} |\n", c.id, c.engine,
               c.memory_flags.at("model"), load, c.isl, c.osl, c.measured_ttft_ms, p.ttft_ms,
               pc(rel(p.ttft_ms, c.measured_ttft_ms)), c.measured_tpot_ms, p.tpot_ms,
               pc(rel(p.tpot_ms, c.measured_tpot_ms)));
  }
  print_table(fmt::format("Public runs on {} by source, engine and model", gpu), results, [](const ServingCase& c) {
    return c.id.substr(0, c.id.find(" row ")) + " " + c.engine + " " + c.memory_flags.at("model");
  });
  print_table(fmt::format("Public runs on {}, all", gpu), results, [](const ServingCase&) { return std::string("all"); });
  fmt::print("\n{} public rows on {}; {} simulated; not expressible:\n", on_gpu, gpu, results.size());
  for (const auto& [why, ids] : reasons) fmt::print("- {} ({} rows)\n", why, ids.size());
  std::vector<double> t, p;
  for (const Result& r : results) {
    t.push_back(rel(r.pred.ttft_ms, r.c->measured_ttft_ms));
    p.push_back(rel(r.pred.tpot_ms, r.c->measured_tpot_ms));
  }
  const Stats ts = stats(t), ps = stats(p);
  fmt::print("pooled: TTFT median |e| {:.0f}%, p90 {:.0f}%; TPOT median |e| {:.0f}%, p90 {:.0f}% ({} runs, {} sources)\n",
             ts.med_abs * 100, ts.p90_abs * 100, ps.med_abs * 100, ps.p90_abs * 100, results.size(), sources.size());
  if (write) {
    if (results.size() < kMinPublicBandRuns || sources.size() < 2) {
      fmt::print("no band written: {} runs from {} source(s), need >= {} runs from >= 2 sources; data/profiles/{}.json "
                 "stays not validated\n",
                 results.size(), sources.size(), kMinPublicBandRuns, gpu);
    } else {
      const std::string file = data + "/profiles/" + gpu + ".json";
      std::ifstream in(file);
      if (!in) throw kvplan::ConfigError(fmt::format("--write-band: cannot read '{}'", file));
      std::stringstream text;
      text << in.rdbuf();
      kvplan::PerfProfile profile = kvplan::PerfProfile::from_json(kvplan::parse_json_input(text.str(), file), file);
      kvplan::ProfileBand b;
      b.ttft_p90_rel_error = std::round(ts.p90_abs * 1000) / 1000;
      b.tpot_p90_rel_error = std::round(ps.p90_abs * 1000) / 1000;
      std::string names;
      for (const std::string& s : sources) names += (names.empty() ? "" : ", ") + s;
      b.how = fmt::format(
          "p90 |error| of mean TTFT and TPOT, kvplan's defaults against {} public whole-model runs on {} "
          "(data/serving_measurements/public_runs.csv: {}; nothing fitted on them; median |error| TTFT {:.0f}%, TPOT "
          "{:.0f}%, bias TTFT {:+.0f}%, TPOT {:+.0f}%) (bench/validate_serving.cpp, --public {} --write-band)",
          results.size(), gpu, names, ts.med_abs * 100, ps.med_abs * 100, ts.bias * 100, ps.bias * 100, gpu);
      profile.set_band(b);
      kvplan::write_file_atomically(file, kvplan::json_text_flat_arrays(profile.to_json()) + "\n");
      fmt::print("wrote the band into {} (rebuild to embed it): TTFT {:.3f}, TPOT {:.3f}\n", file,
                 b.ttft_p90_rel_error, b.tpot_p90_rel_error);
    }
  }
  fmt::print("total wall time {:.1f} s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

}  // namespace kvplan::bench
