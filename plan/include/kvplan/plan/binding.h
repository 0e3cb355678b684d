// kvplan/plan/binding.h — which limit binds a capacity answer, and how far every other limit is at
// the answer. Judged from the first failing probe against the best passing one:
//   - "weights": the weights (and the engine's fixed memory) leave no room for KV;
//   - "max_model_len": the weights fit but one request of max_model_len does not (engines refuse
//     to start; lower --max-model-len);
//   - "kv_memory": at the failing load, more running sequences were preempted than at the passing
//     one, or waiting requests were kept out because their KV did not fit (sim EngineLimitUse);
//   - "max_num_seqs": requests waited while running sequences were at the engine's limit;
//   - "ttft", "tpot", "e2e": the SLO target that failed by the widest margin, with neither engine
//     limit holding requests back (the GPU's step time binds);
//   - "unfinished" / "rejected": a rate the engine could not keep up with / requests longer than
//     max_model_len;
//   - "none": the search limit was reached.
//
//   plan::BindingConstraint b = plan::binding_constraint(answer.config.slo, answer.search, true, plan);
//   b.kind;  b.why;  b.margins;          // "tpot"; "..."; p90 TPOT 49.6 of 50 ms = 99%, KV peak 71%
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/sim/capacity.h"

namespace kvplan::plan {

// One limit at the answer: how much of it the answer uses.
struct LimitMargin {
  std::string limit;  // "ttft", "tpot", "e2e", "kv_memory", "max_num_seqs"
  std::string label;  // "p90 TPOT", "KV memory peak", "running sequences peak"
  double value = 0;   // p-th percentile (ms), peak share of KV capacity, or peak running sequences
  double bound = 0;   // the target (ms), 1 (all of the KV capacity), or max_num_seqs
  std::string unit;   // "ms", "share of KV capacity", "sequences"
  double use() const { return bound > 0 ? value / bound : 0; }
  std::string text() const;  // "p90 TPOT 49.6 ms of 50 ms = 99%"
};

struct BindingConstraint {
  std::string kind;  // see above
  std::string why;   // one line: the evidence at the failing load
  std::vector<LimitMargin> margins;  // at the answer (the best passing load); empty without one
};

// Fractions of a probe's engine steps above which a limit counts as holding requests back: a
// few blocked steps happen at any load near a burst, and do not by themselves bind.
inline constexpr double kLimitedStepShare = 0.05;

BindingConstraint binding_constraint(const sim::Slo& slo, const sim::CapacitySearch& search, bool users,
                                     const MemoryPlan& plan);
nlohmann::json binding_json(const BindingConstraint& b);
// "binding constraint: ..." then one line per margin.
std::string binding_text(const BindingConstraint& b);

}  // namespace kvplan::plan
