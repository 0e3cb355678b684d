// Fuzz target: the `kvplan` argument vector. The input is split at newlines into at most 24
// arguments after "kvplan"; subcommands that run simulations are given --explain-step or stay in
// flag validation (their run time grows with the load asked for, which is not a defect). An
// argument vector that names no subcommand gets `gpus` appended: `kvplan` alone runs the default
// scenario, a whole capacity search (about 10 s under AddressSanitizer, covered by the CLI tests),
// and libFuzzer runs the empty input first. Exit
// statuses 0 and 2 are expected; a crash, an escaped exception or exit 70 (internal error) is a
// defect.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int kvplan_cli_main(int argc, char** argv);  // cli/main.cpp, renamed for this target

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"kvplan"};
  std::string current;
  for (size_t i = 0; i < size && args.size() < 25; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty() && args.size() < 25) args.push_back(current);
  // Long simulations are not defects: keep simulate/capacity to explaining one step.
  static const char* const kSubcommands[] = {"models", "gpus",   "memory",   "simulate",
                                             "capacity", "report", "calibrate"};
  bool names_subcommand = false;
  for (size_t i = 1; i < args.size() && !names_subcommand; ++i)
    for (const char* sub : kSubcommands) names_subcommand = names_subcommand || args[i] == sub;
  if (!names_subcommand) args.push_back("gpus");
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "simulate" || args[i] == "capacity") {
      args[i] = "simulate";
      args.insert(args.begin() + static_cast<long>(i) + 1, {"--explain-step", "4,512"});
      break;
    }
    if (args[i] == "calibrate" || args[i] == "report") return 0;  // write files; covered by their own targets
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream sink;
  std::streambuf* out = std::cout.rdbuf(sink.rdbuf());
  std::streambuf* err = std::cerr.rdbuf(sink.rdbuf());
  const int status = kvplan_cli_main(static_cast<int>(args.size()), argv.data());
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  if (status != 0 && status != 2) std::abort();  // an internal error reached by input
  return 0;
}
