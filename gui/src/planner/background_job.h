// gui/src/planner/background_job.h — one piece of work at a time off the GUI thread, where a newer
// request replaces an older one: the planner's answer follows the inputs, so when they change while
// a capacity search (or a comparison, or a deployment search) runs, that run is told to stop and its
// result is dropped, never shown as current.
//
//   BackgroundJob job;                                  // lives on the GUI thread
//   auto out = std::make_shared<plan::CapacityAnswer>();
//   job.start([out](const BackgroundJob::Control& c) { *out = plan::find_capacity(s, {.should_stop = c.stop}); },
//             [out, this] { show(*out); });             // runs on the GUI thread, only if still current
//   job.start(...);                                     // the first one is stopped; its on_done never runs
//
// The work gets a stop test (to pass into RunHooks / CapacityRequest / DeploymentSearch) and a
// progress callback (fraction 0..1, forwarded as progress(percent) on the GUI thread). A ConfigError
// or any other exception from the current work arrives as failed(message).
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

class QThread;

namespace kvplan::gui {

class BackgroundJob : public QObject {
  Q_OBJECT

 public:
  struct Control {
    std::function<bool()> stop;               // true once this work is stale or cancelled
    std::function<void(double)> progress;     // fraction done, 0..1
  };
  using Work = std::function<void(const Control&)>;

  explicit BackgroundJob(QObject* parent = nullptr);
  ~BackgroundJob() override;  // stops every thread still running and waits for them

  // Stops the current work (if any; its on_done will not run) and starts `work` on a new thread.
  // `on_done` runs on the GUI thread after `work` returned, only if no newer start or cancel came.
  // Returns the new generation (increases by one per start).
  uint64_t start(Work work, std::function<void()> on_done);
  // Stops the current work; nothing is delivered for it.
  void cancel();
  bool running() const { return current_ != nullptr; }
  uint64_t generation() const { return generation_; }
  // Spins the event loop until nothing runs (stale threads included) or timeout_ms passes; true
  // when idle. Tests, --screenshot and --bench.
  bool wait_for_idle(int timeout_ms);

 signals:
  void progress(int percent);
  void finished();                   // after on_done of the current work ran
  void failed(const QString& message);

 private:
  struct Run;
  void on_thread_done(const std::shared_ptr<Run>& run);

  uint64_t generation_ = 0;
  std::shared_ptr<Run> current_;              // the run whose result is wanted
  std::vector<std::shared_ptr<Run>> threads_; // every run whose thread has not finished
};

}  // namespace kvplan::gui
