#include "kvplan/sim/event_queue.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvplan::sim {

namespace {

// std::push_heap keeps the *largest* element first, so "later" compares as "less".
bool later(const Event& a, const Event& b) {
  if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
  if (a.kind != b.kind) return a.kind > b.kind;
  return a.sequence > b.sequence;
}

}  // namespace

void EventQueue::push(Event event) {
  if (event.time_ns < now_) {
    throw std::logic_error("EventQueue: event at " + std::to_string(event.time_ns) +
                           " ns scheduled before now=" + std::to_string(now_) + " ns");
  }
  event.sequence = next_sequence_++;
  heap_.push_back(event);
  std::push_heap(heap_.begin(), heap_.end(), later);
}

Event EventQueue::pop() {
  std::pop_heap(heap_.begin(), heap_.end(), later);
  Event e = heap_.back();
  heap_.pop_back();
  now_ = e.time_ns;
  return e;
}

}  // namespace kvplan::sim
