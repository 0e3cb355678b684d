// `kvplan simulate` and `kvplan capacity`: the run (plan::simulate, with --out files written
// atomically and Ctrl-C honoured) or the search (plan::find_capacity), printed as text or JSON.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "interrupt_guard.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/deployment.h"
#include "kvplan/plan/settings.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/plan/text.h"
#include "kvplan/sim/capacity.h"
#include "kvplan/sim/output_files.h"

namespace kvplan::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A progress bar on stderr, only when stderr is a terminal (never in files or pipes).
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO) != 0) {}
  ~ProgressBar() { finish(); }
  void update(double fraction) {
    if (!enabled_) return;
    int filled = static_cast<int>(fraction * 40);
    std::cerr << fmt::format("\r[{:<40}] {:3.0f}%", std::string(static_cast<size_t>(filled), '#'), fraction * 100)
              << std::flush;
    shown_ = true;
  }
  void finish() {
    if (shown_) std::cerr << "\r" << std::string(48, ' ') << "\r" << std::flush;
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

// `load_searched`: the capacity search varies the load (users or rate), so the config's count is
// only the first probe's and is left out of the line (the answer prints the load that meets the SLO).
std::string workload_text(const sim::SimulationConfig& c, bool load_searched = false) {
  const sim::WorkloadConfig& w = c.workload;
  switch (w.kind) {
    case sim::WorkloadKind::kTrace:
      return fmt::format("trace {} (time scale {:g}{})", w.trace_path, w.trace.time_scale,
                         w.trace.max_requests > 0 ? fmt::format(", first {} requests", w.trace.max_requests) : "");
    case sim::WorkloadKind::kClosedLoop:
      if (w.client == sim::ClosedLoopClient::kBench && load_searched) {
        return fmt::format("bench client: max concurrency searched (at least 4 prompts per concurrent request each probe), "
                           "zero think time, {} start; prompts {}, outputs {}",
                           sim::bench_start_name(w.bench.start), w.closed.first_prompt.describe(),
                           w.closed.output.describe());
      }
      if (w.client == sim::ClosedLoopClient::kBench) {
        return fmt::format("bench client: {} prompts at max concurrency {}, zero think time, {} start; prompts {}, "
                           "outputs {}; statistics on steady state (first {} and last {} finished requests left out)",
                           w.bench.num_prompts, w.closed.num_users, sim::bench_start_name(w.bench.start),
                           w.closed.first_prompt.describe(),
                           w.closed.output.describe(),
                           w.bench.warmup_requests >= 0 ? w.bench.warmup_requests : w.closed.num_users,
                           w.bench.cooldown_requests >= 0 ? w.bench.cooldown_requests : w.closed.num_users);
      }
      return fmt::format("{}closed-loop users, think time {:g} s, {} turn(s){}; prompts {}, outputs {}{}",
                         load_searched ? "" : fmt::format("{} ", w.closed.num_users), w.closed.think_time_s,
                         w.closed.turns,
                         w.closed.shared_prefix_tokens > 0
                             ? fmt::format(", a {}-token prefix shared by all", w.closed.shared_prefix_tokens)
                             : "",
                         w.closed.first_prompt.describe(), w.closed.output.describe(),
                         w.horizon_ns > 0 ? fmt::format(", {:g} s simulated", sim::ns_to_seconds(w.horizon_ns)) : "");
    case sim::WorkloadKind::kList:
      return fmt::format("{} listed requests", w.requests.size());
    case sim::WorkloadKind::kOpenLoop:
      if (load_searched) {
        return fmt::format("{} arrivals, {} requests per probe; prompts {}, outputs {}",
                           sim::arrival_kind_name(w.open.arrivals), w.open.num_requests, w.open.prompt.describe(),
                           w.open.output.describe());
      }
      return fmt::format("{} {} arrivals at {:g} req/s; prompts {}, outputs {}", w.open.num_requests,
                         sim::arrival_kind_name(w.open.arrivals), w.open.rate_per_s, w.open.prompt.describe(),
                         w.open.output.describe());
  }
  return "";
}

std::string setup_text(const sim::SimulationConfig& c) {
  int32_t replicas = c.cluster.prefill_replicas > 0 ? c.cluster.prefill_replicas + c.cluster.decode_replicas
                                                    : c.cluster.replicas;
  std::string cluster = c.cluster.prefill_replicas > 0
                            ? fmt::format("{} prefill{} + {} decode replicas", c.cluster.prefill_replicas,
                                          c.cluster.prefill_parallel
                                              ? " (" + plan::parallel_text(*c.cluster.prefill_parallel) + ")"
                                              : std::string(),
                                          c.cluster.decode_replicas)
                            : fmt::format("{} replica{}", replicas, replicas > 1 ? "s" : "");
  return fmt::format("{} on {}, {}, {}; scheduler {}, KV {} ({}){}{}", c.model.name, c.gpu.name,
                     plan::parallel_text(c.parallel), cluster,
                     sim::scheduler_kind_name(c.scheduler.kind), sim::kv_policy_name(c.kv_policy), c.scheme.describe(),
                     c.prefix_caching ? ", prefix caching" : "",
                     c.scheduler.spec.draft_tokens > 0
                         ? fmt::format(", speculative k={} accept={:g}", c.scheduler.spec.draft_tokens, c.scheduler.spec.acceptance_rate)
                         : "");
}

std::string warnings_text(const std::vector<std::string>& warnings) {
  std::string out;
  for (const std::string& w : warnings) out += fmt::format("WARNING: {}\n", w);
  return out;
}

// "±27%" from a validation band (p90 |relative error|), "not validated" when there is none.
std::string band_cell(double p90_rel_error) {
  return p90_rel_error > 0 ? fmt::format("±{:.0f}%", p90_rel_error * 100) : std::string("not validated");
}

std::string latency_table(const sim::RunSummary& s, const ProfileBand& band) {
  std::string out = fmt::format("  {:<10}{:>13}{:>13}{:>13}{:>13}{:>13}   {}\n", "ms", "mean", "p50", "p90", "p99", "max",
                                "band (validation p90 error)");
  auto row = [&](const char* name, const sim::Percentiles& p, const std::string& b) {
    out += fmt::format("  {:<10}{:>13.1f}{:>13.1f}{:>13.1f}{:>13.1f}{:>13.1f}   {}\n", name, p.mean, p.p50, p.p90, p.p99,
                       p.max, b);
  };
  row("queue", s.queue_ms, "");
  row("TTFT", s.ttft_ms, band_cell(band.ttft_p90_rel_error));
  row("TPOT", s.tpot_ms, band_cell(band.tpot_p90_rel_error));
  row("E2E", s.e2e_ms, "");
  row("max gap", s.max_gap_ms, "");
  return out;
}

// Where the step times come from and how far that source was off in validation.
std::string step_source_text(const std::string& source, const ProfileBand& b) {
  std::string out = fmt::format("step times: {}\n", source);
  if (b.tpot_p90_rel_error > 0 || b.ttft_p90_rel_error > 0) {
    out += fmt::format("latency band: TTFT {}, TPOT {} (p90 |error| of this source against real serving runs: {})\n",
                       band_cell(b.ttft_p90_rel_error), band_cell(b.tpot_p90_rel_error), b.how);
  } else {
    out += "latency band: not validated — this step-time source has not been compared with real serving runs "
           "(docs/benchmarks.md)\n";
  }
  return out;
}

std::string result_text(const sim::SimulationConfig& c, const sim::SimulationResult& r) {
  const sim::RunSummary& s = r.summary;
  std::string out;
  out += fmt::format("KV capacity per replica: {:.2f} GiB", static_cast<double>(r.kv_capacity_bytes) / kGiB);
  if (r.plan.kv_cache_tokens > 0) out += fmt::format(" ({} tokens as the engine counts them)", r.plan.kv_cache_tokens);
  out += "\n\n";
  out += fmt::format("requests: {} finished, {} unfinished, {} rejected, {} preemptions\n", s.finished, s.unfinished,
                     s.rejected, s.preemptions);
  if (s.warmup_excluded > 0 || s.cooldown_excluded > 0) {
    out += fmt::format("steady state: {} requests measured ({} warm-up and {} cool-down left out)\n", s.measured,
                       s.warmup_excluded, s.cooldown_excluded);
  }
  out += fmt::format("throughput: {:.2f} req/s, {:.0f} output tok/s, {:.0f} total tok/s over {:.1f} s\n",
                     s.requests_per_s, s.output_tokens_per_s, s.total_tokens_per_s, s.duration_s);
  out += latency_table(s, r.latency_band);
  out += step_source_text(r.step_time_source, r.latency_band);
  if (!r.kv_link.kind.empty()) {
    out += fmt::format("KV transfer prefill -> decode (in TTFT): {} transfers, mean {:.2f} ms over {}\n", r.kv_transfers,
                       r.kv_transfers > 0 ? sim::ns_to_ms(r.kv_transfer_ns_total) / static_cast<double>(r.kv_transfers) : 0.0,
                       r.kv_link.describe());
  }
  out += fmt::format("serving overheads in these latencies: {}\n", c.overheads.describe());
  double peak = 0, mean = 0;
  for (const auto& t : r.timeseries) {
    double share = t.kv_capacity_bytes > 0 ? static_cast<double>(t.kv_token_bytes) / static_cast<double>(t.kv_capacity_bytes) : 0;
    peak = std::max(peak, share);
    mean += share;
  }
  if (!r.timeseries.empty()) mean /= static_cast<double>(r.timeseries.size());
  out += fmt::format("KV memory holding tokens: mean {:.1f}%, peak {:.1f}% of capacity", mean * 100, peak * 100);
  if (c.prefix_caching) out += fmt::format("; prefix hit rate {:.1f}%", s.prefix_hit_rate * 100);
  out += "\n";
  const sim::EngineLimitUse& l = s.limits;
  out += fmt::format("engine limits: running peak {} of {} max_num_seqs; KV held by sequences peak {:.1f}%; steps held "
                     "back: {:.1f}% by KV memory, {:.1f}% at max_num_seqs (of {})\n",
                     l.peak_running, l.max_num_seqs, l.peak_kv_used * 100, l.kv_limited_share() * 100,
                     l.seq_limited_share() * 100, plan::with_commas(l.steps));
  if (c.slo.any()) {
    out += fmt::format("SLO ({}): {}; {:.1f}% of requests meet every target, goodput {:.2f} req/s\n",
                       c.slo.describe(), s.meets_slo ? "met" : "NOT met", s.slo_attainment * 100,
                       s.goodput_requests_per_s);
  }
  // Per operator class "class: source — note"; the text output lists classes by source only
  // (the notes are in summary.json and docs/cost-model.md).
  std::map<std::string, std::string> by_source;
  for (const std::string& line : r.cost_sources) {
    auto colon = line.find(": ");
    if (colon == std::string::npos) {
      by_source[line] += "";
      continue;
    }
    std::string cls = line.substr(0, colon);
    std::string rest = line.substr(colon + 2);
    // The whole label before the note: "measured (h100-sxm run 3)", "transferred (from h100-sxm)".
    std::string source = rest.substr(0, rest.find(" — "));
    std::string& list = by_source[source];
    list += (list.empty() ? "" : ", ") + cls;
  }
  out += "step costs:";
  for (const auto& [source, classes] : by_source) {
    out += classes.empty() ? " " + source : fmt::format(" {} ({})", source, classes);
  }
  out += " — see summary.json / docs/cost-model.md for each number's source\n";
  return out;
}

void print_speed(const sim::SimulationResult& r, double wall_s) {
  std::cerr << fmt::format("simulated {} requests, {} events, {} steps in {:.3f} s wall ({:.0f} events/s)\n",
                           r.summary.finished + r.summary.unfinished + r.summary.rejected, r.events, r.steps, wall_s,
                           wall_s > 0 ? static_cast<double>(r.events) / wall_s : 0.0);
}

}  // namespace

int run_simulate(const SimRequest& request) {
  plan::SimulationAnswer run;
  const plan::ResolvedScenario resolved = plan::resolve(request.scenario);
  run.config = plan::simulation_config(request.scenario, resolved);
  run.cost = plan::deployment_cost(resolved, run.config.cluster);
  const sim::SimulationConfig& config = run.config;
  std::unique_ptr<sim::RequestCsvWriter> requests;
  if (!request.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(request.out_dir, ec);
    if (ec) throw ConfigError(fmt::format("--out={}: cannot create directory ({})", request.out_dir, ec.message()));
    sim::clear_outputs(request.out_dir);
    requests = std::make_unique<sim::RequestCsvWriter>(request.out_dir + "/requests.csv");
  }
  ProgressBar bar(!request.json);
  sim::RunHooks hooks;
  if (requests) hooks.on_request = [&](const sim::RequestRecord& rec) { requests->write(rec); };
  hooks.on_progress = [&](double f) { bar.update(f); };
  InterruptGuard interrupt;  // SIGINT ends the run after the current event; what is complete is kept
  hooks.should_stop = [&] { return interrupt.requested(); };
  auto start = std::chrono::steady_clock::now();
  run.result = sim::run_simulation(config, hooks);
  const sim::SimulationResult& result = run.result;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bar.finish();
  run.interrupted =
      interrupt.requested() ? fmt::format("interrupted (SIGINT) at simulated t={:.3f} s; requests in flight "
                                          "count as unfinished", sim::ns_to_seconds(result.end_ns))
                            : std::string();
  const std::string& interrupted = run.interrupted;
  if (!request.out_dir.empty()) {
    // summary.json last: its presence marks the directory as written; an interrupted run keeps its
    // rows as requests.csv.partial / timeseries.csv.partial and says "complete": false.
    if (interrupted.empty()) {
      requests->commit();
    } else {
      requests->keep_partial();
    }
    sim::write_timeseries_csv(request.out_dir + "/timeseries.csv", result.timeseries, interrupted.empty());
    sim::write_summary_json(request.out_dir + "/summary.json", config, result, interrupted);
  }
  if (request.json) {
    std::cout << json_text(plan::simulation_json(run), 2) << "\n";
  } else {
    if (!interrupted.empty()) std::cout << "PARTIAL: " << interrupted << "\n";
    std::cout << warnings_text(result.plan.warnings);
    std::cout << "kvplan simulate: " << setup_text(config) << "\n";
    std::cout << "workload: " << workload_text(config) << "\n";
    std::cout << result_text(config, result);
    std::cout << plan::cost_text(plan::simulation_cost(run));
    if (!request.out_dir.empty()) {
      const char* tail = interrupted.empty() ? "" : ".partial";
      std::cout << fmt::format("wrote {0}/summary.json, {0}/requests.csv{1}, {0}/timeseries.csv{1}\n",
                               request.out_dir, tail);
    }
  }
  print_speed(result, wall);
  return interrupted.empty() ? 0 : kInterruptedExit;
}

int run_capacity(const SimRequest& request) {
  plan::CapacityRequest options;
  options.tolerance = request.tolerance;
  options.run_ahead = std::thread::hardware_concurrency() > 1;
  options.on_probe = [&](const sim::CapacityProbe& p, bool users) {
    if (request.json) return;
    std::cerr << fmt::format("  probe {:>10.3f} {}: p50 TTFT {:.0f} ms, p90 TTFT {:.0f} ms, p90 TPOT {:.1f} ms -> {}\n",
                             p.load, users ? "users" : "req/s", p.summary.ttft_ms.p50, p.summary.ttft_ms.p90,
                             p.summary.tpot_ms.p90, p.meets ? "meets" : "fails");
  };
  if (!request.compare.empty()) {
    std::vector<plan::SettingAxis> axes;
    for (const std::string& text : request.compare) {
      axes.push_back(plan::parse_setting_axis(text, plan::Command::kSimulate, "capacity"));
    }
    const plan::CapacityComparison c = plan::compare_capacity(request.scenario, axes, options);
    std::cout << (request.json ? json_text(plan::capacity_comparison_json(c), 2) + "\n"
                               : plan::capacity_comparison_text(c));
    return 0;
  }
  const plan::CapacityAnswer a = plan::find_capacity(request.scenario, options);
  if (request.json) {
    std::cout << json_text(plan::capacity_json(a), 2) << "\n";
    return 0;
  }
  const sim::SimulationConfig& config = a.config;
  const sim::CapacitySearch& s = a.search;
  const bool users = a.users;
  const std::vector<std::string>& warnings = a.warnings;
  const sim::StepTimeSource& source = a.source;
  std::cout << warnings_text(warnings);
  std::cout << "kvplan capacity: " << setup_text(config) << "\n";
  std::cout << "workload: " << workload_text(config, /*load_searched=*/true) << "\n";
  std::cout << "SLO: " << config.slo.describe() << "\n\n";
  if (s.best <= 0) {
    if (s.probes.empty()) {
      std::cout << "No load can be served: " << a.binding.why << "\n";
    } else {
      std::cout << fmt::format("No load meets the SLO (smallest tried: {:g} {}).\n", s.first_failing,
                               users ? "users" : "req/s");
      std::cout << plan::binding_text(a.binding);
    }
    std::cout << plan::cost_text(plan::capacity_cost(a));
    return 0;
  }
  std::cout << fmt::format("{} {:g} {}{} (first failing: {:g}; {} simulations)\n",
                           users ? "Largest number of concurrent users:" : "Largest arrival rate:", s.best,
                           users ? "users" : "req/s", s.unbounded ? " (search limit reached)" : "", s.first_failing,
                           s.probes.size());
  std::cout << latency_table(s.at_best, source.band);
  std::cout << step_source_text(source.summary, source.band);
  std::cout << fmt::format("at that load: {:.2f} req/s, {:.0f} output tok/s, {:.1f}% of requests meet every target\n",
                           s.at_best.requests_per_s, s.at_best.output_tokens_per_s, s.at_best.slo_attainment * 100);
  std::cout << plan::binding_text(a.binding);
  std::cout << plan::cost_text(plan::capacity_cost(a));
  return 0;
}

}  // namespace kvplan::cli

namespace kvplan::cli {

namespace {

// The default run's last answer: which GPU preset serves the same load cheapest, one GPU per
// replica (`kvplan plan --target-users N --max-gpus 1`; the answer does not depend on the thread
// count, so the run uses every core).
void print_cheapest_gpu(const plan::Scenario& scenario, double users) {
  plan::DeploymentSearch q;
  q.base = scenario;
  q.target_users = users;
  q.space.max_gpus = 1;
  q.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto start = std::chrono::steady_clock::now();
  const plan::DeploymentPlan p = plan::search_deployments(q);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("\nCheapest GPU preset for the same {:g} users, one GPU per replica (kvplan plan):\n", users);
  if (!p.cheapest) {
    std::cout << "  no GPU preset with a price serves them under the SLO\n";
  } else {
    const plan::DeploymentCandidate& c = p.candidates[*p.cheapest];
    std::cout << fmt::format("  {} x {} at ${:.2f}/GPU-hour = ${:.2f}/hour (each serves {:g} users; binding {})\n",
                             c.replicas, c.gpu, c.usd_per_gpu_hour, c.usd_per_hour, c.capacity, c.binding);
    std::cout << fmt::format("  step times: {}{}\n", c.step_time_source,
                             c.step_time_kind == "datasheet" ? " — datasheet estimates, unvalidated" : "");
  }
  std::cout << fmt::format("  ({} presets tried: {} did not fit, {} pruned by one probe, {} searched; more: kvplan plan "
                           "--target-users {:g} --max-gpus 8 --explain)\n",
                           p.candidates.size(),
                           std::count_if(p.candidates.begin(), p.candidates.end(),
                                         [](const auto& c) { return c.status == "does_not_fit"; }),
                           std::count_if(p.candidates.begin(), p.candidates.end(),
                                         [](const auto& c) { return c.status == "pruned"; }),
                           std::count_if(p.candidates.begin(), p.candidates.end(),
                                         [](const auto& c) { return c.status == "searched" || c.status == "no_capacity"; }),
                           users);
  std::cerr << fmt::format("(plan: {} simulations in {:.2f} s)\n", p.simulations, wall);
}

}  // namespace

int run_default_users() {
  const plan::Scenario scenario = plan::default_scenario();
  plan::CapacityRequest options;
  options.start = 64;
  options.tolerance = 0.05;
  options.run_ahead = std::thread::hardware_concurrency() > 1;
  auto start = std::chrono::steady_clock::now();
  const plan::CapacityAnswer a = plan::find_capacity(scenario, options);
  const sim::CapacitySearch& s = a.search;
  const sim::SimulationConfig& config = a.config;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const plan::WorkloadPresetInfo& preset = plan::workload_preset(scenario.workload.preset);
  std::cout << "\nSimulated: how many concurrent chat users fit under an SLO\n";
  std::cout << fmt::format("  workload preset '{}': each user sends a request, waits for the whole answer, thinks "
                           "{:g} s on average\n  (exponential), and sends the next; prompt and output lengths drawn from "
                           "the Azure LLM inference trace 2023\n  (conversation, 19,366 requests; {})\n",
                           preset.name, config.workload.closed.think_time_s,
                           plan::preset_length_spec("{traces}/azure_llm_2023_conv.csv"));
  std::cout << fmt::format("  SLO: {}; {:g} s simulated per probe, vLLM-style paged continuous batching\n",
                           config.slo.describe(), sim::ns_to_seconds(config.workload.horizon_ns));
  if (s.best <= 0) {
    std::cout << "  No number of users meets the SLO.\n";
  } else {
    std::cout << fmt::format("  -> {:g} concurrent users meet it ({:g} do not): p90 TTFT {:.0f} ms, p90 TPOT {:.1f} ms, "
                             "{:.2f} req/s\n",
                             s.best, s.first_failing, s.at_best.ttft_ms.p90, s.at_best.tpot_ms.p90,
                             s.at_best.requests_per_s);
  }
  const sim::StepTimeSource source = sim::resolve_step_time_source(config);
  std::istringstream source_lines(step_source_text(source.summary, source.band));
  for (std::string line; std::getline(source_lines, line);) std::cout << "  " << line << "\n";
  std::cerr << fmt::format("(capacity search: {} simulations in {:.2f} s{})\n", s.probes.size(), wall,
                           s.run_ahead_unused > 0
                               ? fmt::format(", and {} run ahead on a second core that the search did not need",
                                             s.run_ahead_unused)
                               : std::string());
  if (s.best > 0) print_cheapest_gpu(scenario, s.best);
  return 0;
}

}  // namespace kvplan::cli
