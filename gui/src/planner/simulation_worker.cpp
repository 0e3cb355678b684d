#include "simulation_worker.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QPointer>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <exception>

namespace kvplan::gui {

double workload_load(const sim::SimulationConfig& c) {
  switch (c.workload.kind) {
    case sim::WorkloadKind::kClosedLoop: return c.workload.closed.num_users;
    case sim::WorkloadKind::kOpenLoop: return c.workload.open.rate_per_s;
    case sim::WorkloadKind::kTrace: return 1.0 / c.workload.trace.time_scale;  // relative speed
    case sim::WorkloadKind::kList: return 1.0;
  }
  return 1.0;
}

sim::SimulationConfig scaled_load(const sim::SimulationConfig& config, double factor) {
  sim::SimulationConfig c = config;
  switch (c.workload.kind) {
    case sim::WorkloadKind::kClosedLoop:
      c.workload.closed.num_users = std::max(1, static_cast<int32_t>(std::lround(c.workload.closed.num_users * factor)));
      break;
    case sim::WorkloadKind::kOpenLoop: c.workload.open.rate_per_s *= factor; break;
    case sim::WorkloadKind::kTrace: c.workload.trace.time_scale /= factor; break;  // faster arrivals
    case sim::WorkloadKind::kList: break;
  }
  return c;
}

SimulationOutcome run_simulation_job(const SimulationJob& job, const std::function<void(double)>& progress,
                                     const std::atomic<bool>& stop) {
  QElapsedTimer clock;
  clock.start();
  std::vector<double> factors = job.load_factors;
  if (std::find(factors.begin(), factors.end(), 1.0) == factors.end()) factors.push_back(1.0);
  std::sort(factors.begin(), factors.end());
  // A list workload has no load to scale.
  if (job.config.workload.kind == sim::WorkloadKind::kList) factors = {1.0};

  SimulationOutcome out;
  const double n = static_cast<double>(factors.size());
  for (size_t i = 0; i < factors.size() && !stop.load(); ++i) {
    const double factor = factors[i];
    sim::SimulationConfig c = scaled_load(job.config, factor);
    sim::RunHooks hooks;
    hooks.should_stop = [&stop] { return stop.load(std::memory_order_relaxed); };
    if (progress) hooks.on_progress = [&](double f) { progress((static_cast<double>(i) + f) / n); };
    const bool main_run = factor == 1.0;
    if (main_run) {
      hooks.on_request = [&out](const sim::RequestRecord& r) {
        out.ttft_ms.push_back(static_cast<double>(r.ttft_ns()) / 1e6);
        if (r.output_tokens > 1) out.tpot_ms.push_back(r.tpot_ns() / 1e6);
        out.e2e_ms.push_back(static_cast<double>(r.e2e_ns()) / 1e6);
      };
    }
    sim::SimulationResult r = sim::run_simulation(c, hooks);
    if (stop.load()) break;  // a cut-short run is not a point of the curve
    out.sweep.push_back({factor, workload_load(c), r.summary});
    if (main_run) out.result = std::move(r);
  }
  out.cancelled = stop.load();
  std::sort(out.ttft_ms.begin(), out.ttft_ms.end());
  std::sort(out.tpot_ms.begin(), out.tpot_ms.end());
  std::sort(out.e2e_ms.begin(), out.e2e_ms.end());
  if (progress && !out.cancelled) progress(1.0);
  out.wall_ms = static_cast<double>(clock.nsecsElapsed()) / 1e6;
  return out;
}

SimulationRunner::SimulationRunner(QObject* parent) : QObject(parent) {}

SimulationRunner::~SimulationRunner() {
  if (thread_ != nullptr) {
    stop_->store(true);
    thread_->wait();
    delete thread_;
  }
}

bool SimulationRunner::start(SimulationJob job) {
  if (thread_ != nullptr) return false;
  stop_ = std::make_shared<std::atomic<bool>>(false);
  pending_ = std::make_shared<std::optional<SimulationOutcome>>();
  pending_error_ = std::make_shared<QString>();
  // The thread touches only these shared pieces and posts progress through queued calls, so the
  // runner may be destroyed first (the destructor waits anyway).
  auto stop = stop_;
  auto pending = pending_;
  auto error = pending_error_;
  QPointer<SimulationRunner> self(this);
  thread_ = QThread::create([job = std::move(job), stop, pending, error, self] {
    try {
      auto report = [self](double f) {
        if (!self) return;
        const int pct = static_cast<int>(std::lround(f * 100));
        QMetaObject::invokeMethod(self.data(), [self, pct] { if (self) emit self->progress(pct); }, Qt::QueuedConnection);
      };
      *pending = run_simulation_job(job, report, *stop);
    } catch (const std::exception& e) {
      *error = QString::fromUtf8(e.what());
    }
  });
  connect(thread_, &QThread::finished, this, &SimulationRunner::on_thread_done);
  thread_->start();
  return true;
}

void SimulationRunner::cancel() {
  if (stop_) stop_->store(true);
}

void SimulationRunner::on_thread_done() {
  thread_->wait();
  thread_->deleteLater();
  thread_ = nullptr;
  if (!pending_error_->isEmpty()) {
    emit failed(*pending_error_);
    return;
  }
  outcome_ = std::move(*pending_);
  if (outcome_->cancelled) emit cancelled();
  else emit finished();
}

bool SimulationRunner::wait_for_idle(int timeout_ms) {
  QDeadlineTimer deadline(timeout_ms);
  while (thread_ != nullptr && !deadline.hasExpired()) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  QCoreApplication::processEvents();
  return thread_ == nullptr;
}

}  // namespace kvplan::gui
