// tests/fuzz/fuzz_support.h — what every kvplan fuzz target shares: the input written to a file
// (the readers under test take paths, as users give them), and the rule that bad input may only
// ever end in a ConfigError. Any other exception, a crash, a hang or a blow-up is a defect:
// libFuzzer reports it and keeps the input (docs/fuzzing.md).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "kvplan/core/error.h"

namespace kvplan::fuzz {

// The input as a file under $TMPDIR (default /tmp), one per process and suffix, rewritten per input.
inline std::string write_input(const uint8_t* data, size_t size, const std::string& suffix) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/kvplan_fuzz_" + std::to_string(getpid()) + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Runs `body`; a ConfigError is the expected outcome of bad input, anything else propagates.
template <typename F>
void expect_only_config_errors(F&& body) {
  try {
    body();
  } catch (const ConfigError&) {
  }
}

}  // namespace kvplan::fuzz
