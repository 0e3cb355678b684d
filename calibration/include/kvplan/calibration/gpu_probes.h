// kvplan/calibration/gpu_probes.h — small device helpers of the calibration run and the step
// validation harness (CUDA builds only, target kvplan::calibration_gpu): random fills that are
// never zero (METHOD.md: zeros run faster and hide unwritten outputs), the empty kernel that
// measures launch overhead, and an elementwise kernel that stands in for norms / RoPE /
// activations in a step (same bytes, not the same arithmetic).
//
//   Status s = fill_random_16bit(ptr, elems, /*seed=*/7, /*fp16=*/false, nullptr);
//   s = launch_empty_kernels(64, nullptr);
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvplan/calibration/activity_tracer.h"
#include "kvplan/kernels/types.h"

namespace kvplan::calibration {

// elems 16-bit values uniform in ±[1/16, 1) (bf16, or fp16 when `fp16`), from a hash of the index.
Status fill_random_16bit(void* ptr, size_t elems, uint64_t seed, bool fp16, kernels::Stream stream);
// `count` launches of an empty kernel (kernel name contains "kvplan_empty_kernel").
Status launch_empty_kernels(int count, kernels::Stream stream);
// out[i] = in[i] * 1.0009765625 + 1/1024 over `elems` bf16 values (kernel "kvplan_elementwise_kernel"):
// reads 2·elems bytes, writes 2·elems bytes.
Status launch_elementwise(const void* in, void* out, size_t elems, kernels::Stream stream);

}  // namespace kvplan::calibration
