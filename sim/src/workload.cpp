// Synthetic workloads: open-loop arrival processes and closed-loop users with multi-turn
// conversations. Every random draw comes from kvplan's own Rng, split into independent streams, so
// changing one knob (say the arrival rate) leaves the other draws (the lengths) unchanged.
#include "kvplan/sim/workload.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/sim/rng.h"

namespace kvplan::sim {

namespace {

// Rng stream numbers. Fixed forever: renumbering them changes every seeded workload.
constexpr uint64_t kArrivalStream = 0;
constexpr uint64_t kPromptStream = 1;
constexpr uint64_t kOutputStream = 2;
constexpr uint64_t kFirstUserStream = 1'000;  // user u draws from stream kFirstUserStream + u

// Closed-loop request ids: user * kIdsPerUser + the user's request count (0, 1, 2, ...). Ids
// depend only on the user and its own history, never on the order in which an engine asks.
constexpr int64_t kIdsPerUser = int64_t{1} << 32;

constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max();

int32_t to_tokens(int64_t tokens) { return static_cast<int32_t>(std::clamp<int64_t>(tokens, 1, kMaxTokens)); }

// The same splitmix64 finalizer as rng.cpp; used for prefix-block hashes.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class OpenLoopSource final : public RequestSource {
 public:
  explicit OpenLoopSource(const OpenLoopSpec& spec)
      : spec_(spec),
        arrival_rng_(Rng::stream(spec.seed, kArrivalStream)),
        prompt_rng_(Rng::stream(spec.seed, kPromptStream)),
        output_rng_(Rng::stream(spec.seed, kOutputStream)) {}

  std::optional<RequestSpec> next() override {
    if (next_id_ >= spec_.num_requests) return std::nullopt;
    RequestSpec r;
    r.id = next_id_;
    // The first request arrives at time 0; each later one one gap after the previous.
    if (spec_.arrivals == ArrivalKind::kConstant) {
      // k / rate directly, not a running sum, so request k lands on exactly k / rate.
      clock_s_ = static_cast<double>(next_id_) / spec_.rate_per_s;
    } else if (next_id_ > 0) {
      clock_s_ += draw_gap_s();
    }
    if (!(clock_s_ <= kMaxSimulatedSeconds)) {
      throw ConfigError(fmt::format("rate={:g} req/s: request {} of {} would arrive at {:g} s, beyond the simulator's "
                                    "limit of {:g} s; raise the rate or lower the number of requests",
                                    spec_.rate_per_s, next_id_ + 1, spec_.num_requests, clock_s_,
                                    kMaxSimulatedSeconds));
    }
    r.arrival_ns = seconds_to_ns(clock_s_);
    r.prompt_tokens = to_tokens(prompt_rng_.sample(spec_.prompt));
    r.output_tokens = to_tokens(output_rng_.sample(spec_.output));
    ++next_id_;
    return r;
  }

  std::string describe() const override {
    std::string arrivals = fmt::format("{} arrivals at {} req/s", arrival_kind_name(spec_.arrivals), spec_.rate_per_s);
    if (spec_.arrivals == ArrivalKind::kGamma) arrivals += fmt::format(" (cv {})", spec_.cv);
    return fmt::format("{}, {} requests, prompt {}, output {}, seed {}", arrivals, spec_.num_requests,
                       spec_.prompt.describe(), spec_.output.describe(), spec_.seed);
  }

 private:
  double draw_gap_s() {
    const double mean_gap_s = 1.0 / spec_.rate_per_s;
    if (spec_.arrivals == ArrivalKind::kPoisson) return arrival_rng_.exponential(mean_gap_s);
    // Gamma with mean mean_gap_s and coefficient of variation cv: shape k = 1/cv^2,
    // scale theta = mean * cv^2 (mean k*theta, sd sqrt(k)*theta = cv * mean).
    const double cv2 = spec_.cv * spec_.cv;
    return arrival_rng_.gamma(1.0 / cv2, mean_gap_s * cv2);
  }

  OpenLoopSpec spec_;
  Rng arrival_rng_;
  Rng prompt_rng_;
  Rng output_rng_;
  int64_t next_id_ = 0;
  double clock_s_ = 0;  // running sum of gaps, in seconds (rounded to ns per request)
};

void validate(const OpenLoopSpec& spec) {
  if (!(std::isfinite(spec.rate_per_s) && spec.rate_per_s > 0)) {
    throw ConfigError(fmt::format("workload: rate_per_s={} must be > 0", spec.rate_per_s));
  }
  if (spec.arrivals == ArrivalKind::kGamma && !(std::isfinite(spec.cv) && spec.cv > 0)) {
    throw ConfigError(fmt::format("workload: cv={} must be > 0 for gamma arrivals", spec.cv));
  }
  if (spec.num_requests <= 0) {
    throw ConfigError(fmt::format("workload: num_requests={} must be > 0", spec.num_requests));
  }
}

void validate(const ConversationSpec& spec) {
  if (spec.num_users <= 0) {
    throw ConfigError(fmt::format("closed-loop users: num_users={} must be > 0", spec.num_users));
  }
  if (!(std::isfinite(spec.think_time_s) && spec.think_time_s >= 0)) {
    throw ConfigError(fmt::format("closed-loop users: think_time_s={} must be >= 0", spec.think_time_s));
  }
  if (spec.turns < 1) throw ConfigError(fmt::format("closed-loop users: turns={} must be >= 1", spec.turns));
  if (spec.max_context_tokens != 0 && spec.max_context_tokens < 2) {
    throw ConfigError(fmt::format(
        "closed-loop users: max_context_tokens={} must be 0 (no cap) or >= 2 (one prompt and one output token)",
        spec.max_context_tokens));
  }
  if (spec.hash_block_tokens < 1) {
    throw ConfigError(fmt::format("closed-loop users: hash_block_tokens={} must be >= 1", spec.hash_block_tokens));
  }
  if (spec.requests_per_user < 0) {
    throw ConfigError(fmt::format("closed-loop users: requests_per_user={} must be >= 0 (0: unlimited)",
                                  spec.requests_per_user));
  }
  if (spec.shared_prefix_tokens < 0 || spec.shared_prefix_tokens > std::numeric_limits<int32_t>::max()) {
    throw ConfigError(fmt::format("closed-loop users: shared_prefix_tokens={} must be in [0, 2147483647]",
                                  spec.shared_prefix_tokens));
  }
}

}  // namespace

std::string_view arrival_kind_name(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPoisson: return "poisson";
    case ArrivalKind::kGamma: return "gamma";
    case ArrivalKind::kConstant: return "constant";
  }
  return "?";
}

ArrivalKind parse_arrival_kind(std::string_view text) {
  if (text == "poisson") return ArrivalKind::kPoisson;
  if (text == "gamma") return ArrivalKind::kGamma;
  if (text == "constant") return ArrivalKind::kConstant;
  throw ConfigError(fmt::format("workload: arrivals='{}' must be poisson, gamma or constant", text));
}

std::unique_ptr<RequestSource> make_open_loop_source(const OpenLoopSpec& spec) {
  validate(spec);
  return std::make_unique<OpenLoopSource>(spec);
}

// ---- Closed-loop users -----------------------------------------------------------------------

struct ClosedLoopUsers::Impl {
  struct User {
    Rng rng{0};
    int64_t sent = 0;             // requests sent so far (also the low half of the next id)
    uint64_t conversations = 0;   // conversations started so far
    uint64_t conversation_uid = 0;
    int32_t turn = 0;             // turn of the last request sent
    int64_t prompt_tokens = 0;    // of the last request sent
    int64_t output_tokens = 0;
    int64_t shared_tokens = 0;    // leading tokens of the conversation that are the shared prefix
  };

  ConversationSpec spec;
  std::vector<User> users;

  void check_user(int32_t user) const {
    if (user < 0 || user >= spec.num_users) {
      throw std::out_of_range(fmt::format("closed-loop user {} is not in [0, {})", user, spec.num_users));
    }
  }

  // Conversation uids are (user, conversation number) packed into 64 bits and mixed with the seed:
  // unique within a run, so a new conversation never shares a prefix with an earlier one.
  void start_conversation(int32_t u, User& st) const {
    st.conversation_uid = mix64(spec.seed ^ mix64((static_cast<uint64_t>(u) << 32) | st.conversations));
    ++st.conversations;
    st.turn = 0;
  }

  // Block i of a conversation is named by (uid, i) alone, so the conversation's history, which
  // only grows, keeps the names of its whole blocks from turn to turn.
  static uint64_t block_hash(uint64_t conversation_uid, int64_t block) {
    return mix64(conversation_uid + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(block + 1));
  }

  // The shared system prompt is named like a conversation of its own, one per seed.
  uint64_t shared_uid() const { return mix64(spec.seed ^ 0x5348415245442D50ULL); }

  // A first turn; with a context cap, a first turn longer than the cap is cut down to it.
  void first_turn(int32_t u, User& st) {
    start_conversation(u, st);
    int64_t prompt = spec.shared_prefix_tokens + st.rng.sample(spec.first_prompt);
    int64_t output = st.rng.sample(spec.output);
    if (spec.max_context_tokens > 0) {
      output = std::min(output, spec.max_context_tokens - 1);
      prompt = std::min(prompt, spec.max_context_tokens - output);
    }
    st.prompt_tokens = prompt;
    st.output_tokens = output;
    st.shared_tokens = std::min(spec.shared_prefix_tokens, prompt);
  }

  RequestSpec emit(int32_t u, User& st, TimeNs arrival_ns) {
    RequestSpec r;
    r.id = int64_t{u} * kIdsPerUser + st.sent;
    r.arrival_ns = arrival_ns;
    r.prompt_tokens = to_tokens(st.prompt_tokens);
    r.output_tokens = to_tokens(st.output_tokens);
    r.user = u;
    r.turn = st.turn;
    r.hash_block_tokens = spec.hash_block_tokens;
    // The answer is part of the next turn's prompt: the identity covers prompt + answer.
    r.identity_tokens = r.total_tokens();
    const int64_t whole_blocks = r.identity_tokens / spec.hash_block_tokens;
    r.prefix_hashes.reserve(static_cast<size_t>(whole_blocks));
    const int64_t shared_blocks = st.shared_tokens / spec.hash_block_tokens;
    for (int64_t i = 0; i < whole_blocks; ++i) {
      r.prefix_hashes.push_back(block_hash(i < shared_blocks ? shared_uid() : st.conversation_uid, i));
    }
    ++st.sent;
    return r;
  }
};

ClosedLoopUsers::ClosedLoopUsers(const ConversationSpec& spec) : impl_(std::make_unique<Impl>()) {
  validate(spec);
  impl_->spec = spec;
  impl_->users.resize(static_cast<size_t>(spec.num_users));
}

ClosedLoopUsers::~ClosedLoopUsers() = default;
ClosedLoopUsers::ClosedLoopUsers(ClosedLoopUsers&&) noexcept = default;
ClosedLoopUsers& ClosedLoopUsers::operator=(ClosedLoopUsers&&) noexcept = default;

int32_t ClosedLoopUsers::num_users() const { return impl_->spec.num_users; }

RequestSpec ClosedLoopUsers::first_request(int32_t user) {
  impl_->check_user(user);
  // Calling it again restarts the user from scratch: the same stream, the same requests.
  Impl::User& st = impl_->users[static_cast<size_t>(user)];
  st = Impl::User{};
  st.rng = Rng::stream(impl_->spec.seed, kFirstUserStream + static_cast<uint64_t>(user));
  const TimeNs arrival_ns = seconds_to_ns(st.rng.uniform01() * impl_->spec.think_time_s);
  impl_->first_turn(user, st);
  return impl_->emit(user, st, arrival_ns);
}

std::optional<RequestSpec> ClosedLoopUsers::next_request(int32_t user, TimeNs finish_ns) {
  impl_->check_user(user);
  const ConversationSpec& spec = impl_->spec;
  Impl::User& st = impl_->users[static_cast<size_t>(user)];
  if (st.sent == 0) throw std::logic_error(fmt::format("closed-loop user {}: next_request before first_request", user));
  if (spec.requests_per_user > 0 && st.sent >= spec.requests_per_user) return std::nullopt;
  // Draw order (think, followup, output) is fixed so a user's requests depend only on its stream.
  const TimeNs arrival_ns = finish_ns + seconds_to_ns(st.rng.exponential(spec.think_time_s));
  bool restart = st.turn + 1 >= spec.turns;
  if (!restart) {
    const int64_t prompt = st.prompt_tokens + st.output_tokens + st.rng.sample(spec.followup);
    const int64_t output = st.rng.sample(spec.output);
    if (spec.max_context_tokens > 0 && prompt + output > spec.max_context_tokens) {
      restart = true;
    } else {
      ++st.turn;
      st.prompt_tokens = prompt;
      st.output_tokens = output;
    }
  }
  if (restart) impl_->first_turn(user, st);
  return impl_->emit(user, st, arrival_ns);
}

std::string ClosedLoopUsers::describe() const {
  const ConversationSpec& s = impl_->spec;
  std::string text = fmt::format(
      "{} closed-loop users, {}-turn conversations, think time {} s, first prompt {}, follow-up {}, output {}",
      s.num_users, s.turns, s.think_time_s, s.first_prompt.describe(), s.followup.describe(), s.output.describe());
  if (s.max_context_tokens > 0) text += fmt::format(", context capped at {} tokens", s.max_context_tokens);
  if (s.requests_per_user > 0) text += fmt::format(", {} requests per user", s.requests_per_user);
  if (s.shared_prefix_tokens > 0) text += fmt::format(", {}-token prefix shared by all", s.shared_prefix_tokens);
  return text + fmt::format(", seed {}", s.seed);
}

}  // namespace kvplan::sim
