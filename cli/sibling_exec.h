// sibling_exec.h — hand the command to another kvplan executable installed next to this one.
//
// The kvplan executable links neither Qt nor the CUDA libraries (cuBLAS alone is ~0.3 s and 200 MB
// of start-up); the two commands that need them replace the process with their own executable:
//   report --pdf    -> kvplan-report-pdf      (Qt; KVPLAN_BUILD_GUI)
//   calibrate run   -> kvplan-calibrate-run   (CUDA + CUPTI; KVPLAN_ENABLE_CUDA)
//
//   exec_sibling("kvplan-report-pdf", {scenario, "--pdf", path}, "built with KVPLAN_BUILD_GUI=ON");
#pragma once

#include <string>
#include <vector>

namespace kvplan::cli {

// Does not return: execs <dir of this executable>/<name> with `args`, or throws ConfigError
// ("... is not installed next to kvplan; <needs>") when it is missing or cannot run.
[[noreturn]] void exec_sibling(const std::string& name, const std::vector<std::string>& args, const std::string& needs);

}  // namespace kvplan::cli
