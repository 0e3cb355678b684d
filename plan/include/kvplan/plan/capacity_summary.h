// kvplan/plan/capacity_summary.h — a capacity answer in the sentences a planner reads first: the
// headline ("122 concurrent users"), the SLO they meet, the binding constraint with its value, the
// margin on every other limit, the cost per hour and per user, where the step times come from with
// their validation band, and the warnings. The desktop planner's answer panel and the reports' first
// page print these same strings, so the window, the PDF and `kvplan capacity` cannot disagree.
//
//   plan::CapacitySummary s = plan::summarize_capacity(plan::find_capacity(scenario));
//   s.headline;  // "122 concurrent users"
//   s.slo;       // "meet p90 TTFT ≤ 2 s and p90 TPOT ≤ 50 ms"
//   s.binding;   // "binding: p90 TPOT at 48.6 ms of 50 ms (97%)"
#pragma once

#include <string>
#include <vector>

#include "kvplan/plan/simulate.h"

namespace kvplan::plan {

struct CapacitySummary {
  double load = 0;            // the answer: users or requests per second (0: none)
  bool users = true;
  std::string headline;       // "122 concurrent users", "6.5 requests/s", "No load meets the SLO", "The weights do not fit"
  std::string slo;            // "meet p90 TTFT ≤ 2 s and p90 TPOT ≤ 50 ms"
  std::string binding;        // "binding: p90 TPOT at 48.6 ms of 50 ms (97%)" or the reason nothing fits
  std::vector<std::string> margins;  // every other limit at the answer: "p90 TTFT 769 ms of 2 s (38%)"
  std::string cost;           // "$15.96/hour for 4 GPUs, $0.1308/hour per user" or "no price for this GPU"
  std::string source_kind;    // measured, published, transferred, datasheet, ...
  std::string source;         // "published h100-sxm profile (...); validation p90 error TTFT ±64%, TPOT ±27%"
  std::vector<std::string> warnings;  // the memory plan's, then "step times from the datasheet" when so
};

CapacitySummary summarize_capacity(const CapacityAnswer& a);
// "2 s", "500 ms", "49.6 ms": a latency for a sentence.
std::string latency_words(double ms);
// "meet p90 TTFT ≤ 2 s and p90 TPOT ≤ 50 ms" ("" without targets).
std::string slo_sentence(const sim::Slo& slo);

}  // namespace kvplan::plan
