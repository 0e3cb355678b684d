#include "interrupt_guard.h"

#include <csignal>

namespace kvplan::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
struct sigaction g_previous {};

extern "C" void on_sigint(int) { g_interrupted = 1; }

}  // namespace

InterruptGuard::InterruptGuard() {
  g_interrupted = 0;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second SIGINT takes the default action
  sigaction(SIGINT, &action, &g_previous);
}

InterruptGuard::~InterruptGuard() { sigaction(SIGINT, &g_previous, nullptr); }

bool InterruptGuard::requested() const { return g_interrupted != 0; }

}  // namespace kvplan::cli
