// CsvReader (csv_reader.h).
#include "csv_reader.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::calibration::internal {

namespace {

// One CSV record: fields separated by commas, "..." quoting with "" for a quote.
std::vector<std::string> split_record(std::string_view line, bool& ok) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  ok = true;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (quoted) ok = false;
  out.push_back(std::move(cur));
  return out;
}

}  // namespace

CsvReader::CsvReader(std::string path, const std::vector<std::string>& required_columns)
    : path_(std::move(path)), name_(std::filesystem::path(path_).filename().string()) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("published table '{}': cannot read the file", path_));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines_.push_back(std::move(line));
  }
  if (lines_.empty()) throw ConfigError(fmt::format("{} line 1: the file is empty (a header row is required)", name_));
  bool ok = true;
  std::vector<std::string> header = split_record(lines_[0], ok);
  if (!ok) throw ConfigError(fmt::format("{} line 1: unterminated quote in the header", name_));
  for (size_t i = 0; i < header.size(); ++i) columns_.emplace(header[i], i);
  for (const std::string& c : required_columns) {
    if (columns_.find(c) == columns_.end()) {
      throw ConfigError(fmt::format("{} line 1: column '{}' is missing (the header must name it)", name_, c));
    }
  }
}

bool CsvReader::next() {
  while (next_line_ < lines_.size()) {
    const std::string& l = lines_[next_line_++];
    line_ = static_cast<int>(next_line_);
    if (l.find_first_not_of(" \t") == std::string::npos) continue;
    bool ok = true;
    fields_ = split_record(l, ok);
    if (!ok) throw ConfigError(fmt::format("{} line {}: unterminated quote", name_, line_));
    if (fields_.size() != columns_.size()) {
      throw ConfigError(fmt::format("{} line {}: {} fields, the header has {} (every row must have one per column)",
                                    name_, line_, fields_.size(), columns_.size()));
    }
    return true;
  }
  return false;
}

bool CsvReader::has_column(std::string_view column) const { return columns_.find(column) != columns_.end(); }

std::string_view CsvReader::text(std::string_view column) const {
  auto it = columns_.find(column);
  if (it == columns_.end()) {
    throw ConfigError(fmt::format("{} line 1: column '{}' is missing (the header must name it)", name_, column));
  }
  return fields_[it->second];
}

void CsvReader::fail(std::string_view column, std::string_view rule) const {
  throw ConfigError(fmt::format("{} line {}: field '{}'='{}' {}", name_, line_, column, text(column), rule));
}

int64_t CsvReader::integer(std::string_view column, int64_t min) const {
  const std::string_view t = text(column);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) fail(column, "must be an integer");
  if (v < min) fail(column, fmt::format("must be >= {}", min));
  return v;
}

double CsvReader::positive(std::string_view column) const {
  const std::string t(text(column));
  char* end = nullptr;
  const double v = t.empty() ? 0.0 : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size()) fail(column, "must be a number");
  if (!std::isfinite(v) || v <= 0) fail(column, "must be a finite number > 0");
  return v;
}

}  // namespace kvplan::calibration::internal
