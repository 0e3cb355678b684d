// tests/cli/run_cli.h — runs the kvplan binary (KVPLAN_BIN) with arguments and captures its exit
// status and output (stdout and stderr together), for the end-to-end CLI tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

namespace kvplan::testing {

struct CliResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line, capturing what it writes to stdout.
inline CliResult run_command(const std::string& cmd) {
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

// `stderr_too`: false keeps only stdout (JSON answers; progress and timing go to stderr).
inline CliResult run_cli(const std::string& args, bool stderr_too = true) {
  return run_command(std::string(KVPLAN_BIN) + " " + args + (stderr_too ? " 2>&1" : " 2>/dev/null"));
}

// A shell command line (for signals, redirections and limits); $KVPLAN stands for the binary.
inline CliResult run_shell(const std::string& script) {
  return run_command("KVPLAN='" + std::string(KVPLAN_BIN) + "' sh -c '" + script + "' 2>&1");
}

// A fresh directory under the test temporary folder, removed with everything in it at the end of
// the test (tests leave nothing behind).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::path(::testing::TempDir()) / ("kvplan_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Bad input: exit status 2 and a message holding every fragment (field, value, rule).
inline void expect_bad_input(const std::string& args, std::initializer_list<std::string> fragments) {
  CliResult r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  for (const std::string& f : fragments) {
    EXPECT_NE(r.out.find(f), std::string::npos) << args << "\nmissing '" << f << "' in:\n" << r.out;
  }
}

}  // namespace kvplan::testing
