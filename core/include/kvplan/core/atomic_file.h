// kvplan/core/atomic_file.h — files that appear whole or not at all.
//
//   AtomicFile f("out/summary.json");   // writes out/summary.json.partial
//   f.stream() << text;
//   f.commit();                         // flush, close, check, rename onto out/summary.json
//
// A file that is destroyed without commit() removes its .partial (an exception unwound past it),
// unless keep_partial() was called (an interrupted run keeps what it completed, under the .partial
// name, so it can never be taken for a finished file). Every failure — cannot open, short write,
// full disk, rename — throws ConfigError naming the path and the OS reason; nothing is reported as
// written that was not. A path that is a device or pipe (/dev/stdout, /dev/full, a FIFO) is written
// in place, checked the same way: renaming onto it would replace the device node.
#pragma once

#include <fstream>
#include <string>
#include <string_view>

namespace kvplan {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // throws ConfigError when the .partial cannot be created
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  std::ostream& stream() { return out_; }
  const std::string& path() const { return path_; }
  std::string partial_path() const { return path_ + ".partial"; }

  void commit();        // throws ConfigError; afterwards path() holds exactly what was written
  void keep_partial();  // flush and close, leave <path>.partial in place (checked like commit)

 private:
  void close_checked();
  std::string path_;
  std::ofstream out_;
  bool direct_ = false;  // a device or pipe, written in place
  bool done_ = false;
};

// The whole text to `path`, atomically (AtomicFile + commit).
void write_file_atomically(const std::string& path, std::string_view text);

// stdout after the last write: flushes and throws ConfigError if any write to it failed
// (`kvplan ... > /dev/full`, a closed pipe).
void check_stdout();

}  // namespace kvplan
