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

}  // namespace kvplan::cli
