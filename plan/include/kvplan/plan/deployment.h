// kvplan/plan/deployment.h — `kvplan plan`: the cheapest deployment that serves a target load at an
// SLO, the Pareto front of cost against users served, and every candidate's answer with the limit
// that binds it (or why it was never simulated).
//
//   plan::DeploymentSearch q;
//   q.base = scenario;                       // model, workload, SLO, engine settings
//   q.target_users = 2000;                   // or q.target_rate (requests per second)
//   q.space.gpus = {"h100-sxm", "h200"};     // empty: every GPU preset with a price
//   q.space.max_gpus = 8;                    // GPUs per replica: TP x PP up to this
//   plan::DeploymentPlan p = plan::search_deployments(q);
//   p.cheapest;  p.front;  p.candidates[i].status;  // "searched", "pruned", "does_not_fit", ...
//
// One candidate is one replica's configuration (GPU, TP, PP and any varied setting); its answer is
// the largest load one replica serves under the SLO (find_capacity), and the deployment is as many
// replicas as the target needs. The search is exact up to the capacity search's own assumption
// that the SLO, once failed, stays failed at higher load:
//   1. the memory model (microseconds) drops what cannot hold the weights, and prices each replica;
//   2. candidates are taken in a fixed order (cheapest estimated deployment first), in rounds of a
//      fixed size; before each round the incumbent (the cheapest deployment so far, and the answers
//      behind the front) gives every candidate of the round the load it would need to matter: the
//      per-replica load at which it would be no dearer than the cheapest (and, with exact_front,
//      the load at which it would serve more than every candidate that costs no more per replica).
//      A candidate that fails one simulation at that load cannot win (or enter the front), and is
//      "pruned"; the others are searched in full.
//   Rounds have a fixed size whatever the number of threads (or MPI ranks), so the answer, every
//   candidate's status included, is the same byte for byte however it is run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/core/perf_profile.h"
#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"

namespace kvplan::plan {

// The candidate space. Every combination of GPU x TP x PP (TP x PP <= max_gpus) x the axes' values,
// and always the base scenario's own deployment (its GPU, TP and PP; when its GPU is searched).
struct DeploymentSpace {
  std::vector<std::string> gpus;            // GPU presets; empty: every preset with a price
  // GPUs per replica. 0 (the default): per GPU, 8 or the smallest split that holds the model
  // (smallest_fitting_split), whichever is more, so a model that needs two nodes of a GPU is still
  // searched on it; TP then stays within max(8, the GPU's scale-up domain).
  int32_t max_gpus = 0;
  std::vector<int32_t> tensor_parallel;     // empty: 1, 2, 4, 8, ... up to the GPU limit, and the fitting split
  std::vector<int32_t> pipeline_parallel;   // empty: 1
  std::vector<SettingAxis> axes;            // other settings varied (kv-cache-dtype=auto,fp8, ...)
  // Serving splits: {0, 0} aggregated (one engine is the unit of scale); {P, D} prefill/decode
  // disaggregation, P prefill and D decode engines of TP x PP GPUs each as one unit. Empty: {{0, 0}}.
  std::vector<std::pair<int32_t, int32_t>> disaggregation;
  std::map<std::string, double> gpu_prices; // preset id -> USD per GPU-hour, over the preset's price
};

struct DeploymentSearch {
  Scenario base;
  double target_users = 0;   // closed-loop users to serve (the workload must be closed loop)
  double target_rate = 0;    // or requests per second (open loop or trace)
  DeploymentSpace space;
  double tolerance = 0;      // the capacity searches' relative bracket width; 0: 0.02
  // true: every candidate that could be on the cost/users front is searched, so the front is
  // exact. false: only what could be the cheapest is searched, and the front is that of the
  // candidates searched (fewer simulations; the output says which).
  bool exact_front = false;
  int threads = 1;           // candidates evaluated at once (the answer does not depend on it)
  // Candidates per round: the unit of determinism (and of parallel work). Fixed, not the thread
  // count, so that 1 thread, 8 threads and N MPI ranks prune the same candidates.
  int round_size = 8;
  // After each candidate is decided (in candidate order within a round); for progress bars.
  std::function<void(size_t done, size_t total)> on_progress;
  // Checked between rounds; true stops the search (Ctrl-C). The plan then says it is partial.
  std::function<bool()> should_stop;
  // Runs one round's candidates; default: `threads` std::threads. MPI replaces it (each rank a
  // share of the round, then every result gathered on every rank). `evaluate(i)` is pure.
  std::function<std::vector<nlohmann::json>(const std::vector<size_t>& round,
                                             const std::function<nlohmann::json(size_t)>& evaluate)>
      run_round;
};

// One candidate: one replica's configuration and what became of it.
struct DeploymentCandidate {
  size_t index = 0;
  std::string gpu;
  int32_t tensor_parallel = 1;
  int32_t pipeline_parallel = 1;
  int32_t prefill_engines = 0;  // > 0: a disaggregated unit of this many prefill engines ...
  int32_t decode_engines = 0;   // ... and this many decode engines
  SettingValues values;     // the axes' values
  std::string label;        // "4 x h200, tp4 pp1, kv-cache-dtype=fp8"
  bool scenario_deployment = false;  // the base scenario's own GPU, TP and PP
  // "does_not_fit": the engine would not start (the weights, or one request of max_model_len,
  // leave no room); "invalid": the combination is not a valid configuration;
  // "unpriced": no price for the GPU; "pruned": one probe showed it cannot win or enter the front;
  // "no_capacity": searched, not even one user (or the smallest rate) meets the SLO;
  // "searched": searched in full; "not_reached": the search was stopped before it.
  std::string status;
  std::string why;          // does_not_fit, invalid, unpriced, pruned: the reason in one line
  int64_t gpus_per_replica = 0;  // of one unit: TP x PP, or (P + D) x TP x PP when disaggregated
  double usd_per_gpu_hour = 0;
  std::string price_source;
  std::vector<std::string> warnings;  // the memory plan's (lossy KV scheme, parallelism beyond one domain, ...)
  double estimate = 0;      // the memory model's optimistic per-replica load (orders the search)
  // searched:
  double capacity = 0;      // per replica: users or requests per second
  bool unbounded = false;
  int64_t replicas = 0;     // for the target
  double served = 0;        // replicas x capacity
  double usd_per_hour = 0;  // replicas x GPUs x price
  std::string binding;      // kv_memory, ttft, tpot, e2e, max_num_seqs, weights, ...
  std::string binding_why;
  double p90_ttft_ms = 0, p90_tpot_ms = 0;
  double output_tokens_per_s = 0;  // one replica at its answer
  std::string step_time_source;
  std::string step_time_kind;  // "published", "measured", "transferred", "datasheet", "given"
  // Empty when the step times are validated (the GPU's published or transferred profile prices GEMMs
  // and attention from operator timings and carries a whole-model band) or the user's own; else
  // what they rest on (step_time_caveat), said in the answer's first lines.
  std::string step_time_caveat;
  int probes = 0;           // simulations run for this candidate
  double replica_usd_per_hour() const { return usd_per_gpu_hour * static_cast<double>(gpus_per_replica); }
};

struct DeploymentPlan {
  std::string model;     // the model's name
  std::string workload;  // one line
  std::string slo;       // "p90 TTFT <= 2000 ms, p90 TPOT <= 50 ms"
  bool users = true;                  // the load is closed-loop users (else requests per second)
  double target = 0;
  std::vector<DeploymentCandidate> candidates;  // in the search's order
  std::optional<size_t> cheapest;     // index into candidates
  std::vector<size_t> front;          // cost per replica-hour vs load per replica, cheapest first
  std::vector<size_t> token_front;    // output tokens/s per GPU vs per-user tokens/s (1000 / p90 TPOT)
  bool partial = false;               // stopped before every candidate was decided
  bool exact_front = false;           // the front is exact (else: over the candidates searched)
  int simulations = 0;
  std::vector<std::string> notes;     // what the search did not consider
};

// Throws ConfigError for a bad target, space or base scenario (naming the flag and the rule).
DeploymentPlan search_deployments(const DeploymentSearch& search);

// The GPUs per replica searched by default (max_gpus 0) on every GPU.
inline constexpr int32_t kDefaultMaxGpusPerReplica = 8;

// The smallest split of one replica of the base scenario over `gpu` whose memory plan fits (the
// weights and one request of max_model_len, as the search's first step decides): TP 1, 2, 4, ...
// up to the largest power of two within the GPU's scale-up domain, then with that TP, PP 2, 4, 8.
// nullopt when none fits (or the GPU is not a preset). Microseconds per try.
struct ReplicaSplit {
  int32_t tensor_parallel = 1;
  int32_t pipeline_parallel = 1;
  int32_t gpus() const { return tensor_parallel * pipeline_parallel; }
};
std::optional<ReplicaSplit> smallest_fitting_split(const Scenario& base, const std::string& gpu);

// The candidates of a space, in enumeration order, before anything is evaluated (status empty).
std::vector<DeploymentCandidate> enumerate_candidates(const DeploymentSearch& search);
// The scenario one candidate was searched with: the base with the candidate's GPU, TP, PP, serving
// split and axis values, one replica (and the price given for its GPU, if any). Running
// find_capacity on it gives the candidate's answer; the planner loads it when a point is clicked.
Scenario candidate_scenario(const DeploymentSearch& search, const DeploymentCandidate& c);

nlohmann::json deployment_plan_json(const DeploymentPlan& p);
// The cheapest deployment as the lines `kvplan plan` prints first (the planner shows the same):
// the deployment and its cost, what each replica serves and its binding constraint, the cost per
// user and the price's source, the step times' source, and a WARNING line when those are datasheet
// estimates. One line saying no candidate serves any load when there is no cheapest.
std::vector<std::string> deployment_cheapest_lines(const DeploymentPlan& p);
// What the ranking's costs rest on, for the answer's first lines: the GPUs whose step times are
// datasheet efficiencies only (no measured or published timings, no validation band), then one line
// per basis of GPUs whose published or transferred profile leaves GEMM or attention on datasheet
// efficiencies (step_time_caveat), and a warning when a GPU whose step times are not validated
// (those, or timed ones without a whole-model band) ranks cheapest above one with better-founded
// costs, with its basis. Empty when nothing costed rests on datasheet classes and the cheapest is
// validated.
std::vector<std::string> deployment_cost_basis_lines(const DeploymentPlan& p);
// What published or transferred step times rest on when they are not validated, e.g. "published
// operator timings for gemm; datasheet efficiencies for attention_prefill, attention_decode; no
// whole-model validation band (unvalidated latency)". Empty for validated step times (the key
// classes gemm, attention_prefill and attention_decode from timings, and a band), and for kinds
// other than "published" and "transferred" (datasheet has its own line; a given profile is the user's).
std::string step_time_caveat(const std::string& kind, const PerfProfile& profile);
// The cheapest deployment, the front with each point's binding constraint, then (explain) every
// candidate with its status and why.
std::string deployment_plan_text(const DeploymentPlan& p, bool explain);
// One row per candidate (the --out DIR candidates.csv).
std::string deployment_candidates_csv(const DeploymentPlan& p);
// One row per front point, cheapest replica first (the --out DIR front.csv).
std::string deployment_front_csv(const DeploymentPlan& p);

}  // namespace kvplan::plan
