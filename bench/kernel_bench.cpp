// kvplan_bench_kernels — achieved bandwidth and FLOP/s of every kvplan kernel on the local GPU,
// each case checked against its CPU reference before it is timed. Prints a table (last) and
// writes a CSV. Without a device it says so and exits 0.
//
//   kvplan_bench_kernels [--quick] [--csv FILE]
#include <cstdio>
#include <cstring>
#include <string>

#include "kernel_bench_cases.h"
#include "kernel_bench_mla_spec.h"
#include "kernel_bench_recurrent.h"
#include "kernel_bench_schemes.h"
#include "kernel_bench_harness.h"
#include "kvplan/kernels/device.h"

int main(int argc, char** argv) {
  bool quick = false;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv = argv[++i];
  }
  std::string why;
  if (!kvplan::kernels::cuda_device_available(&why)) {
    std::printf("kvplan_bench_kernels: %s; nothing to measure\n", why.c_str());
    return 0;
  }
  kvplan::kernels::DeviceInfo d = kvplan::kernels::query_device(0);
  std::printf("%s, %d SMs, %.1f GiB, driver %d, runtime %d\n", d.name.c_str(), d.num_sms,
              static_cast<double>(d.memory_bytes) / (1 << 30), d.driver_version, d.runtime_version);
  kvplan::bench::Harness h(quick);
  h.measure_copy_bandwidth();
  kvplan::bench::add_kernel_cases(h, d, quick);
  kvplan::bench::add_scheme_cases(h, d, quick);
  kvplan::bench::add_mla_spec_cases(h, d, quick);
  kvplan::bench::add_recurrent_cases(h, d, quick);
  h.run_all();
  h.print_table(stdout);
  // The goals on an H200, read off the cases above.
  auto find = [&](const std::string& kernel, const std::string& shape_part) -> const kvplan::bench::KernelCase* {
    for (const auto& c : h.cases()) {
      if (c.kernel == kernel && c.shape.find(shape_part) != std::string::npos && c.status == "ok") return &c;
    }
    return nullptr;
  };
  std::printf("goals:\n");
  // B=1, L=32768 contiguous decode with the planned split count, and with no split.
  const kvplan::bench::KernelCase* split = nullptr;
  const kvplan::bench::KernelCase* nosplit = nullptr;
  for (const auto& c : h.cases()) {
    if (c.kernel != "decode_contiguous" || c.shape.rfind("B=1 ", 0) != 0 || c.status != "ok") continue;
    (c.shape.ends_with(" splits=1") ? nosplit : split) = &c;
  }
  const double copy = h.copy_bytes_per_s();
  if (split && copy > 0) {
    double share = split->bytes / (split->median_us * 1e-6) / copy;
    std::printf("  long-context decode (B=1, L=32768, split): %.0f%% of copy bandwidth (goal >= 80%%): %s\n", share * 100,
                share >= 0.8 ? "met" : "NOT met");
  }
  if (split && nosplit) {
    std::printf("  split-KV vs no split at B=1, L=32768: %.1f us vs %.1f us: %s\n", split->median_us, nosplit->median_us,
                split->median_us < nosplit->median_us ? "split wins (goal met)" : "NOT met");
  }
  const auto* contiguous = find("decode_contiguous", "B=64 Hq=32 Hkv=8 D=128 L=4096 splits=1");
  const auto* paged = find("decode_paged", "B=64 Hq=32 Hkv=8 D=128 L=4096 b16 splits=1");
  if (contiguous && paged) {
    double ratio = paged->median_us / contiguous->median_us;
    std::printf("  paged (b16) vs contiguous at B=64, L=4096: %.1f us vs %.1f us (%+.1f%%; goal within 10%%): %s\n",
                paged->median_us, contiguous->median_us, (ratio - 1) * 100, ratio <= 1.1 ? "met" : "NOT met");
  }
  if (!csv.empty()) h.write_csv(csv);
  int failed = 0;
  for (const auto& c : h.cases()) failed += c.status != "ok";
  return failed == 0 ? 0 : 1;
}
