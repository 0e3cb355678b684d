#include "kvplan/plan/data_dir.h"

#include <cstdlib>

#ifndef KVPLAN_DATA_DIR
#define KVPLAN_DATA_DIR "data"
#endif

namespace kvplan::plan {

std::string data_dir() {
  if (const char* env = std::getenv("KVPLAN_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return KVPLAN_DATA_DIR;
}

}  // namespace kvplan::plan
