// interrupt_guard.h — Ctrl-C during a long command: finish the current step, keep what is
// complete, say it is partial, exit 130 (128 + SIGINT, as shells report it).
//
//   InterruptGuard interrupt;                       // installs the SIGINT handler
//   hooks.should_stop = [&] { return interrupt.requested(); };
//   ...                                             // destructor restores the previous handler
//
// A second Ctrl-C while the first is being honoured kills the process as usual.
#pragma once

namespace kvplan::cli {

inline constexpr int kInterruptedExit = 130;

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  bool requested() const;
};

}  // namespace kvplan::cli
