// Operator time from a PerfProfile (op_time.h). The order of the floating-point operations is the
// cost model's, so moving the formula here changed no simulated nanosecond.
#include "kvplan/core/op_time.h"

#include <algorithm>
#include <array>
#include <span>

namespace kvplan {

double stream_bandwidth(const GpuSpec& gpu, Stream stream) {
  switch (stream) {
    case Stream::kComm: return gpu.interconnect_bytes_per_s > 0 ? gpu.interconnect_bytes_per_s : gpu.pcie_bytes_per_s;
    case Stream::kCopy: return gpu.pcie_bytes_per_s;
    case Stream::kCompute: break;
  }
  return gpu.memory_bandwidth_bytes_per_s;
}

double op_roofline_s(const OpClassProfile& c, const GpuSpec& gpu, const StepOp& op) {
  double t = 0;
  if (op.flops > 0) t = op.flops / (gpu.peak_flops(op.dtype) * c.compute.at(op.flops));
  if (op.bytes > 0) {
    const double e_m = c.memory.at(op.bytes);
    const double bw = stream_bandwidth(gpu, op.stream);
    t = std::max(t, op.bytes / (bw * e_m));
    if (op.critical_ctas > 0 && op.critical_bytes > 0 && gpu.num_sms > 0) {
      // The longest sequence can use at most critical_ctas of the num_sms SMs.
      const double share = std::min(1.0, static_cast<double>(op.critical_ctas) / gpu.num_sms);
      t = std::max(t, op.critical_bytes / (bw * e_m * share));
    }
  }
  return t;
}

std::string_view op_grid_variant(const StepOp& op) {
  return op.grid_variant != nullptr ? std::string_view(op.grid_variant) : dtype_name(op.grid_dtype);
}

double op_grid_factor(const OpClassProfile& c, const StepOp& op) {
  // Measured correction by shape (tile/wave quantisation, occupancy, protocol switches), where
  // the profile has a grid for this operator's variant.
  if (op.shape.dims <= 0 || c.grids.empty()) return 1.0;
  auto it = c.grids.find(op_grid_variant(op));
  if (it == c.grids.end()) return 1.0;
  const std::array<double, 4> x = grid_coordinates(op.op_class, op.shape);
  return it->second.factor(std::span<const double>(x.data(), static_cast<size_t>(op.shape.dims)));
}

double op_kernel_ns(const OpClassProfile& c, const GpuSpec& gpu, const StepOp& op) {
  double t = op_roofline_s(c, gpu, op);
  if (op.shape.dims > 0 && !c.grids.empty()) t *= op_grid_factor(c, op);
  t *= 1e9;
  // A kernel never takes less than its floor, CUDA graph or not.
  return std::max(t, op.kernels * c.floor_ns);
}

}  // namespace kvplan
