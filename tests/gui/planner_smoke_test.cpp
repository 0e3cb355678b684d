// The planner window on the offscreen platform: open it, change an input, run a small simulation
// on the worker thread, cancel a long one, save and reload the scenario, and export a report.
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>

#include <gtest/gtest.h>

#include "kvplan/core/error.h"
#include "main_window.h"

namespace kvplan::gui {
namespace {

void small_workload(InputsModel& in, const char* requests) {
  ASSERT_TRUE(in.set_value("max-model-len", "4096"));
  ASSERT_TRUE(in.set_value("rate", "20"));
  ASSERT_TRUE(in.set_value("num-requests", requests));
  ASSERT_TRUE(in.set_value("prompt-lengths", "fixed:256"));
  ASSERT_TRUE(in.set_value("output-lengths", "fixed:32"));
  ASSERT_TRUE(in.set_value("slo-ttft-ms", "500"));
}

TEST(PlannerSmoke, OpenChangeRunExport) {
  MainWindow w;
  w.show();
  QApplication::processEvents();
  ASSERT_EQ(w.view_names().size(), 10);
  ASSERT_EQ(w.comparison_model().rowCount(), 5);
  const qlonglong before = w.capacity_model().index(199, 1).data().toLongLong();

  // An input change recomputes every analytic view at once.
  ASSERT_TRUE(w.inputs().set_value("gpu-memory-utilization", "0.5"));
  const qlonglong after = w.capacity_model().index(199, 1).data().toLongLong();
  EXPECT_LT(after, before);
  // How long the update took is a benchmark (docs/benchmarks.md "Planner redraw time"), not a test.
  // An invalid one leaves a message and does not crash the views.
  EXPECT_FALSE(w.inputs().set_value("block-size", "0"));
  EXPECT_FALSE(w.inputs().message("block-size").isEmpty());
  EXPECT_EQ(w.memory_model().rowCount(), 0);
  EXPECT_FALSE(w.start_simulation());
  ASSERT_TRUE(w.inputs().set_value("block-size", "16"));

  small_workload(w.inputs(), "40");
  QSignalSpy finished(&w.runner(), &SimulationRunner::finished);
  QSignalSpy progress(&w.runner(), &SimulationRunner::progress);
  ASSERT_TRUE(w.start_simulation({0.5, 1.0}));
  EXPECT_FALSE(w.start_simulation());  // one at a time
  ASSERT_TRUE(w.runner().wait_for_idle(120'000));
  ASSERT_EQ(finished.count(), 1);
  EXPECT_GT(progress.count(), 0);
  EXPECT_EQ(w.runner().outcome()->result.summary.finished, 40);
  EXPECT_GT(w.timeseries_model().rowCount(), 0);
  EXPECT_EQ(w.cdf_model().rowCount(), 40);
  EXPECT_EQ(w.sweep_model().rowCount(), 2);
  for (int i = 0; i < w.view_names().size(); ++i) {
    w.show_view(i);
    QApplication::processEvents();
    EXPECT_FALSE(w.view_widget(i)->grab().isNull()) << i;
  }

  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString scenario = dir.filePath("s.json");
  w.save_scenario(scenario);
  MainWindow reopened;
  reopened.load_scenario(scenario);
  EXPECT_EQ(reopened.inputs().values(), w.inputs().values());
  EXPECT_EQ(reopened.inputs().simulation_values(), w.inputs().simulation_values());
  EXPECT_EQ(reopened.schemes().size(), 5u);
  EXPECT_EQ(reopened.capacity_model().index(199, 1).data().toLongLong(),
            w.capacity_model().index(199, 1).data().toLongLong());
  // The scheme editor: a malformed list is refused and leaves the schemes; a good one replaces them.
  EXPECT_FALSE(reopened.set_schemes_text("kv-cache-dtype"));
  EXPECT_EQ(reopened.comparison_model().rowCount(), 5);
  EXPECT_TRUE(reopened.set_schemes_text("inputs; kv-cache-dtype=fp8"));
  EXPECT_EQ(reopened.comparison_model().rowCount(), 2);
  EXPECT_EQ(reopened.capacity_model().columnCount(), 3);

  const QString base = dir.filePath("report");
  w.export_report(base);
  for (const char* ext : {".pdf", ".html", ".csv", ".json"}) {
    QFileInfo f(base + ext);
    EXPECT_TRUE(f.exists()) << ext;
    EXPECT_GT(f.size(), 0) << ext;
  }
}

TEST(PlannerSmoke, UnknownArchitectureIsRefusedOrFlaggedInTheBanner) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("mystery.json"));
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(R"({"model_type": "mystery", "hidden_size": 1024, "num_attention_heads": 8, "intermediate_size": 4096,
              "num_hidden_layers": 4, "vocab_size": 32000})");
  f.close();
  MainWindow w;
  w.show();
  QApplication::processEvents();
  EXPECT_TRUE(w.warning_text().isEmpty());
  // refused: the field says why, naming the model_type
  EXPECT_FALSE(w.inputs().set_value("model", path.toStdString()));
  EXPECT_TRUE(w.inputs().message("model").contains(QStringLiteral("model_type=mystery")));
  // opted in: answered, and the banner says the answer is a generic reading
  ASSERT_TRUE(w.inputs().set_value("allow-unknown-architecture", "true"));
  ASSERT_TRUE(w.inputs().set_value("model", path.toStdString()));
  EXPECT_TRUE(w.warning_text().contains(QStringLiteral("not a supported architecture"))) << w.warning_text().toStdString();
  ASSERT_TRUE(w.inputs().set_value("model", "llama-3.1-8b"));
  EXPECT_TRUE(w.warning_text().isEmpty());
}

TEST(PlannerSmoke, CancelEndsALongRunAndTheWindowStaysResponsive) {
  MainWindow w;
  small_workload(w.inputs(), "2000000");
  QSignalSpy cancelled(&w.runner(), &SimulationRunner::cancelled);
  ASSERT_TRUE(w.start_simulation({1.0}));
  // The GUI thread keeps turning while the worker simulates.
  for (int i = 0; i < 10; ++i) {
    QApplication::processEvents();
    QThread::msleep(5);
  }
  EXPECT_TRUE(w.runner().running());
  w.runner().cancel();
  ASSERT_TRUE(w.runner().wait_for_idle(30'000));
  EXPECT_EQ(cancelled.count(), 1);
  EXPECT_TRUE(w.runner().outcome()->cancelled);
  EXPECT_TRUE(w.start_simulation({1.0}));  // can run again; the destructor cancels this one
}

// An input whose text fails its own rule holds its default in the typed scenario: saving (or
// exporting) would write that default without a word. Both refuse, naming the field, the text and
// the rule, and write nothing; once the text is fixed the file has the typed value.
TEST(PlannerSmoke, SaveAndExportRefuseAnInvalidInputAndNameIt) {
  MainWindow w;
  ASSERT_TRUE(w.inputs().set_value("max-num-seqs", "64"));
  EXPECT_FALSE(w.inputs().set_value("max-num-seqs", "lots"));
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString path = dir.filePath("s.json");
  try {
    w.save_scenario(path);
    ADD_FAILURE() << "saved a scenario with an invalid input";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("not written"), std::string::npos) << m;
    EXPECT_NE(m.find("--max-num-seqs=lots"), std::string::npos) << m;
    EXPECT_NE(m.find("must be"), std::string::npos) << m;  // the rule
  }
  EXPECT_FALSE(QFileInfo::exists(path));
  EXPECT_THROW(w.export_report(dir.filePath("r")), ConfigError);
  EXPECT_FALSE(QFileInfo::exists(dir.filePath("r.json")));

  ASSERT_TRUE(w.inputs().set_value("max-num-seqs", "32"));
  w.save_scenario(path);
  MainWindow reopened;
  reopened.load_scenario(path);
  EXPECT_EQ(reopened.inputs().value("max-num-seqs"), "32");
}

}  // namespace
}  // namespace kvplan::gui
