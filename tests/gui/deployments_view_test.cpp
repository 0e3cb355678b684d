// The Deployments view on the offscreen platform: its front is plan::search_deployments's for the
// same search, the table has one row per front point, clicking a point (chart or table) asks to
// load that candidate's scenario, bad input shows the CLI's message, and a base changed while a
// search runs drops that search's answer.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "deployments_view.h"
#include "kvplan/plan/settings.h"
#include "kvplan/plan/simulate.h"
#include "../support/small_deployment.h"

namespace kvplan::gui {
namespace {

// tests/support/small_deployment.h's base: 3 GPUs x TP 1, 2 = 6 candidates, searched in about a second.
plan::Scenario small_base() { return test::small_deployment_base(); }

const std::vector<std::string> kGpus = {"l4", "l40s", "h100-sxm"};

void set_small_search(DeploymentsView& v, const plan::Scenario& base) {
  v.set_base(base);
  v.set_target_users(500);
  v.set_gpus(kGpus);
  v.set_max_gpus(2);
  v.set_exact_front(true);
}

plan::DeploymentPlan library_plan(const DeploymentsView& v, const plan::Scenario& base) {
  plan::DeploymentSearch q;
  q.base = base;
  q.target_users = 500;
  q.space.gpus = v.checked_gpus();
  q.space.max_gpus = 2;
  q.exact_front = true;
  return plan::search_deployments(q);
}

// Everything but the hardware the search varies, as setting texts.
plan::SettingValues without_hardware(plan::Scenario s, const plan::Scenario& base) {
  s.hardware = base.hardware;
  return plan::non_default_values(s);
}

TEST(DeploymentsView, FrontIsTheLibrarysAndTheTableHasOneRowPerPoint) {
  DeploymentsView v;
  v.resize(1200, 800);
  const plan::Scenario base = small_base();
  set_small_search(v, base);
  ASSERT_EQ(v.checked_gpus().size(), kGpus.size());
  QSignalSpy progress(&v.job(), &BackgroundJob::progress);
  ASSERT_TRUE(v.start_search()) << v.error_text().toStdString();
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  ASSERT_TRUE(v.plan().has_value()) << v.error_text().toStdString();
  EXPECT_TRUE(v.error_text().isEmpty());
  EXPECT_GT(progress.count(), 0);
  EXPECT_EQ(progress.back().at(0).toInt(), 100);

  const plan::DeploymentPlan& p = *v.plan();
  const plan::DeploymentPlan want = library_plan(v, base);
  ASSERT_FALSE(want.front.empty());
  ASSERT_EQ(p.front.size(), want.front.size());
  for (size_t k = 0; k < want.front.size(); ++k) {
    const plan::DeploymentCandidate& got = p.candidates[p.front[k]];
    const plan::DeploymentCandidate& w = want.candidates[want.front[k]];
    EXPECT_EQ(got.label, w.label);
    EXPECT_DOUBLE_EQ(got.replica_usd_per_hour(), w.replica_usd_per_hour());
    EXPECT_DOUBLE_EQ(got.usd_per_hour, w.usd_per_hour);
    EXPECT_DOUBLE_EQ(got.capacity, w.capacity);
  }
  ASSERT_TRUE(want.cheapest);
  EXPECT_EQ(p.candidates[*p.cheapest].label, want.candidates[*want.cheapest].label);

  // The table: one row per front point, the library's figures.
  DeploymentFrontModel& m = v.front_model();
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  ASSERT_EQ(m.rowCount(), static_cast<int>(want.front.size()));
  for (int r = 0; r < m.rowCount(); ++r) {
    const plan::DeploymentCandidate& w = want.candidates[want.front[static_cast<size_t>(r)]];
    EXPECT_EQ(m.index(r, DeploymentFrontModel::kLabelColumn).data().toString().toStdString(), w.label);
    EXPECT_EQ(m.index(r, DeploymentFrontModel::kGpusColumn).data().toLongLong(), w.gpus_per_replica);
    EXPECT_EQ(m.index(r, DeploymentFrontModel::kReplicasColumn).data().toLongLong(), w.replicas);
    EXPECT_DOUBLE_EQ(m.index(r, DeploymentFrontModel::kDeploymentUsdColumn).data(Qt::EditRole).toDouble(), w.usd_per_hour);
    EXPECT_DOUBLE_EQ(m.index(r, DeploymentFrontModel::kLoadColumn).data(Qt::EditRole).toDouble(), w.capacity);
    EXPECT_EQ(m.index(r, DeploymentFrontModel::kBindingColumn).data().toString().toStdString(), w.binding);
    EXPECT_EQ(m.index(r, DeploymentFrontModel::kStepTimesColumn).data().toString().toStdString(), w.step_time_kind);
  }

  // The chart: the front's points in front order, every other answered candidate faint, the cheapest marked.
  const DeploymentChartSeries& s = v.chart_series();
  ASSERT_NE(s.front, nullptr);
  ASSERT_EQ(s.front->count(), static_cast<int>(want.front.size()));
  for (int k = 0; k < s.front->count(); ++k) {
    const plan::DeploymentCandidate& w = want.candidates[want.front[static_cast<size_t>(k)]];
    EXPECT_DOUBLE_EQ(s.front->at(k).x(), w.capacity);
    EXPECT_DOUBLE_EQ(s.front->at(k).y(), w.replica_usd_per_hour());
  }
  size_t answered = 0;
  for (const plan::DeploymentCandidate& c : want.candidates) answered += c.capacity > 0 ? 1 : 0;
  EXPECT_EQ(static_cast<size_t>(s.others->count()), answered - want.front.size());
  ASSERT_EQ(s.cheapest->count(), 1);
  EXPECT_DOUBLE_EQ(s.cheapest->at(0).y(), want.candidates[*want.cheapest].replica_usd_per_hour());

  // The lines at the top are the CLI's: what the ranking rests on, then the cheapest.
  QString expected;
  for (const std::string& line : plan::deployment_cost_basis_lines(want)) expected += QString::fromStdString(line) + "\n";
  for (const std::string& line : plan::deployment_cheapest_lines(want)) expected += QString::fromStdString(line) + "\n";
  EXPECT_EQ(v.cheapest_text(), expected);

  v.show();
  QApplication::processEvents();
  const QPixmap shot = v.grab();
  EXPECT_FALSE(shot.isNull());
  if (const QByteArray png = qgetenv("KVPLAN_DEPLOYMENTS_PNG"); !png.isEmpty()) shot.save(QString::fromUtf8(png));
}

TEST(DeploymentsView, ClickingAPointLoadsThatCandidatesScenario) {
  DeploymentsView v;
  v.resize(1200, 800);
  const plan::Scenario base = small_base();
  set_small_search(v, base);
  ASSERT_TRUE(v.start_search());
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  ASSERT_TRUE(v.plan().has_value());
  ASSERT_GE(v.front_model().rowCount(), 2) << "the test needs two front points to tell them apart";
  std::vector<plan::Scenario> loaded;
  QObject::connect(&v, &DeploymentsView::load_requested, [&](const plan::Scenario& s) { loaded.push_back(s); });

  // A table row (or activate_front_point, which the row's click calls).
  const int last = v.front_model().rowCount() - 1;
  v.activate_front_point(last);
  ASSERT_EQ(loaded.size(), 1u);
  const plan::DeploymentCandidate& c = v.front_model().candidate(last);
  EXPECT_EQ(loaded[0].hardware.gpu, c.gpu);
  EXPECT_EQ(loaded[0].hardware.tensor_parallel_size, c.tensor_parallel);
  EXPECT_EQ(loaded[0].hardware.pipeline_parallel_size, c.pipeline_parallel);
  EXPECT_EQ(without_hardware(loaded[0], base), plan::non_default_values(base));

  // A click on the chart near point 0 picks point 0, not its neighbour.
  v.show();
  QApplication::processEvents();
  QScatterSeries* front = v.chart_series().front;
  const QPointF p0 = front->at(0);
  emit front->clicked(QPointF(p0.x() * 1.01, p0.y() * 1.01));
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[1].hardware.gpu, v.front_model().candidate(0).gpu);
  EXPECT_EQ(loaded[1].hardware.tensor_parallel_size, v.front_model().candidate(0).tensor_parallel);

  // A click on the table's first row.
  QTableView* table = v.table();
  const QRect row0 = table->visualRect(v.front_model().index(0, DeploymentFrontModel::kLabelColumn));
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, row0.center());
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded[2].hardware.gpu, v.front_model().candidate(0).gpu);
  EXPECT_EQ(table->selectionModel()->selectedRows().value(0).row(), 0);

  // A click on the cheapest's ring (drawn over its front point) loads the cheapest.
  const plan::DeploymentPlan& p = *v.plan();
  const auto on_front = std::find(p.front.begin(), p.front.end(), *p.cheapest);
  ASSERT_NE(on_front, p.front.end()) << "the test expects the cheapest on the front";
  emit v.chart_series().cheapest->clicked(v.chart_series().cheapest->at(0));
  ASSERT_EQ(loaded.size(), 4u);
  EXPECT_EQ(loaded[3].hardware.gpu, p.candidates[*p.cheapest].gpu);
  EXPECT_EQ(loaded[3].hardware.tensor_parallel_size, p.candidates[*p.cheapest].tensor_parallel);

  // Out of range: nothing.
  v.activate_front_point(v.front_model().rowCount());
  v.activate_front_point(-1);
  EXPECT_EQ(loaded.size(), 4u);

  // The loaded scenario, set back as the base, asks the same question: the answer stays.
  v.set_base(loaded[0]);
  EXPECT_TRUE(v.plan().has_value());
  EXPECT_EQ(v.front_model().rowCount(), static_cast<int>(v.plan()->front.size()));
}

// Datasheet step times (no measured or published timings behind the latency) are warned about in red,
// in the line at the top and in the table.
TEST(DeploymentsView, DatasheetStepTimesAreWarned) {
  DeploymentsView v;
  plan::Scenario base = small_base();
  plan::set_values(base, {{"profile", "datasheet"}});
  v.set_base(base);
  v.set_target_users(100);
  v.set_gpus({"h100-sxm"});
  v.set_max_gpus(1);
  ASSERT_TRUE(v.start_search()) << v.error_text().toStdString();
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  ASSERT_TRUE(v.plan().has_value()) << v.error_text().toStdString();
  ASSERT_EQ(v.front_model().rowCount(), 1);
  const QModelIndex kind = v.front_model().index(0, DeploymentFrontModel::kStepTimesColumn);
  EXPECT_EQ(kind.data().toString(), QStringLiteral("datasheet"));
  EXPECT_TRUE(kind.data(Qt::ForegroundRole).isValid());
  EXPECT_TRUE(v.cheapest_text().contains(QStringLiteral("WARNING: these step times are datasheet estimates")))
      << v.cheapest_text().toStdString();
  if (const QByteArray png = qgetenv("KVPLAN_DEPLOYMENTS_WARN_PNG"); !png.isEmpty()) {
    v.resize(1200, 700);
    v.show();
    QApplication::processEvents();
    v.grab().save(QString::fromUtf8(png));
  }

  // With published step times there is no warning.
  v.set_base(small_base());
  ASSERT_TRUE(v.start_search());
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  ASSERT_TRUE(v.plan().has_value());
  EXPECT_FALSE(v.cheapest_text().contains(QStringLiteral("WARNING")));
  EXPECT_FALSE(v.front_model().index(0, DeploymentFrontModel::kStepTimesColumn).data(Qt::ForegroundRole).isValid());
}

TEST(DeploymentsView, BadInputShowsTheClisMessage) {
  DeploymentsView v;
  plan::Scenario no_slo = small_base();
  plan::set_values(no_slo, {{"slo-ttft-ms", "0"}, {"slo-tpot-ms", "0"}});
  set_small_search(v, no_slo);
  EXPECT_FALSE(v.start_search());
  EXPECT_FALSE(v.job().running());
  EXPECT_EQ(v.error_text(), QStringLiteral("plan: give at least one SLO target (--slo-ttft-ms, --slo-tpot-ms, --slo-e2e-ms)"));

  v.set_base(small_base());
  v.set_target_users(2.5);
  EXPECT_FALSE(v.start_search());
  EXPECT_EQ(v.error_text(), QStringLiteral("--target-users=2.5 must be a whole number of users, at most 10,000,000"));

  v.set_target_users(500);
  v.set_gpus({});
  EXPECT_FALSE(v.start_search());
  EXPECT_TRUE(v.error_text().startsWith(QStringLiteral("GPU presets: none checked"))) << v.error_text().toStdString();
  EXPECT_FALSE(v.plan().has_value());

  // What only the search itself finds (an open-loop workload for a target in users) arrives from
  // the background job, with the CLI's message.
  plan::Scenario open_loop = small_base();
  plan::set_values(open_loop, {{"users", "0"}, {"rate", "5"}});
  v.set_base(open_loop);
  v.set_gpus({"h100-sxm"});
  v.set_max_gpus(1);
  ASSERT_TRUE(v.start_search());
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  EXPECT_TRUE(v.error_text().startsWith(QStringLiteral("--target-users: the workload is open loop"))) << v.error_text().toStdString();
  EXPECT_FALSE(v.plan().has_value());
  v.set_base(small_base());

  // Fixed, the message goes.
  ASSERT_TRUE(v.start_search());
  EXPECT_TRUE(v.error_text().isEmpty());
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  EXPECT_TRUE(v.plan().has_value());
}

TEST(DeploymentsView, ANewBaseWhileSearchingDropsTheOldAnswer) {
  DeploymentsView v;
  const plan::Scenario base = small_base();
  set_small_search(v, base);
  QSignalSpy finished(&v.job(), &BackgroundJob::finished);
  ASSERT_TRUE(v.start_search());
  // The search has not been delivered yet (that needs the event loop): a new base stops it.
  plan::Scenario tighter = base;
  plan::set_values(tighter, {{"slo-ttft-ms", "300"}});
  v.set_base(tighter);
  EXPECT_FALSE(v.job().running());
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  EXPECT_EQ(finished.count(), 0);
  EXPECT_FALSE(v.plan().has_value());
  EXPECT_EQ(v.front_model().rowCount(), 0);

  // Searched again, the answer is for the new base.
  ASSERT_TRUE(v.start_search());
  ASSERT_TRUE(v.job().wait_for_idle(120'000));
  ASSERT_TRUE(v.plan().has_value());
  EXPECT_EQ(finished.count(), 1);
  EXPECT_EQ(v.searched()->base.slo.ttft_ms, 300);
  EXPECT_EQ(v.plan()->slo, plan::simulation_config(tighter).slo.describe());

  // A base that changes the question after an answer clears it too (it no longer answers the inputs).
  v.set_base(base);
  EXPECT_FALSE(v.plan().has_value());
  EXPECT_EQ(v.front_model().rowCount(), 0);
}

// DeepSeek-R1 on its scenario's 8 x H200: the view's default GPU limit is the library's (0: 8, or
// what holds the model), so H100s are searched as TP 8 x PP 2; and with the limit lowered to 4
// the scenario's own 8 x H200 is still a candidate (issue 27 answered "4 x MI300X" only).
TEST(DeploymentsView, DefaultLimitIsThePlansAndTheScenariosDeploymentIsAlwaysSearched) {
  DeploymentsView v;
  plan::Scenario base;
  base.model.id = "deepseek-r1";
  base.hardware.gpu = "h200";
  base.hardware.tensor_parallel_size = 8;
  base.workload.users = 64;
  base.slo.ttft_ms = 2000;
  v.set_base(base);
  v.set_gpus({"h100-sxm", "h200", "mi300x"});
  plan::DeploymentSearch q = v.make_search();
  EXPECT_EQ(q.space.max_gpus, 0);
  auto labels = [](const plan::DeploymentSearch& search) {
    std::vector<std::string> out;
    for (const plan::DeploymentCandidate& c : plan::enumerate_candidates(search)) out.push_back(c.label);
    return out;
  };
  auto has = [](const std::vector<std::string>& l, const char* x) { return std::find(l.begin(), l.end(), x) != l.end(); };
  std::vector<std::string> l = labels(q);
  EXPECT_TRUE(has(l, "16 x h100-sxm, tp8 pp2"));
  EXPECT_TRUE(has(l, "8 x h200, tp8 pp1"));
  v.set_max_gpus(4);
  l = labels(v.make_search());
  EXPECT_TRUE(has(l, "8 x h200, tp8 pp1"));
  EXPECT_TRUE(has(l, "4 x mi300x, tp4 pp1"));
  EXPECT_FALSE(has(l, "16 x h100-sxm, tp8 pp2"));
}

}  // namespace
}  // namespace kvplan::gui
