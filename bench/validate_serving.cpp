// kvplan_validate_serving: whole-model serving predictions against published measurements.
//
//   ./build/bench/kvplan_validate_serving [--data DIR] [--csv rows.csv] [--rows] [--published-profiles]
//
// For every mode=agg row of aiconfigurator's silicon_sample.csv (H100 SXM; data/measurements/) that
// kvplan can express, the run is simulated as it was made: engine, TP/EP/attention-DP, precision,
// fixed isl/osl, the bench client at the row's concurrency with enough prompts for a steady state,
// and kvplan's datasheet step costs (--published-profiles: data/profiles/<gpu>.json where one exists,
// the profiles fitted from published operator tables). Mean TTFT and TPOT are compared with the
// measured ones.
//
// The serving overheads (serving_overheads.h) are fitted here on half of the rows (chosen by a hash
// of the row id) and reported on the other half:
//   1. run the fit half with no overheads;
//   2. per engine, step overhead = median (measured − predicted) TPOT over the fit rows at low
//      concurrency (<= 8 per engine instance): there a TPOT is one decode step, rarely slowed by a
//      prefill, so the residual is the time per step the model lacks;
//   3. rerun the fit half with that step overhead; request overhead = median (measured − predicted)
//      TTFT over the same low-concurrency rows (TTFT there is one prefill plus the fixed costs);
//   negative medians are reported and clamped to 0 (an overhead cannot be negative).
// Passes reported: lockstep (the old closed loop: all users at t = 0, no overheads), bench without
// overheads, bench with the fitted overheads; per engine, fit half and held-out half apart.
// Then data/serving_measurements/public_runs.csv (other GPUs and sources), with the shipped defaults.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/sim/serving_overheads.h"
#include "kvplan/sim/simulation.h"
#include "kvplan/plan/simulate.h"
#include "serving_cases.h"

namespace {

using kvplan::bench::ServingCase;
namespace sim = kvplan::sim;

constexpr int64_t kLowConcurrency = 8;  // per engine instance: "low concurrency" for the fit

struct Prediction {
  bool ok = false;
  std::string error;  // why the simulation could not run
  double ttft_ms = 0, tpot_ms = 0;
  int64_t measured = 0;  // requests the statistics cover
};

struct Overheads {
  double request_ms = 0, step_ms = 0;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// The deterministic 50/50 split: FNV-1a 64 of the row id, even -> fit half.
bool in_fit_half(const ServingCase& c) { return (fnv1a(c.id) & 1u) == 0; }

enum class Client { kBench, kBurst, kAsGiven };

// --published-profiles: the directory of data/profiles/<gpu>.json ("" = datasheet step costs).
std::string g_profiles_dir;

Prediction simulate(const ServingCase& c, Client client, std::optional<Overheads> overheads) {
  Prediction p;
  try {
    kvplan::plan::SettingValues sim_flags = c.sim_flags;
    if (!g_profiles_dir.empty()) {
      const std::string path = g_profiles_dir + "/" + c.gpu + ".json";
      if (std::ifstream(path).good()) sim_flags["profile"] = path;
    }
    if (client == Client::kBurst) sim_flags["bench-start"] = "burst";
    if (client == Client::kBench) sim_flags["bench-start"] = "staggered";
    if (overheads) {
      sim_flags["request-overhead-ms"] = fmt::format("{}", overheads->request_ms);
      sim_flags["step-overhead-ms"] = fmt::format("{}", overheads->step_ms);
    }
    const sim::SimulationConfig cfg = kvplan::plan::simulation_config(
        kvplan::plan::with_values(kvplan::plan::with_values(kvplan::plan::Scenario{}, c.memory_flags), sim_flags));
    const sim::SimulationResult r = sim::run_simulation(cfg);
    if (r.summary.measured == 0) {
      p.error = "no request finished";
      return p;
    }
    p.ok = true;
    p.ttft_ms = r.summary.ttft_ms.mean;
    p.tpot_ms = r.summary.tpot_ms.mean;
    p.measured = r.summary.measured;
  } catch (const kvplan::ConfigError& e) {
    p.error = e.what();
  } catch (const std::exception& e) {
    p.error = std::string("error: ") + e.what();
  }
  return p;
}

double rel(double pred, double meas) { return (pred - meas) / meas; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Nearest-rank percentile.
double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct Stats {
  size_t n = 0;
  double med_abs = 0, p90_abs = 0, bias = 0;
};

Stats stats(const std::vector<double>& errors) {
  Stats s;
  s.n = errors.size();
  std::vector<double> abs;
  for (double e : errors) abs.push_back(std::fabs(e));
  s.med_abs = median(abs);
  s.p90_abs = pct(abs, 90);
  s.bias = median(errors);
  return s;
}

std::string pc(double x) { return fmt::format("{:+.0f}%", x * 100); }
std::string upc(double x) { return fmt::format("{:.0f}%", x * 100); }

struct Result {
  const ServingCase* c = nullptr;
  Prediction pred;
};

// One table: rows grouped by `key`, TTFT and TPOT error statistics per group.
template <typename Key>
void print_table(const std::string& title, const std::vector<Result>& results, Key key) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const Result& r : results) {
    if (!r.pred.ok) continue;
    auto& g = groups[key(*r.c)];
    g.first.push_back(rel(r.pred.ttft_ms, r.c->measured_ttft_ms));
    g.second.push_back(rel(r.pred.tpot_ms, r.c->measured_tpot_ms));
  }
  fmt::print("\n{}\n", title);
  fmt::print("| {:<22} | {:>5} | {:>10} | {:>8} | {:>9} | {:>10} | {:>8} | {:>9} |\n", "group", "rows",
             "TTFT med|e|", "p90|e|", "bias", "TPOT med|e|", "p90|e|", "bias");
  fmt::print("|{:-<24}|{:->7}|{:->12}|{:->10}|{:->11}|{:->12}|{:->10}|{:->11}|\n", ":", ":", ":", ":", ":", ":", ":", ":");
  std::vector<double> all_t, all_p;
  auto line = [](const std::string& name, const std::vector<double>& t, const std::vector<double>& p) {
    const Stats a = stats(t), b = stats(p);
    fmt::print("| {:<22} | {:>5} | {:>11} | {:>8} | {:>9} | {:>11} | {:>8} | {:>9} |\n", name, a.n, upc(a.med_abs),
               upc(a.p90_abs), pc(a.bias), upc(b.med_abs), upc(b.p90_abs), pc(b.bias));
  };
  for (const auto& [name, g] : groups) {
    line(name, g.first, g.second);
    all_t.insert(all_t.end(), g.first.begin(), g.first.end());
    all_p.insert(all_p.end(), g.second.begin(), g.second.end());
  }
  if (groups.size() > 1) line("all", all_t, all_p);
}

// One start rule, its runs without and with its own fitted overheads.
struct Regime {
  Client client;
  std::string name;
  std::vector<Result> none, fitted;                       // in `runnable` order
  std::map<std::string, Overheads> fit;                   // per engine
  std::map<std::string, std::pair<double, double>> raw;  // per engine: unclamped (request, step) medians
  std::map<std::string, size_t> fit_rows;
  std::map<std::string, int64_t> low_cut;                 // per engine: concurrency counted as low
};

// Steps 2 and 3 of the fit (see the top of the file) on the fit half of g.none.
void fit_overheads(Regime& g) {
  for (const Result& r : g.none) {
    if (!in_fit_half(*r.c)) continue;
    const int64_t c = r.c->concurrency_per_replica();
    auto it = g.low_cut.find(r.c->engine);
    g.low_cut[r.c->engine] = it == g.low_cut.end() ? c : std::min(it->second, c);
  }
  for (auto& [engine, cut] : g.low_cut) cut = std::max(cut, kLowConcurrency);
  std::map<std::string, std::vector<double>> tpot_res, ttft_res;
  for (const Result& r : g.none) {
    if (in_fit_half(*r.c) && r.pred.ok && r.c->concurrency_per_replica() <= g.low_cut.at(r.c->engine)) {
      tpot_res[r.c->engine].push_back(r.c->measured_tpot_ms - r.pred.tpot_ms);
    }
  }
  for (const auto& [engine, res] : tpot_res) {
    g.raw[engine].second = median(res);
    g.fit[engine].step_ms = std::max(0.0, median(res));
    g.fit_rows[engine] = res.size();
  }
  for (const Result& r : g.none) {
    if (!in_fit_half(*r.c) || !r.pred.ok || r.c->concurrency_per_replica() > g.low_cut.at(r.c->engine)) continue;
    Prediction p = simulate(*r.c, g.client, Overheads{0, g.fit[r.c->engine].step_ms});
    if (p.ok) ttft_res[r.c->engine].push_back(r.c->measured_ttft_ms - p.ttft_ms);
  }
  for (const auto& [engine, res] : ttft_res) {
    g.raw[engine].first = median(res);
    g.fit[engine].request_ms = std::max(0.0, median(res));
  }
}

std::string concurrency_bucket(const ServingCase& c) {
  const int64_t x = c.concurrency_per_replica();
  if (x <= 8) return "c<=8";
  if (x <= 32) return "c16-32";
  if (x <= 128) return "c64-128";
  return "c>128";
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = KVPLAN_SOURCE_DIR "/data";
  std::string csv_path;
  bool print_rows = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--csv" && i + 1 < argc) csv_path = argv[++i];
    else if (a == "--rows") print_rows = true;
    else if (a == "--published-profiles") g_profiles_dir = "profiles";
    else {
      std::fprintf(stderr, "usage: kvplan_validate_serving [--data DIR] [--csv FILE] [--rows] [--published-profiles]\n");
      return 2;
    }
  }
  if (!g_profiles_dir.empty()) g_profiles_dir = data + "/" + g_profiles_dir;
  const auto wall_start = std::chrono::steady_clock::now();
  auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count(); };

  std::vector<ServingCase> cases;
  try {
    cases = kvplan::bench::read_aiconfigurator_e2e(data + "/measurements/aiconfigurator_silicon_e2e_h100.csv");
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  fmt::print("kvplan_validate_serving: {} mode=agg rows of aiconfigurator_silicon_e2e_h100.csv (H100 SXM)\n",
             cases.size());
  fmt::print("step costs: {}; client: bench (steady state); split: FNV-1a(id) even = fit half\n",
             g_profiles_dir.empty() ? std::string("datasheet profile (PerfProfile::datasheet_default)")
                                    : fmt::format("published profiles {}/<gpu>.json where present, else datasheet",
                                                  g_profiles_dir));

  // Which rows kvplan can run at all (the staggered pass, no overheads, decides).
  std::map<std::string, std::string> not_expressible;  // id -> reason
  std::vector<const ServingCase*> runnable;
  Regime staggered{Client::kBench, "staggered", {}, {}, {}, {}, {}, {}};
  Regime burst{Client::kBurst, "burst", {}, {}, {}, {}, {}, {}};
  for (const ServingCase& c : cases) {
    if (!c.why_not.empty()) {
      not_expressible[c.id] = c.why_not;
      continue;
    }
    Prediction p = simulate(c, Client::kBench, Overheads{});
    if (!p.ok) {
      not_expressible[c.id] = "kvplan refuses the run: " + p.error;
      continue;
    }
    runnable.push_back(&c);
    staggered.none.push_back({&c, p});
  }
  fmt::print("pass staggered start, no overheads: {} rows simulated, {} not expressible, {:.1f} s wall\n",
             runnable.size(), not_expressible.size(), wall());
  for (const ServingCase* c : runnable) burst.none.push_back({c, simulate(*c, Client::kBurst, Overheads{})});
  fmt::print("pass burst start, no overheads: {:.1f} s wall\n", wall());

  for (Regime* g : {&staggered, &burst}) {
    fit_overheads(*g);
    for (const ServingCase* c : runnable) g->fitted.push_back({c, simulate(*c, g->client, g->fit[c->engine])});
    fmt::print("pass {} start + its fitted overheads: {:.1f} s wall\n", g->name, wall());
  }

  // Per engine, the start rule whose fitted errors on the FIT half are smaller (median |e| of TTFT
  // plus that of TPOT): the measurements decide whether an engine's runs look staggered or lock-stepped.
  std::map<std::string, const Regime*> chosen;
  std::map<std::string, std::pair<double, double>> scores;
  for (const Regime* g : {&staggered, &burst}) {
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> errs;
    for (const Result& r : g->fitted) {
      if (!r.pred.ok || !in_fit_half(*r.c)) continue;
      errs[r.c->engine].first.push_back(std::fabs(rel(r.pred.ttft_ms, r.c->measured_ttft_ms)));
      errs[r.c->engine].second.push_back(std::fabs(rel(r.pred.tpot_ms, r.c->measured_tpot_ms)));
    }
    for (const auto& [engine, e] : errs) {
      const double score = median(e.first) + median(e.second);
      (g == &staggered ? scores[engine].first : scores[engine].second) = score;
      if (!chosen.count(engine) || score < (chosen[engine] == &staggered ? scores[engine].first : scores[engine].second)) {
        chosen[engine] = g;
      }
    }
  }

  fmt::print("\nFitted overheads (fit half; low concurrency = per engine instance <= max({}, the engine's lowest); "
             "CUDA graphs on). Negative medians are clamped to 0.\n", kLowConcurrency);
  fmt::print("| engine | start | fit rows (c <=) | request overhead ms (raw) | step overhead ms (raw) | fit-half score "
             "(TTFT+TPOT med abs e) | chosen | shipped default |\n");
  fmt::print("|---|---|---:|---:|---:|---:|---|---|\n");
  for (const Regime* g : {&staggered, &burst}) {
    for (const auto& [engine, o] : g->fit) {
      const sim::ServingOverheads d = sim::default_serving_overheads(kvplan::parse_engine(engine), true);
      const bool same = std::llround(sim::ns_to_ms(d.request.ns) * 1000) == std::llround(o.request_ms * 1000) &&
                        std::llround(sim::ns_to_ms(d.step.ns) * 1000) == std::llround(o.step_ms * 1000) &&
                        sim::bench_start_name(sim::default_bench_start(kvplan::parse_engine(engine))) == g->name;
      const bool is_chosen = chosen[engine] == g;
      fmt::print("| {} | {} | {} (<= {}) | {:.3f} ({:.3f}) | {:.3f} ({:.3f}) | {:.2f} | {} | {} |\n", engine, g->name,
                 g->fit_rows.at(engine), g->low_cut.at(engine), o.request_ms, g->raw.at(engine).first, o.step_ms,
                 g->raw.at(engine).second, g == &staggered ? scores[engine].first : scores[engine].second,
                 is_chosen ? "yes" : "no",
                 !is_chosen ? "-"
                 : same     ? "matches this fit"
                            : fmt::format("DIFFERS: shipped {} start, {:.3f} ms per request, {:.3f} ms per step",
                                          sim::bench_start_name(sim::default_bench_start(kvplan::parse_engine(engine))),
                                          sim::ns_to_ms(d.request.ns), sim::ns_to_ms(d.step.ns)));
    }
  }
  std::vector<Result> final_results;
  for (size_t i = 0; i < runnable.size(); ++i) {
    const Regime* g = chosen.count(runnable[i]->engine) ? chosen[runnable[i]->engine] : &staggered;
    final_results.push_back(g->fitted[i]);
  }

  auto half = [](const std::vector<Result>& all, bool fit_half) {
    std::vector<Result> out;
    for (const Result& r : all) {
      if (in_fit_half(*r.c) == fit_half) out.push_back(r);
    }
    return out;
  };
  auto by_engine = [](const ServingCase& c) { return c.engine; };
  fmt::print("\nErrors are (predicted - measured) / measured of the mean TTFT / TPOT; med|e| and p90|e| of the "
             "absolute error, bias = median signed error.\n");
  for (bool fit_half : {true, false}) {
    const std::string h = fit_half ? "FIT half" : "HELD-OUT half";
    for (const Regime* g : {&staggered, &burst}) {
      print_table(fmt::format("[{}] {} start, no overheads", h, g->name), half(g->none, fit_half), by_engine);
      print_table(fmt::format("[{}] {} start + its fitted overheads", h, g->name), half(g->fitted, fit_half), by_engine);
    }
    print_table(fmt::format("[{}] per engine the chosen start + its fitted overheads (what kvplan ships)", h),
                half(final_results, fit_half), by_engine);
  }
  print_table("[HELD-OUT half] shipped model, by engine and concurrency per instance", half(final_results, false),
              [](const ServingCase& c) { return c.engine + " " + concurrency_bucket(c); });
  print_table("[HELD-OUT half] shipped model, by engine and model", half(final_results, false),
              [](const ServingCase& c) { return c.engine + " " + c.memory_flags.at("model"); });

  std::map<std::string, std::vector<std::string>> reasons;
  for (const auto& [id, why] : not_expressible) reasons[why].push_back(id);
  fmt::print("\nRows not expressible ({}):\n", not_expressible.size());
  for (const auto& [why, ids] : reasons) {
    fmt::print("- {} ({} rows): ", why, ids.size());
    for (size_t i = 0; i < ids.size(); ++i) fmt::print("{}{}", i ? ", " : "", ids[i]);
    fmt::print("\n");
  }

  if (!csv_path.empty()) {
    std::ofstream out(csv_path);
    out << "id,engine,model,half,concurrency,replicas,isl,osl,measured_ttft_ms,measured_tpot_ms,staggered_ttft_ms,"
           "staggered_tpot_ms,burst_ttft_ms,burst_tpot_ms,staggered_fit_ttft_ms,staggered_fit_tpot_ms,burst_fit_ttft_ms,"
           "burst_fit_tpot_ms,shipped_ttft_ms,shipped_tpot_ms,notes\n";
    for (size_t i = 0; i < runnable.size(); ++i) {
      const ServingCase& c = *runnable[i];
      out << fmt::format(
          "{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},\"{}\"\n",
          c.id, c.engine, c.memory_flags.at("model"), in_fit_half(c) ? "fit" : "held-out", c.concurrency, c.replicas,
          c.isl, c.osl, c.measured_ttft_ms, c.measured_tpot_ms, staggered.none[i].pred.ttft_ms,
          staggered.none[i].pred.tpot_ms, burst.none[i].pred.ttft_ms, burst.none[i].pred.tpot_ms,
          staggered.fitted[i].pred.ttft_ms, staggered.fitted[i].pred.tpot_ms, burst.fitted[i].pred.ttft_ms,
          burst.fitted[i].pred.tpot_ms, final_results[i].pred.ttft_ms, final_results[i].pred.tpot_ms, c.notes);
    }
    fmt::print("\nwrote {}\n", csv_path);
  }
  if (print_rows) {
    for (size_t i = 0; i < runnable.size(); ++i) {
      const ServingCase& c = *runnable[i];
      fmt::print("{} [{}] TTFT meas {:.1f} pred {:.1f} | TPOT meas {:.2f} pred {:.2f} | {}\n", c.id,
                 in_fit_half(c) ? "fit" : "held-out", c.measured_ttft_ms, final_results[i].pred.ttft_ms,
                 c.measured_tpot_ms, final_results[i].pred.tpot_ms, c.command());
    }
  }

  // Public runs on other GPUs: shipped defaults (no fitting on them), each row with its source.
  const std::string public_path = data + "/serving_measurements/public_runs.csv";
  std::vector<ServingCase> pub;
  try {
    pub = kvplan::bench::read_public_runs(public_path);
  } catch (const kvplan::ConfigError& e) {
    fmt::print("\npublic runs: {} ({})\n", public_path, e.what());
  }
  if (!pub.empty()) {
    fmt::print("\nPublic runs ({}), shipped default overheads; error = (pred - meas) / meas of the mean:\n", public_path);
    fmt::print("| row | engine | GPU | model | load | isl/osl | TTFT meas | TTFT pred | err | TPOT meas | TPOT pred | err | notes |\n");
    fmt::print("|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    std::vector<Result> pub_results;
    std::map<std::string, std::vector<std::string>> pub_reasons;
    for (const ServingCase& c : pub) {
      if (!c.why_not.empty()) {
        pub_reasons[c.why_not].push_back(c.id);
        continue;
      }
      Prediction p = simulate(c, Client::kAsGiven, std::nullopt);
      if (!p.ok) {
        pub_reasons["kvplan refuses the run: " + p.error].push_back(c.id);
        continue;
      }
      pub_results.push_back({&c, p});
      fmt::print("| {} | {} | {} | {} | {} {} | {}/{} | {:.0f} | {:.0f} | {} | {:.1f} | {:.1f} | {} | {} |\n", c.id,
                 c.engine, c.gpu, c.memory_flags.at("model"), c.burst ? "burst" : "c", c.concurrency, c.isl, c.osl,
                 c.measured_ttft_ms, p.ttft_ms, pc(rel(p.ttft_ms, c.measured_ttft_ms)), c.measured_tpot_ms, p.tpot_ms,
                 pc(rel(p.tpot_ms, c.measured_tpot_ms)), c.notes);
    }
    print_table("Public runs by source, engine and GPU (shipped defaults)", pub_results, [](const ServingCase& c) {
      return c.id.substr(0, c.id.find(" row ")) + " " + c.engine + " " + c.gpu;
    });
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
  fmt::print("\ntotal wall time {:.1f} s\n", wall());
  return 0;
}
