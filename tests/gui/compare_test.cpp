// The Compare view: pinned scenarios beside the current one, their answers, the highlighted
// differences and per-GPU KV bytes per token; pinned capacity searches in the background.
#include <QAbstractItemModelTester>
#include <QBrush>
#include <QFont>
#include <QTableView>

#include <gtest/gtest.h>

#include <cstdlib>

#include "compare_view.h"
#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/settings.h"
#include "small_scenario.h"

namespace kvplan::gui {
namespace {

using Tester = QAbstractItemModelTester;

constexpr int kWaitMs = 300000;  // a bound for a hung search, not a timing check

plan::Scenario small_users() { return testing::small_users(12); }
plan::CapacityRequest quick() { return testing::quick_search(); }

bool bold(const CompareModel& m, int row, int column) {
  const QVariant f = m.index(row, column).data(Qt::FontRole);
  return f.isValid() && f.value<QFont>().bold();
}
bool tinted(const CompareModel& m, int row, int column) {
  return m.index(row, column).data(Qt::BackgroundRole).isValid();
}

TEST(CompareModel, CellsThatDifferFromCurrentAreHighlightedAndEqualOnesAreNot) {
  CompareView view;
  CompareModel& m = view.model();
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  const plan::Scenario s = small_users();
  view.set_current(s);
  view.set_current_capacity(plan::find_capacity(s, quick()));
  ASSERT_TRUE(view.pin_current());  // takes the current answer: nothing to search
  EXPECT_FALSE(view.job().running());
  ASSERT_EQ(m.columnCount(), 2);
  EXPECT_EQ(m.headerData(1, Qt::Horizontal).toString(), "Pinned 1");
  for (int row = 0; row < CompareModel::kRowCount; ++row) {
    EXPECT_FALSE(m.differs(row, 1)) << m.headerData(row, Qt::Vertical).toString().toStdString();
    if (row != CompareModel::kDiffersRow) {
      EXPECT_EQ(m.text(row, 1), m.text(row, 0));
    }
  }
  EXPECT_EQ(m.text(CompareModel::kDiffersRow, 1), "nothing");

  view.set_current(plan::with_values(s, {{"kv-cache-dtype", "fp8"}}));
  for (int row : {CompareModel::kKvCacheRow, CompareModel::kDiffersRow, CompareModel::kKvTokensRow,
                  CompareModel::kKvBytesPerTokenRow, CompareModel::kRequestsAtMaxLenRow}) {
    const std::string name = m.headerData(row, Qt::Vertical).toString().toStdString();
    EXPECT_TRUE(m.differs(row, 1)) << name;
    EXPECT_TRUE(bold(m, row, 1)) << name;
    EXPECT_TRUE(tinted(m, row, 1)) << name;
    EXPECT_FALSE(bold(m, row, 0)) << name;  // the reference itself is never marked
  }
  for (int row : {CompareModel::kModelRow, CompareModel::kGpuRow, CompareModel::kEngineRow, CompareModel::kWorkloadRow,
                  CompareModel::kSloRow, CompareModel::kWeightsRow}) {
    const std::string name = m.headerData(row, Qt::Vertical).toString().toStdString();
    EXPECT_FALSE(m.differs(row, 1)) << name;
    EXPECT_FALSE(bold(m, row, 1)) << name;
    EXPECT_FALSE(tinted(m, row, 1)) << name;
  }
  EXPECT_TRUE(m.text(CompareModel::kDiffersRow, 1).startsWith("kv-cache-dtype=")) << m.text(CompareModel::kDiffersRow, 1).toStdString();
  // The current answer is searched again by the window: "searching…", not the old figure, and not
  // marked as a difference while unknown.
  EXPECT_EQ(m.text(CompareModel::kHeadlineRow, 0), "searching…");
  EXPECT_FALSE(m.differs(CompareModel::kHeadlineRow, 1));
  EXPECT_EQ(m.text(CompareModel::kKvBytesPerTokenRow, 0), "65,536 B");  // fp8: half of bf16's 131,072

  // The window's search failed: the answer rows say why, and are not marked as differences.
  view.set_current_capacity_failed(QStringLiteral("capacity: give at least one SLO target"));
  EXPECT_EQ(m.text(CompareModel::kHeadlineRow, 0), "capacity: give at least one SLO target");
  EXPECT_FALSE(m.differs(CompareModel::kHeadlineRow, 1));
}

TEST(CompareModel, KvBytesPerTokenIsPerGpuAndHalvesWhenTensorParallelDoubles) {
  CompareView view;
  CompareModel& m = view.model();
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  plan::Scenario s;  // Llama-3.1-8B bf16: 2 x 8 KV heads x 128 x 2 B x 32 layers = 131,072 B/token
  view.set_current(s);
  EXPECT_EQ(m.index(CompareModel::kKvBytesPerTokenRow, 0).data(Qt::EditRole).toDouble(), 131072);
  EXPECT_EQ(m.text(CompareModel::kKvBytesPerTokenRow, 0), "131,072 B");
  ASSERT_TRUE(view.pin_current());
  s.hardware.tensor_parallel_size = 2;  // 4 KV heads per GPU
  view.set_current(s);
  EXPECT_EQ(m.index(CompareModel::kKvBytesPerTokenRow, 0).data(Qt::EditRole).toDouble(), 65536);
  EXPECT_EQ(m.text(CompareModel::kGpuRow, 0), "h100-sxm × TP2 × PP1");
  EXPECT_TRUE(m.differs(CompareModel::kKvBytesPerTokenRow, 1));
  EXPECT_TRUE(m.differs(CompareModel::kGpuRow, 1));
  EXPECT_EQ(m.text(CompareModel::kDiffersRow, 1), "tensor-parallel-size=1");

  // The default scenario has no SLO target: the pinned search fails and its column says why.
  ASSERT_TRUE(view.job().wait_for_idle(kWaitMs));
  EXPECT_EQ(m.column(1).capacity_state, CompareColumn::Capacity::kFailed);
  EXPECT_TRUE(m.text(CompareModel::kHeadlineRow, 1).contains("SLO")) << m.text(CompareModel::kHeadlineRow, 1).toStdString();

  // A scenario that does not resolve: the memory rows carry the rule, nothing crashes.
  s.hardware.tensor_parallel_size = 3;  // 32 query heads are not split 3 ways
  view.set_current(s);
  EXPECT_FALSE(m.column(0).memory_error.isEmpty());
  EXPECT_EQ(m.text(CompareModel::kKvBytesPerTokenRow, 0), m.column(0).memory_error);
}

TEST(CompareModel, APinnedColumnSaysSearchingUntilItsSearchAnswersLikeFindCapacity) {
  CompareView view;
  CompareModel& m = view.model();
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  m.set_capacity_request(quick());
  const plan::Scenario s = small_users();
  view.set_current(s);
  ASSERT_TRUE(view.pin_current());
  EXPECT_TRUE(view.job().running());
  for (int row = CompareModel::kHeadlineRow; row <= CompareModel::kSourceRow; ++row) {
    EXPECT_EQ(m.text(row, 1), "searching…");
  }
  ASSERT_TRUE(view.job().wait_for_idle(kWaitMs));
  const plan::CapacitySummary expected = plan::summarize_capacity(plan::find_capacity(s, quick()));
  ASSERT_EQ(m.column(1).capacity_state, CompareColumn::Capacity::kAnswered);
  EXPECT_EQ(m.text(CompareModel::kHeadlineRow, 1).toStdString(), expected.headline);
  EXPECT_EQ(m.text(CompareModel::kBindingRow, 1).toStdString(), expected.binding);
  EXPECT_EQ(m.index(CompareModel::kHeadlineRow, 1).data(Qt::EditRole).toDouble(), expected.load);
  EXPECT_TRUE(m.text(CompareModel::kTpotRow, 1).startsWith("p90 ")) << m.text(CompareModel::kTpotRow, 1).toStdString();
  EXPECT_EQ(m.text(CompareModel::kHeadlineRow, 0), "searching…");  // the window's, never given here

  if (const char* dir = std::getenv("KVPLAN_SCREENSHOT_DIR")) {  // to look at by eye; not a check
    view.set_current(plan::with_values(s, {{"kv-cache-dtype", "fp8"}, {"tensor-parallel-size", "2"}}));
    view.set_current_capacity(plan::find_capacity(m.column(0).scenario, quick()));
    view.resize(1300, 620);
    view.grab().save(QString::fromLocal8Bit(dir) + "/compare.png");
  }
}

TEST(CompareModel, AtMostFourColumnsAndRemovingStopsItsSearch) {
  CompareView view;
  CompareModel& m = view.model();
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  m.set_capacity_request(quick());
  view.set_current(small_users());
  EXPECT_TRUE(view.pin_current());
  EXPECT_TRUE(view.pin_current());
  EXPECT_TRUE(view.pin_current());
  EXPECT_FALSE(view.pin_current());
  EXPECT_EQ(m.columnCount(), CompareModel::kMaxColumns);
  EXPECT_FALSE(view.remove_pinned(0));  // Current stays
  EXPECT_FALSE(view.remove_pinned(4));
  // Column 1 is being searched; removing it moves the search on to the next one.
  ASSERT_TRUE(view.job().running());
  EXPECT_TRUE(view.remove_pinned(1));
  EXPECT_EQ(m.columnCount(), 3);
  EXPECT_TRUE(view.job().running());
  // The window's own answer for the same scenario answers the pinned copies still waiting.
  const plan::CapacityAnswer a = plan::find_capacity(small_users(), quick());
  view.set_current_capacity(a);
  EXPECT_FALSE(view.job().running());
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(m.column(c).capacity_state, CompareColumn::Capacity::kAnswered);
    EXPECT_EQ(m.text(CompareModel::kHeadlineRow, c).toStdString(), plan::summarize_capacity(a).headline);
  }
  EXPECT_TRUE(view.pin_current());
  EXPECT_TRUE(view.job().wait_for_idle(kWaitMs));
}

}  // namespace
}  // namespace kvplan::gui
