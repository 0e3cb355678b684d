#include "background_job.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QPointer>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <exception>

namespace kvplan::gui {

// What the worker thread shares with the GUI thread: the stop flag, the error text, and the thread.
struct BackgroundJob::Run {
  uint64_t generation = 0;
  std::atomic<bool> stop{false};
  QString error;
  std::function<void()> on_done;
  QThread* thread = nullptr;
};

BackgroundJob::BackgroundJob(QObject* parent) : QObject(parent) {}

BackgroundJob::~BackgroundJob() {
  for (const std::shared_ptr<Run>& r : threads_) r->stop.store(true);
  for (const std::shared_ptr<Run>& r : threads_) {
    r->thread->wait();
    delete r->thread;
  }
}

uint64_t BackgroundJob::start(Work work, std::function<void()> on_done) {
  cancel();
  auto run = std::make_shared<Run>();
  run->generation = ++generation_;
  run->on_done = std::move(on_done);
  QPointer<BackgroundJob> self(this);
  Run* raw = run.get();  // the thread never outlives `run` (threads_ holds it until finished)
  run->thread = QThread::create([work = std::move(work), raw, self] {
    Control control;
    control.stop = [raw] { return raw->stop.load(std::memory_order_relaxed); };
    control.progress = [raw, self](double f) {
      const int pct = static_cast<int>(std::lround(std::clamp(f, 0.0, 1.0) * 100));
      const uint64_t g = raw->generation;
      QMetaObject::invokeMethod(
          self.data(), [self, pct, g] { if (self && self->current_ && self->current_->generation == g) emit self->progress(pct); },
          Qt::QueuedConnection);
    };
    try {
      work(control);
    } catch (const std::exception& e) {
      raw->error = QString::fromUtf8(e.what());
    }
  });
  connect(run->thread, &QThread::finished, this, [this, run] { on_thread_done(run); });
  current_ = run;
  threads_.push_back(run);
  run->thread->start();
  return run->generation;
}

void BackgroundJob::cancel() {
  if (current_) current_->stop.store(true);
  current_.reset();
}

void BackgroundJob::on_thread_done(const std::shared_ptr<Run>& run) {
  run->thread->wait();
  run->thread->deleteLater();
  threads_.erase(std::remove(threads_.begin(), threads_.end(), run), threads_.end());
  if (current_ != run) return;  // stale: a newer start or a cancel came
  current_.reset();
  if (!run->error.isEmpty()) {
    emit failed(run->error);
    return;
  }
  if (run->on_done) run->on_done();
  emit finished();
}

bool BackgroundJob::wait_for_idle(int timeout_ms) {
  QDeadlineTimer deadline(timeout_ms);
  while (!threads_.empty() && !deadline.hasExpired()) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  QCoreApplication::processEvents();
  return threads_.empty();
}

}  // namespace kvplan::gui
