// kvplan/sim/event_queue.h — the simulator's clock and agenda.
//
//   EventQueue q;
//   q.push(Event{.time_ns = 5'000, .kind = EventKind::kArrival, .target = 0, .payload = 42});
//   while (!q.empty()) { Event e = q.pop(); ... q.now() == e.time_ns ... }
//
// Events are ordered by (time, kind priority, sequence number). The kind order says what happens
// first when several things fall on the same nanosecond: a finishing step frees memory before an
// arrival is queued; an idle replica starts its next step only after every arrival of that
// nanosecond is queued (kKick), so requests sent together are scheduled together, as an engine's
// loop sees every request waiting in its input queue; samples see the state after all of them. The sequence number (push order) breaks
// the remaining ties, so the order never depends on heap internals: the same pushes give the same
// pops, byte for byte.
#pragma once

#include <cstdint>
#include <vector>

#include "kvplan/sim/time.h"

namespace kvplan::sim {

// Lower value = earlier among events at the same time.
enum class EventKind : uint8_t {
  kStepDone = 0,         // a replica's forward pass ends
  kKvTransferDone = 1,   // prefill -> decode KV transfer ends (disaggregation)
  kArrival = 2,          // a request reaches the router
  kUserReturn = 3,       // a closed-loop user sends its next turn
  kKick = 4,             // an idle replica that received requests at this time plans a step
  kSample = 5,           // time-series sample
  kStop = 6,             // end of the simulated horizon
};

struct Event {
  TimeNs time_ns = 0;
  EventKind kind = EventKind::kArrival;
  int32_t target = 0;    // replica, user, ... depending on kind
  int64_t payload = 0;   // request id, step id, ... depending on kind
  uint64_t sequence = 0; // set by push()
};

class EventQueue {
 public:
  // Schedules an event. Its time may not be earlier than now(): the past cannot change.
  void push(Event event);
  // Removes and returns the first event and advances now() to its time. Precondition: !empty().
  Event pop();
  const Event& top() const { return heap_.front(); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  TimeNs now() const { return now_; }
  uint64_t pushed() const { return next_sequence_; }

 private:
  std::vector<Event> heap_;
  uint64_t next_sequence_ = 0;
  TimeNs now_ = 0;
};

}  // namespace kvplan::sim
