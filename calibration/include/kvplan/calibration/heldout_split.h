// kvplan/calibration/heldout_split.h — the deterministic 70/30 split of calibration rows into
// fitted and held-out shapes.
//
//   bool out = is_heldout(m, 30);   // the same answer on every machine, in every run
//
// The split is by SHAPE, not by row order: the key is the kernel id plus params_json without its
// provenance keys (those starting with "src_", e.g. the source row of a repeated measurement), so
// repeats of one shape fall on the same side. The key is hashed with 64-bit FNV-1a and a final
// avalanche mix; bucket = hash mod 100. Rows whose bucket is below the percentage are held out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvplan/calibration/measurement.h"

namespace kvplan::calibration {

inline constexpr uint64_t kHeldoutSplitSalt = 0;
inline constexpr uint64_t kInnerSplitSalt = 0x5EED;  // the grid fitter's choice of smoothing

// kernel + "|" + canonical params_json without "src_*" keys (params_json as is when not JSON).
std::string split_key(const Measurement& m);
uint64_t split_hash(std::string_view key);
// (hash mixed with `salt`) mod 100.
int split_bucket(uint64_t hash, uint64_t salt);
bool is_heldout(const Measurement& m, int heldout_percent);

}  // namespace kvplan::calibration
