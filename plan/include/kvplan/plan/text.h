// kvplan/plan/text.h — numbers as every kvplan output writes them (thousands separators, GiB with
// two decimals), shared by the text answers, the reports and the front ends.
//
//   plan::with_commas(476016);          // "476,016"
//   plan::gib_text(85029615042);        // "79.19 GiB"
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/core/parallelism.h"

namespace kvplan::plan {

std::string with_commas(int64_t v);
std::string gib_text(int64_t bytes);
std::string parallel_text(const Parallelism& p);  // e.g. "tp=4, pp=1, dp=2, ep=8"

}  // namespace kvplan::plan
