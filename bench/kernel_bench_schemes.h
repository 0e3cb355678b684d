// bench/kernel_bench_schemes.h — kvplan_bench_kernels cases of the KV-reduction schemes: sliding
// window (Gemma-2-9B-like), StreamingLLM (sinks + window, in-kernel rotary), H2O decode + eviction,
// low-rank KV (16-bit and int4 latents).
//
//   Harness h(quick);
//   add_scheme_cases(h, query_device(0), quick);   // each case checked against its reference first
#pragma once

#include "kernel_bench_harness.h"
#include "kvplan/kernels/device.h"

namespace kvplan::bench {

void add_scheme_cases(Harness& h, const kernels::DeviceInfo& d, bool quick);

}  // namespace kvplan::bench
