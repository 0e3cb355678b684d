// Workloads: open-loop arrival processes (exact constant-rate times, Poisson and gamma gap moments
// within 5 standard errors) and closed-loop multi-turn conversations (lengths and prefix hashes
// worked out by hand).
#include "kvplan/sim/workload.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {
namespace {

void expect_config_error(const std::function<void()>& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    for (const char* part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

std::vector<RequestSpec> drain(RequestSource& source) {
  std::vector<RequestSpec> out;
  while (auto r = source.next()) out.push_back(*r);
  return out;
}

// Mean and coefficient of variation squared of the gaps between consecutive arrivals, in seconds.
struct GapStats {
  double mean_s = 0;
  double cv2 = 0;
};
GapStats gap_stats(const std::vector<RequestSpec>& rs) {
  const double n = static_cast<double>(rs.size() - 1);
  double sum = 0, sum2 = 0;
  for (size_t i = 1; i < rs.size(); ++i) {
    const double gap = ns_to_seconds(rs[i].arrival_ns - rs[i - 1].arrival_ns);
    sum += gap;
    sum2 += gap * gap;
  }
  const double mean = sum / n;
  return {mean, (sum2 / n - mean * mean) / (mean * mean)};
}

TEST(WorkloadTest, ConstantRateArrivesExactlyAtKOverRate) {
  auto source = make_open_loop_source(OpenLoopSpec{.arrivals = ArrivalKind::kConstant,
                                                   .rate_per_s = 3.0,
                                                   .prompt = LengthDistribution::fixed(512),
                                                   .output = LengthDistribution::fixed(128),
                                                   .num_requests = 4,
                                                   .seed = 1});
  const auto rs = drain(*source);
  ASSERT_EQ(rs.size(), 4u);
  // k / 3 s rounded to the nearest ns: 0, 333'333'333, 666'666'667, 1'000'000'000.
  const TimeNs expected[] = {0, 333'333'333, 666'666'667, 1'000'000'000};
  for (size_t k = 0; k < rs.size(); ++k) {
    EXPECT_EQ(rs[k].id, static_cast<int64_t>(k));
    EXPECT_EQ(rs[k].arrival_ns, expected[k]);
    EXPECT_EQ(rs[k].prompt_tokens, 512);
    EXPECT_EQ(rs[k].output_tokens, 128);
    EXPECT_EQ(rs[k].user, -1);
    EXPECT_TRUE(rs[k].prefix_hashes.empty());
  }
  EXPECT_FALSE(source->next().has_value());
}

TEST(WorkloadTest, PoissonGapsHaveMeanOneOverRateAndCvOne) {
  const int64_t n = 200'000;
  auto source = make_open_loop_source(
      OpenLoopSpec{.arrivals = ArrivalKind::kPoisson, .rate_per_s = 10.0, .num_requests = n, .seed = 3});
  const auto rs = drain(*source);
  ASSERT_EQ(rs.size(), static_cast<size_t>(n));
  EXPECT_EQ(rs.front().arrival_ns, 0);
  for (size_t i = 1; i < rs.size(); ++i) ASSERT_GE(rs[i].arrival_ns, rs[i - 1].arrival_ns);
  const GapStats g = gap_stats(rs);
  // Exponential gaps of mean 0.1 s: SE of the mean 0.1/sqrt(n); cv^2 = 1 with SE sqrt(8/n).
  EXPECT_NEAR(g.mean_s, 0.1, 5 * 0.1 / std::sqrt(double(n)));
  EXPECT_NEAR(g.cv2, 1.0, 5 * std::sqrt(8.0 / double(n)));
}

TEST(WorkloadTest, GammaGapsHaveTheRequestedCv) {
  const int64_t n = 200'000;
  auto source = make_open_loop_source(
      OpenLoopSpec{.arrivals = ArrivalKind::kGamma, .rate_per_s = 10.0, .cv = 2.0, .num_requests = n, .seed = 4});
  const GapStats g = gap_stats(drain(*source));
  // Gamma with shape 1/cv^2 = 0.25 and scale 0.1 * 4 = 0.4 s: mean 0.1 s, sd 0.2 s, cv^2 = 4.
  // Relative SE of the sample variance is sqrt((2 + 6/shape) / n) = sqrt(26 / n).
  EXPECT_NEAR(g.mean_s, 0.1, 5 * 0.2 / std::sqrt(double(n)));
  EXPECT_NEAR(g.cv2, 4.0, 5 * 4.0 * std::sqrt(26.0 / double(n)));
}

TEST(WorkloadTest, LengthsDoNotDependOnTheArrivalProcess) {
  OpenLoopSpec a{.arrivals = ArrivalKind::kPoisson,
                 .rate_per_s = 1.0,
                 .prompt = LengthDistribution::uniform(1, 4000),
                 .output = LengthDistribution::lognormal(5.0, 1.0),
                 .num_requests = 500,
                 .seed = 11};
  OpenLoopSpec b = a;
  b.arrivals = ArrivalKind::kGamma;
  b.rate_per_s = 7.0;
  b.cv = 3.0;
  const auto ra = drain(*make_open_loop_source(a)), rb = drain(*make_open_loop_source(b));
  ASSERT_EQ(ra.size(), rb.size());
  int same_arrival = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].prompt_tokens, rb[i].prompt_tokens) << i;
    EXPECT_EQ(ra[i].output_tokens, rb[i].output_tokens) << i;
    EXPECT_GE(ra[i].prompt_tokens, 1);
    EXPECT_LE(ra[i].prompt_tokens, 4000);
    same_arrival += ra[i].arrival_ns == rb[i].arrival_ns;
  }
  EXPECT_EQ(same_arrival, 1);  // only request 0, at time 0
}

TEST(WorkloadTest, SameSpecSameRequestsOtherSeedOtherRequests) {
  OpenLoopSpec spec{.prompt = LengthDistribution::uniform(1, 1'000'000), .num_requests = 50, .seed = 5};
  const auto r1 = drain(*make_open_loop_source(spec)), r2 = drain(*make_open_loop_source(spec));
  spec.seed = 6;
  const auto r3 = drain(*make_open_loop_source(spec));
  int differ = 0;
  for (size_t i = 0; i < r1.size(); ++i) {
    EXPECT_EQ(r1[i].arrival_ns, r2[i].arrival_ns);
    EXPECT_EQ(r1[i].prompt_tokens, r2[i].prompt_tokens);
    differ += r1[i].prompt_tokens != r3[i].prompt_tokens;
  }
  EXPECT_GE(differ, 45);  // a collision in 1..1e6 is rare
}

TEST(WorkloadTest, BadOpenLoopSpecsNameFieldValueAndRule) {
  expect_config_error([] { make_open_loop_source(OpenLoopSpec{.rate_per_s = 0}); },
                      {"workload: rate_per_s=0 must be > 0"});
  expect_config_error([] { make_open_loop_source(OpenLoopSpec{.rate_per_s = -2}); }, {"rate_per_s=-2"});
  expect_config_error([] { make_open_loop_source(OpenLoopSpec{.rate_per_s = std::nan("")}); }, {"rate_per_s=nan"});
  expect_config_error([] { make_open_loop_source(OpenLoopSpec{.num_requests = 0}); },
                      {"num_requests=0", "must be > 0"});
  expect_config_error([] { make_open_loop_source(OpenLoopSpec{.arrivals = ArrivalKind::kGamma, .cv = 0}); },
                      {"cv=0", "must be > 0"});
  // cv is not used by Poisson arrivals, so it is not checked there.
  EXPECT_NO_THROW(make_open_loop_source(OpenLoopSpec{.arrivals = ArrivalKind::kPoisson, .cv = 0}));
}

TEST(WorkloadTest, ArrivalKindNamesRoundTrip) {
  for (ArrivalKind k : {ArrivalKind::kPoisson, ArrivalKind::kGamma, ArrivalKind::kConstant}) {
    EXPECT_EQ(parse_arrival_kind(arrival_kind_name(k)), k);
  }
  EXPECT_EQ(arrival_kind_name(ArrivalKind::kGamma), "gamma");
  expect_config_error([] { parse_arrival_kind("bursty"); }, {"arrivals='bursty'", "poisson, gamma or constant"});
}

// ---- Closed-loop users ------------------------------------------------------------------------

ConversationSpec three_turns() {
  return ConversationSpec{.num_users = 2,
                          .think_time_s = 0.0,
                          .turns = 3,
                          .first_prompt = LengthDistribution::fixed(100),
                          .followup = LengthDistribution::fixed(20),
                          .output = LengthDistribution::fixed(30),
                          .hash_block_tokens = 16,
                          .seed = 9};
}

bool starts_with(const std::vector<uint64_t>& list, const std::vector<uint64_t>& prefix) {
  return list.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), list.begin());
}

TEST(ClosedLoopTest, TurnsGrowByOutputPlusFollowupAndKeepTheirPrefix) {
  ClosedLoopUsers users(three_turns());
  const RequestSpec t0 = users.first_request(1);
  // Think time 0: the user starts at 0 and sends each turn the moment the previous one finishes.
  EXPECT_EQ(t0.arrival_ns, 0);
  EXPECT_EQ(t0.id, int64_t{1} << 32);  // user 1, request 0
  EXPECT_EQ(t0.user, 1);
  EXPECT_EQ(t0.turn, 0);
  EXPECT_EQ(t0.prompt_tokens, 100);
  EXPECT_EQ(t0.output_tokens, 30);
  EXPECT_EQ(t0.hash_block_tokens, 16);
  EXPECT_EQ(t0.identity_tokens, 130);       // prompt + answer
  EXPECT_EQ(t0.prefix_hashes.size(), 8u);  // floor(130 / 16)

  const auto t1 = users.next_request(1, 5'000);
  ASSERT_TRUE(t1);
  EXPECT_EQ(t1->arrival_ns, 5'000);
  EXPECT_EQ(t1->id, (int64_t{1} << 32) + 1);
  EXPECT_EQ(t1->turn, 1);
  EXPECT_EQ(t1->prompt_tokens, 150);  // 100 prompt + 30 answer + 20 new message
  EXPECT_EQ(t1->prefix_hashes.size(), 11u);  // floor((150 + 30) / 16)
  EXPECT_TRUE(starts_with(t1->prefix_hashes, t0.prefix_hashes));

  const auto t2 = users.next_request(1, 9'000);
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->turn, 2);
  EXPECT_EQ(t2->prompt_tokens, 200);  // 150 + 30 + 20
  EXPECT_EQ(t2->prefix_hashes.size(), 14u);  // floor((200 + 30) / 16)
  EXPECT_TRUE(starts_with(t2->prefix_hashes, t1->prefix_hashes));

  // After 3 turns a new conversation: back to the first prompt, nothing shared with the old one.
  const auto t3 = users.next_request(1, 12'000);
  ASSERT_TRUE(t3);
  EXPECT_EQ(t3->turn, 0);
  EXPECT_EQ(t3->prompt_tokens, 100);
  ASSERT_EQ(t3->prefix_hashes.size(), 8u);
  for (uint64_t h : t3->prefix_hashes) {
    EXPECT_EQ(std::count(t2->prefix_hashes.begin(), t2->prefix_hashes.end(), h), 0);
  }
  // Hashes within one prompt are distinct, and another user's conversation shares none.
  const RequestSpec other = users.first_request(0);
  EXPECT_EQ(other.id, 0);
  for (size_t i = 0; i < t0.prefix_hashes.size(); ++i) {
    EXPECT_EQ(std::count(t0.prefix_hashes.begin(), t0.prefix_hashes.end(), t0.prefix_hashes[i]), 1);
    EXPECT_EQ(std::count(other.prefix_hashes.begin(), other.prefix_hashes.end(), t0.prefix_hashes[i]), 0);
  }
}

TEST(ClosedLoopTest, ContextCapRestartsTheConversation) {
  ConversationSpec spec = three_turns();
  spec.turns = 10;
  spec.max_context_tokens = 200;
  ClosedLoopUsers users(spec);
  const RequestSpec t0 = users.first_request(0);  // 100 + 30 = 130 <= 200
  const auto t1 = users.next_request(0, 1);       // 150 + 30 = 180 <= 200
  ASSERT_TRUE(t1);
  EXPECT_EQ(t1->turn, 1);
  EXPECT_EQ(t1->prompt_tokens, 150);
  const auto t2 = users.next_request(0, 2);       // 200 + 30 = 230 > 200: restart
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->turn, 0);
  EXPECT_EQ(t2->prompt_tokens, 100);
  EXPECT_NE(t2->prefix_hashes.front(), t0.prefix_hashes.front());

  // A first turn longer than the cap is cut to fit: output 30 kept, prompt 200 - 30 = 170.
  spec.first_prompt = LengthDistribution::fixed(500);
  ClosedLoopUsers capped(spec);
  const RequestSpec r = capped.first_request(0);
  EXPECT_EQ(r.output_tokens, 30);
  EXPECT_EQ(r.prompt_tokens, 170);
}

// A system prompt shared by all (the agent preset's): its whole blocks carry the same hashes for
// every user and every conversation; what follows it is the conversation's own.
TEST(ClosedLoopTest, SharedPrefixBlocksAreTheSameForEveryUserAndConversation) {
  ConversationSpec spec = three_turns();
  spec.turns = 2;
  spec.shared_prefix_tokens = 40;  // 2 whole blocks of 16, and 8 tokens of a third
  ClosedLoopUsers users(spec);
  const RequestSpec a = users.first_request(0);
  const RequestSpec b = users.first_request(1);
  EXPECT_EQ(a.prompt_tokens, 140);  // 40 shared + 100 drawn
  ASSERT_EQ(a.prefix_hashes.size(), 10u);  // floor((140 + 30) / 16)
  ASSERT_EQ(b.prefix_hashes.size(), 10u);
  EXPECT_EQ(a.prefix_hashes[0], b.prefix_hashes[0]);
  EXPECT_EQ(a.prefix_hashes[1], b.prefix_hashes[1]);
  for (size_t i = 2; i < a.prefix_hashes.size(); ++i) EXPECT_NE(a.prefix_hashes[i], b.prefix_hashes[i]) << i;
  // The next conversation of user 0 (after 2 turns) starts with the same shared blocks.
  ASSERT_TRUE(users.next_request(0, 10));
  const auto next = users.next_request(0, 20);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->turn, 0);
  EXPECT_EQ(next->prefix_hashes[0], a.prefix_hashes[0]);
  EXPECT_EQ(next->prefix_hashes[1], a.prefix_hashes[1]);
  EXPECT_NE(next->prefix_hashes[2], a.prefix_hashes[2]);
  // Without a shared prefix no block is shared between users.
  ClosedLoopUsers plain(three_turns());
  EXPECT_NE(plain.first_request(0).prefix_hashes[0], plain.first_request(1).prefix_hashes[0]);
  expect_config_error([] { ClosedLoopUsers(ConversationSpec{.shared_prefix_tokens = -1}); },
                      {"shared_prefix_tokens=-1"});
}

TEST(ClosedLoopTest, RequestsPerUserEndsTheUser) {
  ConversationSpec spec = three_turns();
  spec.requests_per_user = 3;
  ClosedLoopUsers users(spec);
  users.first_request(0);
  EXPECT_TRUE(users.next_request(0, 10));
  EXPECT_TRUE(users.next_request(0, 20));
  EXPECT_FALSE(users.next_request(0, 30));
  EXPECT_FALSE(users.next_request(0, 40));
}

TEST(ClosedLoopTest, UsersDoNotDependOnTheOrderTheEngineAsks) {
  ConversationSpec spec = three_turns();
  spec.think_time_s = 2.0;
  spec.followup = LengthDistribution::uniform(1, 500);
  spec.output = LengthDistribution::uniform(1, 500);
  ClosedLoopUsers a(spec), b(spec);
  std::vector<RequestSpec> a0, a1, b0, b1;
  a0.push_back(a.first_request(0));
  a1.push_back(a.first_request(1));
  b1.push_back(b.first_request(1));  // the other order
  b0.push_back(b.first_request(0));
  for (int i = 0; i < 5; ++i) a0.push_back(*a.next_request(0, a0.back().arrival_ns + 100));
  for (int i = 0; i < 5; ++i) a1.push_back(*a.next_request(1, a1.back().arrival_ns + 100));
  for (int i = 0; i < 5; ++i) {
    b1.push_back(*b.next_request(1, b1.back().arrival_ns + 100));
    b0.push_back(*b.next_request(0, b0.back().arrival_ns + 100));
  }
  for (size_t i = 0; i < a0.size(); ++i) {
    EXPECT_EQ(a0[i].id, b0[i].id);
    EXPECT_EQ(a0[i].arrival_ns, b0[i].arrival_ns);
    EXPECT_EQ(a0[i].prompt_tokens, b0[i].prompt_tokens);
    EXPECT_EQ(a0[i].prefix_hashes, b0[i].prefix_hashes);
    EXPECT_EQ(a1[i].prompt_tokens, b1[i].prompt_tokens);
    EXPECT_EQ(a1[i].id, (int64_t{1} << 32) + static_cast<int64_t>(i));
  }
}

TEST(ClosedLoopTest, ThinkTimeAndStartSpread) {
  ConversationSpec spec{.num_users = 1000, .think_time_s = 4.0, .turns = 2};
  ClosedLoopUsers users(spec);
  double start_sum = 0;
  for (int32_t u = 0; u < users.num_users(); ++u) {
    const RequestSpec r = users.first_request(u);
    ASSERT_GE(r.arrival_ns, 0);
    ASSERT_LT(r.arrival_ns, 4'000'000'000);
    start_sum += ns_to_seconds(r.arrival_ns);
  }
  // Starts uniform on [0, 4 s): mean 2 s, sd 4/sqrt(12).
  EXPECT_NEAR(start_sum / 1000, 2.0, 5 * (4 / std::sqrt(12.0)) / std::sqrt(1000.0));
  // Think times exponential with mean 4 s, measured from the finish time given.
  const int n = 20'000;
  double think_sum = 0;
  for (int i = 0; i < n; ++i) {
    const TimeNs finish = 1'000'000'000;
    const auto r = users.next_request(7, finish);
    ASSERT_TRUE(r);
    ASSERT_GE(r->arrival_ns, finish);
    think_sum += ns_to_seconds(r->arrival_ns - finish);
  }
  EXPECT_NEAR(think_sum / n, 4.0, 5 * 4.0 / std::sqrt(double(n)));
}

TEST(ClosedLoopTest, BadSpecsNameFieldValueAndRule) {
  expect_config_error([] { ClosedLoopUsers(ConversationSpec{.num_users = 0}); }, {"num_users=0", "must be > 0"});
  expect_config_error([] { ClosedLoopUsers(ConversationSpec{.think_time_s = -1}); }, {"think_time_s=-1", ">= 0"});
  expect_config_error([] { ClosedLoopUsers(ConversationSpec{.turns = 0}); }, {"turns=0", ">= 1"});
  expect_config_error([] { ClosedLoopUsers(ConversationSpec{.max_context_tokens = 1}); }, {"max_context_tokens=1"});
  expect_config_error([] { ClosedLoopUsers(ConversationSpec{.hash_block_tokens = 0}); }, {"hash_block_tokens=0"});
  expect_config_error([] { ClosedLoopUsers(ConversationSpec{.requests_per_user = -1}); }, {"requests_per_user=-1"});
  ClosedLoopUsers users(ConversationSpec{.num_users = 2});
  EXPECT_THROW(users.first_request(2), std::out_of_range);
  EXPECT_THROW(users.next_request(-1, 0), std::out_of_range);
}

}  // namespace
}  // namespace kvplan::sim
