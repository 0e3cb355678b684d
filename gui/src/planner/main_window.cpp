#include "main_window.h"

#include "fit_runs_dialog.h"

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMenuBar>
#include <QMessageBox>
#include <QPixmap>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QThread>
#include <QTimer>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>

#include "chart_util.h"
#include "inputs_delegate.h"
#include "model_charts.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/gui/report_pdf.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::gui {

namespace {

constexpr int kCapacityPoints = 200;     // users-vs-context points per scheme
constexpr int kMaxChartPoints = 400;     // per series after down-sampling
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QChartView* new_chart_view(QChart* chart) {
  chart->setAnimationOptions(QChart::NoAnimation);  // animations would make redraw time unbounded
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* view = new QChartView(chart);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumHeight(260);
  return view;
}

QLineSeries* add_line(QChart* chart, const QString& name, QValueAxis* x, QValueAxis* y) {
  auto* s = new QLineSeries;
  s->setName(name);
  chart->addSeries(s);
  s->attachAxis(x);
  s->attachAxis(y);
  return s;
}

std::pair<QValueAxis*, QValueAxis*> add_axes(QChart* chart, const QString& x_title, const QString& y_title) {
  auto* x = new QValueAxis;
  auto* y = new QValueAxis;
  x->setTitleText(x_title);
  y->setTitleText(y_title);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  return {x, y};
}

QString gib(int64_t bytes) { return QString::number(static_cast<double>(bytes) / kGiB, 'f', 2) + " GiB"; }

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), schemes_(default_schemes()) {
  setWindowTitle(QStringLiteral("kvplan — KV cache planner"));
  build_ui();
  build_menus();
  schemes_edit_->setText(QString::fromStdString(schemes_text(schemes_)));
  connect(&inputs_, &InputsModel::inputs_changed, this, &MainWindow::recompute);
  // The capacity search starts once the inputs stop changing for a moment (typing "128" is three
  // edits); the provisional figure is shown at every edit.
  capacity_debounce_ = new QTimer(this);
  capacity_debounce_->setSingleShot(true);
  capacity_debounce_->setInterval(150);
  connect(capacity_debounce_, &QTimer::timeout, this, &MainWindow::start_capacity_search);
  connect(&capacity_job_, &BackgroundJob::progress, answer_panel_, &AnswerPanel::show_progress);
  connect(&capacity_job_, &BackgroundJob::failed, this, [this](const QString& message) {
    answer_panel_->show_failed(QStringLiteral("capacity search: ") + message);
    compare_view_->set_current_capacity_failed(message);
  });
  connect(&runner_, &SimulationRunner::progress, progress_, &QProgressBar::setValue);
  connect(&runner_, &SimulationRunner::finished, this, &MainWindow::on_simulation_finished);
  connect(&runner_, &SimulationRunner::cancelled, this, [this] {
    set_running(false);
    status_->setText(QStringLiteral("Simulation cancelled"));
  });
  connect(&runner_, &SimulationRunner::failed, this, [this](const QString& message) {
    set_running(false);
    status_->setText(QStringLiteral("Simulation failed: ") + message);
  });
  recompute();
  resize(1400, 860);
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::chart_with_table(QChartView* chart, QAbstractItemModel* model, QWidget* extra) {
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(chart);
  auto* table = new QTableView;
  table->setModel(model);
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->verticalHeader()->setDefaultSectionSize(20);
  split->addWidget(table);
  if (extra != nullptr) split->addWidget(extra);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  return split;
}

void MainWindow::build_ui() {
  // Inputs dock.
  auto* dock = new QDockWidget(QStringLiteral("Inputs"), this);
  dock->setObjectName(QStringLiteral("inputs"));
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  // The form a planner reads first; every flag as a flat table second (both edit inputs_).
  auto* input_tabs = new QTabWidget;
  input_tabs->setObjectName(QStringLiteral("input_tabs"));
  inputs_form_ = new InputsForm(inputs_);
  auto* form_scroll = new QScrollArea;
  form_scroll->setWidget(inputs_form_);
  form_scroll->setWidgetResizable(true);
  form_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  input_tabs->addTab(form_scroll, QStringLiteral("Inputs"));
  auto* inputs_view = new QTableView;
  inputs_view->setObjectName(QStringLiteral("inputs_view"));
  inputs_view->setModel(&inputs_);
  inputs_view->setItemDelegateForColumn(InputsModel::kValueColumn, new InputsDelegate(inputs_view));
  inputs_view->horizontalHeader()->setSectionResizeMode(InputsModel::kFlagColumn, QHeaderView::ResizeToContents);
  inputs_view->horizontalHeader()->setSectionResizeMode(InputsModel::kValueColumn, QHeaderView::Interactive);
  inputs_view->horizontalHeader()->setStretchLastSection(true);
  inputs_view->setColumnWidth(InputsModel::kValueColumn, 140);
  inputs_view->verticalHeader()->setDefaultSectionSize(20);
  inputs_view->verticalHeader()->hide();
  inputs_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::SelectedClicked |
                               QAbstractItemView::EditKeyPressed | QAbstractItemView::AnyKeyPressed);
  inputs_view->setWordWrap(false);
  input_tabs->addTab(inputs_view, QStringLiteral("All flags"));
  layout->addWidget(input_tabs, 1);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  auto* buttons = new QHBoxLayout;
  run_button_ = new QPushButton(QStringLiteral("Run simulation"));
  cancel_button_ = new QPushButton(QStringLiteral("Cancel"));
  cancel_button_->setEnabled(false);
  progress_ = new QProgressBar;
  progress_->setRange(0, 100);
  buttons->addWidget(run_button_);
  buttons->addWidget(cancel_button_);
  buttons->addWidget(progress_, 1);
  layout->addLayout(buttons);
  dock->setWidget(panel);
  dock->setMinimumWidth(460);
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  connect(run_button_, &QPushButton::clicked, this, [this] {
    if (!start_simulation()) status_->setText(QStringLiteral("Cannot run: ") + inputs_.first_error());
  });
  connect(cancel_button_, &QPushButton::clicked, &runner_, &SimulationRunner::cancel);

  // The central area: warnings first (an architecture read as generic, a lossy KV scheme, datasheet
  // step times...), then the answer in large type, then the views that explain it.
  auto* central = new QWidget;
  auto* central_layout = new QVBoxLayout(central);
  central_layout->setContentsMargins(0, 0, 0, 0);
  central_layout->setSpacing(0);
  warning_banner_ = new QLabel;
  warning_banner_->setObjectName(QStringLiteral("warningBanner"));
  warning_banner_->setWordWrap(true);
  warning_banner_->setStyleSheet(QStringLiteral("background: #fff3cd; color: #664d03; border: 1px solid #b58105; padding: 6px"));
  warning_banner_->hide();
  central_layout->addWidget(warning_banner_);
  answer_panel_ = new AnswerPanel;
  central_layout->addWidget(answer_panel_);
  tabs_ = new QTabWidget;
  central_layout->addWidget(tabs_, 1);
  setCentralWidget(central);

  // Memory breakdown per GPU.
  memory_chart_ = new QChart;
  memory_chart_->setTitle(QStringLiteral("Memory per GPU (GiB)"));
  tabs_->addTab(chart_with_table(new_chart_view(memory_chart_), &memory_), QStringLiteral("Memory"));

  // KV bytes per token per layer group.
  layer_chart_ = new QChart;
  layer_chart_->setTitle(QStringLiteral("KV bytes per token per layer group (one GPU)"));
  tabs_->addTab(chart_with_table(new_chart_view(layer_chart_), &layers_), QStringLiteral("KV per layer group"));

  // Users that fit against context length, one line per scheme.
  capacity_chart_ = new QChart;
  capacity_chart_->setTitle(QStringLiteral("Requests whose KV fits, against context length"));
  capacity_x_ = new QLogValueAxis;
  capacity_y_ = new QLogValueAxis;
  capacity_x_->setTitleText(QStringLiteral("context (tokens, log scale)"));
  capacity_y_->setTitleText(QStringLiteral("requests (log scale)"));
  capacity_x_->setLabelFormat(QStringLiteral("%g"));
  capacity_y_->setLabelFormat(QStringLiteral("%g"));
  capacity_x_->setMinorTickCount(-1);
  capacity_chart_->addAxis(capacity_x_, Qt::AlignBottom);
  capacity_chart_->addAxis(capacity_y_, Qt::AlignLeft);
  tabs_->addTab(chart_with_table(new_chart_view(capacity_chart_), &capacity_), QStringLiteral("Users vs context"));

  // The knee of the capacity answer: TTFT and TPOT percentiles against load, each on its own log
  // axis, with the SLO lines and the capacity marked (knee_view.h).
  knee_view_ = new KneeView(&knee_);
  tabs_->addTab(knee_view_, QStringLiteral("Latency vs load"));

  // KV usage and fragmentation over simulated time.
  time_chart_ = new QChart;
  time_chart_->setTitle(QStringLiteral("KV cache over simulated time (all replicas)"));
  std::tie(time_x_, time_y_) = add_axes(time_chart_, QStringLiteral("time (s)"), QStringLiteral("GiB"));
  for (const char* name : {"used (tokens)", "allocated", "fragmentation", "capacity"}) {
    add_line(time_chart_, QString::fromLatin1(name), time_x_, time_y_);
  }
  tabs_->addTab(chart_with_table(new_chart_view(time_chart_), &timeseries_), QStringLiteral("KV over time"));

  // Latency CDFs.
  cdf_chart_ = new QChart;
  cdf_chart_->setTitle(QStringLiteral("Latency CDF (run at the scenario's load)"));
  std::tie(cdf_x_, cdf_y_) = add_axes(cdf_chart_, QStringLiteral("ms"), QStringLiteral("fraction of requests"));
  for (const char* name : {"TTFT", "TPOT", "E2E"}) add_line(cdf_chart_, QString::fromLatin1(name), cdf_x_, cdf_y_);
  tabs_->addTab(chart_with_table(new_chart_view(cdf_chart_), &cdf_), QStringLiteral("Latency CDF"));

  // Comparison table, with the editor of the compared schemes.
  auto* comparison_panel = new QWidget;
  auto* comparison_layout = new QVBoxLayout(comparison_panel);
  auto* schemes_row = new QHBoxLayout;
  schemes_row->addWidget(new QLabel(QStringLiteral("Schemes (';' between schemes, flag=value overrides):")));
  schemes_edit_ = new QLineEdit;
  schemes_edit_->setObjectName(QStringLiteral("schemes_edit"));
  schemes_row->addWidget(schemes_edit_, 1);
  comparison_layout->addLayout(schemes_row);
  schemes_error_ = new QLabel;
  schemes_error_->setStyleSheet(QStringLiteral("color: #b00020"));
  comparison_layout->addWidget(schemes_error_);
  auto* comparison_view = new QTableView;
  comparison_view->setModel(&comparison_);
  comparison_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  comparison_view->horizontalHeader()->setStretchLastSection(true);
  comparison_layout->addWidget(comparison_view, 1);
  tabs_->addTab(comparison_panel, QStringLiteral("KV schemes"));

  // Two to four whole scenarios side by side, with their answers (compare_view.h).
  compare_view_ = new CompareView;
  tabs_->addTab(compare_view_, QStringLiteral("Compare"));

  // `kvplan plan` over the inputs: the cost/users front; a clicked point becomes the inputs.
  deployments_view_ = new DeploymentsView;
  tabs_->addTab(deployments_view_, QStringLiteral("Deployments"));
  connect(deployments_view_, &DeploymentsView::load_requested, this,
          [this](const plan::Scenario& scenario) { inputs_.set_scenario(scenario); });
  connect(schemes_edit_, &QLineEdit::editingFinished, this, [this] { set_schemes_text(schemes_edit_->text()); });

  // Calibration: measured kernels against the fitted profile (when the profile input is set).
  calibration_chart_ = new QChart;
  tabs_->addTab(chart_with_table(new_chart_view(calibration_chart_), &calibration_), QStringLiteral("Calibration"));

  status_ = new QLabel;
  statusBar()->addWidget(status_, 1);
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  file->addAction(QStringLiteral("&Open scenario..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open scenario"), {}, QStringLiteral("Scenario (*.json)"));
    if (path.isEmpty()) return;
    try {
      load_scenario(path);
    } catch (const std::exception& e) {
      QMessageBox::warning(this, QStringLiteral("Open scenario"), QString::fromUtf8(e.what()));
    }
  })->setShortcut(QKeySequence::Open);
  file->addAction(QStringLiteral("&Save scenario..."), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Save scenario"), {}, QStringLiteral("Scenario (*.json)"));
    if (path.isEmpty()) return;
    try {
      save_scenario(path);
    } catch (const std::exception& e) {
      QMessageBox::warning(this, QStringLiteral("Save scenario"), QString::fromUtf8(e.what()));
    }
  })->setShortcut(QKeySequence::Save);
  file->addAction(QStringLiteral("Load model &config.json..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Model config"), {}, QStringLiteral("Hugging Face config (*.json)"));
    if (!path.isEmpty()) inputs_.set_value("model", path.toStdString());
  });
  // Issue 25: the user's own benchmark runs become the step-time source (the report names it).
  file->addAction(QStringLiteral("&Fit to my benchmark runs..."), this, [this] {
    if (const std::optional<std::string> path = fit_runs_dialog(this, inputs_.scenario())) {
      inputs_.set_value("profile", *path);
      status_->setText(QStringLiteral("Step times: fitted to your runs (") + QString::fromStdString(*path) +
                       QStringLiteral(")"));
    }
  });
  file->addAction(QStringLiteral("&Export report..."), this, [this] {
    const QString base = QFileDialog::getSaveFileName(this, QStringLiteral("Export report (base name)"));
    if (base.isEmpty()) return;
    // The report runs its own analysis (and simulation); keep it off the GUI thread.
    plan::ScenarioFile s;
    try {
      s = complete_scenario("report '" + base.toStdString() + "'");
    } catch (const ConfigError& e) {
      QMessageBox::warning(this, QStringLiteral("Export report"), QString::fromUtf8(e.what()));
      return;
    }
    status_->setText(QStringLiteral("Exporting..."));
    auto error = std::make_shared<QString>();
    std::optional<plan::CapacityAnswer> known = known_capacity_answer(s);
    QThread* t = QThread::create([s, base, error, known] {
      try {
        write_report(plan::make_report_input(s, known), report_files(base));
      } catch (const std::exception& e) {
        *error = QString::fromUtf8(e.what());
      }
    });
    connect(t, &QThread::finished, this, [this, t, error, base] {
      status_->setText(error->isEmpty() ? QStringLiteral("Exported ") + base + QStringLiteral(".{pdf,html,csv,json}")
                                        : QStringLiteral("Export failed: ") + *error);
      t->deleteLater();
    });
    t->start();
  });
  file->addSeparator();
  file->addAction(QStringLiteral("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);
}

void MainWindow::recompute() {
  QElapsedTimer clock;
  clock.start();
  const std::string typing_error = inputs_.memory_field_error();
  analysis_ = typing_error.empty() ? analyze(inputs_.scenario(), schemes_, kCapacityPoints)
                                   : failed_analysis(typing_error, schemes_);
  last_analysis_ms_ = static_cast<double>(clock.nsecsElapsed()) / 1e6;
  QStringList warnings;
  if (analysis_.base) {
    for (const std::string& w : analysis_.base->plan.warnings) warnings << QString::fromStdString(w).toHtmlEscaped();
  }
  update_answer();
  last_provisional_ms_ = static_cast<double>(clock.nsecsElapsed()) / 1e6;  // input change -> provisional figure
  if (step_times_from_datasheet_) {
    warnings << QStringLiteral("step times come from the GPU's datasheet (no published or measured profile for it): "
                               "every latency and the capacity answer are unvalidated estimates");
  }
  warning_banner_->setText(QStringLiteral("<b>Warning:</b> ") + warnings.join(QStringLiteral("<br><b>Warning:</b> ")));
  warning_banner_->setVisible(!warnings.isEmpty());
  if (analysis_.base) {
    memory_.set_plan(analysis_.base->plan);
    layers_.set_layout(analysis_.base->layout);
    const MemoryPlan& p = analysis_.base->plan;
    summary_->setText(QStringLiteral("<b>%1</b>: KV budget %2 per GPU, %3 tokens, %4 requests at %5 tokens%6")
                          .arg(QString::fromStdString(p.engine_label), gib(p.kv_budget_bytes))
                          .arg(p.kv_cache_tokens)
                          .arg(p.requests_at_max_len)
                          .arg(p.max_model_len)
                          .arg(p.fits ? QString() : QStringLiteral(" — <b>does not fit</b>")));
  } else {
    memory_.clear();
    layers_.clear();
    summary_->setText(QStringLiteral("<b>Inputs invalid:</b> ") + QString::fromStdString(analysis_.error).toHtmlEscaped());
  }
  capacity_.set_analysis(analysis_);
  comparison_.set_analysis(analysis_);
  update_memory_chart();
  update_layer_chart();
  update_capacity_chart();
  update_calibration();
  last_update_ms_ = static_cast<double>(clock.nsecsElapsed()) / 1e6;
  status_->setText(QStringLiteral("Analysis %1 ms, views updated in %2 ms")
                       .arg(last_analysis_ms_, 0, 'f', 2)
                       .arg(last_update_ms_, 0, 'f', 2));
}

QString MainWindow::warning_text() const { return warning_banner_->isHidden() ? QString() : warning_banner_->text(); }

void MainWindow::update_memory_chart() {
  draw_memory_chart(memory_chart_, memory_, analysis_.base ? QStringLiteral("GPU (stage %1)").arg(analysis_.base->plan.pipeline_stage)
                                                          : QStringLiteral("GPU"));
  update_memory_title();
}

void MainWindow::update_memory_title() {
  // The memory picture with the limit that binds the capacity answer (weights, KV memory, or a
  // latency target with the KV peak it reached), once there is one.
  QString title = QStringLiteral("Memory per GPU (GiB)");
  if (capacity_answer_) {
    const plan::CapacitySummary s = plan::summarize_capacity(*capacity_answer_);
    title += QStringLiteral(" — capacity %1, %2").arg(QString::fromStdString(s.headline), QString::fromStdString(s.binding));
  }
  memory_chart_->setTitle(title);
}

void MainWindow::update_layer_chart() { draw_layer_chart(layer_chart_, layers_); }

void MainWindow::update_capacity_chart() {
  const int schemes = capacity_.scheme_count();
  while (static_cast<int>(capacity_series_.size()) > schemes) {
    capacity_chart_->removeSeries(capacity_series_.back());
    delete capacity_series_.back();
    capacity_series_.pop_back();
  }
  while (static_cast<int>(capacity_series_.size()) < schemes) {
    auto* line = new QLineSeries;
    capacity_chart_->addSeries(line);
    line->attachAxis(capacity_x_);
    line->attachAxis(capacity_y_);
    capacity_series_.push_back(line);
  }
  double x0 = 1e300, x1 = 0, y0 = 1e300, y1 = 0;
  for (int s = 0; s < schemes; ++s) {
    capacity_series_[static_cast<size_t>(s)]->setName(legend_name(capacity_.headerData(1 + s, Qt::Horizontal).toString()));
    QList<QPointF> points = model_points(capacity_, 0, 1 + s, kMaxChartPoints);
    // Log axes: "none fit" (0) has no place on them; the table still shows it.
    points.removeIf([](const QPointF& p) { return p.x() <= 0 || p.y() <= 0; });
    for (const QPointF& p : points) {
      x0 = std::min(x0, p.x());
      x1 = std::max(x1, p.x());
      y0 = std::min(y0, p.y());
      y1 = std::max(y1, p.y());
    }
    capacity_series_[static_cast<size_t>(s)]->replace(points);
  }
  if (x1 > 0) {
    capacity_x_->setRange(x0, std::max(x1, x0 * 2));
    capacity_y_->setRange(std::max(0.5, y0 / 1.5), std::max(y1 * 1.5, 2.0));
  }
}

void MainWindow::update_simulation_charts() {
  const QList<QAbstractSeries*> time_series = time_chart_->series();
  const int time_columns[] = {TimeSeriesModel::kUsedColumn, TimeSeriesModel::kAllocatedColumn,
                              TimeSeriesModel::kFragmentationColumn, TimeSeriesModel::kCapacityColumn};
  for (int i = 0; i < 4; ++i) {
    replace_series(static_cast<QXYSeries*>(time_series[i]), timeseries_, TimeSeriesModel::kTimeColumn, time_columns[i], kMaxChartPoints);
  }
  fit_axes(time_chart_, time_x_, time_y_);

  const QList<QAbstractSeries*> cdf_series = cdf_chart_->series();
  const int cdf_columns[] = {LatencyCdfModel::kTtftColumn, LatencyCdfModel::kTpotColumn, LatencyCdfModel::kE2eColumn};
  for (int i = 0; i < 3; ++i) {
    // x = latency, y = fraction.
    replace_series(static_cast<QXYSeries*>(cdf_series[i]), cdf_, cdf_columns[i], LatencyCdfModel::kFractionColumn, kMaxChartPoints);
  }
  fit_axes(cdf_chart_, cdf_x_, cdf_y_);
  cdf_x_->setMin(0);
}

void MainWindow::update_calibration() {
  const std::string path = inputs_.value("profile");
  const std::string key = path + '\n' + inputs_.value("gpu");
  if (key == calibration_key_ || !inputs_.valid()) return;
  calibration_key_ = key;
  try {
    if (path.empty()) calibration_.clear();
    else calibration_.load(path, resolve_gpu(inputs_.value("gpu")));
  } catch (const std::exception& e) {
    calibration_.clear();
    status_->setText(QStringLiteral("Calibration view: ") + QString::fromUtf8(e.what()));
  }
  draw_calibration_chart(calibration_chart_, calibration_);
}

bool MainWindow::start_simulation(std::vector<double> load_factors) {
  if (runner_.running() || !inputs_.valid()) return false;
  SimulationJob job;
  try {
    job.config = plan::simulation_config(inputs_.scenario());
  } catch (const std::exception& e) {
    status_->setText(QString::fromUtf8(e.what()));
    return false;
  }
  job.load_factors = std::move(load_factors);
  if (!runner_.start(std::move(job))) return false;
  set_running(true);
  progress_->setValue(0);
  status_->setText(QStringLiteral("Simulating..."));
  return true;
}

void MainWindow::on_simulation_finished() {
  set_running(false);
  const SimulationOutcome& o = *runner_.outcome();
  timeseries_.set_rows(o.result.timeseries);
  cdf_.set_outcome(o, kCapacityPoints);
  sim::SimulationConfig c;
  bool users = false;
  try {
    c = plan::simulation_config(inputs_.scenario());
    users = c.workload.kind == sim::WorkloadKind::kClosedLoop;
  } catch (const std::exception&) {
    // Inputs changed since the run started; the SLO lines then use the defaults.
  }
  sweep_.set_outcome(o, c.slo, users);
  update_simulation_charts();
  const sim::RunSummary& s = o.result.summary;
  // Every latency carries its band (p90 error of the step-time source in validation) and source.
  const ProfileBand& band = o.result.latency_band;
  auto band_text = [](double e) {
    return e > 0 ? QStringLiteral(" (±%1%)").arg(e * 100, 0, 'f', 0) : QStringLiteral(" (band not validated)");
  };
  status_->setText(QStringLiteral("Simulated %1 requests (%2 unfinished) in %3 ms of wall time; p90 TTFT %4 ms%5, "
                                  "p90 TPOT %6 ms%7%8. Step times: %9")
                       .arg(s.finished)
                       .arg(s.unfinished)
                       .arg(o.wall_ms, 0, 'f', 0)
                       .arg(s.ttft_ms.p90, 0, 'f', 1)
                       .arg(band_text(band.ttft_p90_rel_error))
                       .arg(s.tpot_ms.p90, 0, 'f', 2)
                       .arg(band_text(band.tpot_p90_rel_error))
                       .arg(c.slo.any() ? (s.meets_slo ? QStringLiteral(", meets the SLO") : QStringLiteral(", misses the SLO"))
                                        : QString())
                       .arg(QString::fromStdString(o.result.step_time_source)));
}

void MainWindow::set_running(bool running) {
  run_button_->setEnabled(!running);
  cancel_button_->setEnabled(running);
}

plan::ScenarioFile MainWindow::scenario() const {
  plan::ScenarioFile s;
  s.name = scenario_name_.isEmpty() ? std::string("planner") : scenario_name_.toStdString();
  s.scenario = inputs_.scenario();
  // Reports simulate a scenario that sets anything of the simulation, or whose file asked for it.
  s.simulate = simulate_from_file_ || !inputs_.simulation_values().empty();
  for (const SchemeOverride& o : schemes_) s.compare.push_back(o.overrides);
  return s;
}

void MainWindow::load_scenario(const QString& path) {
  plan::ScenarioFile s = plan::load_scenario_file(path.toStdString());
  scenario_name_ = QString::fromStdString(s.name);
  simulate_from_file_ = s.simulate;
  schemes_ = s.compare.empty() ? default_schemes() : schemes_from_compare(s.compare);
  schemes_edit_->setText(QString::fromStdString(schemes_text(schemes_)));
  schemes_error_->clear();
  inputs_.set_scenario(s.scenario);  // recomputes through inputs_changed
  setWindowTitle(QStringLiteral("kvplan — ") + scenario_name_);
}

plan::ScenarioFile MainWindow::complete_scenario(std::string_view what) const {
  // A field whose text fails its own rule holds its default in the typed scenario: written out, the
  // file would quietly say something else than the form.
  if (const std::string error = inputs_.typed_field_error(); !error.empty()) {
    throw ConfigError(std::string(what) + ": not written, an input is invalid: " + error);
  }
  return scenario();
}

void MainWindow::save_scenario(const QString& path) const {
  plan::save_scenario_file(path.toStdString(), complete_scenario("scenario '" + path.toStdString() + "'"));
}

std::optional<plan::CapacityAnswer> MainWindow::known_capacity_answer(const plan::ScenarioFile& s) const {
  // The report answers its base variant (the inputs with the first compared scheme's overrides);
  // the panel's answer is reused only when that is exactly the inputs it was searched for.
  if (!capacity_answer_ || plan::non_default_values(plan::report_base_scenario(s)) != inputs_.values()) return std::nullopt;
  return capacity_answer_;
}

plan::ReportFiles MainWindow::report_files(const QString& base) {
  return plan::ReportFiles{.pdf = (base + ".pdf").toStdString(),
                           .html = (base + ".html").toStdString(),
                           .csv = (base + ".csv").toStdString(),
                           .json = (base + ".json").toStdString()};
}

void MainWindow::export_report(const QString& base) const {
  const plan::ScenarioFile s = complete_scenario("report '" + base.toStdString() + "'");
  write_report(plan::make_report_input(s, known_capacity_answer(s)), report_files(base));
}

void MainWindow::set_schemes(std::vector<SchemeOverride> schemes) {
  schemes_ = std::move(schemes);
  schemes_edit_->setText(QString::fromStdString(schemes_text(schemes_)));
  schemes_error_->clear();
  recompute();
}

bool MainWindow::set_schemes_text(const QString& text) {
  try {
    set_schemes(parse_schemes(text.toStdString()));
    return true;
  } catch (const ConfigError& e) {
    schemes_error_->setText(QString::fromUtf8(e.what()));
    return false;
  }
}

QStringList MainWindow::view_names() const {
  QStringList names;
  for (int i = 0; i < tabs_->count(); ++i) names << tabs_->tabText(i);
  return names;
}

void MainWindow::show_view(int index) { tabs_->setCurrentIndex(index); }

QWidget* MainWindow::view_widget(int index) const { return tabs_->widget(index); }

int MainWindow::save_screenshots(const QString& dir) {
  QDir().mkpath(dir);
  int written = 0;
  for (int i = 0; i < tabs_->count(); ++i) {
    if (view_widget(i)->findChild<QChartView*>() != nullptr && tabs_->tabText(i) == QStringLiteral("Calibration") &&
        !calibration_.has_profile()) {
      continue;  // nothing to show without a profile
    }
    show_view(i);
    QApplication::processEvents();
    QString name = tabs_->tabText(i).toLower();
    name.replace(' ', '-');
    if (grab().save(QDir(dir).filePath(name + ".png"))) ++written;
  }
  show_view(0);
  return written;
}

}  // namespace kvplan::gui
