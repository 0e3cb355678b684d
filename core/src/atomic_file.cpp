#include "kvplan/core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

namespace {

std::string os_reason() {
  return errno != 0 ? std::string(std::strerror(errno)) : std::string("write failed: device full, or the reader went away");
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // A device, pipe or socket (/dev/stdout, /dev/full, a FIFO) is written in place: there is no
  // file to swap in, and renaming onto it would replace the device node.
  std::error_code ec;
  const auto status = std::filesystem::status(path_, ec);
  direct_ = !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
            !std::filesystem::is_directory(status);
  if (std::filesystem::is_directory(status)) {
    throw ConfigError(fmt::format("out: '{}' is a directory, not a file", path_));
  }
  const std::string target = direct_ ? path_ : partial_path();
  errno = 0;
  out_.open(target, std::ios::binary | std::ios::trunc);
  if (!out_) throw ConfigError(fmt::format("out: cannot write '{}' ({})", target, os_reason()));
}

AtomicFile::~AtomicFile() {
  if (done_) return;
  out_.close();
  if (direct_) return;
  std::error_code ec;
  std::filesystem::remove(partial_path(), ec);  // unwinding: leave nothing half-written behind
}

void AtomicFile::close_checked() {
  errno = 0;
  out_.flush();
  bool ok = static_cast<bool>(out_);
  out_.close();
  ok = ok && !out_.fail();
  if (!ok) {
    std::string reason = os_reason();
    std::error_code ec;
    if (!direct_) std::filesystem::remove(partial_path(), ec);
    done_ = true;
    throw ConfigError(fmt::format("out: writing '{}' failed ({}); nothing was written", path_, reason));
  }
}

void AtomicFile::commit() {
  if (done_) return;
  close_checked();
  done_ = true;
  if (direct_) return;
  std::error_code ec;
  std::filesystem::rename(partial_path(), path_, ec);
  if (ec) {
    std::filesystem::remove(partial_path(), ec);
    throw ConfigError(fmt::format("out: cannot move '{}' into place ({})", path_, ec.message()));
  }
}

void AtomicFile::keep_partial() {
  if (done_) return;
  close_checked();
  done_ = true;
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile f(path);
  f.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  f.commit();
}

void check_stdout() {
  errno = 0;
  std::cout.flush();
  bool ok = static_cast<bool>(std::cout);
  if (std::fflush(stdout) != 0) ok = false;
  if (!ok) {
    std::string reason = os_reason();
    std::cout.clear();
    throw ConfigError(fmt::format("stdout: writing the output failed ({})", reason));
  }
}

}  // namespace kvplan
