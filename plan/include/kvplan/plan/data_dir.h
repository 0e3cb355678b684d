// kvplan/plan/data_dir.h — where kvplan's shipped data (traces, scenarios) is read from:
// $KVPLAN_DATA_DIR, else the source tree's data/ (KVPLAN_DATA_DIR at build time).
//
//   std::string trace = plan::data_dir() + "/traces/azure_llm_2023_conv.csv";
#pragma once

#include <string>

namespace kvplan::plan {

std::string data_dir();

}  // namespace kvplan::plan
