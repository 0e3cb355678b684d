// bench/kernel_bench_cases.h — the cases kvplan_bench_kernels times: every kernel in kernels/ at
// shapes that matter for serving (long-context decode at batch 1, large batches, paged vs
// contiguous, split vs no split, prefill, quantized caches, copies).
#pragma once

#include "kernel_bench_harness.h"
#include "kvplan/kernels/device.h"

namespace kvplan::bench {

void add_kernel_cases(Harness& h, const kernels::DeviceInfo& device, bool quick);

}  // namespace kvplan::bench
