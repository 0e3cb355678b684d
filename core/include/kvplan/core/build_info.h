// What built this kvplan: the version and the commit, for stamps in reports, run files and
// calibration rows.
//
//   std::string stamp = kvplan::version_stamp();   // "0.1.0 (04dac41)"
//
// The commit is taken at build time, not at configure time (cmake/GitCommit.cmake): a build
// configured before the last commit still names the commit it was built from, with "+dirty" when
// tracked files had changes, and "unknown" outside a git checkout.
#pragma once

#include <string>
#include <string_view>

namespace kvplan {

std::string_view build_version();  // the project version, e.g. "0.1.0"
std::string_view build_commit();   // short commit hash, e.g. "04dac41" or "04dac41+dirty"
std::string version_stamp();       // "<version> (<commit>)"

}  // namespace kvplan
