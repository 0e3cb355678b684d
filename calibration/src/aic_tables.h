// calibration/src/aic_tables.h — what the readers of aiconfigurator's section 6-7 tables share
// (published_import_mixers.cpp, published_import_dsv4.cpp): the three GPUs of those tables and the
// run of one (GPU, parquet table) with its provenance (snapshot, blob).
#pragma once

#include <string>

#include "csv_reader.h"
#include "published_tables.h"

namespace kvplan::calibration::internal {

struct AicGpu {
  const char* key;     // the tables' `gpu` value, e.g. "h100_sxm"
  const char* device;  // the device name the collector ran on
  const char* preset;  // kvplan's GPU preset
};

// The row's GPU; fails naming the column for a GPU the tables do not have.
const AicGpu& gpu_of(const CsvReader& csv);

// The run of one (GPU, parquet table): `table` is "<family>/<engine>/<version>/<name>", `what` the
// source and engine version the profile's label names.
PublishedRun& run_of(Runs& runs, const CsvReader& csv, const AicGpu& gpu, const std::string& table,
                     const std::string& what);

}  // namespace kvplan::calibration::internal
