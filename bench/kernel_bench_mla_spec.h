// bench/kernel_bench_mla_spec.h — kvplan_bench_kernels cases for MLA decode (DeepSeek-V3: 128 heads,
// latent 512 + rope 64, bf16 and fp8 caches) and speculative verification (Llama-3.1-8B, k = 4).
//
//   Harness h(quick);
//   add_mla_spec_cases(h, query_device(0), quick);   // then h.run_all(): each case checked, then timed
#pragma once

#include "kernel_bench_harness.h"
#include "kvplan/kernels/device.h"

namespace kvplan::bench {

void add_mla_spec_cases(Harness& h, const kernels::DeviceInfo& d, bool quick);

}  // namespace kvplan::bench
