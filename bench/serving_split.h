// bench/serving_split.h — which whole-model runs fit kvplan's serving terms and which are held out
// to check them.
//
//   c.sweep_key = aiconfigurator_sweep_key(record);              // when the row is read
//   bool fit = in_fit_half(c, SplitRule::kSweep);                // every run of a sweep, one answer
//
// A published run is one point of a sweep: the same deployment (model, engine and version, GPU,
// parallelism, input and output lengths) measured at several concurrencies. Splitting rows one by
// one (kRowId, the rule before issue 26) put most held-out rows next to a fit row of the same sweep
// one concurrency step away, so the held-out half measured interpolation along a sweep. kSweep puts
// a run and every run that differs from it only in concurrency on the same side: the held-out half
// is made of deployments the fit never saw.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "serving_cases.h"

namespace kvplan::bench {

enum class SplitRule {
  kSweep,  // split_bucket(split_hash(sweep_key), 0) < 50: fit half (the default)
  kRowId,  // FNV-1a 64 of the row id, even: fit half (the rule before issue 26; --split row)
};
SplitRule parse_split_rule(const std::string& text);  // sweep | row; ConfigError otherwise
std::string split_rule_description(SplitRule rule);

// The columns of an aiconfigurator silicon_sample.csv row that name its sweep, "column=value"
// joined by '|' in this order: model_path, backend, backend_version, system, mode, tp_size,
// pp_size, attention_dp_size, moe_tp_size, moe_ep_size, the prefill_* and decode_* worker columns
// (num_workers, tp, pp, attention_dp, moe_tp, moe_ep), isl, osl. Left out: the id, the concurrency
// (silicon_data_source, batch_size, prefill/decode_batch_size: they move with the concurrency), the
// measurements, and the precision (a bf16 and an fp8 run of one deployment stay together, so the
// held-out half never has a fit row that differs from it only in weight format). A missing column
// is written empty.
std::string aiconfigurator_sweep_key(const std::map<std::string, std::string>& record);

// Whether the run belongs to the fit half. kSweep needs c.sweep_key (public runs have none and are
// never fitted: they are reported apart).
bool in_fit_half(const ServingCase& c, SplitRule rule);

}  // namespace kvplan::bench
