#include "sibling_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::cli {

void exec_sibling(const std::string& name, const std::vector<std::string>& args, const std::string& needs) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path exe = ec ? std::filesystem::path() : self.parent_path() / name;
  if (exe.empty() || !std::filesystem::exists(exe, ec)) {
    throw ConfigError(fmt::format("{} is not installed next to kvplan; {}", name, needs));
  }
  std::vector<std::string> all{exe.string()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv(argv[0], argv.data());
  throw ConfigError(fmt::format("cannot run '{}' ({})", exe.string(), std::strerror(errno)));
}

}  // namespace kvplan::cli
