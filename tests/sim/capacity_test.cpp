// The capacity search (sim/capacity.h): its probe sequence by hand, and the run-ahead thread that
// must leave the probes, their order and the answer exactly as one thread finds them.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "kvplan/core/presets.h"
#include "kvplan/sim/capacity.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::sim {
namespace {

// A load meets the SLO up to `threshold`.
LoadProbe threshold_probe(double threshold) {
  return [threshold](double load, const RunHooks&) { return CapacityProbe{load, load <= threshold, {}}; };
}

std::vector<double> loads(const CapacitySearch& s) {
  std::vector<double> out;
  for (const CapacityProbe& p : s.probes) out.push_back(p.load);
  return out;
}

// The default run's search (start 64 users, 5%) against a threshold of 550 users: grow 64..1024,
// then bisect 768, 640, 576, 544, 560. Run ahead, the guesses "grow on", then "the lower half",
// are right for 128, 512, 640 and 544; 2048 (guessed while 1024 ran) is not needed.
TEST(CapacitySearch, RunAheadKeepsTheProbesAndSkipsTheRightGuesses) {
  CapacityOptions o;
  o.start = 64;
  o.relative_tolerance = 0.05;
  const std::vector<double> expected{64, 128, 256, 512, 1024, 768, 640, 576, 544, 560};
  const CapacitySearch one = search_capacity(threshold_probe(550), o, true);
  EXPECT_EQ(loads(one), expected);
  EXPECT_EQ(one.best, 544);
  EXPECT_EQ(one.first_failing, 560);
  EXPECT_EQ(one.run_ahead_unused, 0);

  o.run_ahead = true;
  std::mutex m;
  std::vector<double> main_thread;
  std::vector<double> ahead_thread;
  auto record = [&m](std::vector<double>& into, double threshold) {
    return LoadProbe([&m, &into, threshold](double load, const RunHooks&) {
      std::lock_guard<std::mutex> lock(m);
      into.push_back(load);
      return CapacityProbe{load, load <= threshold, {}};
    });
  };
  const CapacitySearch two = search_capacity(record(main_thread, 550), o, true, record(ahead_thread, 550));
  EXPECT_EQ(loads(two), expected);
  EXPECT_EQ(two.best, 544);
  EXPECT_EQ(two.first_failing, 560);
  EXPECT_EQ(main_thread, (std::vector<double>{64, 256, 1024, 768, 576, 560}));
  EXPECT_EQ(ahead_thread, (std::vector<double>{128, 512, 2048, 640, 544}));
  EXPECT_EQ(two.run_ahead_unused, 1);
}

// Every threshold, start and kind of load: the same probes, answer and bracket either way.
TEST(CapacitySearch, RunAheadChangesNothingButTheWallTime) {
  for (bool integer : {true, false}) {
    for (double start : {1.0, 8.0, 64.0, 300.0}) {
      for (double threshold = 0.5; threshold < 5000; threshold = threshold * 1.37 + 1) {
        CapacityOptions o;
        o.start = start;
        o.limit = 4096;
        const CapacitySearch a = search_capacity(threshold_probe(threshold), o, integer);
        o.run_ahead = true;
        const CapacitySearch b = search_capacity(threshold_probe(threshold), o, integer, threshold_probe(threshold));
        EXPECT_EQ(loads(a), loads(b)) << integer << " " << start << " " << threshold;
        EXPECT_EQ(a.best, b.best);
        EXPECT_EQ(a.first_failing, b.first_failing);
        EXPECT_EQ(a.unbounded, b.unbounded);
      }
    }
  }
}

// A probe run ahead and not needed is told to stop through its hooks.
TEST(CapacitySearch, AnUnneededProbeIsAbandoned) {
  CapacityOptions o;
  o.start = 1024;
  o.run_ahead = true;
  std::atomic<bool> told{false};
  // The guess made while 1024 runs (2048: growth) would run until stopped; the others answer.
  const LoadProbe slow_ahead = [&told](double load, const RunHooks& hooks) {
    if (load != 2048) return CapacityProbe{load, load <= 700, {}};
    while (!hooks.should_stop()) {
    }
    told = true;
    return CapacityProbe{load, false, {}};
  };
  // 1024 fails at once; the guess (2048, growth) is never needed: the search must not wait for it
  // to finish on its own, and must say it was unused.
  const CapacitySearch s = search_capacity(threshold_probe(700), o, true, slow_ahead);
  EXPECT_TRUE(told);
  EXPECT_GE(s.run_ahead_unused, 1);
  o.run_ahead = false;
  const CapacitySearch one = search_capacity(threshold_probe(700), o, true);
  EXPECT_EQ(loads(s), loads(one));
}

// Real simulations: find_max_users gives the same probes and summaries with the second thread.
TEST(CapacitySearch, SimulatedProbesAreTheSameRunAhead) {
  SimulationConfig c = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  c.workload.kind = WorkloadKind::kClosedLoop;
  c.workload.closed.num_users = 8;
  c.workload.closed.think_time_s = 2;
  c.workload.closed.first_prompt = LengthDistribution::lognormal(6.5, 1.0);
  c.workload.closed.output = LengthDistribution::lognormal(5.0, 0.8);
  c.workload.horizon_ns = 20'000'000'000;
  c.seed = 5;
  c.slo.ttft_ms = 300;
  CapacityOptions o;
  o.start = 16;
  o.relative_tolerance = 0.1;
  const CapacitySearch a = find_max_users(c, o);
  o.run_ahead = true;
  const CapacitySearch b = find_max_users(c, o);
  ASSERT_EQ(loads(a), loads(b));
  for (size_t i = 0; i < a.probes.size(); ++i) {
    EXPECT_EQ(a.probes[i].meets, b.probes[i].meets) << i;
    EXPECT_EQ(a.probes[i].summary.finished, b.probes[i].summary.finished) << i;
    EXPECT_EQ(a.probes[i].summary.ttft_ms.p90, b.probes[i].summary.ttft_ms.p90) << i;
    EXPECT_EQ(a.probes[i].summary.tpot_ms.p90, b.probes[i].summary.tpot_ms.p90) << i;
  }
  EXPECT_EQ(a.best, b.best);
  EXPECT_GT(a.probes.size(), 3u);
}

}  // namespace
}  // namespace kvplan::sim
