// gui/src/planner/simulation_worker.h — runs simulations off the GUI thread. A job is the scenario's
// simulation plus a load sweep (the same workload at several multiples of its users or rate), for
// the latency-against-load view. Cancel is a flag that run_simulation checks between events
// (RunHooks::should_stop), so a cancelled run ends within one event.
//
//   SimulationRunner runner;                       // lives on the GUI thread
//   connect(&runner, &SimulationRunner::progress, bar, &QProgressBar::setValue);
//   runner.start(job);  ...  runner.cancel();      // finished() or cancelled() or failed() follows
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kvplan/sim/simulation.h"

class QThread;

namespace kvplan::gui {

struct SimulationJob {
  sim::SimulationConfig config;
  // Multiples of the workload's load (users, rate, or trace speed). 1 is always run and gives the
  // main result; the others give points of the latency-against-load curves. Empty: {1}.
  std::vector<double> load_factors;
};

struct LoadPoint {
  double factor = 1;
  double load = 0;  // users, or requests per second (open loop / trace)
  sim::RunSummary summary;
};

struct SimulationOutcome {
  sim::SimulationResult result;          // the run at factor 1
  std::vector<double> ttft_ms, tpot_ms, e2e_ms;  // [finished requests] of that run, sorted ascending
  std::vector<LoadPoint> sweep;          // by factor, ascending
  bool cancelled = false;
  double wall_ms = 0;
};

// The job on the calling thread. `progress` gets the fraction of the whole job done; `stop` is read
// between simulated events. Throws ConfigError like run_simulation.
SimulationOutcome run_simulation_job(const SimulationJob& job, const std::function<void(double)>& progress,
                                     const std::atomic<bool>& stop);

// The load a config carries (users, rate, or trace rate as 1 / time_scale), and a copy scaled.
double workload_load(const sim::SimulationConfig& config);
sim::SimulationConfig scaled_load(const sim::SimulationConfig& config, double factor);

class SimulationRunner : public QObject {
  Q_OBJECT

 public:
  explicit SimulationRunner(QObject* parent = nullptr);
  ~SimulationRunner() override;  // cancels and waits for a running job

  // false when a job is already running.
  bool start(SimulationJob job);
  void cancel();
  bool running() const { return thread_ != nullptr; }
  // The last finished job's outcome (also after a cancel: what ran until then).
  const std::optional<SimulationOutcome>& outcome() const { return outcome_; }
  // Blocks (spinning the event loop) until no job runs or `timeout_ms` passes. Tests and --screenshot.
  bool wait_for_idle(int timeout_ms);

 signals:
  void progress(int percent);
  void finished();
  void cancelled();
  void failed(const QString& message);

 private:
  void on_thread_done();

  QThread* thread_ = nullptr;
  std::shared_ptr<std::atomic<bool>> stop_;
  std::shared_ptr<std::optional<SimulationOutcome>> pending_;
  std::shared_ptr<QString> pending_error_;
  std::optional<SimulationOutcome> outcome_;
};

}  // namespace kvplan::gui
