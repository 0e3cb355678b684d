// calibration/src/csv_reader.h (private) — a small CSV reader for the published tables: header by
// name, RFC 4180 quoting, and typed fields whose errors name the file, the line, the field, the
// value and the rule.
//
//   CsvReader csv(path, {"m", "n", "k", "latency_ms"});   // required columns
//   while (csv.next()) { int64_t m = csv.integer("m", 1); double ms = csv.positive("latency_ms"); }
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan::calibration::internal {

class CsvReader {
 public:
  // Reads the whole file; throws ConfigError when it cannot be read or a required column is missing.
  CsvReader(std::string path, const std::vector<std::string>& required_columns);

  bool next();             // the next data row; false at the end (blank lines are skipped)
  int line() const { return line_; }  // 1-based line of the current row
  const std::string& file() const { return name_; }
  bool has_column(std::string_view column) const;

  std::string_view text(std::string_view column) const;
  // An integer >= min (no fraction, no exponent).
  int64_t integer(std::string_view column, int64_t min) const;
  // A finite number > 0.
  double positive(std::string_view column) const;
  // ConfigError "<file> line <n>: field '<column>'='<value>' <rule>".
  [[noreturn]] void fail(std::string_view column, std::string_view rule) const;

 private:
  std::string path_, name_;
  std::vector<std::string> lines_;
  size_t next_line_ = 1;
  int line_ = 0;
  std::map<std::string, size_t, std::less<>> columns_;
  std::vector<std::string> fields_;
};

}  // namespace kvplan::calibration::internal
