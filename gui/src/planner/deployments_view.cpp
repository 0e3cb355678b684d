#include "deployments_view.h"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <memory>

#include "chart_util.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/settings.h"

namespace kvplan::gui {

namespace {

// Two bases ask the same question when they differ only in what the search itself varies (a
// candidate's scenario, loaded into the window, is such a base: its answer is still the one shown).
bool same_question(const plan::Scenario& a, plan::Scenario b) {
  b.hardware.gpu = a.hardware.gpu;
  b.hardware.tensor_parallel_size = a.hardware.tensor_parallel_size;
  b.hardware.pipeline_parallel_size = a.hardware.pipeline_parallel_size;
  b.hardware.replicas = a.hardware.replicas;
  return plan::non_default_values(a) == plan::non_default_values(b);
}

QString html_lines(const std::vector<std::string>& lines, const std::string& step_time_kind) {
  QString out;
  for (size_t k = 0; k < lines.size(); ++k) {
    QString line = QString::fromStdString(lines[k]).toHtmlEscaped();
    if (lines[k].rfind("cheapest deployment", 0) == 0 || lines[k].rfind("no candidate", 0) == 0) {
      line = QStringLiteral("<b>%1</b>").arg(line);
    }
    if (lines[k].rfind("step times: ", 0) == 0) {
      line = QStringLiteral("step times (<b>%1</b>): %2")
                 .arg(QString::fromStdString(step_time_kind).toHtmlEscaped(),
                      QString::fromStdString(lines[k].substr(12)).toHtmlEscaped());
    }
    if (lines[k].rfind("WARNING", 0) == 0 || lines[k].rfind("COST BASIS", 0) == 0) line = QStringLiteral("<span style='color:#b00000'><b>%1</b></span>").arg(line);
    out += (k == 0 ? QString() : QStringLiteral("<br>")) + line;
  }
  return out;
}

}  // namespace

DeploymentsView::DeploymentsView(QWidget* parent) : QWidget(parent) {
  users_ = new QSpinBox;
  users_->setRange(1, 10'000'000);
  users_->setGroupSeparatorShown(true);
  users_->setValue(static_cast<int>(target_users_));
  users_->setToolTip(QStringLiteral("--target-users: closed-loop users the deployment must serve under the SLO"));
  connect(users_, &QSpinBox::valueChanged, this, [this](int v) { target_users_ = v; });
  max_gpus_ = new QSpinBox;
  // 0 is the library's default (DeploymentSpace::max_gpus): 8, or per GPU the smallest split that
  // holds the model, so DeepSeek-R1 is still searched on H100s (TP 8 x PP 2).
  max_gpus_->setRange(0, 64);
  max_gpus_->setValue(0);
  max_gpus_->setSpecialValueText(QStringLiteral("auto: 8, or what holds the model"));
  max_gpus_->setToolTip(QStringLiteral(
      "--max-gpus: GPUs per replica (TP 1, 2, 4, 8, ... up to this). auto: 8, or on each GPU the smallest TP x PP "
      "whose memory plan fits, whichever is more. The scenario's own GPU, TP and PP are always searched."));
  exact_front_ = new QCheckBox(QStringLiteral("Exact front"));
  exact_front_->setToolTip(QStringLiteral("--exact-front: search every candidate that could be on the front (more "
                                          "simulations); off: only what could be the cheapest"));
  search_ = new QPushButton(QStringLiteral("Search"));
  stop_ = new QPushButton(QStringLiteral("Stop"));
  stop_->setEnabled(false);
  progress_ = new QProgressBar;
  progress_->setRange(0, 100);
  progress_->setValue(0);
  connect(search_, &QPushButton::clicked, this, [this] { start_search(); });
  connect(stop_, &QPushButton::clicked, this, &DeploymentsView::stop_search);

  // Only priced presets: an unpriced GPU has no cost, so it can be neither cheapest nor on the front.
  gpus_ = new QListWidget;
  for (const GpuSpec& g : gpu_presets()) {
    if (g.price_usd_per_gpu_hour <= 0) continue;
    auto* item = new QListWidgetItem(QStringLiteral("%1  ($%2/h)").arg(QString::fromStdString(g.id)).arg(g.price_usd_per_gpu_hour, 0, 'f', 2));
    item->setData(Qt::UserRole, QString::fromStdString(g.id));
    item->setToolTip(QString::fromStdString(g.name + " — " + g.price_source));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Checked);
    gpus_->addItem(item);
  }
  gpus_->setMaximumWidth(230);

  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Target users"), users_);
  form->addRow(QStringLiteral("Max GPUs per replica"), max_gpus_);
  form->addRow(exact_front_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(search_);
  buttons->addWidget(stop_);
  form->addRow(buttons);
  form->addRow(progress_);
  auto* left = new QVBoxLayout;
  left->addLayout(form);
  left->addWidget(new QLabel(QStringLiteral("GPU presets (priced)")));
  left->addWidget(gpus_, 1);

  error_ = new QLabel;
  error_->setStyleSheet(QStringLiteral("color: #b00000; font-weight: bold"));
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  cheapest_ = new QLabel(QStringLiteral("Press Search to find the cheapest deployment for the target."));
  cheapest_->setWordWrap(true);
  cheapest_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_ = new QLabel;
  status_->setWordWrap(true);

  chart_ = new QChart;
  chart_->setAnimationOptions(QChart::NoAnimation);
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_view_ = new QChartView(chart_);
  chart_view_->setRenderHint(QPainter::Antialiasing);
  chart_view_->setMinimumHeight(260);
  table_ = new QTableView;
  table_->setModel(&front_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setToolTip(QStringLiteral("Click a row to load that deployment into the inputs"));
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& i) { activate_front_point(i.row()); });

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(chart_view_);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  auto* right = new QVBoxLayout;
  right->addWidget(error_);
  right->addWidget(cheapest_);
  right->addWidget(status_);
  right->addWidget(splitter, 1);
  auto* layout = new QHBoxLayout(this);
  layout->addLayout(left);
  layout->addLayout(right, 1);

  connect(&job_, &BackgroundJob::progress, progress_, &QProgressBar::setValue);
  connect(&job_, &BackgroundJob::failed, this, [this](const QString& message) {
    set_running(false);
    show_error(message);
  });
}

void DeploymentsView::set_base(const plan::Scenario& base) {
  const bool changed = !same_question(base_, base);
  base_ = base;
  if (!changed) return;
  if (job_.running()) {
    job_.cancel();
    set_running(false);
    clear_answer(QStringLiteral("The inputs changed: the search was stopped. Press Search to search them."));
  } else if (plan_) {
    clear_answer(QStringLiteral("The inputs changed since the last search. Press Search to search them."));
  }
}

void DeploymentsView::set_target_users(double users) {
  target_users_ = users;
  const QSignalBlocker block(users_);
  users_->setValue(static_cast<int>(std::clamp(users, 1.0, 1e7)));  // the spin box shows the nearest it can
}

void DeploymentsView::set_max_gpus(int gpus) { max_gpus_->setValue(gpus); }

void DeploymentsView::set_gpus(const std::vector<std::string>& ids) {
  for (int r = 0; r < gpus_->count(); ++r) {
    QListWidgetItem* item = gpus_->item(r);
    const std::string id = item->data(Qt::UserRole).toString().toStdString();
    item->setCheckState(std::find(ids.begin(), ids.end(), id) != ids.end() ? Qt::Checked : Qt::Unchecked);
  }
}

void DeploymentsView::set_exact_front(bool exact) { exact_front_->setChecked(exact); }

std::vector<std::string> DeploymentsView::offered_gpus() const {
  std::vector<std::string> out;
  for (int r = 0; r < gpus_->count(); ++r) out.push_back(gpus_->item(r)->data(Qt::UserRole).toString().toStdString());
  return out;
}

std::vector<std::string> DeploymentsView::checked_gpus() const {
  std::vector<std::string> out;
  for (int r = 0; r < gpus_->count(); ++r) {
    if (gpus_->item(r)->checkState() == Qt::Checked) out.push_back(gpus_->item(r)->data(Qt::UserRole).toString().toStdString());
  }
  return out;
}

plan::DeploymentSearch DeploymentsView::make_search() const {
  plan::DeploymentSearch q;
  q.base = base_;
  q.target_users = target_users_;
  q.space.gpus = checked_gpus();
  q.space.max_gpus = max_gpus_->value();
  q.exact_front = exact_front_->isChecked();
  return q;
}

bool DeploymentsView::start_search() {
  const plan::DeploymentSearch q = make_search();
  try {
    // An empty list would mean "every priced preset" to the library; here it is a mistake.
    if (q.space.gpus.empty()) throw ConfigError("GPU presets: none checked; check at least one GPU to search");
    plan::enumerate_candidates(q);  // the target, the space and the SLO, checked as `kvplan plan` checks them
  } catch (const ConfigError& e) {
    job_.cancel();
    set_running(false);
    show_error(QString::fromUtf8(e.what()));
    return false;
  }
  show_error(QString());
  progress_->setValue(0);
  auto out = std::make_shared<plan::DeploymentPlan>();
  job_.start(
      [q, out](const BackgroundJob::Control& c) {
        plan::DeploymentSearch s = q;
        s.should_stop = c.stop;
        s.on_progress = [&c](size_t done, size_t total) {
          c.progress(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0);
        };
        *out = plan::search_deployments(s);
      },
      [this, q, out] {
        set_running(false);
        show_plan(q, std::move(*out));
      });
  set_running(true);
  status_->setText(QStringLiteral("Searching…"));
  return true;
}

void DeploymentsView::stop_search() {
  if (!job_.running()) return;
  job_.cancel();
  set_running(false);
  status_->setText(QStringLiteral("Stopped; nothing shown for the stopped search."));
}

void DeploymentsView::show_plan(const plan::DeploymentSearch& q, plan::DeploymentPlan p) {
  searched_ = q;
  plan_ = std::move(p);
  const plan::DeploymentPlan& shown = *plan_;
  front_.set_plan(shown);
  series_ = draw_deployment_chart(chart_, shown);
  if (series_.front != nullptr) {
    connect(series_.front, &QScatterSeries::clicked, this,
            [this](const QPointF& at) { activate_front_point(nearest_point(*chart_, *series_.front, at)); });
    // The cheapest's ring is drawn over its point and takes the click meant for it.
    connect(series_.cheapest, &QScatterSeries::clicked, this, [this] {
      const std::vector<size_t>& front = plan_->front;
      const auto at = std::find(front.begin(), front.end(), plan_->cheapest.value_or(plan_->candidates.size()));
      if (at != front.end()) activate_front_point(static_cast<int>(at - front.begin()));
    });
  }
  // What the ranking's costs rest on first (datasheet-only GPUs), then the cheapest deployment.
  std::vector<std::string> lines = plan::deployment_cost_basis_lines(shown);
  for (std::string& line : plan::deployment_cheapest_lines(shown)) lines.push_back(std::move(line));
  cheapest_->setText(html_lines(lines, shown.cheapest ? shown.candidates[*shown.cheapest].step_time_kind : std::string()));
  cheapest_plain_.clear();
  for (const std::string& line : lines) cheapest_plain_ += QString::fromStdString(line) + QStringLiteral("\n");
  size_t answered = 0;
  for (const plan::DeploymentCandidate& c : shown.candidates) answered += c.capacity > 0 ? 1 : 0;
  QString status = QStringLiteral("%1: %2 candidates, %3 answered, %4 simulations. Front %5. Click a point or a row "
                                  "to load it.")
                       .arg(QString::fromStdString(shown.slo))
                       .arg(shown.candidates.size())
                       .arg(answered)
                       .arg(shown.simulations)
                       .arg(shown.exact_front ? QStringLiteral("exact")
                                              : QStringLiteral("over the candidates searched (Exact front searches "
                                                               "every candidate that could be on it)"));
  if (shown.partial) status.prepend(QStringLiteral("PARTIAL: the search was stopped. "));
  status_->setText(status);
}

void DeploymentsView::clear_answer(const QString& note) {
  plan_.reset();
  searched_.reset();
  front_.clear();
  clear_chart(chart_);
  series_ = {};
  cheapest_->setText(note);
  cheapest_plain_.clear();
  status_->clear();
  progress_->setValue(0);
}

void DeploymentsView::show_error(const QString& message) {
  error_->setText(message);
  error_->setVisible(!message.isEmpty());
}

void DeploymentsView::set_running(bool running) {
  search_->setEnabled(!running);
  stop_->setEnabled(running);
}

QString DeploymentsView::error_text() const { return error_->text(); }

void DeploymentsView::activate_front_point(int row) {
  if (!searched_ || row < 0 || row >= front_.rowCount()) return;
  table_->selectRow(row);
  emit load_requested(plan::candidate_scenario(*searched_, front_.candidate(row)));
}

}  // namespace kvplan::gui
