// tests/cli/run_cli.h — runs the kvplan binary (KVPLAN_BIN) with arguments and captures its exit
// status and output (stdout and stderr together), for the end-to-end CLI tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

namespace kvplan::testing {

struct CliResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

// `stderr_too`: false keeps only stdout (JSON answers; progress and timing go to stderr).
inline CliResult run_cli(const std::string& args, bool stderr_too = true) {
  std::string cmd = std::string(KVPLAN_BIN) + " " + args + (stderr_too ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// Bad input: exit status 2 and a message holding every fragment (field, value, rule).
inline void expect_bad_input(const std::string& args, std::initializer_list<std::string> fragments) {
  CliResult r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  for (const std::string& f : fragments) {
    EXPECT_NE(r.out.find(f), std::string::npos) << args << "\nmissing '" << f << "' in:\n" << r.out;
  }
}

}  // namespace kvplan::testing
