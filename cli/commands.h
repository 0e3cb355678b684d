// cli/commands.h — the subcommands of `kvplan`. Each returns the process exit status and throws
// ConfigError for bad input (main prints it and exits with status 2).
#pragma once

#include <string>
#include <vector>

#include "memory_options.h"

namespace kvplan::cli {

int run_models(bool json);
int run_gpus(bool json);

struct MemoryRequest {
  FlagValues flags;
  bool json = false;
  std::string compare;        // KEY=V1,V2,...
  std::string from_vllm_log;  // path
};
int run_memory(const MemoryRequest& request);

struct SimRequest {
  FlagValues memory_flags;  // model, GPU, engine, KV scheme (see memory_options.h)
  FlagValues sim_flags;     // scheduler, workload, SLO (see sim_options.h)
  bool json = false;
  std::string out_dir;      // simulate: write summary.json, requests.csv, timeseries.csv here
  double tolerance = 0;     // capacity: relative bracket width at which the search stops
};
int run_simulate(const SimRequest& request);
int run_capacity(const SimRequest& request);
// The default run's simulated answer: concurrent chat users under an SLO.
int run_default_users();

}  // namespace kvplan::cli
