// bench/kernel_bench_recurrent.h — kvplan_bench_kernels cases of the constant-state kernels:
// linear-attention decode and chunked prefill (Qwen3-Next-like shapes), Mamba-2 state update and
// causal conv update (Mamba-2-2.7B shapes).
//
//   Harness h(quick);
//   add_recurrent_cases(h, query_device(0), quick);   // decode at batch 1/64/256, prefill of 8192 tokens
#pragma once

#include "kernel_bench_harness.h"
#include "kvplan/kernels/device.h"

namespace kvplan::bench {

void add_recurrent_cases(Harness& h, const kernels::DeviceInfo& d, bool quick);

}  // namespace kvplan::bench
