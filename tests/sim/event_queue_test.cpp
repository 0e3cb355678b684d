#include "kvplan/sim/event_queue.h"

#include <gtest/gtest.h>

namespace kvplan::sim {
namespace {

TEST(EventQueue, OrdersByTimeThenKindThenPushOrder) {
  EventQueue q;
  q.push({.time_ns = 20, .kind = EventKind::kArrival, .target = 0, .payload = 1});
  q.push({.time_ns = 10, .kind = EventKind::kSample, .target = 0, .payload = 2});
  q.push({.time_ns = 10, .kind = EventKind::kArrival, .target = 0, .payload = 3});
  q.push({.time_ns = 10, .kind = EventKind::kStepDone, .target = 0, .payload = 4});
  q.push({.time_ns = 10, .kind = EventKind::kArrival, .target = 0, .payload = 5});
  std::vector<int64_t> order;
  std::vector<TimeNs> times;
  while (!q.empty()) {
    Event e = q.pop();
    order.push_back(e.payload);
    times.push_back(q.now());
  }
  // At t=10: the step finishes first, then both arrivals in push order, then the sample.
  EXPECT_EQ(order, (std::vector<int64_t>{4, 3, 5, 2, 1}));
  EXPECT_EQ(times, (std::vector<TimeNs>{10, 10, 10, 10, 20}));
}

TEST(EventQueue, ManyEqualEventsPopInPushOrder) {
  EventQueue q;
  for (int i = 0; i < 1000; ++i) q.push({.time_ns = 7, .kind = EventKind::kArrival, .target = 0, .payload = i});
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(q.pop().payload, i);
}

TEST(EventQueue, RefusesEventsInThePast) {
  EventQueue q;
  q.push({.time_ns = 100, .kind = EventKind::kArrival});
  q.pop();
  EXPECT_THROW(q.push({.time_ns = 99, .kind = EventKind::kArrival}), std::logic_error);
  EXPECT_NO_THROW(q.push({.time_ns = 100, .kind = EventKind::kArrival}));
}

}  // namespace
}  // namespace kvplan::sim
