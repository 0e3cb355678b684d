// tests/plan/deployment_test.cpp — `kvplan plan` (deployment.h) on a hand-made space small enough
// to search exhaustively: the pruned search gives the exhaustive answer (the cheapest, and with
// --exact-front the front), every pruned candidate provably could not have won, the answer is the
// same byte for byte whatever runs the rounds, the cost arithmetic by hand, Ctrl-C keeps what is
// finished, and bad targets or spaces are errors that name the flag.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"
#include "kvplan/plan/deployment.h"
#include "kvplan/plan/simulate.h"
#include "../support/small_deployment.h"

namespace kvplan::plan {
namespace {

// Llama-3.1-8B chat users with short fixed lengths, 20 s per probe: each search takes milliseconds.
DeploymentSearch small_search() {
  DeploymentSearch q;
  q.base = test::small_deployment_base();
  q.target_users = 500;
  q.space.gpus = {"l4", "a10g", "l40s", "a100-80gb", "h100-sxm"};
  q.space.max_gpus = 2;
  // Round prices make the arithmetic checkable by hand.
  q.space.gpu_prices = {{"l4", 0.5}, {"a10g", 1.0}, {"l40s", 1.5}, {"a100-80gb", 2.0}, {"h100-sxm", 2.5}};
  return q;
}

struct Exhaustive {
  std::map<std::string, double> capacity;  // label -> capacity per replica (0: none)
  double best_usd = 0;
  double best_served = 0;
  std::vector<std::string> front;          // labels, cheapest replica first
};

// Every candidate searched with the plain capacity search, no pruning; the same rules for the
// cheapest (cost, then more served) and the front (strictly more per replica as cost grows).
Exhaustive exhaustive(const DeploymentSearch& q) {
  Exhaustive e;
  struct Point {
    std::string label;
    double replica_usd, capacity;
  };
  std::vector<Point> points;
  for (const DeploymentCandidate& c : enumerate_candidates(q)) {
    Scenario s = q.base;
    s.hardware.gpu = c.gpu;
    s.hardware.tensor_parallel_size = c.tensor_parallel;
    s.hardware.pipeline_parallel_size = c.pipeline_parallel;
    s.cost.usd_per_gpu_hour = q.space.gpu_prices.at(c.gpu);
    double capacity = 0;
    try {
      const CapacityAnswer a = find_capacity(s);
      capacity = a.search.best;
    } catch (const ConfigError&) {
      capacity = 0;
    }
    e.capacity[c.label] = capacity;
    if (capacity <= 0) continue;
    const double replica_usd = s.cost.usd_per_gpu_hour * c.tensor_parallel * c.pipeline_parallel;
    const double replicas = std::ceil(q.target_users / capacity);
    const double usd = replicas * replica_usd, served = replicas * capacity;
    if (e.best_usd == 0 || usd < e.best_usd - 1e-9 || (std::abs(usd - e.best_usd) <= 1e-9 && served > e.best_served)) {
      e.best_usd = usd;
      e.best_served = served;
    }
    points.push_back({c.label, replica_usd, capacity});
  }
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    if (a.replica_usd != b.replica_usd) return a.replica_usd < b.replica_usd;
    return a.capacity > b.capacity;
  });
  double most = 0;
  for (const Point& p : points) {
    if (p.capacity > most) {
      e.front.push_back(p.label);
      most = p.capacity;
    }
  }
  return e;
}

std::vector<std::string> front_labels(const DeploymentPlan& p) {
  std::vector<std::string> out;
  for (size_t i : p.front) out.push_back(p.candidates[i].label);
  return out;
}

TEST(DeploymentSearch, PrunedSearchGivesTheExhaustiveAnswer) {
  DeploymentSearch q = small_search();
  q.exact_front = true;
  const DeploymentPlan p = search_deployments(q);
  const Exhaustive e = exhaustive(q);
  ASSERT_TRUE(p.cheapest);
  const DeploymentCandidate& best = p.candidates[*p.cheapest];
  EXPECT_NEAR(best.usd_per_hour, e.best_usd, 1e-9);
  EXPECT_DOUBLE_EQ(best.served, e.best_served);
  EXPECT_EQ(front_labels(p), e.front);
  int pruned = 0;
  for (const DeploymentCandidate& c : p.candidates) {
    if (c.status == "searched" || c.status == "no_capacity") {
      // A search that began higher in the doubling sequence lands where the plain one does.
      EXPECT_DOUBLE_EQ(c.capacity, e.capacity.at(c.label)) << c.label;
    }
    if (c.status != "pruned") continue;
    ++pruned;
    // Provably could not have won: with its exhaustive capacity it is dearer than the cheapest
    // (or as dear and serving no more), and it is not on the front.
    const double cap = e.capacity.at(c.label);
    if (cap > 0) {
      const double replicas = std::ceil(q.target_users / cap);
      const double usd = replicas * c.replica_usd_per_hour();
      EXPECT_TRUE(usd > e.best_usd + 1e-9 || (usd >= e.best_usd - 1e-9 && replicas * cap <= e.best_served)) << c.label;
    }
    EXPECT_EQ(std::count(e.front.begin(), e.front.end(), c.label), 0) << c.label;
  }
  // 10 candidates: 6 searched, 3 pruned, 1 with no capacity at all (on 2026-12-01's cost model).
  EXPECT_GE(pruned, 2) << "the space should let the bound prune, or the test proves nothing";
  EXPECT_TRUE(p.exact_front);
}

TEST(DeploymentSearch, CheapestOnlySearchAgreesAndSimulatesLess) {
  DeploymentSearch q = small_search();
  const DeploymentPlan fast = search_deployments(q);
  q.exact_front = true;
  const DeploymentPlan full = search_deployments(q);
  ASSERT_TRUE(fast.cheapest && full.cheapest);
  EXPECT_EQ(fast.candidates[*fast.cheapest].label, full.candidates[*full.cheapest].label);
  EXPECT_DOUBLE_EQ(fast.candidates[*fast.cheapest].usd_per_hour, full.candidates[*full.cheapest].usd_per_hour);
  EXPECT_LE(fast.simulations, full.simulations);
  EXPECT_FALSE(fast.exact_front);
}

TEST(DeploymentSearch, SameJsonWhateverRunsTheRounds) {
  DeploymentSearch q = small_search();
  q.exact_front = true;
  const std::string one = deployment_plan_json(search_deployments(q)).dump();
  q.threads = 3;
  EXPECT_EQ(deployment_plan_json(search_deployments(q)).dump(), one);
  // A runner that evaluates each round backwards (as an MPI rank split might) changes nothing.
  q.threads = 1;
  q.run_round = [](const std::vector<size_t>& round, const std::function<nlohmann::json(size_t)>& evaluate) {
    std::vector<nlohmann::json> out(round.size());
    for (size_t k = round.size(); k-- > 0;) out[k] = evaluate(round[k]);
    return out;
  };
  EXPECT_EQ(deployment_plan_json(search_deployments(q)).dump(), one);
}

TEST(DeploymentSearch, CostArithmeticByHand) {
  const DeploymentSearch q = small_search();
  const DeploymentPlan p = search_deployments(q);
  int checked = 0;
  for (const DeploymentCandidate& c : p.candidates) {
    if (c.status != "searched") continue;
    const double price = q.space.gpu_prices.at(c.gpu);
    EXPECT_DOUBLE_EQ(c.usd_per_gpu_hour, price);
    EXPECT_EQ(c.price_source, "given (--gpu-price)");
    EXPECT_EQ(c.gpus_per_replica, c.tensor_parallel);
    // 500 users at C per replica: ceil(500 / C) replicas, each tp GPUs at the price.
    const int64_t replicas = (500 + static_cast<int64_t>(c.capacity) - 1) / static_cast<int64_t>(c.capacity);
    EXPECT_EQ(c.replicas, replicas) << c.label;
    EXPECT_DOUBLE_EQ(c.served, static_cast<double>(replicas) * c.capacity);
    EXPECT_DOUBLE_EQ(c.usd_per_hour, static_cast<double>(replicas * c.tensor_parallel) * price);
    ++checked;
  }
  EXPECT_GT(checked, 0);
  const std::string text = deployment_plan_text(p, true);
  EXPECT_NE(text.find("cheapest deployment for 500 users"), std::string::npos) << text;
  EXPECT_NE(text.find("CHEAPEST"), std::string::npos);
}

TEST(DeploymentSearch, ACandidateBeyondOneScaleUpDomainCarriesItsWarning) {
  // H100 PCIe cards are NVLink-bridged in pairs: TP 2 stays in one domain, TP 4 crosses PCIe and
  // nodes, which is not priced. The warning reaches the candidate, its JSON and the cheapest lines.
  DeploymentSearch q = small_search();
  q.space.gpus = {"h100-pcie"};
  q.space.gpu_prices = {{"h100-pcie", 2.0}};
  q.space.max_gpus = 4;
  q.space.tensor_parallel = {2, 4};
  const DeploymentPlan p = search_deployments(q);
  bool tp2 = false, tp4 = false;
  for (const DeploymentCandidate& c : p.candidates) {
    bool warned = false;
    for (const std::string& w : c.warnings) warned |= w.find("spans more than one scale-up domain") != std::string::npos;
    if (c.tensor_parallel == 2) tp2 = !warned;
    if (c.tensor_parallel == 4) tp4 = warned;
  }
  EXPECT_TRUE(tp2);
  EXPECT_TRUE(tp4);
  DeploymentPlan only4 = p;
  for (size_t i = 0; i < only4.candidates.size(); ++i) {
    if (only4.candidates[i].tensor_parallel == 4 && !only4.candidates[i].warnings.empty()) only4.cheapest = i;
  }
  ASSERT_TRUE(only4.cheapest.has_value());
  // As if it had won (whether the search pruned it or not): its lines end with the warning.
  DeploymentCandidate& won = only4.candidates[*only4.cheapest];
  won.status = "searched";
  won.capacity = won.served = 10;
  won.replicas = 1;
  won.usd_per_hour = won.replica_usd_per_hour();
  bool line = false;
  for (const std::string& l : deployment_cheapest_lines(only4)) line |= l.rfind("WARNING: tensor parallel 4", 0) == 0;
  EXPECT_TRUE(line);
  EXPECT_FALSE(deployment_plan_json(p).at("candidates").at(0).at("warnings").is_null());
}

TEST(DeploymentSearch, DisaggregatedUnitsCountEveryEngine) {
  DeploymentSearch q = small_search();
  q.space.gpus = {"h100-sxm"};
  q.space.tensor_parallel = {1};
  q.space.disaggregation = {{0, 0}, {1, 2}};
  const DeploymentPlan p = search_deployments(q);
  ASSERT_EQ(p.candidates.size(), 2u);
  for (const DeploymentCandidate& c : p.candidates) {
    const bool split = c.prefill_engines > 0;
    EXPECT_EQ(c.label, split ? "3 x h100-sxm, tp1 pp1, 1P+2D" : "1 x h100-sxm, tp1 pp1") << c.label;
    EXPECT_EQ(c.gpus_per_replica, split ? 3 : 1);  // 1 prefill + 2 decode engines of one GPU
    if (c.status == "searched") {
      EXPECT_DOUBLE_EQ(c.usd_per_hour, static_cast<double>(c.replicas * c.gpus_per_replica) * 2.5);
    }
  }
  q.space.disaggregation = {{1, 0}};
  EXPECT_THROW(search_deployments(q), ConfigError);
}

// The scenario a candidate was searched with is the base with only its GPU, TP, PP, one replica and
// its price changed, and find_capacity on it gives the candidate's capacity (what the planner loads
// when a point of the front is clicked).
TEST(DeploymentSearch, CandidateScenarioIsTheBaseWithTheCandidatesHardware) {
  DeploymentSearch q = small_search();
  set_values(q.base, {{"gpu", "l4"}, {"replicas", "3"}});
  q.space.gpus = {"a100-80gb"};
  q.space.tensor_parallel = {2};
  const DeploymentPlan p = search_deployments(q);
  ASSERT_EQ(p.candidates.size(), 1u);
  const DeploymentCandidate& c = p.candidates[0];
  ASSERT_EQ(c.status, "searched");
  const Scenario s = candidate_scenario(q, c);
  EXPECT_EQ(s.hardware.gpu, "a100-80gb");
  EXPECT_EQ(s.hardware.tensor_parallel_size, 2);
  EXPECT_EQ(s.hardware.pipeline_parallel_size, 1);
  EXPECT_EQ(s.hardware.replicas, 1);
  EXPECT_DOUBLE_EQ(s.cost.usd_per_gpu_hour, 2.0);
  EXPECT_DOUBLE_EQ(find_capacity(s).search.best, c.capacity);
  // Everything else is the base's.
  Scenario back = s;
  back.hardware = q.base.hardware;
  back.cost = q.base.cost;
  EXPECT_EQ(non_default_values(back), non_default_values(q.base));
  EXPECT_NE(non_default_values(s), non_default_values(q.base));
}

TEST(DeploymentSearch, CheapestLinesAreTheTextsFirstLines) {
  const DeploymentPlan p = search_deployments(small_search());
  const std::vector<std::string> lines = deployment_cheapest_lines(p);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("cheapest deployment for 500 users: ", 0), 0u) << lines[0];
  // After what the ranking rests on (here the A100/L40S tables' datasheet prefill attention and
  // their missing whole-model band, deployment_cost_basis_lines), nothing else.
  std::string basis;
  for (const std::string& b : deployment_cost_basis_lines(p)) basis += b + "\n";
  EXPECT_NE(basis.find("COST BASIS: a100-80gb, l40s: published operator timings for gemm, attention_decode; "
                       "datasheet efficiencies for attention_prefill; no whole-model validation band"),
            std::string::npos)
      << basis;
  const std::string text = deployment_plan_text(p, false);
  EXPECT_EQ(text.rfind(basis + lines[0] + "\n  " + lines[1] + "\n", 0), 0u) << text;
  DeploymentPlan none = p;
  none.cheapest.reset();
  EXPECT_EQ(deployment_cheapest_lines(none),
            std::vector<std::string>{fmt::format("no candidate serves any load under the SLO ({} candidates)",
                                                 p.candidates.size())});
}

// A GPU whose step times are datasheet efficiencies only (MI300X: no published or measured
// operator table) used to win the ranking without a word in the answer's first lines (issue 26).
// By hand: mi300x is the cheapest at $100/hour on datasheet costs; h100-sxm at $120/hour has
// published ones; an l4 that was never simulated (no kind) says nothing.
TEST(DeploymentSearch, ADatasheetOnlyCheapestIsSaidInTheFirstLines) {
  DeploymentPlan p;
  p.users = true;
  p.target = 100;
  auto add = [&](const std::string& gpu, const std::string& kind, double usd_per_hour) {
    DeploymentCandidate c;
    c.gpu = gpu;
    c.label = "1 x " + gpu + ", tp1 pp1";
    c.status = kind.empty() ? "does_not_fit" : "searched";
    c.step_time_kind = kind;
    c.capacity = kind.empty() ? 0 : 50;
    c.replicas = kind.empty() ? 0 : 2;
    c.served = c.capacity * static_cast<double>(c.replicas);
    c.usd_per_hour = usd_per_hour;
    c.gpus_per_replica = 1;
    p.candidates.push_back(c);
  };
  add("mi300x", "datasheet", 100);
  add("h100-sxm", "published", 120);
  add("l4", "", 0);
  p.cheapest = 0;
  const std::vector<std::string> basis = deployment_cost_basis_lines(p);
  ASSERT_EQ(basis.size(), 2u);
  EXPECT_EQ(basis[0].rfind("COST BASIS: mi300x is costed with datasheet efficiencies only", 0), 0u) << basis[0];
  EXPECT_NE(basis[0].find("h100-sxm from published or measured timings"), std::string::npos) << basis[0];
  EXPECT_EQ(basis[0].find("l4"), std::string::npos) << basis[0];
  EXPECT_NE(basis[1].find("ranks first on unvalidated datasheet costs; the cheapest with validated step times is 2 "
                          "replicas of 1 x h100-sxm, tp1 pp1 at $120.00/hour"),
            std::string::npos)
      << basis[1];
  EXPECT_EQ(deployment_plan_text(p, false).rfind(basis[0] + "\n" + basis[1] + "\n", 0), 0u);
  EXPECT_EQ(deployment_plan_json(p).at("cost_basis").size(), 2u);
  // The published GPU cheapest: the datasheet GPU is still named, without the ranking warning.
  p.cheapest = 1;
  EXPECT_EQ(deployment_cost_basis_lines(p).size(), 1u);
  // Nothing on datasheet costs: nothing said.
  p.candidates[0].step_time_kind = "transferred";
  EXPECT_TRUE(deployment_cost_basis_lines(p).empty());
}

// MI300X with its published profile (issue 26): GEMM, all-reduce and elementwise from the Azure
// guide, attention on datasheet efficiencies. Its basis is named in the first lines whether it ranks
// first or not; a GPU whose key classes are all timed but that has no whole-model band (h200 here)
// is named only when it ranks first. Ranked cheapest, either gets the warning with its basis, naming
// the cheapest GPU with validated step times. By hand: mi300x $100/hour (published, attention on
// datasheet), h200 $110/hour (published, no band), h100-sxm $120/hour (validated).
TEST(DeploymentSearch, APartlyPublishedCheapestIsSaidInTheFirstLines) {
  PerfProfile mi = PerfProfile::datasheet_default(resolve_gpu("mi300x"));
  mi.at(OpClass::kGemm).source = "published (Azure AI benchmarking guide ND MI300X v5, hipBLASLt fp8, ROCm 6.8.5, AMD Instinct MI300X)";
  const std::string caveat = step_time_caveat("published", mi);
  EXPECT_EQ(caveat, "published operator timings for gemm; datasheet efficiencies for attention_prefill, "
                    "attention_decode; no whole-model validation band (unvalidated latency)");
  // A band is named, but does not make datasheet attention validated.
  mi.set_band(ProfileBand{0.7, 0.9, "public runs"});
  EXPECT_EQ(step_time_caveat("published", mi), "published operator timings for gemm; datasheet efficiencies for "
                                               "attention_prefill, attention_decode; whole-model band TTFT ±90%, TPOT ±70%");
  // Every key class published and a band: validated; a given profile is the user's own.
  PerfProfile h100 = *published_profile("h100-sxm");
  EXPECT_EQ(step_time_caveat("published", h100), "");
  EXPECT_EQ(step_time_caveat("measured", PerfProfile::datasheet_default(resolve_gpu("mi300x"))), "");
  // B200: every key class published, but no whole-model set to draw a band from (H200 has one since
  // issue 26's validation over both GPUs).
  EXPECT_EQ(step_time_caveat("published", *published_profile("b200")),
            "published operator timings for gemm, attention_prefill, attention_decode; no whole-model validation band "
            "(unvalidated latency)");
  EXPECT_EQ(step_time_caveat("published", *published_profile("h200")), "");
  // The shipped MI300X profile: the same basis as the hand-made one above.
  EXPECT_EQ(step_time_caveat("published", *published_profile("mi300x")).rfind(
                "published operator timings for gemm; datasheet efficiencies for attention_prefill, attention_decode; ",
                0),
            0u);

  DeploymentPlan p;
  p.users = true;
  p.target = 100;
  auto add = [&](const std::string& gpu, const std::string& kind, const std::string& why, double usd_per_hour) {
    DeploymentCandidate c;
    c.gpu = gpu;
    c.label = "1 x " + gpu + ", tp1 pp1";
    c.status = "searched";
    c.step_time_kind = kind;
    c.step_time_caveat = why;
    c.capacity = 50;
    c.replicas = 2;
    c.served = 100;
    c.usd_per_hour = usd_per_hour;
    c.gpus_per_replica = 1;
    p.candidates.push_back(c);
  };
  add("mi300x", "published", caveat, 100);
  add("h200", "published", "published operator timings for gemm, attention_prefill, attention_decode; no band", 110);
  add("h100-sxm", "published", "", 120);
  p.cheapest = 0;
  const std::vector<std::string> basis = deployment_cost_basis_lines(p);
  ASSERT_EQ(basis.size(), 2u);  // h200's key classes are all timed: named only if it ranks first
  EXPECT_EQ(basis[0], "COST BASIS: mi300x: " + caveat);
  EXPECT_EQ(basis[1], "WARNING: the cheapest deployment below (mi300x) ranks first on unvalidated step costs (" + caveat +
                          "); the cheapest with validated step times is 2 replicas of 1 x h100-sxm, tp1 pp1 at "
                          "$120.00/hour");
  EXPECT_EQ(deployment_plan_text(p, false).rfind(basis[0] + "\n" + basis[1] + "\n", 0), 0u);
  EXPECT_EQ(deployment_plan_json(p).at("candidates")[0].at("step_time_caveat"), caveat);
  EXPECT_EQ(deployment_plan_json(p).at("cost_basis").size(), 2u);
  // Cheapest with validated step times: MI300X's basis is still named, without a warning.
  p.cheapest = 2;
  EXPECT_EQ(deployment_cost_basis_lines(p), std::vector<std::string>{basis[0]});
  // h200 (timed, no band) cheapest: its basis is in the warning.
  p.cheapest = 1;
  const std::vector<std::string> h = deployment_cost_basis_lines(p);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[1].rfind("WARNING: the cheapest deployment below (h200) ranks first on unvalidated step costs (published "
                       "operator timings for gemm, attention_prefill, attention_decode; no band); the cheapest with "
                       "validated step times is 2 replicas of 1 x h100-sxm",
                       0),
            0u)
      << h[1];
  // Without a validated candidate there is nothing better to point at: the basis named, no warning.
  p.candidates.pop_back();
  p.cheapest = 0;
  EXPECT_EQ(deployment_cost_basis_lines(p), std::vector<std::string>{basis[0]});
  // A datasheet GPU cheapest above one with operator timings only: the warning points at that one.
  p.candidates[0].step_time_kind = "datasheet";
  p.candidates[0].step_time_caveat = "";
  const std::vector<std::string> ds = deployment_cost_basis_lines(p);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].rfind("COST BASIS: mi300x is costed with datasheet efficiencies only", 0), 0u) << ds[0];
  EXPECT_NE(ds[1].find("ranks first on unvalidated datasheet costs; the cheapest with operator-timed step times is 2 "
                       "replicas of 1 x h200, tp1 pp1 at $110.00/hour"),
            std::string::npos)
      << ds[1];
}

TEST(DeploymentSearch, WeightsThatDoNotFitAreNeverSimulated) {
  DeploymentSearch q = small_search();
  set_values(q.base, {{"model", "llama-3.1-70b"}});
  q.space.gpus = {"l4"};
  q.space.max_gpus = 1;
  const DeploymentPlan p = search_deployments(q);
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].status, "does_not_fit");
  EXPECT_FALSE(p.candidates[0].why.empty());
  EXPECT_EQ(p.simulations, 0);
  EXPECT_FALSE(p.cheapest);
}

TEST(DeploymentSearch, StoppedSearchKeepsWhatIsFinished) {
  DeploymentSearch q = small_search();
  int rounds = 0;
  q.should_stop = [&] { return rounds++ >= 1; };  // after the first round
  const DeploymentPlan p = search_deployments(q);
  EXPECT_TRUE(p.partial);
  EXPECT_EQ(p.candidates[0].status, "searched");
  size_t not_reached = 0;
  for (const DeploymentCandidate& c : p.candidates) not_reached += c.status == "not_reached" ? 1 : 0;
  EXPECT_GT(not_reached, 0u);
  EXPECT_TRUE(deployment_plan_json(p).at("partial").get<bool>());
}

TEST(DeploymentSearch, BadTargetsAndSpacesNameTheFlag) {
  auto message = [](const DeploymentSearch& q) {
    try {
      search_deployments(q);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  DeploymentSearch q = small_search();
  q.target_rate = 3;
  EXPECT_NE(message(q).find("exactly one target"), std::string::npos);
  q.target_users = 0;  // a rate, but the workload is closed-loop users
  EXPECT_NE(message(q).find("--target-users N"), std::string::npos);
  q = small_search();
  q.target_users = 10.5;
  EXPECT_NE(message(q).find("--target-users=10.5"), std::string::npos);
  q = small_search();
  q.space.gpus = {"l4"};           // not the scenario's own GPU (h100-sxm), which is always searched
  q.space.tensor_parallel = {4};  // TP 4 > --max-gpus 2: nothing left
  EXPECT_NE(message(q).find("candidate space is empty"), std::string::npos);
  q = small_search();
  q.space.gpu_prices["l4"] = -1;
  EXPECT_NE(message(q).find("--gpu-price l4=-1"), std::string::npos);
  q = small_search();
  q.base.slo = {};
  EXPECT_NE(message(q).find("SLO"), std::string::npos);
}

// DeepSeek-R1 (671B parameters in fp8, about 625 GiB of weights) served as its scenario says, on
// 8 x H200. One H200 holds about 131 GiB (4 hold 524 GiB: too few), an MI300X 178 GiB (4 hold 712
// GiB), an H100 74.5 GiB (8 hold 596 GiB: a second node, PP 2). The default GPU limit is the
// smallest such split where it exceeds 8, and the scenario's own deployment is always a candidate,
// even under --max-gpus 4 (issue 27: "223 replicas of 4 x MI300X" was the answer then).
TEST(DeploymentSpace, DefaultLimitHoldsTheModelAndTheScenariosOwnDeploymentIsSearched) {
  DeploymentSearch q;
  q.base.model.id = "deepseek-r1";
  q.base.hardware.gpu = "h200";
  q.base.hardware.tensor_parallel_size = 8;
  q.base.workload.users = 64;
  q.base.slo.ttft_ms = 2000;
  q.target_users = 2000;
  q.space.gpus = {"h100-sxm", "h200", "mi300x", "b300"};
  ASSERT_EQ(q.space.max_gpus, 0);  // the default

  auto split = [&](const char* gpu) {
    const std::optional<ReplicaSplit> s = smallest_fitting_split(q.base, gpu);
    return s ? fmt::format("tp{} pp{}", s->tensor_parallel, s->pipeline_parallel) : std::string("none");
  };
  EXPECT_EQ(split("h200"), "tp8 pp1");
  EXPECT_EQ(split("mi300x"), "tp4 pp1");
  EXPECT_EQ(split("h100-sxm"), "tp8 pp2");
  EXPECT_EQ(split("no-such-gpu"), "none");

  auto labels = [](const std::vector<DeploymentCandidate>& cs) {
    std::vector<std::string> out;
    for (const DeploymentCandidate& c : cs) out.push_back(c.label);
    return out;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  const std::vector<DeploymentCandidate> all = enumerate_candidates(q);
  const std::vector<std::string> l = labels(all);
  EXPECT_TRUE(has(l, "16 x h100-sxm, tp8 pp2")) << "the split that holds the model on H100s";
  EXPECT_FALSE(has(l, "16 x h100-sxm, tp16 pp1"));  // TP stays within the 8-GPU NVLink domain
  EXPECT_TRUE(has(l, "8 x h200, tp8 pp1"));
  EXPECT_FALSE(has(l, "16 x h200, tp16 pp1"));
  EXPECT_EQ(std::count(l.begin(), l.end(), std::string("8 x h200, tp8 pp1")), 1);  // not twice
  const auto own = std::find_if(all.begin(), all.end(), [](const DeploymentCandidate& c) { return c.scenario_deployment; });
  ASSERT_NE(own, all.end());
  EXPECT_EQ(own->label, "8 x h200, tp8 pp1");
  EXPECT_EQ(std::count_if(all.begin(), all.end(), [](const DeploymentCandidate& c) { return c.scenario_deployment; }), 1);

  q.space.max_gpus = 4;
  const std::vector<std::string> four = labels(enumerate_candidates(q));
  EXPECT_TRUE(has(four, "8 x h200, tp8 pp1")) << "the scenario's own deployment, outside --max-gpus 4";
  EXPECT_TRUE(has(four, "4 x mi300x, tp4 pp1"));
  EXPECT_FALSE(has(four, "8 x mi300x, tp8 pp1"));
  EXPECT_FALSE(has(four, "16 x h100-sxm, tp8 pp2"));
  q.space.gpus = {"mi300x"};  // the scenario's GPU not searched: only what was asked for
  for (const DeploymentCandidate& c : enumerate_candidates(q)) EXPECT_EQ(c.gpu, "mi300x");
}

}  // namespace
}  // namespace kvplan::plan
