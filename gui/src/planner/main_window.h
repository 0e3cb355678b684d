// gui/src/planner/main_window.h — the planner window: inputs on the left (InputsModel in a grouped
// form, InputsForm, and in a flat table; each value checked as it is typed), views in tabs (Qt
// Charts over the result models, each with the table that feeds it), a Run / Cancel bar with
// progress. Analytic results are recomputed on every input change on the GUI thread (microseconds
// per scheme); simulations run on a SimulationRunner.
//
//   MainWindow w;  w.load_scenario("data/scenarios/chat-h100.json");  w.show();
//   w.inputs().set_value("kv-cache-dtype", "fp8");   // every view follows
#pragma once

#include <QMainWindow>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis.h"
#include "answer_panel.h"
#include "background_job.h"
#include "calibration_model.h"
#include "compare_view.h"
#include "deployments_view.h"
#include "knee_model.h"
#include "knee_view.h"
#include "inputs_form.h"
#include "inputs_model.h"
#include "kvplan/plan/report.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/simulate.h"
#include "results_models.h"
#include "simulation_models.h"
#include "simulation_worker.h"

class QBarCategoryAxis;
class QChart;
class QChartView;
class QLabel;
class QLineEdit;
class QLineSeries;
class QLogValueAxis;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTimer;
class QValueAxis;

namespace kvplan::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // The warning banner's text ("" when hidden), for tests.
  QString warning_text() const;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  InputsModel& inputs() { return inputs_; }
  InputsForm& inputs_form() { return *inputs_form_; }
  const MemoryBreakdownModel& memory_model() const { return memory_; }
  const LayerGroupModel& layer_model() const { return layers_; }
  const CapacityModel& capacity_model() const { return capacity_; }
  const ComparisonModel& comparison_model() const { return comparison_; }
  const TimeSeriesModel& timeseries_model() const { return timeseries_; }
  const LatencyCdfModel& cdf_model() const { return cdf_; }
  const LoadSweepModel& sweep_model() const { return sweep_; }
  const CalibrationModel& calibration_model() const { return calibration_; }
  SimulationRunner& runner() { return runner_; }
  // The answer: the panel at the top, the background capacity search behind it, and its last
  // answer (empty while the inputs have none, or the search of the current inputs still runs).
  const AnswerPanel& answer_panel() const { return *answer_panel_; }
  BackgroundJob& capacity_job() { return capacity_job_; }
  // The knee of the answer: the search's probes plus a few loads on either side (knee_model.h),
  // simulated after the answer is shown.
  const KneeModel& knee_model() const { return knee_; }
  BackgroundJob& knee_job() { return knee_job_; }
  CompareView& compare_view() { return *compare_view_; }
  DeploymentsView& deployments_view() { return *deployments_view_; }
  const std::optional<plan::CapacityAnswer>& capacity_answer() const { return capacity_answer_; }
  // Blocks (spinning the event loop) until no capacity search (or knee probe) is pending for the current inputs or
  // `timeout_ms` passes; true when none is (answer_panel().state() then says what is shown). Tests,
  // --screenshot.
  bool wait_for_answer(int timeout_ms);
  double last_provisional_ms() const { return last_provisional_ms_; }  // input change -> provisional figure
  const Analysis& analysis() const { return analysis_; }

  // Throws ConfigError (plan/scenario_file.h) for a bad file; the window is unchanged then. Files of
  // version 1 are read (migrated); saving writes version 2.
  void load_scenario(const QString& path);
  // Throws ConfigError naming the field, its text and the rule when an input's text is invalid
  // (that field would be saved with its default); nothing is written then.
  void save_scenario(const QString& path) const;
  plan::ScenarioFile scenario() const;
  // Writes BASE.pdf, .html, .csv and .json through kvplan/gui/report_pdf.h. Throws ConfigError,
  // also for an input whose text is invalid (as save_scenario).
  void export_report(const QString& base_path) const;

  void set_schemes(std::vector<SchemeOverride> schemes);
  // The Comparison tab's editor: parse_schemes text; false (and the message shown) when malformed.
  bool set_schemes_text(const QString& text);
  const std::vector<SchemeOverride>& schemes() const { return schemes_; }

  // Starts the scenario's simulation (KV over time, latency CDFs); other load factors add points to
  // sweep_model(). False when inputs are invalid or one runs. Latency against load is the knee of
  // the capacity answer (knee_model()), so by default only the scenario's own load is simulated.
  bool start_simulation(std::vector<double> load_factors = {1.0});

  // Views, for --screenshot and tests.
  QStringList view_names() const;
  void show_view(int index);
  QWidget* view_widget(int index) const;
  int save_screenshots(const QString& dir);  // returns how many files were written

  double last_analysis_ms() const { return last_analysis_ms_; }
  double last_update_ms() const { return last_update_ms_; }  // analysis + models + chart series

 public slots:
  void recompute();

 private:
  void build_ui();
  void build_menus();
  // scenario(), or ConfigError "<what>: not written, an input is invalid: <the field's message>".
  plan::ScenarioFile complete_scenario(std::string_view what) const;
  QWidget* chart_with_table(QChartView* chart, QAbstractItemModel* model, QWidget* extra = nullptr);
  void update_memory_chart();
  void update_memory_title();
  void update_layer_chart();
  void update_capacity_chart();
  void update_simulation_charts();
  void update_calibration();
  void on_simulation_finished();
  void set_running(bool running);
  // The answer panel after an input change: the provisional memory figure at once, then the
  // capacity search (debounced: the search starts once the inputs stop changing).
  void update_answer();
  // The panel's answer when it is the one a report of `s` would search (else empty: it searches).
  std::optional<plan::CapacityAnswer> known_capacity_answer(const plan::ScenarioFile& s) const;
  static plan::ReportFiles report_files(const QString& base);
  void start_capacity_search();
  void start_knee_probes();  // after an answer: the loads around it, for the knee view

  InputsModel inputs_;
  MemoryBreakdownModel memory_;
  LayerGroupModel layers_;
  CapacityModel capacity_;
  ComparisonModel comparison_;
  TimeSeriesModel timeseries_;
  LatencyCdfModel cdf_;
  LoadSweepModel sweep_;
  CalibrationModel calibration_;
  std::string calibration_key_;  // profile path + GPU the calibration view shows
  SimulationRunner runner_;
  BackgroundJob capacity_job_;
  BackgroundJob knee_job_;
  KneeModel knee_;
  KneeView* knee_view_ = nullptr;
  CompareView* compare_view_ = nullptr;
  DeploymentsView* deployments_view_ = nullptr;
  std::optional<plan::CapacityAnswer> capacity_answer_;
  QTimer* capacity_debounce_ = nullptr;
  AnswerPanel* answer_panel_ = nullptr;
  Analysis analysis_;
  std::vector<SchemeOverride> schemes_;
  QString scenario_name_;
  bool simulate_from_file_ = false;  // the opened file has a workload section

  InputsForm* inputs_form_ = nullptr;  // the Inputs dock's form over inputs_ (owned by the dock)
  QTabWidget* tabs_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* warning_banner_ = nullptr;  // plan warnings; hidden when there are none
  QLineEdit* schemes_edit_ = nullptr;
  QLabel* schemes_error_ = nullptr;
  QLabel* status_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;

  QChart* memory_chart_ = nullptr;
  QChart* layer_chart_ = nullptr;
  QChart* capacity_chart_ = nullptr;
  QLogValueAxis* capacity_x_ = nullptr;
  QLogValueAxis* capacity_y_ = nullptr;
  std::vector<QLineSeries*> capacity_series_;
  QChart* time_chart_ = nullptr;
  QValueAxis* time_x_ = nullptr;
  QValueAxis* time_y_ = nullptr;
  QChart* cdf_chart_ = nullptr;
  QValueAxis* cdf_x_ = nullptr;
  QValueAxis* cdf_y_ = nullptr;
  QChart* calibration_chart_ = nullptr;

  double last_analysis_ms_ = 0;
  double last_update_ms_ = 0;
  double last_provisional_ms_ = 0;
  bool step_times_from_datasheet_ = false;
};

}  // namespace kvplan::gui
