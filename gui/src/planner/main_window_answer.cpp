// gui/src/planner/main_window_answer.cpp — the answer half of MainWindow (main_window.h): after
// every input change the provisional memory figure, then the debounced capacity search and the
// knee's extra loads on their BackgroundJobs, each result shown only while it is current.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QLocale>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <memory>

#include "main_window.h"
#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/sim/capacity.h"

namespace kvplan::gui {

namespace {

// The mean request of the workload (prompt + output of a first turn), for the provisional figure.
std::pair<int64_t, QString> mean_request(const sim::SimulationConfig& c, int64_t max_model_len) {
  const QLocale l = QLocale::c();
  auto note = [&](double prompt, double output) {
    return std::pair<int64_t, QString>{
        std::min<int64_t>(max_model_len, std::max<int64_t>(1, std::llround(prompt + output))),
        QStringLiteral("the workload's mean request: %1 prompt + %2 output tokens")
            .arg(l.toString(std::llround(prompt)), l.toString(std::llround(output)))};
  };
  switch (c.workload.kind) {
    case sim::WorkloadKind::kClosedLoop:
      return note(c.workload.closed.first_prompt.mean() + static_cast<double>(c.workload.closed.shared_prefix_tokens),
                  c.workload.closed.output.mean());
    case sim::WorkloadKind::kOpenLoop: return note(c.workload.open.prompt.mean(), c.workload.open.output.mean());
    default: return {max_model_len, QStringLiteral("max_model_len: a trace's lengths are read when it is simulated")};
  }
}

}  // namespace

void MainWindow::update_answer() {
  // Whatever was shown belongs to other inputs now: no search result may land after this point.
  capacity_job_.cancel();
  knee_job_.cancel();
  knee_.clear();
  capacity_debounce_->stop();
  capacity_answer_.reset();
  step_times_from_datasheet_ = false;
  if (!analysis_.base) {
    answer_panel_->show_invalid(QString::fromStdString(analysis_.error));
    return;
  }
  sim::SimulationConfig config;
  try {
    config = plan::simulation_config(inputs_.scenario());
  } catch (const std::exception& e) {
    answer_panel_->show_invalid(QString::fromUtf8(e.what()));
    return;
  }
  if (!inputs_.valid()) {
    answer_panel_->show_invalid(inputs_.first_error());
    return;
  }
  step_times_from_datasheet_ = sim::resolve_step_time_source(config).kind == "datasheet";
  compare_view_->set_current(inputs_.scenario());
  deployments_view_->set_base(inputs_.scenario());
  const plan::MemoryAnswer& m = *analysis_.base;
  ProvisionalAnswer p;
  std::tie(p.tokens, p.length_note) = mean_request(config, m.plan.max_model_len);
  p.requests = users_that_fit(m, p.tokens) * std::max<int64_t>(1, config.cluster.replicas);
  p.slo = QString::fromStdString(plan::slo_sentence(config.slo));
  p.searching = config.slo.any() && (m.plan.fits || config.kv_capacity_bytes > 0);
  answer_panel_->show_provisional(p);
  if (p.searching) capacity_debounce_->start();
}

void MainWindow::start_capacity_search() {
  const plan::Scenario scenario = inputs_.scenario();
  auto answer = std::make_shared<std::optional<plan::CapacityAnswer>>();
  capacity_job_.start(
      [scenario, answer](const BackgroundJob::Control& control) {
        plan::CapacityRequest request;
        request.should_stop = control.stop;
        // A search takes about ten probes: growing, then bisecting. Progress is an estimate.
        auto probes = std::make_shared<int>(0);
        request.on_probe = [probes, &control](const sim::CapacityProbe&, bool) {
          control.progress(std::min(0.95, ++*probes / 11.0));
        };
        *answer = plan::find_capacity(scenario, request);
      },
      [this, answer] {
        capacity_answer_ = std::move(*answer);
        answer_panel_->show_answer(plan::summarize_capacity(*capacity_answer_));
        compare_view_->set_current_capacity(*capacity_answer_);
        update_memory_title();
        start_knee_probes();
      });
}

void MainWindow::start_knee_probes() {
  auto answer = std::make_shared<const plan::CapacityAnswer>(*capacity_answer_);
  knee_.set_answer(*answer, {});  // the search's own probes at once; the loads around them follow
  auto extra = std::make_shared<std::vector<sim::CapacityProbe>>();
  knee_job_.start([answer, extra](const BackgroundJob::Control& control) {
    *extra = run_knee_probes(*answer, knee_extra_loads(*answer), control.stop);
  },
                  [this, answer, extra] { knee_.set_answer(*answer, *extra); });
}

bool MainWindow::wait_for_answer(int timeout_ms) {
  QElapsedTimer clock;
  clock.start();
  while (clock.elapsed() < timeout_ms) {
    if (capacity_debounce_->isActive()) {
      QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
      QThread::msleep(2);
      continue;
    }
    BackgroundJob* busy = capacity_job_.running() ? &capacity_job_ : knee_job_.running() ? &knee_job_ : nullptr;
    if (busy == nullptr) break;
    busy->wait_for_idle(static_cast<int>(std::max<qint64>(1, timeout_ms - clock.elapsed())));
  }
  QCoreApplication::processEvents();
  // Done when nothing is pending: the answer is current, or there is nothing to search (no SLO
  // target, invalid inputs, weights that do not fit), or the search failed (the panel says why).
  return !capacity_debounce_->isActive() && !capacity_job_.running() && !knee_job_.running();
}

}  // namespace kvplan::gui
