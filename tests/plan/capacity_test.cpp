// tests/plan/capacity_test.cpp — the capacity answer's costs and binding constraint: the cost
// arithmetic by hand (per hour over every GPU of every replica, per user or per req/s, per million
// output tokens), an unpriced GPU giving no figures, and hand-made scenarios where each kind of
// limit binds: KV memory (a tiny --kv-capacity-gib), TPOT (a tight target), max_num_seqs (a small
// limit), and weights that do not fit.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/plan/binding.h"
#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/cost.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::plan {
namespace {

TEST(PlanCost, ArithmeticByHand) {
  DeploymentCost d;
  d.gpus = 8;
  d.gpus_per_replica = 4;
  d.replicas = 2;
  d.gpu = "h100-sxm";
  d.usd_per_gpu_hour = 3.99;
  d.source = "a price list";
  const CostAtLoad users = cost_at_load(d, 120, true, 5400);
  EXPECT_DOUBLE_EQ(*users.usd_per_hour, 31.92);             // 8 x 3.99
  EXPECT_DOUBLE_EQ(*users.usd_per_load_unit, 31.92 / 120);  // $0.266 per user-hour
  // 5,400 tok/s x 3,600 s = 19.44 M tokens an hour: 31.92 / 19.44 = $1.6420 per million.
  EXPECT_NEAR(*users.usd_per_million_output_tokens, 31.92 / 19.44, 1e-12);
  const nlohmann::json j = cost_json(users);
  EXPECT_EQ(j.at("gpus"), 8);
  EXPECT_DOUBLE_EQ(j.at("usd_per_user").get<double>(), 0.266);
  EXPECT_EQ(j.at("source"), "a price list");
  const std::string text = cost_text(users);
  for (const char* s : {"$31.92/hour for 8 GPUs (2 replicas x 4)", "$0.2660/hour per concurrent user",
                        "$1.642 per million output tokens", "price source: a price list"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
  const CostAtLoad rate = cost_at_load(d, 4, false, 0);  // 4 req/s, no tokens: no per-token cost
  EXPECT_DOUBLE_EQ(*rate.usd_per_load_unit, 7.98);
  EXPECT_FALSE(rate.usd_per_million_output_tokens);
  EXPECT_DOUBLE_EQ(cost_json(rate).at("usd_per_request_per_s").get<double>(), 7.98);
  EXPECT_TRUE(cost_json(rate).at("usd_per_million_output_tokens").is_null());
}

TEST(PlanCost, EveryGpuOfEveryReplicaCounts) {
  Scenario s;
  s.hardware.tensor_parallel_size = 2;
  s.hardware.replicas = 3;
  s.cost.usd_per_gpu_hour = 1.5;
  sim::SimulationConfig c = simulation_config(s);
  DeploymentCost d = deployment_cost(resolve(s), c.cluster);
  EXPECT_EQ(d.gpus, 6);
  EXPECT_DOUBLE_EQ(d.usd_per_hour(), 9.0);
  EXPECT_EQ(d.source, "given (--gpu-price)");
  // Disaggregated: 1 prefill + 2 decode replicas of 2 GPUs.
  s.hardware.prefill_replicas = 1;
  s.hardware.decode_replicas = 2;
  c = simulation_config(s);
  EXPECT_EQ(deployment_cost(resolve(s), c.cluster).gpus, 6);
}

TEST(PlanCost, AGpuWithoutAPriceGivesNoFigures) {
  Scenario s;
  s.hardware.gpu = "h800";  // no price in its preset (data/gpus/PRICES.md)
  const DeploymentCost d = deployment_cost(resolve(s), simulation_config(s).cluster);
  ASSERT_FALSE(d.priced());
  const CostAtLoad c = cost_at_load(d, 100, true, 1000);
  EXPECT_FALSE(c.usd_per_hour);
  const nlohmann::json j = cost_json(c);
  EXPECT_TRUE(j.at("usd_per_hour").is_null());
  EXPECT_TRUE(j.at("usd_per_user").is_null());
  EXPECT_NE(j.at("note").get<std::string>().find("--gpu-price"), std::string::npos);
  EXPECT_NE(cost_text(c).find("cost: unknown"), std::string::npos);
}

// binding_constraint on hand-made probes: the rules one by one.
sim::RunSummary summary(double ttft_p90, double tpot_p90) {
  sim::RunSummary s;
  s.ttft_ms.p90 = ttft_p90;
  s.tpot_ms.p90 = tpot_p90;
  s.limits.steps = 100;
  s.limits.peak_running = 10;
  s.limits.max_num_seqs = 256;
  s.limits.peak_kv_used = 0.5;
  return s;
}

sim::CapacitySearch search(const sim::RunSummary& passing, const sim::RunSummary& failing) {
  sim::CapacitySearch s;
  s.best = 100;
  s.first_failing = 110;
  s.at_best = passing;
  s.probes = {{100, true, passing}, {110, false, failing}};
  return s;
}

TEST(PlanBinding, JudgedFromTheFailingProbeAgainstThePassingOne) {
  sim::Slo slo;
  slo.ttft_ms = 1000;
  slo.tpot_ms = 50;
  const MemoryPlan fits;
  const sim::RunSummary pass = summary(800, 40);
  sim::RunSummary fail = summary(1200, 45);  // TTFT fails
  // Nothing held requests back: the failing target binds.
  EXPECT_EQ(binding_constraint(slo, search(pass, fail), true, fits).kind, "ttft");
  fail.limits.kv_limited_steps = 10;  // 10% of steps kept a request out for KV
  EXPECT_EQ(binding_constraint(slo, search(pass, fail), true, fits).kind, "kv_memory");
  fail.limits.kv_limited_steps = 4;  // under 5%: not binding
  EXPECT_EQ(binding_constraint(slo, search(pass, fail), true, fits).kind, "ttft");
  fail.limits.kv_limited_steps = 0;
  fail.limits.seq_limited_steps = 10;
  EXPECT_EQ(binding_constraint(slo, search(pass, fail), true, fits).kind, "max_num_seqs");
  // Only TPOT fails: requests kept waiting do not slow tokens, so the limits do not bind...
  fail = summary(900, 60);
  fail.limits.kv_limited_steps = 10;
  fail.limits.seq_limited_steps = 0;
  EXPECT_EQ(binding_constraint(slo, search(pass, fail), true, fits).kind, "tpot");
  // ...but more preemptions than at the passing load do.
  fail.preemptions = 3;
  EXPECT_EQ(binding_constraint(slo, search(pass, fail), true, fits).kind, "kv_memory");
  // The margins are the passing load's.
  const BindingConstraint b = binding_constraint(slo, search(pass, fail), true, fits);
  ASSERT_EQ(b.margins.size(), 4u);
  EXPECT_EQ(b.margins[0].text(), "p90 TTFT 800.0 ms of 1000 ms = 80%");
  EXPECT_EQ(b.margins[1].text(), "p90 TPOT 40.0 ms of 50 ms = 80%");
  EXPECT_EQ(b.margins[2].text(), "KV memory peak 50.0% of capacity");
  EXPECT_EQ(b.margins[3].text(), "running sequences peak 10 of 256 max_num_seqs = 4%");
  // Weights that do not fit: nothing was simulated.
  MemoryPlan too_big;
  too_big.fits = false;
  too_big.problems = {"weights need 140 GiB"};
  const BindingConstraint w = binding_constraint(slo, sim::CapacitySearch{}, true, too_big);
  EXPECT_EQ(w.kind, "weights");
  EXPECT_EQ(w.why, "weights do not fit: weights need 140 GiB");
  EXPECT_TRUE(w.margins.empty());
  // The weights fit but one request of max_model_len does not: that is what to change.
  too_big.problems = {"one request of max_model_len=10485760 tokens needs 120.28 GiB of KV but the budget is 15.17 GiB"};
  const BindingConstraint l = binding_constraint(slo, sim::CapacitySearch{}, true, too_big);
  EXPECT_EQ(l.kind, "max_model_len");
  EXPECT_EQ(l.why, "max_model_len does not fit: one request of max_model_len=10485760 tokens needs 120.28 GiB of KV "
                   "but the budget is 15.17 GiB; lower --max-model-len");
}

// Closed-loop users of fixed lengths, one minute per probe: small enough for a test.
Scenario small_users() {
  Scenario s;
  s.workload.users = 4;
  s.workload.think_time_s = 1;
  s.workload.prompt_lengths = "fixed:256";
  s.workload.output_lengths = "fixed:64";
  s.workload.duration_s = 60;
  return s;
}

CapacityAnswer capacity(const Scenario& s) {
  CapacityRequest r;
  r.tolerance = 0.1;
  r.start = 4;
  return find_capacity(s, r);
}

TEST(PlanCapacity, CostAtTheAnswerIsTheDeploymentsPriceOverItsLoad) {
  Scenario s = small_users();
  s.slo.tpot_ms = 20;
  s.cost.usd_per_gpu_hour = 2;
  const CapacityAnswer a = capacity(s);
  ASSERT_GT(a.search.best, 0);
  const nlohmann::json j = capacity_json(a);
  const nlohmann::json& cost = j.at("cost");
  EXPECT_DOUBLE_EQ(cost.at("usd_per_hour").get<double>(), 2.0);  // one GPU
  EXPECT_DOUBLE_EQ(cost.at("usd_per_user").get<double>(), 2.0 / a.search.best);
  const double tokens_per_hour = a.search.at_best.output_tokens_per_s * 3600;
  EXPECT_DOUBLE_EQ(cost.at("usd_per_million_output_tokens").get<double>(), 2.0 / tokens_per_hour * 1e6);
}

TEST(PlanCapacity, TightTpotBinds) {
  Scenario s = small_users();
  s.slo.tpot_ms = 12;
  const CapacityAnswer a = capacity(s);
  ASSERT_GT(a.search.best, 0);
  EXPECT_EQ(a.binding.kind, "tpot") << a.binding.why;
  // The margins at the answer: TPOT within its target, KV far from full.
  ASSERT_EQ(a.binding.margins.size(), 3u);
  EXPECT_EQ(a.binding.margins[0].limit, "tpot");
  EXPECT_LE(a.binding.margins[0].use(), 1.0);
  EXPECT_DOUBLE_EQ(a.binding.margins[0].value, a.search.at_best.tpot_ms.p90);
  EXPECT_EQ(a.binding.margins[1].limit, "kv_memory");
  EXPECT_LT(a.binding.margins[1].use(), 0.5);
  const nlohmann::json j = capacity_json(a);
  EXPECT_EQ(j.at("binding_constraint").at("kind"), "tpot");
  EXPECT_EQ(j.at("margins").size(), 3u);
}

TEST(PlanCapacity, TinyKvCapacityBindsAsKvMemory) {
  Scenario s = small_users();
  s.slo.ttft_ms = 1000;
  // 0.1 GiB at 131,072 B per token: 819 tokens, 2 requests of 320 tokens at once.
  s.kv_cache.capacity_gib = 0.1;
  const CapacityAnswer a = capacity(s);
  EXPECT_EQ(a.binding.kind, "kv_memory") << a.binding.why;
  EXPECT_NE(a.binding.why.find("KV"), std::string::npos);
}

TEST(PlanCapacity, SmallMaxNumSeqsBinds) {
  Scenario s = small_users();
  s.slo.ttft_ms = 1000;
  s.engine.max_num_seqs = 4;
  const CapacityAnswer a = capacity(s);
  ASSERT_GT(a.search.best, 0);
  EXPECT_EQ(a.binding.kind, "max_num_seqs") << a.binding.why;
  const LimitMargin& seqs = a.binding.margins.back();
  EXPECT_EQ(seqs.limit, "max_num_seqs");
  EXPECT_EQ(seqs.bound, 4);
  EXPECT_LE(seqs.value, 4);
}

TEST(PlanCapacity, WeightsThatDoNotFitBindBeforeAnyLoad) {
  Scenario s = small_users();
  s.model.id = "llama-3.1-70b";
  s.hardware.gpu = "l4";
  s.slo.ttft_ms = 1000;
  const CapacityAnswer a = capacity(s);
  EXPECT_EQ(a.search.best, 0);
  EXPECT_TRUE(a.search.probes.empty());
  EXPECT_EQ(a.binding.kind, "weights");
  EXPECT_NE(a.binding.why.find("weights do not fit"), std::string::npos);
  EXPECT_EQ(capacity_json(a).at("binding_constraint").at("kind"), "weights");
}

TEST(PlanCapacity, SameInputsGiveTheSameBytes) {
  Scenario s = small_users();
  s.slo.tpot_ms = 12;
  EXPECT_EQ(capacity_json(capacity(s)).dump(), capacity_json(capacity(s)).dump());
}

}  // namespace
}  // namespace kvplan::plan

namespace kvplan::plan {
namespace {

// The planner abandons a search whose inputs changed: the stop test is read inside the probes, and
// the search ends with SearchStopped instead of an answer (never a half-judged probe).
TEST(PlanCapacity, AStopTestAbandonsTheSearch) {
  Scenario s = small_users();
  s.slo.tpot_ms = 12;
  int probes = 0;
  int checks = 0;
  CapacityRequest r;
  r.tolerance = 0.1;  // as capacity() below
  r.start = 4;
  r.on_probe = [&](const sim::CapacityProbe&, bool) { ++probes; };
  r.should_stop = [&] { return ++checks > 3; };  // a few events into the first probe
  EXPECT_THROW(find_capacity(s, r), sim::SearchStopped);
  EXPECT_EQ(probes, 0);
  // Never true: the same answer as without a stop test.
  r.should_stop = [] { return false; };
  EXPECT_EQ(capacity_json(find_capacity(s, r)).dump(), capacity_json(capacity(s)).dump());
}

}  // namespace
}  // namespace kvplan::plan

namespace kvplan::plan {
namespace {

TEST(CapacitySummary, SentencesByHand) {
  EXPECT_EQ(latency_words(2000), "2 s");
  EXPECT_EQ(latency_words(1250), "1.25 s");
  EXPECT_EQ(latency_words(769.04), "769 ms");
  EXPECT_EQ(latency_words(49.61), "49.6 ms");
  sim::Slo slo;
  EXPECT_EQ(slo_sentence(slo), "");
  slo.ttft_ms = 2000;
  EXPECT_EQ(slo_sentence(slo), "meet p90 TTFT ≤ 2 s");
  slo.tpot_ms = 50;
  EXPECT_EQ(slo_sentence(slo), "meet p90 TTFT ≤ 2 s and p90 TPOT ≤ 50 ms");
  slo.e2e_ms = 30000;
  EXPECT_EQ(slo_sentence(slo), "meet p90 TTFT ≤ 2 s, p90 TPOT ≤ 50 ms and p90 E2E ≤ 30 s");
}

TEST(CapacitySummary, HeadlineBindingAndMarginsComeFromTheAnswer) {
  Scenario s = small_users();
  s.slo.tpot_ms = 12;
  s.cost.usd_per_gpu_hour = 2;
  const CapacityAnswer a = capacity(s);
  ASSERT_GT(a.search.best, 1);
  const CapacitySummary sum = summarize_capacity(a);
  EXPECT_EQ(sum.headline, fmt::format("{:g} concurrent users", a.search.best));
  EXPECT_EQ(sum.slo, "meet p90 TPOT ≤ 12 ms");
  EXPECT_EQ(sum.binding.rfind("binding: p90 TPOT ", 0), 0u) << sum.binding;
  ASSERT_EQ(sum.margins.size(), 2u);  // KV memory and running sequences
  EXPECT_NE(sum.margins[0].find("of the KV cache"), std::string::npos) << sum.margins[0];
  EXPECT_EQ(sum.cost, fmt::format("$2.00/hour for 1 GPU, ${:.4f}/hour per user", 2.0 / a.search.best));
  EXPECT_EQ(sum.source_kind, "published");
  EXPECT_NE(sum.source.find("validation p90 error TTFT ±"), std::string::npos) << sum.source;
  EXPECT_TRUE(sum.warnings.empty());
}

TEST(CapacitySummary, DatasheetStepTimesAndNoFitAreSaid) {
  Scenario s = small_users();
  s.slo.tpot_ms = 20;
  s.hardware.gpu = "w7900";  // AMD with GDDR: no published profile, nothing to transfer from: datasheet
  const CapacitySummary datasheet = summarize_capacity(capacity(s));
  EXPECT_EQ(datasheet.source_kind, "datasheet");
  ASSERT_FALSE(datasheet.warnings.empty());
  EXPECT_NE(datasheet.warnings.back().find("datasheet"), std::string::npos);

  s.model.id = "llama-3.1-70b";
  s.hardware.gpu = "l4";  // 141 GB of bf16 weights on 24 GB
  const CapacitySummary none = summarize_capacity(capacity(s));
  EXPECT_EQ(none.headline, "No load fits");
  EXPECT_NE(none.binding.find("weights"), std::string::npos) << none.binding;
  EXPECT_EQ(none.source_kind, "transferred");  // L4 takes the L40S profile
}

}  // namespace
}  // namespace kvplan::plan
