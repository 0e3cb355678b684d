// Simulator speed and memory: replays the Azure LLM 2023 conversation trace (19,366 requests) for
// Llama-3.1-8B on one H100 SXM with vLLM defaults, `repeat` times back to back, and prints wall
// time, simulated requests and events per second, and the process's peak resident memory.
// Memory should follow the number of active requests, not the trace length: compare --repeat 1
// with --repeat 4 (run each in its own process; peak RSS is per process).
//
//   kvplan_bench_sim [--repeat N] [--trace FILE]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "kvplan/core/presets.h"
#include "kvplan/sim/simulation.h"
#include "kvplan/sim/trace.h"

using namespace kvplan;
using namespace kvplan::sim;

int main(int argc, char** argv) {
  int repeat = 1;
  std::string trace = std::string(KVPLAN_SOURCE_DIR) + "/data/traces/azure_llm_2023_conv.csv";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--trace") == 0) trace = argv[i + 1];
  }
  // The trace repeated back to back (arrivals shifted by its duration each time), written as a
  // native CSV and simulated in one run, so a longer workload is one longer stream.
  std::string path = trace;
  if (repeat > 1) {
    path = "/tmp/kvplan_bench_trace_x" + std::to_string(repeat) + ".csv";
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fprintf(f, "arrival_s,prompt_tokens,output_tokens\n");
    TimeNs offset = 0;
    for (int r = 0; r < repeat; ++r) {
      auto source = open_trace(trace, TraceOptions{});
      TimeNs last = 0;
      while (auto req = source->next()) {
        std::fprintf(f, "%.9f,%d,%d\n", ns_to_seconds(offset + req->arrival_ns), req->prompt_tokens, req->output_tokens);
        last = req->arrival_ns;
      }
      offset += last + kNsPerSecond;
    }
    std::fclose(f);
  }
  SimulationConfig c = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  c.workload.kind = WorkloadKind::kTrace;
  c.workload.trace_path = path;
  c.sample_interval_ns = kNsPerSecond;
  auto start = std::chrono::steady_clock::now();
  SimulationResult result = run_simulation(c);
  double total_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t requests = result.summary.finished + result.summary.unfinished + result.summary.rejected;
  int64_t events = result.events, steps = result.steps, peak_active = result.peak_active_requests;
  std::printf("trace %s x%d: finished %lld, p50 TTFT %.1f ms, p50 TPOT %.2f ms, cost memo hits %lld misses %lld, "
              "time-series rows %zu\n",
              trace.c_str(), repeat, static_cast<long long>(result.summary.finished), result.summary.ttft_ms.p50,
              result.summary.tpot_ms.p50, static_cast<long long>(result.cost_memo_hits),
              static_cast<long long>(result.cost_memo_misses), result.timeseries.size());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("repeat %d: %lld requests, %lld events, %lld steps in %.3f s wall -> %.0f requests/s, %.0f events/s; "
              "peak active requests %lld; peak RSS %.1f MiB\n",
              repeat, static_cast<long long>(requests), static_cast<long long>(events),
              static_cast<long long>(steps), total_wall, static_cast<double>(requests) / total_wall,
              static_cast<double>(events) / total_wall, static_cast<long long>(peak_active),
              static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
