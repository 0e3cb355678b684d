// sim/internal/trace_reader.h — reads a trace file row by row, in any of trace.h's formats,
// checking every field; the RequestSource in trace.cpp turns rows into requests.
//
//   TraceReader reader("data/traces/mooncake_conversation.jsonl");
//   TraceRow row;  while (reader.next(row)) { ... row.prompt_tokens ... }
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/sim/time.h"
#include "kvplan/sim/trace.h"

namespace kvplan::sim::internal {

// One row as recorded, checked but not yet adjusted by TraceOptions.
struct TraceRow {
  int64_t line = 0;        // 1-based line number in the file
  TimeNs time_ns = 0;      // Azure: wall clock (ns since 1970); others: offset from the trace start
  int64_t prompt_tokens = 0;   // >= 1
  int64_t output_tokens = 0;   // >= 0 (zero is kept here; the source reads it as 1)
  int32_t hash_block_tokens = 0;        // 0: the row carries no prefix identity
  std::vector<uint64_t> prefix_hashes;  // whole blocks only: at most prompt_tokens / hash_block_tokens
};

// The format of a trace, judged from its first non-blank line. Throws ConfigError if it fits none.
TraceFormat classify_first_line(const std::string& path, int64_t line, std::string_view text);

class TraceReader {
 public:
  explicit TraceReader(std::string path);  // opens the file and reads any header; throws ConfigError
  TraceFormat format() const { return format_; }
  const std::string& path() const { return path_; }
  // The next row, or false at the end of the file. Throws ConfigError naming the path, line, field,
  // value and rule for a malformed row or one earlier than the row before it.
  bool next(TraceRow& row);

 private:
  bool next_line(std::string& text);  // the next non-blank line (without '\r'); false at the end
  [[noreturn]] void fail(std::string_view field, std::string_view value, std::string_view rule) const;
  [[noreturn]] void fail_line(std::string_view what) const;
  void read_csv_header(std::string text);
  void parse_csv_row(std::string_view text, TraceRow& row, std::string& time_text);
  void parse_json_row(std::string_view text, TraceRow& row, std::string& time_text);

  std::string path_;
  std::ifstream in_;
  TraceFormat format_ = TraceFormat::kNativeCsv;
  int64_t line_ = 0;
  std::string pending_;       // the first data line, read while looking for the header
  bool has_pending_ = false;
  // CSV column positions (-1: absent) and the number of columns the header names.
  int time_col_ = -1, prompt_col_ = -1, output_col_ = -1, hashes_col_ = -1;
  size_t num_cols_ = 0;
  int32_t csv_hash_block_tokens_ = 0;  // native CSV: from `# hash_block_tokens=N`
  bool have_previous_ = false;
  TimeNs previous_time_ns_ = 0;
  std::string previous_time_text_;
};

}  // namespace kvplan::sim::internal
