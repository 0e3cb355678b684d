// The answer at the top of the window, driven through the real window as a user would: inputs typed
// into the form, the provisional memory figure at once, the capacity search in the background, and
// the headline equal to what `kvplan capacity` prints for the same scenario.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QProcess>
#include <QSpinBox>
#include <QTest>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "inputs_form.h"
#include "main_window.h"

namespace kvplan::gui {
namespace {

// Sets one input through its editor in the form, the way a user would (type + Return, or the box).
void enter(MainWindow& w, const char* flag, const QString& text) {
  QWidget* editor = w.inputs_form().editor(flag);
  ASSERT_NE(editor, nullptr) << flag;
  QLineEdit* line = qobject_cast<QLineEdit*>(editor);
  if (auto* combo = qobject_cast<QComboBox*>(editor)) line = combo->lineEdit();
  if (line != nullptr) {
    line->selectAll();
    QTest::keyClick(line, Qt::Key_Delete);
    QTest::keyClicks(line, text);
    QTest::keyClick(line, Qt::Key_Return);
  } else if (auto* spin = qobject_cast<QSpinBox*>(editor)) {
    spin->setValue(text.toInt());
  } else if (auto* dspin = qobject_cast<QDoubleSpinBox*>(editor)) {
    dspin->setValue(text.toDouble());
  } else if (auto* check = qobject_cast<QCheckBox*>(editor)) {
    check->setChecked(text == QStringLiteral("true"));
  } else {
    FAIL() << flag << ": an editor this test does not know how to use";
  }
  EXPECT_EQ(QString::fromStdString(w.inputs().value(flag)), text) << flag;
}

// `kvplan capacity ... --json`: the largest number of users, as the command line answers it.
double cli_capacity(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(KVPLAN_CLI_PATH), QStringList{QStringLiteral("capacity")} + args + QStringList{QStringLiteral("--json")});
  EXPECT_TRUE(p.waitForFinished(600'000));
  EXPECT_EQ(p.exitCode(), 0) << p.readAllStandardError().toStdString();
  return nlohmann::json::parse(p.readAllStandardOutput().toStdString()).at("best").get<double>();
}

TEST(PlannerAnswer, HeadlineEqualsKvplanCapacityForTheSameScenario) {
  MainWindow w;
  w.show();
  QApplication::processEvents();
  // Llama-3.1-70B on 4 x H100, fp8 KV, chat users, p90 TTFT <= 2 s and TPOT <= 50 ms.
  enter(w, "model", QStringLiteral("llama-3.1-70b"));
  enter(w, "gpu", QStringLiteral("h100-sxm"));
  enter(w, "tensor-parallel-size", QStringLiteral("4"));
  enter(w, "kv-cache-dtype", QStringLiteral("fp8"));
  enter(w, "workload", QStringLiteral("chat"));
  enter(w, "slo-ttft-ms", QStringLiteral("2000"));
  enter(w, "slo-tpot-ms", QStringLiteral("50"));
  ASSERT_TRUE(w.inputs().valid()) << w.inputs().first_error().toStdString();
  // At once: a provisional memory figure, never a figure of older inputs.
  EXPECT_EQ(w.answer_panel().state(), AnswerPanel::State::kProvisional);
  EXPECT_TRUE(w.answer_panel().headline().startsWith(QStringLiteral("≤ "))) << w.answer_panel().headline().toStdString();
  ASSERT_TRUE(w.wait_for_answer(600'000));
  ASSERT_EQ(w.answer_panel().state(), AnswerPanel::State::kCurrent);

  const double best = cli_capacity({"--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tensor-parallel-size", "4",
                                    "--kv-cache-dtype", "fp8", "--workload", "chat", "--slo-ttft-ms", "2000",
                                    "--slo-tpot-ms", "50"});
  ASSERT_GT(best, 1);
  EXPECT_EQ(w.answer_panel().headline(), QStringLiteral("%1 concurrent users").arg(best));
  const QString details = w.answer_panel().details();
  EXPECT_TRUE(details.contains(QStringLiteral("meet p90 TTFT ≤ 2 s and p90 TPOT ≤ 50 ms"))) << details.toStdString();
  EXPECT_TRUE(details.contains(QStringLiteral("binding: "))) << details.toStdString();
  EXPECT_TRUE(details.contains(QStringLiteral("$"))) << details.toStdString();
  EXPECT_TRUE(details.contains(QStringLiteral("validation p90 error"))) << details.toStdString();
  // The knee view has the same answer, and loads on both sides of it.
  const KneeModel& knee = w.knee_model();
  EXPECT_EQ(knee.capacity(), best);
  ASSERT_FALSE(knee.empty());
  EXPECT_LT(knee.rows().front().load, best);
  EXPECT_GT(knee.rows().back().load, best);

  // An input change takes the answer back to provisional at once: the old figure is not current.
  enter(w, "slo-tpot-ms", QStringLiteral("40"));
  EXPECT_EQ(w.answer_panel().state(), AnswerPanel::State::kProvisional);
  EXPECT_FALSE(w.capacity_answer().has_value());
  ASSERT_TRUE(w.wait_for_answer(600'000));
  EXPECT_EQ(w.answer_panel().state(), AnswerPanel::State::kCurrent);
  ASSERT_TRUE(w.capacity_answer().has_value());
  EXPECT_LE(w.capacity_answer()->search.best, best);  // a tighter target serves no more users
}

TEST(PlannerAnswer, InvalidInputsShowTheFieldsMessageAndNoFigure) {
  MainWindow w;
  QApplication::processEvents();
  EXPECT_FALSE(w.inputs().set_value("gpu-memory-utilization", "1.5"));
  EXPECT_EQ(w.answer_panel().state(), AnswerPanel::State::kInvalid);
  EXPECT_TRUE(w.answer_panel().details().contains(w.inputs().message("gpu-memory-utilization")))
      << w.answer_panel().details().toStdString();
  EXPECT_FALSE(w.capacity_job().running());
  ASSERT_TRUE(w.inputs().set_value("gpu-memory-utilization", "0.9"));
  EXPECT_EQ(w.answer_panel().state(), AnswerPanel::State::kProvisional);
}

TEST(PlannerAnswer, BannerWarnsOfLossySchemesAndDatasheetStepTimes) {
  MainWindow w;
  QApplication::processEvents();
  EXPECT_TRUE(w.warning_text().isEmpty()) << w.warning_text().toStdString();
  ASSERT_TRUE(w.inputs().set_value("kv-cache-dtype", "int4"));
  EXPECT_TRUE(w.warning_text().contains(QStringLiteral("lossy"))) << w.warning_text().toStdString();
  EXPECT_TRUE(w.warning_text().contains(QStringLiteral("vLLM does not implement int4 KV cache"))) << w.warning_text().toStdString();
  ASSERT_TRUE(w.inputs().set_value("kv-cache-dtype", "auto"));
  ASSERT_TRUE(w.inputs().set_value("gpu", "w7900"));  // AMD with GDDR, no published profile: datasheet step times
  EXPECT_TRUE(w.warning_text().contains(QStringLiteral("datasheet"))) << w.warning_text().toStdString();
  ASSERT_TRUE(w.inputs().set_value("gpu", "h100-sxm"));
  EXPECT_TRUE(w.warning_text().isEmpty()) << w.warning_text().toStdString();
}

}  // namespace
}  // namespace kvplan::gui
