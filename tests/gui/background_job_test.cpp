// BackgroundJob: a newer start stops the older work and drops its result; errors arrive as failed().
#include <QSignalSpy>

#include <atomic>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "background_job.h"

namespace kvplan::gui {
namespace {

TEST(BackgroundJob, ANewerStartStopsTheOlderAndDropsItsResult) {
  BackgroundJob job;
  QSignalSpy finished(&job, &BackgroundJob::finished);
  std::atomic<bool> first_saw_stop{false};
  bool first_done = false, second_done = false;
  // The first work runs until it is told to stop.
  job.start(
      [&](const BackgroundJob::Control& c) {
        while (!c.stop()) std::this_thread::yield();
        first_saw_stop = true;
      },
      [&] { first_done = true; });
  EXPECT_TRUE(job.running());
  const uint64_t g = job.start([](const BackgroundJob::Control& c) { c.progress(1.0); }, [&] { second_done = true; });
  EXPECT_EQ(g, 2u);
  ASSERT_TRUE(job.wait_for_idle(30'000));
  EXPECT_TRUE(first_saw_stop);
  EXPECT_FALSE(first_done);
  EXPECT_TRUE(second_done);
  EXPECT_EQ(finished.count(), 1);
  EXPECT_FALSE(job.running());
}

TEST(BackgroundJob, ErrorsArriveAsFailedAndCancelDeliversNothing) {
  BackgroundJob job;
  QSignalSpy failed(&job, &BackgroundJob::failed);
  bool done = false;
  job.start([](const BackgroundJob::Control&) { throw std::runtime_error("--tp=3 must divide 64 heads"); }, [&] { done = true; });
  ASSERT_TRUE(job.wait_for_idle(30'000));
  ASSERT_EQ(failed.count(), 1);
  EXPECT_EQ(failed.at(0).at(0).toString(), QStringLiteral("--tp=3 must divide 64 heads"));
  EXPECT_FALSE(done);

  job.start([](const BackgroundJob::Control& c) { while (!c.stop()) std::this_thread::yield(); }, [&] { done = true; });
  job.cancel();
  ASSERT_TRUE(job.wait_for_idle(30'000));
  EXPECT_FALSE(done);
  EXPECT_EQ(failed.count(), 1);
}

}  // namespace
}  // namespace kvplan::gui
