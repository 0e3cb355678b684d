// gui/src/planner/deployments_view.h — the planner's Deployments view: `kvplan plan` on the window's
// scenario. It searches GPU presets x GPUs per replica (plan::search_deployments) on a BackgroundJob,
// then shows the cheapest deployment in the CLI's own words, the Pareto front of one replica's cost
// per hour against the users it serves (chart and table), and loads a front point's full scenario
// into the window when it is clicked.
//
//   DeploymentsView v;
//   v.set_base(scenario);               // the window's inputs; a change stops a running search
//   v.set_target_users(2000);
//   v.start_search();                   // false, with the message shown, for bad input
//   connect(&v, &DeploymentsView::load_requested, [&](const plan::Scenario& s) { inputs.set_scenario(s); });
#pragma once

#include <QWidget>

#include <optional>
#include <string>
#include <vector>

#include "background_job.h"
#include "deployment_chart.h"
#include "deployment_front_model.h"
#include "kvplan/plan/deployment.h"

class QChart;
class QChartView;
class QCheckBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace kvplan::gui {

class DeploymentsView : public QWidget {
  Q_OBJECT

 public:
  explicit DeploymentsView(QWidget* parent = nullptr);

  // The scenario every candidate starts from (model, engine, workload, SLO). A base that differs
  // from the searched one in anything but what the search varies (GPU, TP, PP, replicas) stops a
  // running search and clears the answer shown: it no longer answers the inputs.
  void set_base(const plan::Scenario& base);
  // Closed-loop users to serve. Checked when the search starts (the CLI's --target-users rule).
  void set_target_users(double users);
  void set_max_gpus(int gpus);  // GPUs per replica, 1..64; 0 (the default): plan's auto limit
  // Checks exactly these presets in the list (ids of priced presets; others are ignored).
  void set_gpus(const std::vector<std::string>& ids);
  void set_exact_front(bool exact);
  // The priced GPU presets offered, in list order, and those checked.
  std::vector<std::string> offered_gpus() const;
  std::vector<std::string> checked_gpus() const;

  // The search Search would start: the base, the target, the checked GPUs, the GPU limit (0 by
  // default: plan's own rule, so the planner and `kvplan plan` search the same candidates).
  plan::DeploymentSearch make_search() const;
  // Starts a search of the current inputs; false (nothing started, the message shown) when they
  // are invalid. A search already running is stopped and its answer dropped.
  bool start_search();
  // Stops the running search; nothing is shown for it.
  void stop_search();

  // The answer shown (nullopt: none, or the inputs changed since), and the search that gave it.
  const std::optional<plan::DeploymentPlan>& plan() const { return plan_; }
  const std::optional<plan::DeploymentSearch>& searched() const { return searched_; }
  BackgroundJob& job() { return job_; }
  DeploymentFrontModel& front_model() { return front_; }
  QChart* chart() const { return chart_; }
  QTableView* table() const { return table_; }
  const DeploymentChartSeries& chart_series() const { return series_; }
  QString error_text() const;     // the red message ("" when none)
  QString cheapest_text() const { return cheapest_plain_; }  // the lines at the top, plain, one per line ("" when none)

  // Emits load_requested for front point `row` (a table row; chart point `row`) and selects its
  // row. Out of range: nothing.
  void activate_front_point(int row);

 signals:
  // A front point's full scenario: the base with that candidate's GPU, TP and PP, one replica.
  void load_requested(const kvplan::plan::Scenario& scenario);

 private:
  void show_plan(const plan::DeploymentSearch& q, plan::DeploymentPlan p);
  void clear_answer(const QString& note);
  void show_error(const QString& message);
  void set_running(bool running);

  BackgroundJob job_;
  plan::Scenario base_;
  double target_users_ = 1000;
  std::optional<plan::DeploymentPlan> plan_;
  std::optional<plan::DeploymentSearch> searched_;
  DeploymentFrontModel front_;
  DeploymentChartSeries series_;
  QString cheapest_plain_;

  QSpinBox* users_ = nullptr;
  QSpinBox* max_gpus_ = nullptr;
  QListWidget* gpus_ = nullptr;
  QCheckBox* exact_front_ = nullptr;
  QPushButton* search_ = nullptr;
  QPushButton* stop_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* error_ = nullptr;
  QLabel* cheapest_ = nullptr;
  QLabel* status_ = nullptr;
  QChart* chart_ = nullptr;
  QChartView* chart_view_ = nullptr;
  QTableView* table_ = nullptr;
};

}  // namespace kvplan::gui
