#include "kvplan/core/build_info.h"

#include "kvplan/config.h"
#include "kvplan/git_commit.h"  // generated at every build (cmake/GitCommit.cmake)

namespace kvplan {

std::string_view build_version() { return KVPLAN_VERSION; }

std::string_view build_commit() { return KVPLAN_GIT_COMMIT; }

std::string version_stamp() {
  return std::string(build_version()) + " (" + std::string(build_commit()) + ")";
}

}  // namespace kvplan
