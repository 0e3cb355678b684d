// The benchmark client: C users with zero think time sharing a budget of N requests, started over
// one request cycle (the stagger rule and the steady-state rule are in bench_client.h).
#include "kvplan/sim/bench_client.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/sim/rng.h"
#include "kvplan/sim/serving_overheads.h"

namespace kvplan::sim {

namespace {

// Rng stream numbers. Fixed forever: renumbering them changes every seeded bench run. Far from
// workload.cpp's streams (0-2, 1000 + user) and the replicas' (0x5eed0000 + index).
constexpr uint64_t kBenchPromptStream = 0xBE0C'0000'0000'0001ULL;
constexpr uint64_t kBenchOutputStream = 0xBE0C'0000'0000'0002ULL;
constexpr uint64_t kFirstStaggerStream = 0xBE0C'0001'0000'0000ULL;  // user u's start jitter: + u

constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max();

int32_t to_tokens(int64_t tokens) { return static_cast<int32_t>(std::clamp<int64_t>(tokens, 1, kMaxTokens)); }

}  // namespace

std::string_view bench_start_name(BenchStart start) {
  switch (start) {
    case BenchStart::kStaggered: return "staggered";
    case BenchStart::kBurst: return "burst";
  }
  return "?";
}

BenchStart parse_bench_start(std::string_view text) {
  if (text == "staggered") return BenchStart::kStaggered;
  if (text == "burst") return BenchStart::kBurst;
  throw ConfigError(fmt::format("bench client: start='{}' must be staggered or burst", text));
}

BenchStart default_bench_start(Engine engine, const EngineVersion& version) {
  // The evidence for each rule is in bench_client.h. An SGLang scenario without --engine-version
  // carries EngineVersion's default (0.10), which is after 0.5.6: today's releases.
  if (engine == Engine::kSglang) return version.at_least(0, 5, 6) ? BenchStart::kStaggered : BenchStart::kBurst;
  return BenchStart::kStaggered;
}

int64_t bench_warmup(const BenchClientSpec& spec) {
  return spec.options.warmup_requests >= 0 ? spec.options.warmup_requests : spec.max_concurrency;
}

int64_t bench_cooldown(const BenchClientSpec& spec) {
  return spec.options.cooldown_requests >= 0 ? spec.options.cooldown_requests : spec.max_concurrency;
}

void validate(const BenchClientSpec& spec) {
  const BenchOptions& o = spec.options;
  if (spec.max_concurrency <= 0) {
    throw ConfigError(fmt::format("bench client: max_concurrency={} must be > 0", spec.max_concurrency));
  }
  if (o.num_prompts <= 0) throw ConfigError(fmt::format("bench client: num_prompts={} must be > 0", o.num_prompts));
  if (o.warmup_requests < -1 || o.cooldown_requests < -1) {
    throw ConfigError(fmt::format("bench client: warmup_requests={} and cooldown_requests={} must be >= 0 (-1: the "
                                  "concurrency)", o.warmup_requests, o.cooldown_requests));
  }
  if (!(o.jitter >= 0 && o.jitter <= 1)) {
    throw ConfigError(fmt::format("bench client: jitter={} must be in [0, 1]", o.jitter));
  }
  if (o.window_ns < 0) throw ConfigError(fmt::format("bench client: window_ns={} must be >= 0", o.window_ns));
  const int64_t excluded = bench_warmup(spec) + bench_cooldown(spec);
  if (o.num_prompts <= excluded) {
    throw ConfigError(fmt::format(
        "bench client: num_prompts={} must exceed warm-up {} + cool-down {} finished requests = {} (defaults: the "
        "concurrency each), so that some requests are measured in steady state",
        o.num_prompts, bench_warmup(spec), bench_cooldown(spec), excluded));
  }
}

struct BenchClient::Impl {
  BenchClientSpec spec;
  Rng prompt_rng{0};
  Rng output_rng{0};
  int64_t sent = 0;

  RequestSpec emit(int32_t user, TimeNs arrival_ns) {
    RequestSpec r;
    r.id = sent;
    r.arrival_ns = arrival_ns;
    r.prompt_tokens = to_tokens(prompt_rng.sample(spec.prompt));
    r.output_tokens = to_tokens(output_rng.sample(spec.output));
    r.user = user;
    ++sent;
    return r;
  }

  void check_user(int32_t user) const {
    if (user < 0 || user >= static_cast<int32_t>(std::min<int64_t>(spec.max_concurrency, spec.options.num_prompts))) {
      throw std::out_of_range(fmt::format("bench client: user {} is not in [0, {})", user,
                                          std::min<int64_t>(spec.max_concurrency, spec.options.num_prompts)));
    }
  }
};

BenchClient::BenchClient(const BenchClientSpec& spec) : impl_(std::make_unique<Impl>()) {
  validate(spec);
  impl_->spec = spec;
  impl_->prompt_rng = Rng::stream(spec.seed, kBenchPromptStream);
  impl_->output_rng = Rng::stream(spec.seed, kBenchOutputStream);
}

BenchClient::~BenchClient() = default;
BenchClient::BenchClient(BenchClient&&) noexcept = default;
BenchClient& BenchClient::operator=(BenchClient&&) noexcept = default;

int32_t BenchClient::num_users() const {
  return static_cast<int32_t>(std::min<int64_t>(impl_->spec.max_concurrency, impl_->spec.options.num_prompts));
}

TimeNs BenchClient::start_ns(int32_t user, TimeNs window_ns) const {
  impl_->check_user(user);
  if (impl_->spec.options.start == BenchStart::kBurst) return 0;
  // The draw comes from the user's own stream, so it does not depend on the order users start in.
  Rng rng = Rng::stream(impl_->spec.seed, kFirstStaggerStream + static_cast<uint64_t>(user));
  const double u = rng.uniform01();
  const double slot = (static_cast<double>(user) + impl_->spec.options.jitter * u) /
                      static_cast<double>(impl_->spec.max_concurrency);
  return static_cast<TimeNs>(std::floor(static_cast<double>(window_ns) * slot));
}

RequestSpec BenchClient::first_request(int32_t user, TimeNs window_ns) {
  return impl_->emit(user, start_ns(user, window_ns));
}

std::optional<RequestSpec> BenchClient::next_request(int32_t user, TimeNs finish_ns) {
  impl_->check_user(user);
  if (impl_->sent >= impl_->spec.options.num_prompts) return std::nullopt;
  return impl_->emit(user, finish_ns);
}

int64_t BenchClient::sent() const { return impl_->sent; }

std::string BenchClient::describe() const {
  const BenchClientSpec& s = impl_->spec;
  return fmt::format("bench client: {} prompts at max concurrency {}, {} start, prompt {}, output {}; warm-up {} "
                     "and cool-down {} finished requests excluded; seed {}",
                     s.options.num_prompts, s.max_concurrency, bench_start_name(s.options.start), s.prompt.describe(),
                     s.output.describe(), bench_warmup(s), bench_cooldown(s), s.seed);
}

TimeNs estimate_request_cycle_ns(StepTimer& timer, const BenchClientSpec& spec, int64_t max_batched_tokens,
                                 int32_t max_num_seqs, TimeNs request_overhead_ns, TimeNs step_overhead_ns,
                                 double step_factor, double prefill_factor) {
  const int64_t prompt = std::max<int64_t>(1, std::llround(spec.prompt.mean()));
  const int64_t output = std::max<int64_t>(1, std::llround(spec.output.mean()));
  const int64_t chunk_cap = std::max<int64_t>(1, max_batched_tokens);
  // One prompt's prefill alone, in chunks; every user's prompt passes through the engine once per
  // cycle, so a cycle holds C of them (in their own steps, or mixed into decode steps at about the
  // same marginal cost).
  TimeNs prefill = 0;
  for (int64_t done = 0; done < prompt;) {
    const int64_t chunk = std::min(chunk_cap, prompt - done);
    const PrefillChunk c{.context_tokens = done, .new_tokens = chunk};
    StepWork work;
    work.prefill = std::span<const PrefillChunk>(&c, 1);
    prefill += engine_step_ns(timer.step_ns(work), prefill_factor, step_overhead_ns);
    done += chunk;
  }
  TimeNs cycle = request_overhead_ns + spec.max_concurrency * prefill;
  if (output > 1) {
    const int64_t batch = std::max<int64_t>(1, std::min<int64_t>(spec.max_concurrency, max_num_seqs));
    const std::vector<int64_t> contexts(static_cast<size_t>(batch), prompt + output / 2);
    StepWork work;
    work.decode_contexts = contexts;
    const TimeNs decode = engine_step_ns(timer.step_ns(work), step_factor, step_overhead_ns);
    cycle += (output - 1) * decode;
  }
  return cycle;
}

}  // namespace kvplan::sim
