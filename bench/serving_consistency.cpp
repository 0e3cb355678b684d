// Rows whose measured TTFT and TPOT contradict their own sweep (serving_consistency.h says why).
#include "serving_consistency.h"

#include <map>
#include <string>

#include <fmt/format.h>

namespace kvplan::bench {

double requests_in_decode(const ServingCase& c) {
  if (c.osl < 2 || !(c.measured_tpot_ms > 0) || !(c.measured_ttft_ms >= 0)) return 0;
  const double decode_ms = static_cast<double>(c.osl - 1) * c.measured_tpot_ms;
  return static_cast<double>(c.concurrency_per_replica()) * decode_ms / (c.measured_ttft_ms + decode_ms);
}

namespace {

// Runs of one sweep: everything but the concurrency and the engine version.
std::string sweep_key(const ServingCase& c) {
  std::string key = fmt::format("{}|{}|{}|{}|", c.engine, c.gpu, c.isl, c.osl);
  for (const auto& [flag, value] : c.memory_flags) {
    if (flag != "engine-version") key += flag + "=" + value + ";";
  }
  return key;
}

}  // namespace

void mark_inconsistent_runs(std::vector<ServingCase>& cases) {
  std::map<std::string, std::vector<const ServingCase*>> sweeps;
  for (const ServingCase& c : cases) {
    // Disaggregated runs are not one closed loop over one engine's decode batch: not checked.
    if (c.why_not.empty() && !c.burst && c.deployment != "disagg") sweeps[sweep_key(c)].push_back(&c);
  }
  std::map<const ServingCase*, std::string> reasons;  // decided on the unmodified rows
  for (const auto& [key, runs] : sweeps) {
    for (const ServingCase* r : runs) {
      const double in_decode = requests_in_decode(*r);
      for (const ServingCase* s : runs) {
        if (s == r || static_cast<double>(s->concurrency_per_replica()) > in_decode) continue;
        if (r->measured_tpot_ms >= kMinTpotRatioToSibling * s->measured_tpot_ms) continue;
        reasons[r] = fmt::format(
            "measured TPOT {:.1f} ms is below half the {:.1f} ms of the same sweep at concurrency {}, yet by Little's "
            "law about {:.0f} requests were in decode (TTFT {:.0f} ms): not a closed-loop steady state",
            r->measured_tpot_ms, s->measured_tpot_ms, s->concurrency_per_replica(), in_decode, r->measured_ttft_ms);
        break;
      }
    }
  }
  for (ServingCase& c : cases) {
    auto it = reasons.find(&c);
    if (it != reasons.end()) {
      c.why_not = it->second;
      c.excluded = true;  // the measurement, not kvplan, is at fault: listed, not scored
    }
  }
}

}  // namespace kvplan::bench
