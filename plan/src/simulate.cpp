// plan/src/simulate.cpp — the simulator's configuration of a Scenario, and the simulated answers:
// one run, the capacity search, one step explained.
#include "kvplan/plan/simulate.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/custom_all_reduce.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/profile_option.h"
#include "kvplan/plan/runs_fit.h"
#include "kvplan/plan/text.h"
#include "kvplan/sim/serving_overheads.h"
#include "kvplan/sim/output_files.h"
#include "kvplan/sim/trace.h"

namespace kvplan::plan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Empirical lengths read from a trace, kept with the file's bytes: a later use whose file holds
// the same bytes takes them from here. Every simulation of a capacity or deployment search
// configures its workload anew (the chat preset draws prompt and output lengths from the
// 19,366-row Azure trace), and parsing and sorting the trace for each one was a third of `kvplan
// plan`'s time; reading and comparing the bytes costs a small part of that. Exact: the
// distribution is a pure function of the bytes, and a changed file is parsed again. At most 8
// entries.
struct TraceLengthsEntry {
  std::string path;
  std::string column;
  std::string bytes;  // the file when it was parsed
  LengthDistribution lengths;
};
std::mutex trace_lengths_mutex;
std::vector<TraceLengthsEntry> trace_lengths_cache;  // guarded by trace_lengths_mutex
constexpr size_t kTraceLengthsCacheEntries = 8;

// The file's bytes, or nullopt when it is not a regular file (a pipe must be read once, by the
// trace reader) or cannot be read (the trace reader then says why).
std::optional<std::string> file_bytes(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error) || error) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(out).str();
}

std::optional<LengthDistribution> cached_trace_lengths(const std::string& path, const std::string& column,
                                                       const std::optional<std::string>& bytes) {
  if (!bytes) return std::nullopt;
  std::lock_guard<std::mutex> lock(trace_lengths_mutex);
  for (const TraceLengthsEntry& e : trace_lengths_cache) {
    if (e.path == path && e.column == column && e.bytes == *bytes) return e.lengths;
  }
  return std::nullopt;
}

// `bytes` were read before the trace was parsed: a file changed in between is parsed again next time.
void keep_trace_lengths(const std::string& path, const std::string& column, std::optional<std::string> bytes,
                        const LengthDistribution& lengths) {
  if (!bytes) return;
  std::lock_guard<std::mutex> lock(trace_lengths_mutex);
  std::erase_if(trace_lengths_cache, [&](const TraceLengthsEntry& e) { return e.path == path && e.column == column; });
  if (trace_lengths_cache.size() >= kTraceLengthsCacheEntries) trace_lengths_cache.erase(trace_lengths_cache.begin());
  trace_lengths_cache.push_back(TraceLengthsEntry{path, column, std::move(*bytes), lengths});
}

// A length spec, or trace:FILE[:prompt|output|total] for the empirical lengths of a trace.
LengthDistribution lengths(const std::string& text, const std::string& flag, const char* column) {
  if (text.rfind("trace:", 0) == 0) {
    std::string path = text.substr(6);
    std::string which = column;
    auto colon = path.rfind(':');
    if (colon != std::string::npos) {
      std::string tail = path.substr(colon + 1);
      if (tail == "prompt" || tail == "output" || tail == "total") {
        which = tail;
        path = path.substr(0, colon);
      }
    }
    std::optional<std::string> bytes = file_bytes(path);
    if (std::optional<LengthDistribution> cached = cached_trace_lengths(path, which, bytes)) return *std::move(cached);
    sim::TraceLengths l = sim::read_trace_lengths(path);
    std::vector<int64_t> v = which == "prompt" ? l.prompt : which == "output" ? l.output : l.total;
    if (v.empty()) throw ConfigError(fmt::format("--{}={}: the trace has no requests", flag, text));
    LengthDistribution d = LengthDistribution::empirical(std::move(v), fmt::format("{} {} lengths", path, which));
    keep_trace_lengths(path, which, std::move(bytes), d);
    return d;
  }
  return parse_length_distribution(text, "--" + flag);
}

}  // namespace

// What each engine does when its prefix-caching switch is not given:
// - vLLM V1 (0.8 on; kvplan's default 0.10): on. V1's automatic prefix caching is on unless
//   --no-enable-prefix-caching; V0 had it off unless --enable-prefix-caching.
// - SGLang: on. RadixAttention is always on unless --disable-radix-cache.
// - TensorRT-LLM: on. KvCacheConfig(enable_block_reuse=True) is the LLM API's default
//   (nvidia.github.io/TensorRT-LLM/llm-api/reference/KvCacheConfig.html, 1.3 and 1.4).
// - Static batching (Hugging Face generate): off; there is no cache across requests.
bool engine_prefix_caching_default(const ServingConfig& serving) {
  switch (serving.engine) {
    case Engine::kVllm: return vllm_uses_v1(serving.version, serving.vllm_engine);
    case Engine::kSglang:
    case Engine::kTrtllm: return true;
    case Engine::kStatic: return false;
  }
  return false;
}

namespace {

// Whether the engine forms step n+1 while step n runs, by default:
//  - SGLang: the overlap scheduler (Scheduler.event_loop_overlap), on unless
//    --disable-overlap-schedule since v0.4 ("zero-overhead batch scheduler", LMSYS blog 2024-12-04);
//  - TensorRT-LLM: the PyTorch executor's overlap scheduler (py_executor.py _executor_loop_overlap),
//    on unless disable_overlap_scheduler (docs, features/overlap-scheduler);
//  - vLLM: async scheduling (vllm/v1/core/sched/async_scheduler.py), on by default from 0.14 (PR
//    #27614 made SchedulerConfig.async_scheduling=None mean on); off before.
bool engine_overlap_default(const ServingConfig& serving) {
  switch (serving.engine) {
    case Engine::kSglang:
    case Engine::kTrtllm: return true;
    case Engine::kVllm: return serving.version.at_least(0, 14);
    case Engine::kStatic: return false;
  }
  return false;
}

// SGLang's chunked_prefill_size when not given, by the GPU's memory (server_args.py,
// ServerArgs._handle_gpu_memory_settings: < 35 GB 2048 "A10, L40, 4090"; < 160 GB 8192 "H100, H200,
// A100, H20"; else 16384 "B200, MI300"; SGLang compares MiB of device memory).
int64_t sglang_chunked_prefill_size(const GpuSpec& gpu) {
  const int64_t bytes = gpu.usable_memory_bytes > 0 ? gpu.usable_memory_bytes : gpu.memory_bytes;
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (mib < 35 * 1024) return 2048;
  if (mib < 160 * 1024) return 8192;
  return 16384;
}

// The most requests SGLang and TensorRT-LLM run at once when not told (the memory plan's 256 is
// vLLM V0's max_num_seqs and sizes only the activation estimate):
//  - SGLang: max_running_requests = min(max_total_num_tokens / 2, req_to_token_pool size), the
//    pool holding clamp(max_total_num_tokens / context_len x 512, 2048, 4096) requests
//    (scheduler.py Scheduler.__init__, model_runner.py init_memory_pool): 2048 is its floor, and
//    the KV pool binds before it whenever it holds fewer than 4096 tokens;
//  - TensorRT-LLM: max_batch_size 2048 (llm_args.py / BuildConfig default).
constexpr int32_t kEngineMaxRunningRequests = 2048;

}  // namespace

Scenario default_scenario() {
  Scenario s;
  s.slo.ttft_ms = 2000;
  s.slo.tpot_ms = 100;
  s.workload.seed = 1;
  return s;
}

sim::SimulationConfig simulation_config(const Scenario& scenario) {
  return simulation_config(scenario, resolve(scenario));
}

namespace {

// The per-in-flight request terms were fitted on closed-loop benchmark sweeps (--client bench:
// equal lengths, no think time), whose users fall into lock step, so a new prompt waits behind a
// share of the others' (docs/benchmarks.md, "The fit"). Open-loop arrivals and users who think do
// not fall into step, and on the open-loop runs kvplan has (Poisson, vLLM on H100) the term
// over-predicts TTFT; so other workloads do not get it (a given flag still sets it).
void drop_lock_step_terms(sim::ServingOverheads& o) {
  constexpr const char* kWhy =
      "not applied: fitted on closed-loop benchmark sweeps whose users fall into lock step (--client bench); "
      "open-loop Poisson runs are over-predicted with it (docs/benchmarks.md, \"Open-loop runs\")";
  if (o.request_per_in_flight.ns > 0) {
    o.request_per_in_flight.ns = 0;
    o.request_per_in_flight.source = kWhy;
  }
  if (o.request_per_in_flight_prefill_share.value > 0) {
    o.request_per_in_flight_prefill_share.value = 0;
    o.request_per_in_flight_prefill_share.source = kWhy;
  }
}

}  // namespace

sim::SimulationConfig simulation_config(const Scenario& in, const ResolvedScenario& s) {
  const EngineSettings& e = in.engine;
  const WorkloadSettings& wl = in.workload;
  sim::SimulationConfig c = sim::default_simulation_config(s.model, s.gpu);
  c.scheme = s.scheme;
  c.parallel = s.parallel;
  c.serving = s.serving;

  sim::SchedulerConfig& sched = c.scheduler;
  if (e.scheduler) {
    sched.kind = *e.scheduler;
  } else {
    switch (s.serving.engine) {
      case Engine::kStatic: sched.kind = sim::SchedulerKind::kStatic; break;
      case Engine::kSglang: sched.kind = sim::SchedulerKind::kSglang; break;
      case Engine::kTrtllm: sched.kind = sim::SchedulerKind::kTrtllm; break;
      default: sched.kind = sim::SchedulerKind::kVllm; break;
    }
  }
  sched.overlap = e.overlap_schedule.value_or(engine_overlap_default(s.serving));
  sched.mixed_chunk = e.enable_mixed_chunk;
  sched.max_prefill_tokens = e.max_prefill_tokens;
  sched.capacity = e.capacity_scheduler_policy;
  const bool reserves = sched.kind == sim::SchedulerKind::kStatic || sched.kind == sim::SchedulerKind::kOrca;
  c.kv_policy = in.kv_cache.policy ? *in.kv_cache.policy
                : reserves        ? sim::KvPolicy::kReserveMaxLength
                                  : sim::KvPolicy::kPaged;
  if (!s.scheme.paged && c.kv_policy == sim::KvPolicy::kPaged) {
    throw ConfigError("--contiguous=true needs a reservation --kv-policy (max-length, pow2 or oracle)");
  }
  c.prefix_caching = in.kv_cache.enable_prefix_caching.value_or(
      c.kv_policy == sim::KvPolicy::kPaged && engine_prefix_caching_default(s.serving));
  sched.chunked_prefill = e.chunked_prefill.value_or(!reserves);
  sched.preemption = e.preemption;
  c.offload.host_bytes = static_cast<int64_t>(e.swap_space_gib * kGiB);
  if (sched.preemption == sim::PreemptionMode::kSwap && c.offload.host_bytes == 0) {
    throw ConfigError("--preemption=swap needs --swap-space > 0 (GiB of host memory per GPU)");
  }
  c.watermark = e.watermark;
  sched.spec.draft_tokens = e.spec_draft_tokens;
  sched.spec.acceptance_rate = e.spec_acceptance;
  sched.spec.draft_cost_ratio = e.spec_draft_cost;
  if (s.serving.max_num_seqs > 0) {
    sched.max_num_seqs = s.serving.max_num_seqs;
  } else if (s.serving.engine == Engine::kSglang || s.serving.engine == Engine::kTrtllm) {
    sched.max_num_seqs = kEngineMaxRunningRequests;
  }
  if (s.serving.max_num_batched_tokens > 0) {
    sched.max_num_batched_tokens = s.serving.max_num_batched_tokens;
  } else if (s.serving.engine == Engine::kSglang) {
    sched.max_num_batched_tokens = sglang_chunked_prefill_size(s.gpu);
  }
  if (s.serving.max_model_len > 0) sched.max_model_len = s.serving.max_model_len;

  const HardwareSettings& hw = in.hardware;
  c.cluster.replicas = hw.replicas;
  c.cluster.router = hw.router;
  c.cluster.prefill_replicas = hw.prefill_replicas;
  c.cluster.decode_replicas = hw.decode_replicas;
  c.cluster.kv_link_bytes_per_s = hw.kv_link_gbps * 1e9;
  if (hw.prefill_tensor_parallel_size > 0 || hw.prefill_data_parallel_size > 0 ||
      hw.prefill_expert_parallel != PoolExpertParallel::kSame) {
    if (hw.prefill_replicas == 0) {
      throw ConfigError("--prefill-tensor-parallel-size, --prefill-data-parallel-size and --prefill-expert-parallel "
                        "set the prefill pool of a disaggregated deployment: add --prefill-replicas and "
                        "--decode-replicas");
    }
    Parallelism p = c.parallel;  // keeps the decode pool's --expert-parallel-size (validate_split checks it)
    if (hw.prefill_tensor_parallel_size > 0) p.tensor_parallel = hw.prefill_tensor_parallel_size;
    if (hw.prefill_data_parallel_size > 0) p.data_parallel = hw.prefill_data_parallel_size;
    if (hw.prefill_expert_parallel != PoolExpertParallel::kSame) {
      p.expert_parallel = hw.prefill_expert_parallel == PoolExpertParallel::kOn;
    }
    c.cluster.prefill_parallel = p;
  }

  sim::WorkloadConfig& w = c.workload;
  const EffectiveWorkload ew = effective_workload(wl);  // the preset fills what is not given
  const int64_t concurrency = wl.max_concurrency;
  const sim::ClosedLoopClient client =
      wl.client.value_or(concurrency > 0 ? sim::ClosedLoopClient::kBench : sim::ClosedLoopClient::kUsers);
  const bool bench = client == sim::ClosedLoopClient::kBench;
  if (bench && concurrency == 0) throw ConfigError("--client=bench needs --max-concurrency > 0 (users in flight)");
  if (!bench && concurrency > 0) throw ConfigError("--max-concurrency is the bench client's; use --client=bench (or --users)");
  if (bench && ((ew.users_given && ew.users > 0) || !wl.trace.empty())) {
    throw ConfigError("--client=bench and --users/--trace: choose one workload");
  }
  const std::pair<const char*, bool> bench_only[] = {
      {"num-prompts", wl.num_prompts.has_value()},
      {"random-input-len", wl.random_input_len.has_value()},
      {"random-output-len", wl.random_output_len.has_value()},
      {"warmup-requests", wl.warmup_requests.has_value()},
      {"cooldown-requests", wl.cooldown_requests.has_value()},
      {"stagger-jitter", wl.stagger_jitter.has_value()},
      {"bench-start", wl.bench_start.has_value()}};
  for (const auto& [name, given] : bench_only) {
    if (!bench && given) throw ConfigError(fmt::format("--{} is the bench client's; add --client=bench --max-concurrency C", name));
  }
  c.seed = static_cast<uint64_t>(wl.seed);
  if (bench) {
    // vllm bench serve --max-concurrency C --num-prompts N: C users, zero think time, N requests.
    w.kind = sim::WorkloadKind::kClosedLoop;
    w.client = sim::ClosedLoopClient::kBench;
    w.closed.num_users = static_cast<int32_t>(concurrency);
    w.closed.think_time_s = 0;
    w.closed.turns = 1;
    w.closed.first_prompt = wl.random_input_len ? LengthDistribution::fixed(*wl.random_input_len)
                                                : lengths(ew.prompt_lengths, "prompt-lengths", "prompt");
    w.closed.output = wl.random_output_len ? LengthDistribution::fixed(*wl.random_output_len)
                                           : lengths(ew.output_lengths, "output-lengths", "output");
    w.closed.seed = c.seed;
    w.bench.num_prompts = wl.num_prompts.value_or(1000);
    w.bench.warmup_requests = wl.warmup_requests.value_or(-1);
    w.bench.cooldown_requests = wl.cooldown_requests.value_or(-1);
    w.bench.jitter = wl.stagger_jitter.value_or(1.0);
    w.bench.start = wl.bench_start.value_or(sim::default_bench_start(s.serving.engine, s.serving.version));
  } else if (!wl.trace.empty()) {
    if (ew.users_given && ew.users > 0) throw ConfigError("--trace and --users: choose one workload");
    w.kind = sim::WorkloadKind::kTrace;
    w.trace_path = wl.trace;
    w.trace.time_scale = wl.time_scale;
    w.trace.max_requests = wl.max_requests;
  } else if (ew.closed_loop) {
    w.kind = sim::WorkloadKind::kClosedLoop;
    w.closed.num_users = static_cast<int32_t>(ew.users);
    w.closed.think_time_s = ew.think_time_s;
    w.closed.turns = static_cast<int32_t>(ew.turns);
    w.closed.first_prompt = lengths(ew.prompt_lengths, "prompt-lengths", "prompt");
    w.closed.followup = lengths(ew.followup_lengths, "followup-lengths", "prompt");
    w.closed.output = lengths(ew.output_lengths, "output-lengths", "output");
    w.closed.shared_prefix_tokens = ew.shared_prefix_tokens;
    w.closed.requests_per_user = wl.requests_per_user;
    w.closed.hash_block_tokens = s.scheme.tokens_per_block;
    w.closed.seed = c.seed;
    if (wl.duration_s == 0 && w.closed.requests_per_user == 0) w.horizon_ns = sim::seconds_to_ns(ew.horizon_s);
  } else {
    w.kind = sim::WorkloadKind::kOpenLoop;
    w.open.arrivals = ew.arrivals;
    w.open.rate_per_s = ew.rate;
    w.open.cv = wl.cv;
    w.open.num_requests = wl.num_requests;
    w.open.prompt = lengths(ew.prompt_lengths, "prompt-lengths", "prompt");
    w.open.output = lengths(ew.output_lengths, "output-lengths", "output");
    w.open.seed = c.seed;
  }
  if (wl.duration_s > 0) w.horizon_ns = sim::seconds_to_ns(wl.duration_s);

  c.slo.ttft_ms = in.slo.ttft_ms;
  c.slo.tpot_ms = in.slo.tpot_ms;
  c.slo.e2e_ms = in.slo.e2e_ms;
  c.slo.percentile = in.slo.percentile;
  c.sample_interval_ns = sim::seconds_to_ns(wl.sample_interval_s);
  c.cost.cuda_graphs = e.cuda_graphs.value_or(!s.serving.enforce_eager);
  // vLLM V1 captures piecewise CUDA graphs around attention, so a step with prefill tokens replays
  // everything but attention (CompilationConfig.cudagraph_mode PIECEWISE, FULL_AND_PIECEWISE from
  // 0.11); SGLang runs extend batches eagerly and TensorRT-LLM graphs generation-only steps.
  c.cost.mixed_step_graphs = s.serving.engine == Engine::kVllm && vllm_uses_v1(s.serving.version, s.serving.vllm_engine)
                                 ? sim::MixedStepGraphs::kPiecewise
                                 : sim::MixedStepGraphs::kEager;
  if (!e.disable_custom_all_reduce) c.cost.custom_all_reduce = engine_custom_all_reduce(s.serving.engine, s.gpu);
  c.cost.moe_routing = e.moe_routing;
  c.cost.engine = s.serving.engine;
  c.overheads = sim::default_serving_overheads(s.serving.engine, c.cost.cuda_graphs);
  if (!bench) drop_lock_step_terms(c.overheads);  // before the flags: a given term applies to any client
  // A profile fitted to the user's own runs (kvplan calibrate from-runs) carries its serving terms;
  // they were fitted on that deployment's own loads, so they apply to any client (flags still win).
  apply_runs_profile(e.profile, std::string(engine_name(s.serving.engine)), s.gpu.id, c.overheads);
  if (e.request_overhead_ms) {
    c.overheads.request.ns = sim::overhead_ms_to_ns(*e.request_overhead_ms, "--request-overhead-ms");
    c.overheads.request.source = "given (--request-overhead-ms)";
  }
  if (e.request_overhead_per_in_flight_ms) {
    c.overheads.request_per_in_flight.ns =
        sim::overhead_ms_to_ns(*e.request_overhead_per_in_flight_ms, "--request-overhead-per-in-flight-ms");
    c.overheads.request_per_in_flight.source = "given (--request-overhead-per-in-flight-ms)";
  }
  if (e.request_overhead_per_in_flight_prefill_share) {
    c.overheads.request_per_in_flight_prefill_share.value = *e.request_overhead_per_in_flight_prefill_share;
    c.overheads.request_per_in_flight_prefill_share.source = "given (--request-overhead-per-in-flight-prefill-share)";
  }
  if (e.request_overhead_spread_ms) {
    c.overheads.request_spread.ns = sim::overhead_ms_to_ns(*e.request_overhead_spread_ms, "--request-overhead-spread-ms");
    c.overheads.request_spread.source = "given (--request-overhead-spread-ms)";
  }
  if (e.step_overhead_ms) {
    c.overheads.step.ns = sim::overhead_ms_to_ns(*e.step_overhead_ms, "--step-overhead-ms");
    c.overheads.step.source = "given (--step-overhead-ms)";
  }
  if (e.step_time_factor) {
    // Without --prefill-time-factor the given factor is the whole step's, as before the split.
    c.overheads.step_factor.value = *e.step_time_factor;
    c.overheads.step_factor.source = "given (--step-time-factor)";
    c.overheads.prefill_step_factor = c.overheads.step_factor;
  }
  if (e.prefill_time_factor) {
    c.overheads.prefill_step_factor.value = *e.prefill_time_factor;
    c.overheads.prefill_step_factor.source = "given (--prefill-time-factor)";
  }
  c.kv_capacity_bytes = static_cast<int64_t>(in.kv_cache.capacity_gib * kGiB);
  if (!e.profile.empty()) {
    c.profile = load_profile_option(e.profile, s.gpu);
    c.profile_label = profile_option_label(e.profile, *c.profile, s.gpu);
  }
  return c;
}

SimulationAnswer simulate(const Scenario& scenario, const sim::RunHooks& hooks) {
  SimulationAnswer a;
  const ResolvedScenario resolved = resolve(scenario);
  a.config = simulation_config(scenario, resolved);
  a.cost = deployment_cost(resolved, a.config.cluster);
  a.result = sim::run_simulation(a.config, hooks);
  return a;
}

CostAtLoad simulation_cost(const SimulationAnswer& a) {
  const sim::RunSummary& s = a.result.summary;
  const bool users = a.config.workload.kind == sim::WorkloadKind::kClosedLoop;
  const double load = users ? static_cast<double>(a.config.workload.closed.num_users) : s.requests_per_s;
  return cost_at_load(a.cost, load, users, s.output_tokens_per_s);
}

nlohmann::json simulation_json(const SimulationAnswer& a) {
  nlohmann::json j = sim::summary_json(a.config, a.result, a.interrupted);
  j["cost"] = cost_json(simulation_cost(a));
  return j;
}

CapacityAnswer find_capacity(const Scenario& scenario, const CapacityRequest& request) {
  CapacityAnswer a;
  const ResolvedScenario resolved = resolve(scenario);
  a.config = simulation_config(scenario, resolved);
  a.cost = deployment_cost(resolved, a.config.cluster);
  if (!a.config.slo.any()) {
    throw ConfigError("capacity: give at least one SLO target (--slo-ttft-ms, --slo-tpot-ms, --slo-e2e-ms)");
  }
  a.users = a.config.workload.kind == sim::WorkloadKind::kClosedLoop;
  sim::CapacityOptions options;
  if (request.tolerance > 0) options.relative_tolerance = request.tolerance;
  if (request.start > 0) {
    options.start = request.start;
  } else if (a.users) {
    options.start = 8;
  }
  options.should_stop = request.should_stop;
  options.run_ahead = request.run_ahead;
  if (request.on_probe) {
    options.on_probe = [&request, users = a.users](const sim::CapacityProbe& p) { request.on_probe(p, users); };
  }
  // What the answer must not be trusted for (unknown architecture read as generic, ...): the same
  // list `memory` prints, from the engine memory plan of the scenario.
  const sim::SimulationConfig& c = a.config;
  a.plan = plan_memory(c.model, c.gpu, c.scheme, c.parallel, c.serving);
  a.warnings = a.plan.warnings;
  a.source = sim::resolve_step_time_source(c);
  // Weights that leave no KV budget bind before any load: nothing to simulate (the simulator would
  // refuse the scenario), and a comparison row says so instead of failing the whole table.
  if (a.plan.fits || c.kv_capacity_bytes > 0) {
    a.search = a.users ? sim::find_max_users(a.config, options) : sim::find_max_rate(a.config, options);
  }
  a.binding = binding_constraint(c.slo, a.search, a.users, a.plan);
  return a;
}

CostAtLoad capacity_cost(const CapacityAnswer& a) {
  return cost_at_load(a.cost, a.search.best, a.users, a.search.best > 0 ? a.search.at_best.output_tokens_per_s : 0);
}

namespace {

nlohmann::json band_json(const ProfileBand& b) {
  return {{"ttft_p90_rel_error", b.ttft_p90_rel_error},
          {"tpot_p90_rel_error", b.tpot_p90_rel_error},
          {"validated", b.ttft_p90_rel_error > 0 || b.tpot_p90_rel_error > 0},
          {"how", b.how}};
}

}  // namespace

nlohmann::json capacity_json(const CapacityAnswer& a) {
  nlohmann::json j;
  j["warnings"] = a.warnings;
  j["step_time_source"] = a.source.summary;
  j["latency_band"] = band_json(a.source.band);
  j["search"] = a.users ? "users" : "rate";
  j["slo"] = a.config.slo.describe();
  j["best"] = a.search.best;
  j["first_failing"] = a.search.first_failing;
  j["unbounded"] = a.search.unbounded;
  j["at_best"] = sim::run_summary_json(a.search.at_best);
  const nlohmann::json binding = binding_json(a.binding);
  j["binding_constraint"] = binding["binding_constraint"];
  j["margins"] = binding["margins"];
  j["cost"] = cost_json(capacity_cost(a));
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : a.search.probes) {
    probes.push_back({{"load", p.load}, {"meets", p.meets}, {"summary", sim::run_summary_json(p.summary)}});
  }
  j["probes"] = probes;
  return j;
}

StepExplanation explain_step(const Scenario& scenario, const StepShape& shape) {
  if (shape.batch < 0 || shape.context < 0 || shape.prefill < 0 || shape.batch > 1'000'000 ||
      shape.context > 100'000'000 || shape.prefill > 10'000'000) {
    throw ConfigError(fmt::format(
        "--explain-step={},{},{} must be BATCH,CONTEXT or BATCH,CONTEXT,PREFILL_TOKENS (non-negative; batch at most "
        "1,000,000, context at most 100,000,000 tokens)",
        shape.batch, shape.context, shape.prefill));
  }
  if (shape.batch == 0 && shape.prefill == 0) {
    throw ConfigError(fmt::format("--explain-step={},{},{}: the step has no work (batch 0 and no prefill)", shape.batch,
                                  shape.context, shape.prefill));
  }
  StepExplanation e;
  e.shape = shape;
  e.config = simulation_config(scenario);
  e.source = sim::resolve_step_time_source(e.config);
  sim::CostOptions options = e.config.cost;
  options.weights = e.config.serving.weights;
  options.memoise = false;
  const sim::SimulationConfig& c = e.config;
  e.plan = plan_memory(c.model, c.gpu, c.scheme, c.parallel, c.serving);
  sim::StepCostModel model(c.model, c.gpu, e.plan.kv_scheme, c.parallel, e.source.profile, options);
  std::vector<int64_t> decode(static_cast<size_t>(shape.batch), shape.context);
  std::vector<sim::PrefillChunk> prefill;
  if (shape.prefill > 0) prefill.push_back(sim::PrefillChunk{.context_tokens = 0, .new_tokens = shape.prefill});
  sim::StepWork work;
  work.decode_contexts = decode;
  work.prefill = prefill;
  e.breakdown = model.explain(work);
  e.decode_only_ns = e.breakdown.total_ns;
  if (shape.prefill > 0) {
    sim::StepWork decodes;
    decodes.decode_contexts = decode;
    e.decode_only_ns = shape.batch > 0 ? model.explain(decodes).total_ns : 0;
  }
  e.weights_note = model.weights_note();
  e.sources = model.sources();
  e.cuda_graphs = options.cuda_graphs && shape.prefill == 0;
  e.piecewise_graphs = options.cuda_graphs && shape.prefill > 0 && options.mixed_step_graphs == sim::MixedStepGraphs::kPiecewise;
  return e;
}

nlohmann::json step_json(const StepExplanation& e) {
  const sim::SimulationConfig& config = e.config;
  const sim::StepBreakdown& b = e.breakdown;
  nlohmann::json j;
  j["warnings"] = e.plan.warnings;
  j["step"] = {{"decode_sequences", e.shape.batch}, {"context_tokens", e.shape.context}, {"prefill_tokens", e.shape.prefill}};
  j["total_ns"] = b.total_ns;
  j["profile_source"] = e.source.profile.source_kind();
  j["step_time_source"] = e.source.summary;
  j["engine_step_overhead_ns"] = config.overheads.step.ns;
  j["engine_step_overhead_source"] = config.overheads.step.source;
  j["engine_step_time_factor"] = config.overheads.step_factor.value;
  j["engine_step_time_factor_source"] = config.overheads.step_factor.source;
  j["engine_prefill_time_factor"] = config.overheads.prefill_step_factor.value;
  j["engine_prefill_time_factor_source"] = config.overheads.prefill_step_factor.source;
  j["decode_only_ns"] = e.decode_only_ns;
  j["step_with_overhead_ns"] =
      sim::engine_step_ns(b.total_ns, e.decode_only_ns, config.overheads.step_factor.value,
                          config.overheads.prefill_step_factor.value, config.overheads.step.ns);
  j["weights"] = e.weights_note;
  j["ops"] = nlohmann::json::array();
  for (const sim::OpCost& op : b.ops) {
    j["ops"].push_back({{"name", op.name}, {"class", op.op_class}, {"stream", op.stream}, {"instances", op.instances},
                        {"time_ns", op.time_ns}, {"launch_ns", op.launch_ns}, {"limit", op.limit},
                        {"grid_factor", op.grid_factor}, {"flops", op.flops}, {"bytes", op.bytes},
                        {"source", op.source}});
    if (!op.detail.empty()) j["ops"].back()["detail"] = op.detail;
  }
  j["sources"] = e.sources;
  return j;
}

std::string step_text(const StepExplanation& e) {
  const sim::SimulationConfig& config = e.config;
  const sim::StepBreakdown& b = e.breakdown;
  std::string out;
  for (const std::string& w : e.plan.warnings) out += fmt::format("WARNING: {}\n", w);
  out += fmt::format("One step of {} on {} ({}): {} decode sequence(s) of {} tokens{}\n", config.model.name,
                     config.gpu.name, parallel_text(config.parallel), e.shape.batch, with_commas(e.shape.context),
                     e.shape.prefill > 0 ? fmt::format(" + a prefill chunk of {} tokens", with_commas(e.shape.prefill))
                                         : "");
  out += fmt::format("{}; CUDA graphs {}\n\n", e.weights_note, e.cuda_graphs        ? "on (no launch overhead)"
                                                                   : e.piecewise_graphs ? "piecewise (launch overhead on attention only)"
                                                                                        : "off for this step");
  out += fmt::format("  {:<38} {:>6} {:>10} {:>6}  {:<7} {:>6}  {}\n", "operator (all layers)", "count", "us", "share",
                     "limit", "grid", "source");
  double sum = 0;
  for (const sim::OpCost& op : b.ops) sum += static_cast<double>(op.time_ns);
  for (const sim::OpCost& op : b.ops) {
    out += fmt::format("  {:<38} {:>6} {:>10.1f} {:>5.1f}%  {:<7} {:>6}  {}\n", op.name, op.instances,
                       static_cast<double>(op.time_ns) / 1e3,
                       sum > 0 ? 100.0 * static_cast<double>(op.time_ns) / sum : 0.0, op.limit,
                       op.grid_factor == 1.0 ? std::string("-") : fmt::format("x{:.2f}", op.grid_factor), op.source);
    if (!op.detail.empty()) out += fmt::format("      {} ({}): {}\n", op.op_class, op.detail, op.source);
  }
  out += fmt::format("\n  step time (critical path over compute, communication and copy streams): {:.1f} us\n",
                     static_cast<double>(b.total_ns) / 1e3);
  const sim::ServingOverheads& o = config.overheads;
  const bool split = o.prefill_step_factor.value != o.step_factor.value && e.shape.prefill > 0;
  if (split) {
    out += fmt::format("  of which the decodes alone: {:.1f} us x engine step-time factor {:.3f} — {}\n",
                       static_cast<double>(e.decode_only_ns) / 1e3, o.step_factor.value, o.step_factor.source);
    out += fmt::format("  and the prefill part: {:.1f} us x engine prefill-time factor {:.3f} — {}\n",
                       static_cast<double>(b.total_ns - e.decode_only_ns) / 1e3, o.prefill_step_factor.value,
                       o.prefill_step_factor.source);
  } else if (o.step_factor.value != 1.0) {
    out += fmt::format("  x engine step-time factor {:.3f} — {}\n", o.step_factor.value, o.step_factor.source);
  }
  out += fmt::format("  + engine step overhead (scheduler, sampling, CPU): {:.1f} us — {}\n",
                     static_cast<double>(config.overheads.step.ns) / 1e3, config.overheads.step.source);
  out += fmt::format("  = {:.1f} us per step as the simulator advances time\n",
                     static_cast<double>(sim::engine_step_ns(b.total_ns, e.decode_only_ns, o.step_factor.value,
                                                             o.prefill_step_factor.value, o.step.ns)) / 1e3);
  out += fmt::format("  step times: {}\n", e.source.summary);
  out += "  terms: compute = FLOPs / (peak x e_c), memory = bytes / (bandwidth x e_m); the larger, times the\n"
         "  measured shape correction (grid), never below the class's per-kernel floor, plus launch overhead\n"
         "  outside CUDA graphs (docs/cost-model.md)\n";
  out += "\n  where each operator class's numbers come from:\n";
  for (const std::string& line : e.sources) out += "    " + line + "\n";
  return out;
}

}  // namespace kvplan::plan
