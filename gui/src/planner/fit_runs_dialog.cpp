// The "Fit to my benchmark runs..." action (fit_runs_dialog.h).
#include "fit_runs_dialog.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFontDatabase>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QVBoxLayout>

#include "kvplan/calibration/serving_run.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/runs_fit.h"

namespace kvplan::gui {

std::optional<std::string> fit_runs_dialog(QWidget* parent, const plan::Scenario& scenario) {
  const QStringList files = QFileDialog::getOpenFileNames(
      parent, QStringLiteral("Fit to my benchmark runs"), {},
      QStringLiteral("Benchmark results (*.json *.jsonl);;All files (*)"));
  if (files.isEmpty()) return std::nullopt;
  std::vector<std::string> paths;
  for (const QString& f : files) paths.push_back(f.toStdString());
  std::string text;
  nlohmann::json profile;
  try {
    const std::vector<calibration::ServingRun> runs = calibration::read_serving_runs(paths, {});
    const plan::RunsFit fit =
        plan::fit_runs(runs, plan::resolve_runs_deployment(runs, plan::runs_deployment_options(scenario)));
    text = plan::runs_fit_text(fit, /*explain=*/true);
    profile = plan::runs_profile_json(fit);
  } catch (const std::exception& e) {
    QMessageBox::warning(parent, QStringLiteral("Fit to my benchmark runs"), QString::fromUtf8(e.what()));
    return std::nullopt;
  }

  // The before/after table, in a fixed-width font (its columns line up).
  QDialog dialog(parent);
  dialog.setWindowTitle(QStringLiteral("Fitted to your runs"));
  auto* layout = new QVBoxLayout(&dialog);
  auto* table = new QPlainTextEdit(QString::fromStdString(text));
  table->setReadOnly(true);
  table->setLineWrapMode(QPlainTextEdit::NoWrap);
  table->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  table->setMinimumSize(1000, 500);
  layout->addWidget(table);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  layout->addWidget(buttons);
  if (dialog.exec() != QDialog::Accepted) return std::nullopt;

  const QString out = QFileDialog::getSaveFileName(parent, QStringLiteral("Save the fitted profile"),
                                                   QStringLiteral("fitted-to-my-runs.json"),
                                                   QStringLiteral("Profile (*.json)"));
  if (out.isEmpty()) return std::nullopt;
  try {
    AtomicFile file(out.toStdString());
    file.stream() << json_text_flat_arrays(profile) << "\n";
    file.commit();
  } catch (const std::exception& e) {
    QMessageBox::warning(parent, QStringLiteral("Save the fitted profile"), QString::fromUtf8(e.what()));
    return std::nullopt;
  }
  return out.toStdString();
}

}  // namespace kvplan::gui
