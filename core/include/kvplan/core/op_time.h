// kvplan/core/op_time.h — the time of one operator instance from a PerfProfile: the one formula the
// step cost model (sim/src/cost_model.cpp) and the calibration fitter (calibration/src/fitter.cpp)
// share, so that a fitted profile reproduces a measured kernel through exactly the arithmetic the
// simulator uses.
//
//   const OpClassProfile& c = profile.at(op.op_class);
//   double ns = op_kernel_ns(c, gpu, op);          // no launch overhead (add kernels · overhead)
//
// For an operator of F FLOPs and B bytes (docs/cost-model.md §3):
//   roofline = max(F / (peak_flops(dtype) · e_c(F)), B / (bw · e_m(B)))
//   decode attention also: >= critical_bytes / (bw · e_m(B) · min(1, critical_ctas / num_sms))
//   kernel   = max(roofline · grid factor(shape, variant), kernels · floor_ns)
// bw is the stream's link: HBM (compute), NVLink or PCIe (comm), PCIe (copy).
#pragma once

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/step_ops.h"

namespace kvplan {

// Bytes per second of the link an operator on `stream` moves its bytes over.
double stream_bandwidth(const GpuSpec& gpu, Stream stream);

// Roofline with the class's efficiency curves and the split-KV critical path, in SECONDS; no grid,
// no floor, no launch overhead. 0 for an operator with neither FLOPs nor bytes.
double op_roofline_s(const OpClassProfile& c, const GpuSpec& gpu, const StepOp& op);

// The grid variant an operator is looked up under: op.grid_variant when set, else
// dtype_name(op.grid_dtype).
std::string_view op_grid_variant(const StepOp& op);

// The class's grid correction for this operator's shape and variant (op_grid_variant);
// 1 when the operator has no shape or the class no grid for the variant.
double op_grid_factor(const OpClassProfile& c, const StepOp& op);

// Kernel time in ns: roofline · grid factor, at least kernels · floor_ns. Launch overhead is not
// included (the cost model adds kernels · launch_overhead_ns outside CUDA graphs).
double op_kernel_ns(const OpClassProfile& c, const GpuSpec& gpu, const StepOp& op);

}  // namespace kvplan
