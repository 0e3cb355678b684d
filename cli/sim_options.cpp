#include "sim_options.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "profile_option.h"
#include "kvplan/sim/trace.h"

#ifndef KVPLAN_DATA_DIR
#define KVPLAN_DATA_DIR "data"
#endif

namespace kvplan::cli {

namespace {

const std::string& get(const FlagValues& flags, const std::string& name) {
  return flag_text(flags, sim_flag_defaults(), name);
}

bool given(const FlagValues& flags, const std::string& name) { return flags.count(name) > 0; }

double to_number(const FlagValues& flags, const std::string& name, double min, double max) {
  const std::string& text = get(flags, name);
  double v = parse_number_flag(name, text);
  if (v < min || v > max) throw ConfigError(fmt::format("--{}={} must be in [{:g}, {:g}]", name, text, min, max));
  return v;
}

int64_t to_int(const FlagValues& flags, const std::string& name, int64_t min, int64_t max) {
  const std::string& text = get(flags, name);
  int64_t v = parse_int_flag(name, text);
  if (v < min || v > max) throw ConfigError(fmt::format("--{}={} must be in [{}, {}]", name, text, min, max));
  return v;
}

bool to_bool(const FlagValues& flags, const std::string& name, bool fallback) {
  return parse_bool_flag(name, get(flags, name), fallback);
}

// A length spec, or trace:FILE[:prompt|output|total] for the empirical lengths of a trace.
LengthDistribution lengths(const FlagValues& flags, const std::string& name, const char* column) {
  const std::string& text = get(flags, name);
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
    sim::TraceLengths l = sim::read_trace_lengths(path);
    std::vector<int64_t> v = which == "prompt" ? l.prompt : which == "output" ? l.output : l.total;
    if (v.empty()) throw ConfigError(fmt::format("--{}={}: the trace has no requests", name, text));
    return LengthDistribution::empirical(std::move(v), fmt::format("{} {} lengths", path, which));
  }
  return parse_length_distribution(text, "--" + name);
}

}  // namespace

std::string data_dir() {
  if (const char* env = std::getenv("KVPLAN_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return KVPLAN_DATA_DIR;
}

const FlagDefaults& sim_flag_defaults() {
  static const FlagDefaults defaults = {
      {"scheduler", ""},          // static | orca | vllm | sglang (default: from --engine)
      {"kv-policy", ""},          // max-length | pow2 | oracle | paged (default: from the scheduler)
      {"enable-prefix-caching", ""},
      {"chunked-prefill", ""},
      {"preemption", "recompute"},
      {"swap-space", "0"},        // GiB of host memory per GPU for swapped KV
      {"watermark", "0"},
      {"spec-draft-tokens", "0"},
      {"spec-acceptance", "0.7"},
      {"spec-draft-cost", "0.05"},
      {"replicas", "1"},
      {"router", "round-robin"},
      {"prefill-replicas", "0"},
      {"decode-replicas", "0"},
      {"kv-link-gbps", "0"},      // GB/s per GPU for prefill -> decode KV transfer
      {"trace", ""},
      {"time-scale", "1"},
      {"max-requests", "0"},
      {"rate", "1"},
      {"arrivals", "poisson"},
      {"cv", "1"},
      {"num-requests", "1000"},
      {"prompt-lengths", "fixed:1024"},
      {"output-lengths", "fixed:256"},
      {"users", "0"},
      {"think-time", "5"},
      {"turns", "1"},
      {"followup-lengths", "fixed:64"},
      {"requests-per-user", "0"},
      {"duration", "0"},          // simulated seconds (closed loop: default 300)
      {"client", ""},             // users | bench (default: bench with --max-concurrency, users with --users)
      {"max-concurrency", "0"},   // bench client: users with one request in flight each (vllm bench serve)
      {"num-prompts", "1000"},    // bench client: requests in total
      {"random-input-len", ""},   // bench client: fixed prompt tokens (instead of --prompt-lengths)
      {"random-output-len", ""},  // bench client: fixed output tokens (instead of --output-lengths)
      {"warmup-requests", ""},    // bench client: first finished requests left out ("": the concurrency)
      {"cooldown-requests", ""},  // bench client: last finished requests left out ("": the concurrency)
      {"bench-start", ""},        // bench client: staggered | burst ("": the engine's, bench_client.h)
      {"stagger-jitter", "1"},    // bench client: 0 evenly spaced starts, 1 one uniform start per slot
      {"request-overhead-ms", ""},  // per request, added to TTFT and E2E ("": the engine's default)
      {"request-overhead-per-in-flight-ms", ""},  // per request, per other request in flight ("": the engine's)
      {"request-overhead-spread-ms", ""},  // per request: uniform ± this around the mean ("": none)
      {"step-overhead-ms", ""},     // per engine step ("": the engine's default)
      {"step-time-factor", ""},     // the engine's step time per cost-model step time ("": the engine's default)
      {"seed", "0"},
      {"slo-ttft-ms", "0"},
      {"slo-tpot-ms", "0"},
      {"slo-e2e-ms", "0"},
      {"slo-percentile", "90"},
      {"sample-interval", "1"},
      {"cuda-graphs", ""},
      {"disable-custom-all-reduce", "false"},  // every TP all-reduce through NCCL (the profile's collective class)
      {"kv-capacity-gib", "0"},   // > 0: KV pool per replica instead of the engine's budget (what-if)
      {"profile", ""},            // auto | published | datasheet | PerfProfile .json | calibration .sqlite
  };
  return defaults;
}

sim::SimulationConfig build_simulation(const Scenario& s, const FlagValues& flags) {
  check_known_flags(flags, sim_flag_defaults());
  sim::SimulationConfig c = sim::default_simulation_config(s.model, s.gpu);
  c.scheme = s.scheme;
  c.parallel = s.parallel;
  c.serving = s.serving;

  sim::SchedulerConfig& sched = c.scheduler;
  if (given(flags, "scheduler")) {
    sched.kind = sim::parse_scheduler_kind(get(flags, "scheduler"));
  } else {
    switch (s.serving.engine) {
      case Engine::kStatic: sched.kind = sim::SchedulerKind::kStatic; break;
      case Engine::kSglang: sched.kind = sim::SchedulerKind::kSglang; break;
      default: sched.kind = sim::SchedulerKind::kVllm; break;
    }
  }
  const bool reserves = sched.kind == sim::SchedulerKind::kStatic || sched.kind == sim::SchedulerKind::kOrca;
  c.kv_policy = given(flags, "kv-policy") ? sim::parse_kv_policy(get(flags, "kv-policy"))
                : reserves ? sim::KvPolicy::kReserveMaxLength
                           : sim::KvPolicy::kPaged;
  if (!s.scheme.paged && c.kv_policy == sim::KvPolicy::kPaged) {
    throw ConfigError("--contiguous=true needs a reservation --kv-policy (max-length, pow2 or oracle)");
  }
  c.prefix_caching = to_bool(flags, "enable-prefix-caching", sched.kind == sim::SchedulerKind::kSglang);
  sched.chunked_prefill = to_bool(flags, "chunked-prefill", !reserves);
  sched.preemption = sim::parse_preemption_mode(get(flags, "preemption"));
  double swap_gib = to_number(flags, "swap-space", 0, 1 << 20);
  c.offload.host_bytes = static_cast<int64_t>(swap_gib * 1024.0 * 1024.0 * 1024.0);
  if (sched.preemption == sim::PreemptionMode::kSwap && c.offload.host_bytes == 0) {
    throw ConfigError("--preemption=swap needs --swap-space > 0 (GiB of host memory per GPU)");
  }
  c.watermark = to_number(flags, "watermark", 0, 0.5);
  sched.spec.draft_tokens = static_cast<int32_t>(to_int(flags, "spec-draft-tokens", 0, 16));
  sched.spec.acceptance_rate = to_number(flags, "spec-acceptance", 0, 1);
  sched.spec.draft_cost_ratio = to_number(flags, "spec-draft-cost", 0, 1);
  if (s.serving.max_num_seqs > 0) sched.max_num_seqs = s.serving.max_num_seqs;
  if (s.serving.max_num_batched_tokens > 0) sched.max_num_batched_tokens = s.serving.max_num_batched_tokens;
  if (s.serving.max_model_len > 0) sched.max_model_len = s.serving.max_model_len;

  c.cluster.replicas = static_cast<int32_t>(to_int(flags, "replicas", 1, 4096));
  c.cluster.router = sim::parse_router_kind(get(flags, "router"));
  c.cluster.prefill_replicas = static_cast<int32_t>(to_int(flags, "prefill-replicas", 0, 4096));
  c.cluster.decode_replicas = static_cast<int32_t>(to_int(flags, "decode-replicas", 0, 4096));
  c.cluster.kv_link_bytes_per_s = to_number(flags, "kv-link-gbps", 0, 1e6) * 1e9;

  sim::WorkloadConfig& w = c.workload;
  const int64_t users = to_int(flags, "users", 0, 1'000'000);
  const int64_t concurrency = to_int(flags, "max-concurrency", 0, 1'000'000);
  std::string client = get(flags, "client");
  if (client.empty()) client = concurrency > 0 ? "bench" : "users";
  const bool bench = sim::parse_closed_loop_client(client) == sim::ClosedLoopClient::kBench;
  if (bench && concurrency == 0) throw ConfigError("--client=bench needs --max-concurrency > 0 (users in flight)");
  if (!bench && concurrency > 0) throw ConfigError("--max-concurrency is the bench client's; use --client=bench (or --users)");
  if (bench && (users > 0 || !get(flags, "trace").empty())) {
    throw ConfigError("--client=bench and --users/--trace: choose one workload");
  }
  for (const char* name : {"num-prompts", "random-input-len", "random-output-len", "warmup-requests",
                           "cooldown-requests", "stagger-jitter", "bench-start"}) {
    if (!bench && given(flags, name)) throw ConfigError(fmt::format("--{} is the bench client's; add --client=bench --max-concurrency C", name));
  }
  const double duration = to_number(flags, "duration", 0, 1e7);
  c.seed = static_cast<uint64_t>(to_int(flags, "seed", 0, std::numeric_limits<int64_t>::max()));
  if (bench) {
    // vllm bench serve --max-concurrency C --num-prompts N: C users, zero think time, N requests.
    w.kind = sim::WorkloadKind::kClosedLoop;
    w.client = sim::ClosedLoopClient::kBench;
    w.closed.num_users = static_cast<int32_t>(concurrency);
    w.closed.think_time_s = 0;
    w.closed.turns = 1;
    w.closed.first_prompt = given(flags, "random-input-len")
                                ? LengthDistribution::fixed(to_int(flags, "random-input-len", 1, 100'000'000))
                                : lengths(flags, "prompt-lengths", "prompt");
    w.closed.output = given(flags, "random-output-len")
                          ? LengthDistribution::fixed(to_int(flags, "random-output-len", 1, 100'000'000))
                          : lengths(flags, "output-lengths", "output");
    w.closed.seed = c.seed;
    w.bench.num_prompts = to_int(flags, "num-prompts", 1, 100'000'000);
    w.bench.warmup_requests = get(flags, "warmup-requests").empty() ? -1 : to_int(flags, "warmup-requests", 0, 100'000'000);
    w.bench.cooldown_requests =
        get(flags, "cooldown-requests").empty() ? -1 : to_int(flags, "cooldown-requests", 0, 100'000'000);
    w.bench.jitter = to_number(flags, "stagger-jitter", 0, 1);
    w.bench.start = get(flags, "bench-start").empty() ? sim::default_bench_start(s.serving.engine)
                                                      : sim::parse_bench_start(get(flags, "bench-start"));
  } else if (!get(flags, "trace").empty()) {
    if (users > 0) throw ConfigError("--trace and --users: choose one workload");
    w.kind = sim::WorkloadKind::kTrace;
    w.trace_path = get(flags, "trace");
    w.trace.time_scale = to_number(flags, "time-scale", 1e-6, 1e6);
    w.trace.max_requests = to_int(flags, "max-requests", 0, std::numeric_limits<int64_t>::max());
  } else if (users > 0) {
    w.kind = sim::WorkloadKind::kClosedLoop;
    w.closed.num_users = static_cast<int32_t>(users);
    w.closed.think_time_s = to_number(flags, "think-time", 0, 1e6);
    w.closed.turns = static_cast<int32_t>(to_int(flags, "turns", 1, 1000));
    w.closed.first_prompt = lengths(flags, "prompt-lengths", "prompt");
    w.closed.followup = lengths(flags, "followup-lengths", "prompt");
    w.closed.output = lengths(flags, "output-lengths", "output");
    w.closed.requests_per_user = to_int(flags, "requests-per-user", 0, std::numeric_limits<int32_t>::max());
    w.closed.hash_block_tokens = s.scheme.tokens_per_block;
    w.closed.seed = c.seed;
    if (duration == 0 && w.closed.requests_per_user == 0) w.horizon_ns = 300 * sim::kNsPerSecond;
  } else {
    w.kind = sim::WorkloadKind::kOpenLoop;
    w.open.arrivals = sim::parse_arrival_kind(get(flags, "arrivals"));
    w.open.rate_per_s = to_number(flags, "rate", 1e-9, 1e9);
    w.open.cv = to_number(flags, "cv", 1e-3, 100);
    w.open.num_requests = to_int(flags, "num-requests", 1, 100'000'000);
    w.open.prompt = lengths(flags, "prompt-lengths", "prompt");
    w.open.output = lengths(flags, "output-lengths", "output");
    w.open.seed = c.seed;
  }
  if (duration > 0) w.horizon_ns = sim::seconds_to_ns(duration);

  c.slo.ttft_ms = to_number(flags, "slo-ttft-ms", 0, 1e9);
  c.slo.tpot_ms = to_number(flags, "slo-tpot-ms", 0, 1e9);
  c.slo.e2e_ms = to_number(flags, "slo-e2e-ms", 0, 1e9);
  c.slo.percentile = to_number(flags, "slo-percentile", 1, 100);
  c.sample_interval_ns = sim::seconds_to_ns(to_number(flags, "sample-interval", 1e-3, 1e6));
  c.cost.cuda_graphs = to_bool(flags, "cuda-graphs", !s.serving.enforce_eager);
  if (!to_bool(flags, "disable-custom-all-reduce", false)) {
    c.cost.custom_all_reduce = engine_custom_all_reduce(s.serving.engine, s.gpu);
  }
  c.overheads = sim::default_serving_overheads(s.serving.engine, c.cost.cuda_graphs);
  if (!get(flags, "request-overhead-ms").empty()) {
    c.overheads.request.ns = sim::overhead_ms_to_ns(to_number(flags, "request-overhead-ms", 0, 1e6), "--request-overhead-ms");
    c.overheads.request.source = "given (--request-overhead-ms)";
  }
  if (!get(flags, "request-overhead-per-in-flight-ms").empty()) {
    c.overheads.request_per_in_flight.ns = sim::overhead_ms_to_ns(
        to_number(flags, "request-overhead-per-in-flight-ms", 0, 1e6), "--request-overhead-per-in-flight-ms");
    c.overheads.request_per_in_flight.source = "given (--request-overhead-per-in-flight-ms)";
  }
  if (!get(flags, "request-overhead-spread-ms").empty()) {
    c.overheads.request_spread.ns =
        sim::overhead_ms_to_ns(to_number(flags, "request-overhead-spread-ms", 0, 1e6), "--request-overhead-spread-ms");
    c.overheads.request_spread.source = "given (--request-overhead-spread-ms)";
  }
  if (!get(flags, "step-overhead-ms").empty()) {
    c.overheads.step.ns = sim::overhead_ms_to_ns(to_number(flags, "step-overhead-ms", 0, 1e6), "--step-overhead-ms");
    c.overheads.step.source = "given (--step-overhead-ms)";
  }
  if (!get(flags, "step-time-factor").empty()) {
    c.overheads.step_factor.value = to_number(flags, "step-time-factor", 0.05, 20);
    c.overheads.step_factor.source = "given (--step-time-factor)";
  }
  c.kv_capacity_bytes = static_cast<int64_t>(to_number(flags, "kv-capacity-gib", 0, 1e9) * 1024.0 * 1024.0 * 1024.0);
  if (!get(flags, "profile").empty()) {
    c.profile = load_profile_option(get(flags, "profile"), s.gpu);
    c.profile_label = profile_option_label(get(flags, "profile"), *c.profile, s.gpu);
  }
  return c;
}

}  // namespace kvplan::cli
