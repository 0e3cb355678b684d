// Step operator DAG (Boost.Graph) and its critical path.
//
//   std::vector<double> ns = ...;                       // time of each op instance, by op index
//   double t = step_critical_path_ns(ops, ns, /*collapse=*/true);
//
// Nodes are operators on the compute, comm and copy streams. Edges:
//  - compute stream: prologue -> every layer's ops in order -> epilogue (one chain);
//  - comm stream: a TP collective waits for the compute op before it, and the next compute op
//    waits for it (the engine's all-reduce is blocking), so it sits in the chain;
//  - copy stream: swap-in copies, one per KV layer, run in layer order from the start of the step
//    (prefetch) and each must finish before its layer's attention; swap-out is independent.
// The step time is the longest path. With collapse=true every maximal run of chain ops that no
// copy edge enters is one node (weight = sum), which gives the same longest path: a chain segment
// with no incoming side edges starts when its first op can start and is never delayed inside.
// Without offload copies the collapsed DAG is a single node, and its weight is summed directly.
#pragma once

#include <vector>

#include "kvplan/core/step_ops.h"

namespace kvplan::sim::internal {

// `op_ns[i]`: time of one instance of ops.ops[i]. Returns the critical path in ns.
double step_critical_path_ns(const StepOps& ops, const std::vector<double>& op_ns, bool collapse);

}  // namespace kvplan::sim::internal
