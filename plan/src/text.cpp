#include "kvplan/plan/text.h"

#include <fmt/format.h>

#include "kvplan/core/number_text.h"

namespace kvplan::plan {

std::string with_commas(int64_t v) { return kvplan::with_commas(v); }

std::string gib_text(int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / 1073741824.0); }

std::string parallel_text(const Parallelism& p) {
  std::string out = fmt::format("tp={}, pp={}", p.tensor_parallel, p.pipeline_parallel);
  if (p.data_parallel > 1) out += fmt::format(", dp={}", p.data_parallel);
  if (p.expert_parallel) out += fmt::format(", ep={}", p.expert_parallel_size());
  return out;
}

}  // namespace kvplan::plan
