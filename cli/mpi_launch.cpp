#include <cstdlib>
#include <string>

#include "mpi_session.h"

namespace kvplan::cli {

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return true;
  }
  return false;
}

}  // namespace kvplan::cli
