// The knee chart: KneeModel's rows from hand-made probes, the extra loads around an answer, the
// view's series against the model, and a real small capacity search whose probes straddle the
// point where the binding metric's p90 crosses its target.
#include <QAbstractItemModelTester>
#include <QChart>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QValueAxis>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "chart_util.h"
#include "knee_model.h"
#include "knee_view.h"
#include "small_scenario.h"
#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::gui {
namespace {

using Tester = QAbstractItemModelTester;

sim::CapacityProbe probe(double load, double ttft_p50, double tpot_p50, bool meets) {
  sim::CapacityProbe p;
  p.load = load;
  p.meets = meets;
  // Distinct percentiles per metric so a column mix-up shows.
  p.summary.ttft_ms = {0, ttft_p50, ttft_p50 * 2, ttft_p50 * 3, ttft_p50 * 4, ttft_p50 * 5};
  p.summary.tpot_ms = {0, tpot_p50, tpot_p50 + 1, tpot_p50 + 2, tpot_p50 + 3, tpot_p50 + 4};
  return p;
}

sim::Slo slo(double ttft_ms, double tpot_ms, double percentile = 90) {
  sim::Slo s;
  s.ttft_ms = ttft_ms;
  s.tpot_ms = tpot_ms;
  s.percentile = percentile;
  return s;
}

double cell(const KneeModel& m, int row, int column) { return m.index(row, column).data(Qt::EditRole).toDouble(); }

TEST(KneeModel, RowsAreSortedByLoadAndEachLoadOnce) {
  KneeModel m;
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  // The search's order (grow, then bisect), with 16 probed twice: the first probe of a load stays.
  std::vector<sim::CapacityProbe> probes = {probe(8, 100, 10, true), probe(16, 400, 30, false), probe(12, 200, 20, true),
                                            probe(16, 999, 99, false), probe(14, 300, 25, false)};
  m.set_probes(probes, slo(2000, 24), 12, true, QStringLiteral("tpot"));
  ASSERT_EQ(m.rowCount(), 4);
  EXPECT_EQ(m.columnCount(), KneeModel::kColumnCount);
  const double loads[] = {8, 12, 14, 16};
  const double ttft_p50[] = {100, 200, 300, 400};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(cell(m, r, KneeModel::kLoadColumn), loads[r]);
    EXPECT_EQ(cell(m, r, KneeModel::kTtftP50Column), ttft_p50[r]);
    EXPECT_EQ(cell(m, r, KneeModel::kTtftMidColumn), ttft_p50[r] * 2);  // p90
    EXPECT_EQ(cell(m, r, KneeModel::kTtftP99Column), ttft_p50[r] * 4);
  }
  EXPECT_EQ(cell(m, 3, KneeModel::kTpotP50Column), 30);
  EXPECT_EQ(cell(m, 3, KneeModel::kTpotMidColumn), 31);
  EXPECT_EQ(cell(m, 3, KneeModel::kTpotP99Column), 33);
  EXPECT_EQ(m.index(1, KneeModel::kMeetsColumn).data().toString(), "yes");
  EXPECT_EQ(m.index(2, KneeModel::kMeetsColumn).data().toString(), "no");
  EXPECT_EQ(m.index(0, KneeModel::kLoadColumn).data().toString(), "8");
  EXPECT_EQ(m.headerData(KneeModel::kLoadColumn, Qt::Horizontal).toString(), "Users");
  EXPECT_EQ(m.headerData(KneeModel::kTpotMidColumn, Qt::Horizontal).toString(), "TPOT p90 (ms)");
  EXPECT_EQ(m.capacity(), 12);
  EXPECT_EQ(m.binding(), "tpot");

  // An SLO judged at p95: the middle line is p95, the percentile the run was judged on.
  m.set_probes(probes, slo(2000, 24, 95), 12, false);
  EXPECT_EQ(cell(m, 0, KneeModel::kTtftMidColumn), 300);
  EXPECT_EQ(m.headerData(KneeModel::kTtftMidColumn, Qt::Horizontal).toString(), "TTFT p95 (ms)");
  EXPECT_EQ(m.headerData(KneeModel::kLoadColumn, Qt::Horizontal).toString(), "Load (req/s)");

  m.clear();
  EXPECT_EQ(m.rowCount(), 0);
  EXPECT_EQ(m.capacity(), 0);
}

plan::CapacityAnswer answer(bool users, double best, double first_failing, std::vector<double> loads) {
  plan::CapacityAnswer a;
  a.users = users;
  a.search.best = best;
  a.search.first_failing = first_failing;
  for (double l : loads) a.search.probes.push_back(probe(l, 1, 1, l <= best));
  return a;
}

TEST(KneeExtraLoads, AFixedGeometricSetAroundTheAnswerSkippingProbedLoads) {
  // Users: 0.25x 10 = 2.5 rounds to 3; 2x = 20 was probed, so it is skipped; 1.5x = 15 is 6% from 16.
  EXPECT_EQ(knee_extra_loads(answer(true, 10, 11, {8, 16, 12, 10, 11, 20})), (std::vector<double>{3, 5, 15, 30}));
  // A rate: 0.5x = 1 and 2x = 4 were probed (within 2%: 3.95 counts as 4).
  EXPECT_EQ(knee_extra_loads(answer(false, 2, 2.1, {1, 2, 3.95, 2.8, 2.1})), (std::vector<double>{0.5, 3, 6}));
  // Small users: 0.25x 4 and 0.5x 4 round to 1 and 2; one user never becomes zero.
  EXPECT_EQ(knee_extra_loads(answer(true, 4, 5, {4, 8, 6, 5})), (std::vector<double>{1, 2, 12}));
  // Nothing met: around the smallest failing load (whole users, at least 1, none twice).
  EXPECT_EQ(knee_extra_loads(answer(true, 0, 2, {8, 4, 2})), (std::vector<double>{1, 3, 6}));
  // Unbounded: nothing above the search limit.
  plan::CapacityAnswer unbounded = answer(false, 100, 0, {1, 100});
  unbounded.search.unbounded = true;
  EXPECT_EQ(knee_extra_loads(unbounded), (std::vector<double>{25, 50}));
  // Nothing simulated (the weights do not fit): nothing to add.
  EXPECT_TRUE(knee_extra_loads(answer(true, 0, 0, {})).empty());
}

TEST(KneeView, SeriesHoldTheModelsPointsAndTheLinesSitAtTheTargetAndTheCapacity) {
  KneeModel m;
  KneeView view(&m);
  EXPECT_TRUE(view.showing_placeholder());
  EXPECT_TRUE(view.placeholder().contains("run the capacity search")) << view.placeholder().toStdString();

  m.set_probes({probe(2, 100, 10, true), probe(4, 200, 12, true), probe(8, 3000, 40, false)}, slo(0, 20), 4, true,
               QStringLiteral("tpot"));
  EXPECT_FALSE(view.showing_placeholder());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(view.ttft().lines[i]->points(), model_points(m, KneeModel::kLoadColumn, KneeModel::kTtftP50Column + i, 400));
    EXPECT_EQ(view.tpot().lines[i]->points(), model_points(m, KneeModel::kLoadColumn, KneeModel::kTpotP50Column + i, 400));
  }
  EXPECT_EQ(view.tpot().lines[1]->name(), "p90");
  // No TTFT target: no line. TPOT's target is a horizontal line at 20 ms over the loads.
  EXPECT_TRUE(view.ttft().slo->points().isEmpty());
  const QList<QPointF> target = view.tpot().slo->points();
  ASSERT_EQ(target.size(), 2);
  EXPECT_EQ(target[0].y(), 20);
  EXPECT_EQ(target[1].y(), 20);
  EXPECT_LE(target[0].x(), 2);
  EXPECT_GE(target[1].x(), 8);
  // The capacity: a vertical line at 4 users on both panels, spanning the y axis.
  for (const KneeView::Panel* p : {&view.ttft(), &view.tpot()}) {
    const QList<QPointF> cap = p->capacity->points();
    ASSERT_EQ(cap.size(), 2);
    EXPECT_EQ(cap[0].x(), 4);
    EXPECT_EQ(cap[1].x(), 4);
    EXPECT_LE(p->y->min(), cap[0].y());
    EXPECT_GE(p->y->max(), cap[1].y());
    EXPECT_EQ(p->capacity->pointLabelsFormat(), "capacity: 4 users");
  }
  // The y axis covers every point and the target.
  EXPECT_LE(view.tpot().y->min(), 10);
  EXPECT_GE(view.tpot().y->max(), 43);
  EXPECT_TRUE(view.tpot().chart->title().contains("binds")) << view.tpot().chart->title().toStdString();
  EXPECT_FALSE(view.ttft().chart->title().contains("binds"));
  EXPECT_TRUE(view.caption().contains("p90 TPOT ≤ 20 ms")) << view.caption().toStdString();

  // Nothing met: no capacity line; a cleared model shows the placeholder again.
  m.set_probes({probe(1, 100, 30, false)}, slo(0, 20), 0, true);
  EXPECT_TRUE(view.tpot().capacity->points().isEmpty());
  m.clear();
  EXPECT_TRUE(view.showing_placeholder());

  // A rate: loads in requests per second on the axis and the capacity's label.
  m.set_probes({probe(0.5, 100, 10, true), probe(1, 200, 12, true), probe(2, 3000, 40, false)}, slo(1000, 0), 1.3,
               false, QStringLiteral("ttft"));
  EXPECT_EQ(view.ttft().capacity->pointLabelsFormat(), "capacity: 1.3 req/s");
  EXPECT_EQ(view.ttft().x->titleText(), "load (requests/s)");
  EXPECT_TRUE(view.ttft().chart->title().contains("binds"));
  EXPECT_TRUE(view.tpot().slo->points().isEmpty());
}

TEST(KneeView, AnAnswerWithNothingSimulatedSaysWhy) {
  KneeModel m;
  KneeView view(&m);
  plan::CapacityAnswer a;  // no probes: what find_capacity answers when the weights leave no KV budget
  a.users = true;
  a.config.slo = slo(0, 50);
  a.plan.fits = false;
  a.binding.kind = "weights";
  m.set_answer(a, {});
  EXPECT_TRUE(view.showing_placeholder());
  EXPECT_EQ(view.placeholder(), "No load was simulated for this answer.");
  EXPECT_EQ(view.caption(), m.summary());
  EXPECT_TRUE(view.caption().startsWith(QString::fromStdString(plan::summarize_capacity(a).headline)));
}

TEST(KneeProbes, ARealSearchAndItsExtraLoadsStraddleTheBindingCrossing) {
  // TPOT <= 12 ms binds (tests/plan/capacity_test.cpp TightTpotBinds).
  const plan::CapacityAnswer a = plan::find_capacity(testing::small_users(12), testing::quick_search());
  ASSERT_GT(a.search.best, 0);
  ASSERT_EQ(a.binding.kind, "tpot") << a.binding.why;
  const std::vector<double> extra = knee_extra_loads(a);
  ASSERT_FALSE(extra.empty());
  EXPECT_LE(extra.size(), 6u);
  const std::vector<sim::CapacityProbe> more = run_knee_probes(a, extra, [] { return false; });
  ASSERT_EQ(more.size(), extra.size());
  for (size_t i = 0; i < extra.size(); ++i) EXPECT_EQ(more[i].load, extra[i]);

  KneeModel m;
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  m.set_answer(a, more);
  EXPECT_EQ(m.capacity(), a.search.best);
  EXPECT_EQ(m.rowCount(), static_cast<int>(a.search.probes.size() + extra.size()));  // extras are new loads
  int below = 0, above = 0;
  for (const KneeModel::Row& row : m.rows()) {
    if (row.load <= a.search.best) {
      EXPECT_LE(row.tpot_ms[1], 12) << "load " << row.load;  // p90 meets at and below the answer
      EXPECT_TRUE(row.meets) << "load " << row.load;
      ++below;
    } else if (row.tpot_ms[1] > 12) {
      ++above;
    }
  }
  EXPECT_GE(below, 3);  // 0.25x, 0.5x and the answer itself at least
  EXPECT_GE(above, 3);  // the search's first failing load and the extras above it
  // The highest load fails p50 too, so every percentile's crossing is inside the chart.
  EXPECT_GT(m.rows().back().tpot_ms[0], 12);

  KneeView view(&m);
  if (const char* dir = std::getenv("KVPLAN_SCREENSHOT_DIR")) {  // to look at by eye; not a check
    view.resize(1100, 700);
    view.grab().save(QString::fromLocal8Bit(dir) + "/knee.png");
  }
  EXPECT_EQ(view.tpot().capacity->points()[0].x(), a.search.best);
  const plan::CapacitySummary summary = plan::summarize_capacity(a);
  EXPECT_TRUE(view.caption().startsWith(QString::fromStdString(summary.headline + " " + summary.slo)))
      << view.caption().toStdString();

  // A stop between probes abandons the rest.
  EXPECT_THROW(run_knee_probes(a, extra, [] { return true; }), sim::SearchStopped);
}

}  // namespace
}  // namespace kvplan::gui
