// Fuzz target: a request trace in any of the four formats (detected from the first line), read
// the way the simulator reads it, and its length distributions.
#include <cstdint>

#include "fuzz_support.h"
#include "kvplan/sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvplan::fuzz::write_input(data, size, "_trace");
  kvplan::fuzz::expect_only_config_errors([&] {
    kvplan::sim::TraceOptions options;
    options.max_requests = 2000;
    auto source = kvplan::sim::open_trace(path, options);
    while (source->next()) {
    }
  });
  kvplan::fuzz::expect_only_config_errors([&] { (void)kvplan::sim::read_trace_lengths(path); });
  return 0;
}
