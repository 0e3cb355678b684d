// The serving benches' CSV reader (serving_csv.h).
#include "serving_csv.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::bench {

// RFC 4180 CSV: quoted fields may hold commas, quotes ("") and newlines. A UTF-8 BOM is skipped.
std::vector<Record> read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("serving measurements: cannot read '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      row.push_back(field);
      field.clear();
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(field);
      field.clear();
      if (!(row.size() == 1 && row[0].empty())) table.push_back(row);
      row.clear();
    } else {
      field += ch;
    }
  }
  if (!field.empty() || !row.empty()) {
    row.push_back(field);
    table.push_back(row);
  }
  if (table.empty()) throw ConfigError(fmt::format("serving measurements: '{}' is empty", path));
  std::vector<Record> out;
  const std::vector<std::string>& header = table.front();
  for (size_t r = 1; r < table.size(); ++r) {
    if (table[r].size() != header.size()) {
      throw ConfigError(fmt::format("serving measurements: '{}' data row {} has {} fields, the header {}", path, r,
                                    table[r].size(), header.size()));
    }
    Record rec;
    for (size_t c = 0; c < header.size(); ++c) rec[header[c]] = table[r][c];
    out.push_back(std::move(rec));
  }
  return out;
}

const std::string& field(const Record& r, const std::string& name, const std::string& path) {
  auto it = r.find(name);
  if (it == r.end()) throw ConfigError(fmt::format("serving measurements: '{}' has no column '{}'", path, name));
  return it->second;
}

}  // namespace kvplan::bench
