// The fit / held-out split of whole-model runs (serving_split.h says why by sweep).
#include "serving_split.h"

#include <array>

#include <fmt/format.h>

#include "kvplan/calibration/heldout_split.h"
#include "kvplan/core/error.h"

namespace kvplan::bench {

namespace {
// The salt of the sweep split's bucket (calibration::split_bucket). Changing it reshuffles every
// sweep between the halves: fixed forever, like the calibration split's.
constexpr uint64_t kSweepSplitSalt = 0;
constexpr int kFitPercent = 50;
}  // namespace

SplitRule parse_split_rule(const std::string& text) {
  if (text == "sweep") return SplitRule::kSweep;
  if (text == "row") return SplitRule::kRowId;
  throw ConfigError(fmt::format("--split {}: must be 'sweep' (by deployment, the default) or 'row' (by row id)", text));
}

std::string split_rule_description(SplitRule rule) {
  return rule == SplitRule::kSweep
             ? "by sweep: splitmix(FNV-1a 64 of model, engine + version, GPU, mode, parallelism, prefill/decode "
               "workers, isl, osl) mod 100 < 50 = fit half; runs differing only in concurrency stay together"
             : "by row: FNV-1a 64 of the row id, even = fit half (the rule before issue 26)";
}

std::string aiconfigurator_sweep_key(const std::map<std::string, std::string>& record) {
  static const std::array<const char*, 24> kColumns = {
      "model_path",         "backend",
      "backend_version",    "system",
      "mode",               "tp_size",
      "pp_size",            "attention_dp_size",
      "moe_tp_size",        "moe_ep_size",
      "prefill_num_workers", "prefill_tp_size",
      "prefill_pp_size",    "prefill_attention_dp_size",
      "prefill_moe_tp_size", "prefill_moe_ep_size",
      "decode_num_workers", "decode_tp_size",
      "decode_pp_size",     "decode_attention_dp_size",
      "decode_moe_tp_size", "decode_moe_ep_size",
      "isl",                "osl"};
  std::string key;
  for (const char* column : kColumns) {
    const auto it = record.find(column);
    if (!key.empty()) key += '|';
    key += column;
    key += '=';
    if (it != record.end()) key += it->second;
  }
  return key;
}

bool in_fit_half(const ServingCase& c, SplitRule rule) {
  if (rule == SplitRule::kRowId) return (calibration::split_hash(c.id) & 1u) == 0;
  if (c.sweep_key.empty()) return false;
  return calibration::split_bucket(calibration::split_hash(c.sweep_key), kSweepSplitSalt) < kFitPercent;
}

}  // namespace kvplan::bench
