// The event loop: arrivals (open loop, trace or closed-loop users) are routed to replicas, replicas
// run steps, finished requests feed the metrics, samples record the state over time.
#include "kvplan/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "kvplan/core/default_profile.h"
#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/sim/event_queue.h"
#include "kvplan/sim/kv_transfer.h"
#include "kvplan/sim/offload_tier.h"
#include "kvplan/sim/replica.h"
#include "kvplan/sim/router.h"

#include "internal/engine_pool.h"

namespace kvplan::sim {

namespace {

using internal::build_prefill_pool;
using internal::describe_pool;
using internal::pool_kv_capacity;
using internal::resolve_scheduler;

bool is_reservation(KvPolicy p) { return p != KvPolicy::kPaged; }

void check_config(const SimulationConfig& c) {
  const SchedulerKind k = c.scheduler.kind;
  if ((k == SchedulerKind::kStatic || k == SchedulerKind::kOrca) && !is_reservation(c.kv_policy)) {
    throw ConfigError(fmt::format("scheduler: '{}' reserves contiguous memory per request; kv-policy={} "
                                  "must be max-length, pow2 or oracle",
                                  scheduler_kind_name(k), kv_policy_name(c.kv_policy)));
  }
  if ((k == SchedulerKind::kVllm || k == SchedulerKind::kSglang) && is_reservation(c.kv_policy)) {
    throw ConfigError(fmt::format("scheduler: '{}' pages its KV cache; kv-policy={} must be paged",
                                  scheduler_kind_name(k), kv_policy_name(c.kv_policy)));
  }
  if ((k == SchedulerKind::kStatic || k == SchedulerKind::kOrca) && c.scheduler.chunked_prefill) {
    throw ConfigError(fmt::format("scheduler: '{}' prefills whole prompts; chunked-prefill must be off",
                                  scheduler_kind_name(k)));
  }
  if (k == SchedulerKind::kStatic && c.scheduler.spec.draft_tokens > 0) {
    throw ConfigError("scheduler: speculative decoding needs a continuous-batching scheduler (orca, vllm, sglang), not static");
  }
  if (c.prefix_caching && is_reservation(c.kv_policy)) {
    throw ConfigError(fmt::format("prefix-caching: needs kv-policy=paged, got {}", kv_policy_name(c.kv_policy)));
  }
  const ClusterConfig& cl = c.cluster;
  if (cl.prefill_replicas < 0 || cl.decode_replicas < 0 || (cl.prefill_replicas > 0) != (cl.decode_replicas > 0)) {
    throw ConfigError(fmt::format("cluster: prefill-replicas={} and decode-replicas={} must both be > 0 "
                                  "(disaggregated) or both 0", cl.prefill_replicas, cl.decode_replicas));
  }
  if (cl.prefill_parallel && cl.prefill_replicas == 0) {
    throw ConfigError("cluster: a prefill pool parallelism needs a disaggregated deployment (prefill-replicas > 0)");
  }
  if (cl.prefill_replicas == 0 && cl.replicas < 1) {
    throw ConfigError(fmt::format("cluster: replicas={} must be >= 1", cl.replicas));
  }
  if (c.sample_interval_ns <= 0) {
    throw ConfigError(fmt::format("sample-interval: {} ns must be > 0", c.sample_interval_ns));
  }
  if (c.workload.kind == WorkloadKind::kClosedLoop && c.workload.client == ClosedLoopClient::kUsers &&
      c.workload.horizon_ns <= 0 && c.workload.closed.requests_per_user <= 0) {
    throw ConfigError("workload: closed-loop users need a horizon (duration) or requests per user");
  }
  if (c.workload.kind == WorkloadKind::kTrace && c.workload.trace_path.empty()) {
    throw ConfigError("workload: trace needs a file path");
  }
}

// The bench client's spec: the closed loop's users and lengths, the bench options, the run's seed.
BenchClientSpec bench_spec(const WorkloadConfig& w, uint64_t seed) {
  BenchClientSpec spec;
  spec.max_concurrency = w.closed.num_users;
  spec.prompt = w.closed.first_prompt;
  spec.output = w.closed.output;
  spec.options = w.bench;
  spec.seed = seed;
  return spec;
}

// Rows of a trace, for the progress bar only (header and comment lines skipped).
int64_t count_rows(const std::string& path) {
  std::ifstream in(path);
  int64_t n = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#' && line[0] != '\r') ++n;
  }
  TraceFormat f = detect_trace_format(path);
  if (f == TraceFormat::kAzureCsv || f == TraceFormat::kNativeCsv) --n;
  return std::max<int64_t>(n, 1);
}

// An explicit list of requests, in arrival order.
class ListSource : public RequestSource {
 public:
  explicit ListSource(const std::vector<RequestSpec>& requests) : requests_(requests) {}
  std::optional<RequestSpec> next() override {
    if (next_ >= requests_.size()) return std::nullopt;
    const RequestSpec& r = requests_[next_];
    if (next_ > 0 && r.arrival_ns < requests_[next_ - 1].arrival_ns) {
      throw ConfigError(fmt::format("workload: request {} arrives at {} ns, before the previous one; "
                                    "requests must be in arrival order", r.id, r.arrival_ns));
    }
    ++next_;
    return r;
  }
  std::string describe() const override { return fmt::format("{} listed requests", requests_.size()); }

 private:
  const std::vector<RequestSpec>& requests_;
  size_t next_ = 0;
};

// A prefill -> decode KV transfer in flight.
struct Transfer {
  PrefilledRequest request;
  int32_t from = 0;
  int32_t to = 0;
};

class Loop {
 public:
  Loop(const SimulationConfig& config, const RunHooks& hooks) : cfg_(config), hooks_(hooks), metrics_(config.slo) {}

  SimulationResult run();

 private:
  void build();
  void kick(int32_t replica);
  void request_kick(int32_t replica);
  void on_arrival(RequestSpec request);
  void on_step_done(int32_t replica);
  void on_transfer_done(int64_t index);
  void sample();
  bool idle() const;  // nothing running, waiting, swapped or in transfer on any replica
  void schedule_next_open_arrival();
  void progress();

  const SimulationConfig& cfg_;
  const RunHooks& hooks_;
  SimulationResult result_;
  MetricsCollector metrics_;
  EventQueue queue_;
  std::unique_ptr<KvLayout> layout_;
  std::shared_ptr<StepCostModel> cost_;
  int64_t memo_hits_before_ = 0, memo_misses_before_ = 0;  // a shared cost model's counts at the start
  StepTimer* timer_ = nullptr;
  std::vector<std::unique_ptr<HostOffloadTier>> tiers_;
  std::vector<Replica> replicas_;
  std::unique_ptr<Router> router_;
  int32_t num_prefill_ = 0;  // disaggregated: replicas [0, P) prefill, [P, P + D) decode
  bool disaggregated_ = false;
  KvLink link_;
  // Disaggregated with its own prefill parallelism: the prefill pool's layout, limits and step costs.
  std::optional<internal::PrefillPool> prefill_pool_;
  std::vector<TimeNs> link_free_ns_;
  std::vector<bool> kick_pending_;  // per replica: a kKick event is queued
  std::vector<Transfer> transfers_;
  std::vector<int64_t> free_transfers_;

  std::unique_ptr<RequestSource> source_;
  std::optional<RequestSpec> next_arrival_;
  std::unique_ptr<ClosedLoopUsers> users_;
  std::unique_ptr<BenchClient> bench_;
  std::vector<std::optional<RequestSpec>> user_pending_;
  TimeNs request_overhead_ns_ = 0;  // mean time from a request's send to the engine (for the stagger window)
  // The delay of a request being sent now (request_delay_ns: the fixed part, the part per other
  // request in flight, the spread); counts it as in flight from here until it finishes or is rejected.
  TimeNs send(const RequestSpec& r) {
    const bool prefill_shaped = cfg_.overheads.request_per_in_flight_prefill_share.value > 0;
    const TimeNs prefill = prefill_shaped ? prompt_prefill_ns(*timer_, r.prompt_tokens) : 0;
    return request_delay_ns(cfg_.overheads, cfg_.seed, r.id, in_flight_++, prefill);
  }
  // The mean delay of a bench request sent with the other C - 1 in flight (the stagger window's
  // share of it): no spread, the mean prompt's prefill.
  TimeNs mean_delay_at_full_load(const BenchClientSpec& spec) {
    ServingOverheads mean = cfg_.overheads;
    mean.request_spread.ns = 0;
    const int64_t prompt = std::max<int64_t>(1, std::llround(spec.prompt.mean()));
    const TimeNs prefill =
        mean.request_per_in_flight_prefill_share.value > 0 ? prompt_prefill_ns(*timer_, prompt) : 0;
    return request_delay_ns(mean, 0, 0, spec.max_concurrency - 1, prefill);
  }
  int64_t in_flight_ = 0;  // requests sent (their delay started) and not yet finished or rejected
  int64_t expected_requests_ = 0;
  int64_t finished_ = 0;
  int64_t last_progress_pct_ = -1;
  int64_t active_ = 0;
  bool stopped_ = false;
  // Time-series sampling (sample()): paused while the engine is idle, so idle time costs no
  // events and no rows; the interval doubles (and every other row is dropped) each time the
  // series reaches kMaxTimeSeriesRows, so its memory is bounded whatever the simulated time.
  bool sampling_paused_ = false;
  TimeNs sample_interval_ns_ = 0;
};

void Loop::build() {
  check_config(cfg_);
  result_.plan = plan_memory(cfg_.model, cfg_.gpu, cfg_.scheme, cfg_.parallel, cfg_.serving);
  const MemoryPlan& plan = result_.plan;
  if (!plan.fits && cfg_.kv_capacity_bytes <= 0) {
    std::string why = plan.problems.empty() ? std::string("no KV budget") : plan.problems.front();
    throw ConfigError(fmt::format("scenario: {} on {} does not fit: {}", cfg_.model.name, cfg_.gpu.name, why));
  }
  // vLLM pages what its memory plan says: a hybrid model's attention block raised to hold a
  // recurrent layer's state, the state padded to that page (engine_memory.h).
  const KvScheme& paged = cfg_.serving.engine == Engine::kVllm ? plan.kv_scheme : cfg_.scheme;
  layout_ = std::make_unique<KvLayout>(build_kv_layout(cfg_.model, paged, cfg_.parallel, plan.pipeline_stage));
  int64_t capacity = cfg_.kv_capacity_bytes > 0 ? cfg_.kv_capacity_bytes : pool_kv_capacity(plan, cfg_.kv_policy);
  result_.kv_capacity_bytes = capacity;
  const SchedulerConfig sched = resolve_scheduler(cfg_.scheduler, plan, plan.max_model_len);

  StepTimeSource source = resolve_step_time_source(cfg_);
  const PerfProfile& profile = source.profile;
  result_.step_time_source = source.summary;
  result_.latency_band = source.band;
  if (cfg_.step_timer) {
    timer_ = cfg_.step_timer.get();
    result_.cost_sources.push_back("step times from a substituted StepTimer (not the cost model)");
  } else {
    if (cfg_.shared_cost_model) {
      cost_ = cfg_.shared_cost_model;
      memo_hits_before_ = cost_->memo_hits();
      memo_misses_before_ = cost_->memo_misses();
    } else {
      CostOptions cost = cfg_.cost;
      cost.weights = cfg_.serving.weights;
      cost_ = std::make_shared<StepCostModel>(cfg_.model, cfg_.gpu, cfg_.scheme, cfg_.parallel, profile, cost);
    }
    timer_ = cost_.get();
    result_.cost_sources = cost_->sources();
    result_.notes.push_back(cost_->weights_note());
  }

  disaggregated_ = cfg_.cluster.prefill_replicas > 0;
  num_prefill_ = disaggregated_ ? cfg_.cluster.prefill_replicas : 0;
  const int32_t total = disaggregated_ ? cfg_.cluster.prefill_replicas + cfg_.cluster.decode_replicas : cfg_.cluster.replicas;
  double pcie = cfg_.offload.pcie_bytes_per_s > 0 ? cfg_.offload.pcie_bytes_per_s : cfg_.gpu.pcie_bytes_per_s;
  // The prefill pool's own parallelism: its memory plan, layout, KV capacity, limits and step costs.
  prefill_pool_ = build_prefill_pool(cfg_, sched, profile);
  const Parallelism prefill_parallel = prefill_pool_ ? prefill_pool_->parallel : cfg_.parallel;
  if (prefill_pool_) {
    result_.notes.push_back(fmt::format("prefill pool: {}, KV capacity {} bytes each; decode pool: {}",
                                        describe_pool(cfg_.cluster.prefill_replicas, prefill_parallel),
                                        prefill_pool_->kv_capacity_bytes,
                                        describe_pool(cfg_.cluster.decode_replicas, cfg_.parallel)));
  }
  StepTimer* prefill_timer = prefill_pool_ && prefill_pool_->cost ? prefill_pool_->cost.get() : timer_;
  for (int32_t i = 0; i < total; ++i) {
    const bool prefill_role = disaggregated_ && i < num_prefill_;
    KvManagerConfig kc;
    kc.policy = cfg_.kv_policy;
    const bool own_pool = prefill_role && prefill_pool_;
    kc.capacity_bytes = own_pool ? prefill_pool_->kv_capacity_bytes : capacity;
    kc.layout = own_pool ? prefill_pool_->layout.get() : layout_.get();
    kc.max_model_len = sched.max_model_len;
    kc.watermark = cfg_.watermark;
    kc.prefix_caching = cfg_.prefix_caching;
    HostOffloadTier* tier = nullptr;
    if (cfg_.offload.host_bytes > 0) {
      OffloadTierConfig oc;
      oc.host_capacity_bytes = cfg_.offload.host_bytes;
      oc.host_bandwidth_bytes_per_s = pcie;
      tiers_.push_back(std::make_unique<HostOffloadTier>(oc));
      tier = tiers_.back().get();
    }
    ReplicaSetup setup;
    setup.index = i;
    setup.role = !disaggregated_ ? ReplicaRole::kUnified : (prefill_role ? ReplicaRole::kPrefill : ReplicaRole::kDecode);
    setup.scheduler = own_pool ? prefill_pool_->scheduler : sched;
    setup.cache_prefixes = cfg_.prefix_caching;
    setup.layout = kc.layout;
    setup.seed = cfg_.seed;
    setup.step_overhead_ns = cfg_.overheads.step.ns;
    setup.step_factor = cfg_.overheads.step_factor.value;
    setup.prefill_step_factor = cfg_.overheads.prefill_step_factor.value;
    replicas_.emplace_back(setup, make_kv_manager(kc), prefill_role ? prefill_timer : timer_, tier);
  }
  router_ = std::make_unique<Router>(cfg_.cluster.router);
  if (disaggregated_) {
    // Every GPU of both pools: a replica is one engine instance (one attention-DP rank) of tp x pp GPUs.
    const int64_t deployment_gpus =
        int64_t{cfg_.cluster.prefill_replicas} * prefill_parallel.tensor_parallel * prefill_parallel.pipeline_parallel +
        int64_t{cfg_.cluster.decode_replicas} * cfg_.parallel.tensor_parallel * cfg_.parallel.pipeline_parallel;
    link_ = resolve_kv_link(cfg_.gpu, deployment_gpus, cfg_.cluster.kv_link_bytes_per_s);
    result_.kv_link = link_;
    result_.notes.push_back(fmt::format("KV transfer prefill -> decode: {}; the first token reaches the client once "
                                        "the KV has arrived (TTFT includes the transfer; sim/kv_transfer.h)",
                                        link_.describe()));
  }
  link_free_ns_.assign(static_cast<size_t>(total), 0);
  kick_pending_.assign(static_cast<size_t>(total), false);

  const ServingOverheads& o = cfg_.overheads;
  if (o.request.ns < 0 || o.step.ns < 0 || o.request_per_in_flight.ns < 0 || o.request_spread.ns < 0 ||
      o.request_spread.ns > o.request.ns) {
    throw ConfigError(fmt::format("serving overheads: per request {} ns, per other request in flight {} ns and per "
                                  "step {} ns must be >= 0, and the request spread {} ns in [0, per request] (a delay "
                                  "is never negative)",
                                  o.request.ns, o.request_per_in_flight.ns, o.step.ns, o.request_spread.ns));
  }
  if (!(o.request_per_in_flight_prefill_share.value >= 0) || !std::isfinite(o.request_per_in_flight_prefill_share.value)) {
    throw ConfigError(fmt::format("serving overheads: per-in-flight prefill share {} must be >= 0",
                                  o.request_per_in_flight_prefill_share.value));
  }
  if (!(o.step_factor.value > 0) || !std::isfinite(o.step_factor.value)) {
    throw ConfigError(fmt::format("serving overheads: step time factor {} must be > 0", o.step_factor.value));
  }
  if (!(o.prefill_step_factor.value > 0) || !std::isfinite(o.prefill_step_factor.value)) {
    throw ConfigError(
        fmt::format("serving overheads: prefill step time factor {} must be > 0", o.prefill_step_factor.value));
  }
  request_overhead_ns_ = cfg_.overheads.request.ns;

  // The run's seed drives every random choice: arrivals, lengths, users, speculative acceptance.
  const WorkloadConfig& w = cfg_.workload;
  switch (w.kind) {
    case WorkloadKind::kOpenLoop: {
      OpenLoopSpec spec = w.open;
      spec.seed = cfg_.seed;
      source_ = make_open_loop_source(spec);
      expected_requests_ = w.open.num_requests;
      break;
    }
    case WorkloadKind::kTrace:
      source_ = open_trace(w.trace_path, w.trace);
      expected_requests_ = w.trace.max_requests > 0 ? w.trace.max_requests : count_rows(w.trace_path);
      break;
    case WorkloadKind::kList:
      source_ = std::make_unique<ListSource>(w.requests);
      expected_requests_ = static_cast<int64_t>(w.requests.size());
      break;
    case WorkloadKind::kClosedLoop: {
      if (w.client == ClosedLoopClient::kBench) {
        const BenchClientSpec spec = bench_spec(w, cfg_.seed);
        bench_ = std::make_unique<BenchClient>(spec);
        metrics_.exclude(bench_warmup(spec), bench_cooldown(spec));
        expected_requests_ = spec.options.num_prompts;
        const TimeNs window = spec.options.start == BenchStart::kBurst ? 0
                              : spec.options.window_ns > 0
                                  ? spec.options.window_ns
                                  : estimate_request_cycle_ns(*timer_, spec, sched.max_num_batched_tokens,
                                                              sched.max_num_seqs,
                                                              mean_delay_at_full_load(spec),
                                                              cfg_.overheads.step.ns, cfg_.overheads.step_factor.value,
                                                              cfg_.overheads.prefill_step_factor.value);
        result_.bench_window_ns = window;
        user_pending_.resize(static_cast<size_t>(bench_->num_users()));
        for (int32_t u = 0; u < bench_->num_users(); ++u) {
          RequestSpec r = bench_->first_request(u, window);
          const TimeNs at = r.arrival_ns + send(r);
          user_pending_[static_cast<size_t>(u)] = std::move(r);
          queue_.push(Event{.time_ns = at, .kind = EventKind::kUserReturn, .target = u, .payload = 0});
        }
        result_.notes.push_back(
            spec.options.start == BenchStart::kBurst
                ? fmt::format("{}; every user starts at t = 0", bench_->describe())
                : fmt::format("{}; users start over a {:.3f} ms window ({})", bench_->describe(), ns_to_ms(window),
                              spec.options.window_ns > 0 ? "given" : "one estimated request cycle"));
        break;
      }
      ConversationSpec spec = w.closed;
      spec.seed = cfg_.seed;
      users_ = std::make_unique<ClosedLoopUsers>(spec);
      user_pending_.resize(static_cast<size_t>(users_->num_users()));
      for (int32_t u = 0; u < users_->num_users(); ++u) {
        RequestSpec r = users_->first_request(u);
        TimeNs at = r.arrival_ns + send(r);
        user_pending_[static_cast<size_t>(u)] = std::move(r);
        queue_.push(Event{.time_ns = at, .kind = EventKind::kUserReturn, .target = u, .payload = 0});
      }
      break;
    }
  }
  result_.notes.push_back(fmt::format("serving overheads: {}", cfg_.overheads.describe()));
  result_.notes.push_back(fmt::format("KV capacity per replica: {} bytes ({}), {}", capacity,
                                      kv_policy_name(cfg_.kv_policy), layout_->scheme().describe()));
  result_.notes.push_back(fmt::format("scheduler {}: max_num_seqs={}, max_num_batched_tokens={}, max_model_len={}{}",
                                      scheduler_kind_name(sched.kind), sched.max_num_seqs,
                                      sched.max_num_batched_tokens, sched.max_model_len,
                                      sched.chunked_prefill ? ", chunked prefill" : ""));
}

void Loop::schedule_next_open_arrival() {
  if (!source_) return;
  next_arrival_ = source_->next();
  if (next_arrival_) {
    // One open-loop request is pending at a time, so deliveries keep the send order: with delays
    // that differ per request (spread, load), one never overtakes an earlier one (it waits for it).
    const TimeNs at = std::max(queue_.now(), next_arrival_->arrival_ns + send(*next_arrival_));
    queue_.push(Event{.time_ns = at, .kind = EventKind::kArrival,
                      .target = 0, .payload = next_arrival_->id});
  }
}

void Loop::kick(int32_t replica) {
  Replica& r = replicas_[static_cast<size_t>(replica)];
  if (r.busy()) return;
  TimeNs end = r.start_step(queue_.now());
  if (end == kNever) return;
  if (cfg_.check_invariants) r.kv().check_invariants();
  queue_.push(Event{.time_ns = end, .kind = EventKind::kStepDone, .target = replica, .payload = 0});
  if (hooks_.on_step) hooks_.on_step(StepLog{replica, queue_.now(), end, r.planned()});
}

void Loop::on_arrival(RequestSpec request) {
  if (request.total_tokens() > replicas_.front().setup().scheduler.max_model_len) {
    metrics_.add_rejected();
    ++finished_;
    --in_flight_;
    return;
  }
  const int32_t first = 0;
  const int32_t count = disaggregated_ ? num_prefill_ : static_cast<int32_t>(replicas_.size());
  int32_t target = router_->pick(replicas_, first, count, request);
  ++active_;
  result_.peak_active_requests = std::max(result_.peak_active_requests, active_);
  replicas_[static_cast<size_t>(target)].enqueue(std::move(request), queue_.now());
  request_kick(target);
}

void Loop::request_kick(int32_t replica) {
  // An idle replica plans its step once every arrival of this nanosecond is queued (EventKind
  // order): with one kick per arrival the first request of a burst would run alone.
  if (replicas_[static_cast<size_t>(replica)].busy() || kick_pending_[static_cast<size_t>(replica)]) return;
  kick_pending_[static_cast<size_t>(replica)] = true;
  queue_.push(Event{.time_ns = queue_.now(), .kind = EventKind::kKick, .target = replica, .payload = 0});
}

void Loop::on_step_done(int32_t replica) {
  std::vector<Completion> done;
  replicas_[static_cast<size_t>(replica)].finish_step(queue_.now(), done);
  ++result_.steps;
  if (cfg_.check_invariants) replicas_[static_cast<size_t>(replica)].kv().check_invariants();
  for (Completion& c : done) {
    switch (c.kind) {
      case Completion::Kind::kRejected:
        metrics_.add_rejected();
        --active_;
        --in_flight_;
        ++finished_;
        break;
      case Completion::Kind::kFinished: {
        metrics_.record(c.record);
        if (hooks_.on_request) hooks_.on_request(c.record);
        --active_;
        --in_flight_;
        ++finished_;
        if ((users_ || bench_) && c.record.user >= 0) {
          auto next = users_ ? users_->next_request(c.record.user, queue_.now())
                             : bench_->next_request(c.record.user, queue_.now());
          if (next) {
            TimeNs at = std::max(next->arrival_ns, queue_.now());
            next->arrival_ns = at;
            const TimeNs delay = send(*next);
            user_pending_[static_cast<size_t>(c.record.user)] = std::move(next);
            queue_.push(Event{.time_ns = at + delay, .kind = EventKind::kUserReturn,
                              .target = c.record.user, .payload = 0});
          }
        }
        break;
      }
      case Completion::Kind::kPrefilled: {
        int64_t index;
        if (!free_transfers_.empty()) {
          index = free_transfers_.back();
          free_transfers_.pop_back();
        } else {
          index = static_cast<int64_t>(transfers_.size());
          transfers_.emplace_back();
        }
        Transfer& t = transfers_[static_cast<size_t>(index)];
        t.from = replica;
        t.to = router_->pick_least_outstanding(replicas_, num_prefill_, cfg_.cluster.decode_replicas);
        t.request.spec = std::move(c.spec);
        t.request.record = c.record;
        t.request.kv_tokens = c.kv_tokens;
        TimeNs start = std::max(queue_.now(), link_free_ns_[static_cast<size_t>(replica)]);
        const TimeNs transfer = kv_transfer_ns(c.kv_bytes, link_);
        TimeNs end = start + transfer;
        ++result_.kv_transfers;
        result_.kv_transfer_ns_total += transfer;
        result_.kv_transfer_bytes_total += c.kv_bytes;
        link_free_ns_[static_cast<size_t>(replica)] = end;
        queue_.push(Event{.time_ns = end, .kind = EventKind::kKvTransferDone, .target = replica, .payload = index});
        break;
      }
    }
  }
  kick(replica);
  progress();
}

void Loop::on_transfer_done(int64_t index) {
  Transfer& t = transfers_[static_cast<size_t>(index)];
  // The decode engine streams the first token once the KV is there (kv_transfer.h).
  t.request.record.first_token_ns = queue_.now();
  replicas_[static_cast<size_t>(t.from)].release_transferred(t.request.spec.id);
  replicas_[static_cast<size_t>(t.to)].enqueue_prefilled(std::move(t.request), queue_.now());
  int32_t from = t.from, to = t.to;
  t = Transfer{};
  free_transfers_.push_back(index);
  kick(to);
  kick(from);
}

bool Loop::idle() const {
  for (const Replica& r : replicas_) {
    if (r.running() > 0 || r.waiting() > 0 || r.swapped() > 0) return false;
  }
  return transfers_.size() == free_transfers_.size();
}

void Loop::sample() {
  TimeSeriesRow row;
  row.time_ns = queue_.now();
  int64_t lookups = 0, hits = 0;
  for (const Replica& r : replicas_) {
    KvUsage u = r.usage();
    row.kv_token_bytes += u.token_bytes;
    row.kv_allocated_bytes += u.allocated_bytes();
    row.kv_reserved_bytes += u.reserved_bytes;
    row.kv_internal_fragmentation_bytes += u.internal_fragmentation_bytes;
    row.kv_external_fragmentation_bytes += u.external_fragmentation_bytes;
    row.kv_cached_bytes += u.cached_bytes;
    row.kv_capacity_bytes += u.capacity_bytes;
    lookups += u.prefix_lookup_tokens;
    hits += u.prefix_hit_tokens;
    row.running += r.running();
    row.waiting += r.waiting();
    row.swapped += r.swapped();
    row.preemptions += r.stats().preemptions;
    row.batch_tokens += r.stats().batch_tokens;
    row.batch_seqs += r.stats().batch_seqs;
  }
  for (const auto& t : tiers_) row.host_kv_bytes += t->used_bytes();
  row.prefix_hit_rate = lookups > 0 ? static_cast<double>(hits) / static_cast<double>(lookups) : 0;
  std::vector<TimeSeriesRow>& rows = result_.timeseries;
  rows.push_back(row);
  if (rows.size() >= kMaxTimeSeriesRows) {
    // Keep rows 0, 2, 4, ... and sample half as often from now on.
    size_t kept = 0;
    for (size_t i = 0; i < rows.size(); i += 2) rows[kept++] = rows[i];
    rows.resize(kept);
    sample_interval_ns_ *= 2;
  }
}

void Loop::progress() {
  if (!hooks_.on_progress) return;
  double fraction = 0;
  if (cfg_.workload.kind == WorkloadKind::kClosedLoop && cfg_.workload.horizon_ns > 0 && !bench_) {
    fraction = static_cast<double>(queue_.now()) / static_cast<double>(cfg_.workload.horizon_ns);
  } else if (expected_requests_ > 0) {
    fraction = static_cast<double>(finished_) / static_cast<double>(expected_requests_);
  }
  int64_t pct = static_cast<int64_t>(std::clamp(fraction, 0.0, 1.0) * 100);
  if (pct != last_progress_pct_) {
    last_progress_pct_ = pct;
    hooks_.on_progress(std::clamp(fraction, 0.0, 1.0));
  }
}

SimulationResult Loop::run() {
  build();
  schedule_next_open_arrival();
  queue_.push(Event{.time_ns = 0, .kind = EventKind::kSample, .target = 0, .payload = 0});
  if (cfg_.workload.horizon_ns > 0) {
    queue_.push(Event{.time_ns = cfg_.workload.horizon_ns, .kind = EventKind::kStop, .target = 0, .payload = 0});
  }
  sample_interval_ns_ = cfg_.sample_interval_ns;
  while (!queue_.empty() && !stopped_) {
    if (hooks_.should_stop && hooks_.should_stop()) break;
    Event e = queue_.pop();
    ++result_.events;
    if (sampling_paused_ && e.kind != EventKind::kSample && e.kind != EventKind::kStop) {
      // Work resumes after an idle stretch: sample again from this instant (after this event).
      sampling_paused_ = false;
      queue_.push(Event{.time_ns = queue_.now(), .kind = EventKind::kSample, .target = 0, .payload = 0});
    }
    switch (e.kind) {
      case EventKind::kArrival: {
        RequestSpec r = std::move(*next_arrival_);
        schedule_next_open_arrival();
        on_arrival(std::move(r));
        break;
      }
      case EventKind::kUserReturn: {
        auto& pending = user_pending_[static_cast<size_t>(e.target)];
        RequestSpec r = std::move(*pending);
        pending.reset();
        on_arrival(std::move(r));
        break;
      }
      case EventKind::kStepDone: on_step_done(e.target); break;
      case EventKind::kKick:
        kick_pending_[static_cast<size_t>(e.target)] = false;
        kick(e.target);
        break;
      case EventKind::kKvTransferDone: on_transfer_done(e.payload); break;
      case EventKind::kSample:
        sample();
        // Keep sampling while anything else is pending (the stop event does not count).
        // Requests stuck with nothing pending can never move again: they end as unfinished.
        // While the engine is idle nothing changes until the next event: pause until then.
        if (idle()) {
          sampling_paused_ = true;
        } else if (queue_.size() > (cfg_.workload.horizon_ns > 0 ? 1u : 0u)) {
          queue_.push(Event{.time_ns = queue_.now() + sample_interval_ns_, .kind = EventKind::kSample, .target = 0, .payload = 0});
        }
        break;
      case EventKind::kStop: stopped_ = true; break;
    }
  }
  result_.end_ns = queue_.now();
  int64_t lookups = 0, hits = 0;
  for (const Replica& r : replicas_) {
    KvUsage u = r.kv().usage();
    lookups += u.prefix_lookup_tokens;
    hits += u.prefix_hit_tokens;
  }
  double hit_rate = lookups > 0 ? static_cast<double>(hits) / static_cast<double>(lookups) : 0;
  result_.summary = metrics_.summarize(active_, hit_rate);
  EngineLimitUse& limits = result_.summary.limits;
  for (const Replica& r : replicas_) {
    const StepStats& st = r.stats();
    limits.steps += st.steps;
    limits.seq_limited_steps += st.seq_limited_steps;
    limits.kv_limited_steps += st.kv_limited_steps;
    limits.peak_running = std::max(limits.peak_running, st.peak_running);
    limits.max_num_seqs = std::max<int64_t>(limits.max_num_seqs, r.setup().scheduler.max_num_seqs);
    const int64_t capacity = r.kv().usage().capacity_bytes;
    if (capacity > 0) {
      limits.peak_kv_used = std::max(limits.peak_kv_used, static_cast<double>(st.peak_kv_allocated_bytes) /
                                                              static_cast<double>(capacity));
    }
  }
  if (cost_) {
    result_.cost_memo_hits = cost_->memo_hits() - memo_hits_before_;
    result_.cost_memo_misses = cost_->memo_misses() - memo_misses_before_;
  }
  return std::move(result_);
}

}  // namespace

std::string_view closed_loop_client_name(ClosedLoopClient client) {
  switch (client) {
    case ClosedLoopClient::kUsers: return "users";
    case ClosedLoopClient::kBench: return "bench";
  }
  return "?";
}

ClosedLoopClient parse_closed_loop_client(std::string_view text) {
  if (text == "users") return ClosedLoopClient::kUsers;
  if (text == "bench") return ClosedLoopClient::kBench;
  throw ConfigError(fmt::format("client: '{}' must be users or bench", text));
}

SimulationConfig default_simulation_config(ModelConfig model, GpuSpec gpu) {
  SimulationConfig c;
  c.model = std::move(model);
  c.gpu = std::move(gpu);
  c.scheduler.max_num_seqs = 0;
  c.scheduler.max_num_batched_tokens = 0;
  c.scheduler.max_model_len = 0;
  return c;
}

std::shared_ptr<StepCostModel> make_step_cost_model(const SimulationConfig& config) {
  CostOptions cost = config.cost;
  cost.weights = config.serving.weights;
  return std::make_shared<StepCostModel>(config.model, config.gpu, config.scheme, config.parallel,
                                         resolve_step_time_source(config).profile, cost);
}

SimulationResult run_simulation(const SimulationConfig& config, const RunHooks& hooks) {
  Loop loop(config, hooks);
  return loop.run();
}

StepTimeSource resolve_step_time_source(const SimulationConfig& config) {
  StepTimeSource out;
  if (config.profile) {
    out.profile = *config.profile;
    out.summary = config.profile_label.empty()
                      ? fmt::format("{} profile for {} (given)", out.profile.source_kind(), out.profile.gpu_id())
                      : config.profile_label;
    out.kind = out.profile.source_kind();
  } else {
    ProfileChoice choice = default_profile(config.gpu);
    out.profile = std::move(choice.profile);
    out.summary = std::move(choice.summary);
    out.kind = std::move(choice.kind);
  }
  out.band = out.profile.band();
  return out;
}

}  // namespace kvplan::sim
