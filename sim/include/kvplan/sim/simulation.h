// kvplan/sim/simulation.h — one simulated serving run: a model, a GPU, a KV scheme, an engine and
// a workload in; latency, throughput, memory and fragmentation out.
//
//   SimulationConfig cfg = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
//   cfg.workload.kind = WorkloadKind::kTrace;  cfg.workload.trace_path = "data/traces/azure_llm_2023_conv.csv";
//   SimulationResult r = run_simulation(cfg);
//
// Deterministic: the same config (seed included) gives the same result, byte for byte in every
// output file. The KV budget of each replica comes from core's engine memory accounting
// (plan_memory), so the simulated engine holds exactly the blocks the real one would print.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/sim/bench_client.h"
#include "kvplan/sim/cost_model.h"
#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/kv_transfer.h"
#include "kvplan/sim/metrics.h"
#include "kvplan/sim/replica.h"
#include "kvplan/sim/scheduler_config.h"
#include "kvplan/sim/serving_overheads.h"
#include "kvplan/sim/trace.h"
#include "kvplan/sim/workload.h"

namespace kvplan::sim {

enum class WorkloadKind { kOpenLoop, kClosedLoop, kTrace, kList };

// Who the closed loop's users are.
//  - kUsers: chat users holding conversations with think time (ConversationSpec).
//  - kBench: a benchmark client (bench_client.h): closed.num_users is the concurrency C,
//    closed.first_prompt and closed.output the lengths; think time 0, one turn, no prefix identity
//    (the rest of ConversationSpec is ignored); `bench` gives the request budget, the stagger and the
//    steady-state rule. The run ends when every request has finished (no horizon needed).
enum class ClosedLoopClient { kUsers, kBench };
std::string_view closed_loop_client_name(ClosedLoopClient client);
ClosedLoopClient parse_closed_loop_client(std::string_view text);  // users | bench

struct WorkloadConfig {
  WorkloadKind kind = WorkloadKind::kOpenLoop;
  OpenLoopSpec open;
  ConversationSpec closed;
  ClosedLoopClient client = ClosedLoopClient::kUsers;  // kClosedLoop only
  BenchOptions bench;                                  // client == kBench only
  std::string trace_path;
  TraceOptions trace;
  std::vector<RequestSpec> requests;  // kList: explicit requests in arrival order (tests, API use)
  TimeNs horizon_ns = 0;  // closed loop: required; open loop / trace: 0 = until every request ends
};

enum class RouterKind { kRoundRobin, kLeastOutstanding, kPrefixAware };
std::string_view router_kind_name(RouterKind kind);
RouterKind parse_router_kind(std::string_view text);  // round-robin | least-outstanding | prefix-aware

struct ClusterConfig {
  int32_t replicas = 1;          // unified replicas (ignored when disaggregated)
  RouterKind router = RouterKind::kRoundRobin;
  int32_t prefill_replicas = 0;  // > 0: prefill/decode disaggregation
  int32_t decode_replicas = 0;
  // Per GPU, prefill -> decode. 0: kvplan's default link (kv_transfer.h: NVLink within one scale-up
  // domain, else RDMA at the ConnectX-7 line rate), named in the notes.
  double kv_link_bytes_per_s = 0;
  // Disaggregated only: the prefill pool's own parallelism (a DeepSeek-style deployment prefills
  // with attention DP and wide EP and decodes with TP, or the other way round). Empty: the decode
  // pool's (SimulationConfig::parallel). Each pool has its own memory plan, KV layout and step costs;
  // a replica is one engine instance (one attention-DP rank).
  std::optional<Parallelism> prefill_parallel;
};

struct OffloadConfig {
  int64_t host_bytes = 0;              // 0: no host tier (swap preemption falls back to recompute)
  double pcie_bytes_per_s = 0;         // 0: the GPU's host link
};

struct SimulationConfig {
  ModelConfig model;
  GpuSpec gpu;
  KvScheme scheme;
  Parallelism parallel;
  ServingConfig serving;           // engine memory settings -> KV budget, batch defaults
  SchedulerConfig scheduler;
  KvPolicy kv_policy = KvPolicy::kPaged;
  bool prefix_caching = false;
  double watermark = 0.0;
  OffloadConfig offload;
  ClusterConfig cluster;
  WorkloadConfig workload;
  Slo slo;
  uint64_t seed = 0;  // drives every random choice (the workload specs' own seeds are replaced)
  TimeNs sample_interval_ns = kNsPerSecond;
  CostOptions cost;
  // Empty: default_profile(gpu) — the GPU's published profile, else the nearest published one
  // transferred, else the datasheet (core/default_profile.h).
  std::optional<PerfProfile> profile;
  std::string profile_label;  // with `profile`: where it came from, for the outputs (e.g. the file)
  // Time outside the forward pass: per request (client-visible, added to TTFT and E2E) and per
  // engine step. Default: none ("not modelled"); front ends set default_serving_overheads(engine,
  // cuda_graphs), the fitted per-engine values, and apply user overrides.
  ServingOverheads overheads;
  int64_t kv_capacity_bytes = 0;       // > 0: overrides the engine's KV budget per replica
  // Replaces the cost model (golden tests use a formula checkable by hand; what-if studies may
  // plug in their own). Empty: StepCostModel with `profile`.
  std::shared_ptr<StepTimer> step_timer;
  // A cost model built for this config (make_step_cost_model) and reused instead of a new one per
  // run: the probes of a capacity search share one, so its memo carries over from probe to probe.
  // A step's time is a pure function of its work (cost_model.cpp), so sharing changes no result,
  // only how often the memo hits. One run at a time may use it (the memo is not thread-safe).
  std::shared_ptr<StepCostModel> shared_cost_model;
  // Tests: call every KV manager's check_invariants() after every step (slow; off by default).
  bool check_invariants = false;
};

// A config with vLLM defaults (paged, prefix caching off). Scheduler limits left at 0 (max_num_seqs,
// max_num_batched_tokens, max_model_len) take the engine's defaults from the memory plan.
SimulationConfig default_simulation_config(ModelConfig model, GpuSpec gpu);

struct SimulationResult {
  RunSummary summary;
  std::vector<TimeSeriesRow> timeseries;
  MemoryPlan plan;                  // one replica's memory plan
  int64_t kv_capacity_bytes = 0;    // per replica
  std::vector<std::string> notes;   // assumptions worth reading
  std::vector<std::string> cost_sources;  // per operator class: measured / transferred / datasheet
  // What the step times rest on, in one line ("published h100-sxm profile (...)"), and how far
  // answers from that source were off in validation (0: not validated).
  std::string step_time_source;
  ProfileBand latency_band;
  // Disaggregated: the prefill -> decode link (kv_transfer.h): kind, bandwidth per GPU and source,
  // and the transfers made. Empty kind when the deployment is not disaggregated.
  KvLink kv_link;
  int64_t kv_transfers = 0;
  TimeNs kv_transfer_ns_total = 0;  // summed over the transfers (each bytes / link)
  int64_t kv_transfer_bytes_total = 0;  // per GPU, summed over the transfers
  TimeNs bench_window_ns = 0;       // bench client: the stagger window its users started over
  int64_t events = 0;
  int64_t steps = 0;
  int64_t cost_memo_hits = 0;
  int64_t cost_memo_misses = 0;
  int64_t peak_active_requests = 0;
  TimeNs end_ns = 0;
};

// One step as the event log shows it.
struct StepLog {
  int32_t replica = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::vector<PlannedWork> work;
};

struct RunHooks {
  std::function<void(const StepLog&)> on_step;                 // each step, when it starts
  std::function<void(const RequestRecord&)> on_request;        // each finished request
  std::function<void(double fraction)> on_progress;           // about every 1% of the work
  // Checked between events; returning true ends the run early (the GUI's Cancel). The result then
  // covers the simulated time reached so far: requests still in flight count as unfinished.
  std::function<bool()> should_stop;
};

// The profile a run prices its steps with: config.profile (labelled by config.profile_label), or
// default_profile(gpu); with the one-line summary and validation band every output carries.
struct StepTimeSource {
  PerfProfile profile;
  std::string summary;
  ProfileBand band;
  // The word answers carry: "published", "transferred" or "datasheet" for the GPU's default profile
  // (default_profile's choice); for a given profile, its classes' common source ("measured", ...,
  // or "mixed" when they differ).
  std::string kind;
};
StepTimeSource resolve_step_time_source(const SimulationConfig& config);

// The cost model a run of `config` prices its steps with (for shared_cost_model).
std::shared_ptr<StepCostModel> make_step_cost_model(const SimulationConfig& config);

// Throws ConfigError for an inconsistent config (e.g. static batching with paged memory).
SimulationResult run_simulation(const SimulationConfig& config, const RunHooks& hooks = {});

}  // namespace kvplan::sim
