// bench/serving_csv.h — the measurement CSVs the serving benches read, as one map per data row
// keyed by the header's column names.
//
//   for (const Record& r : read_csv(path)) use(field(r, "latency_ms", path));
//
// RFC 4180: quoted fields may hold commas, quotes ("") and newlines; CRLF or LF line ends; a UTF-8
// BOM is skipped. Errors are ConfigErrors naming the file (and the row or the column).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kvplan::bench {

using Record = std::map<std::string, std::string>;

std::vector<Record> read_csv(const std::string& path);
const std::string& field(const Record& r, const std::string& name, const std::string& path);

}  // namespace kvplan::bench
