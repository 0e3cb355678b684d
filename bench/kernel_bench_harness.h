// bench/kernel_bench_harness.h — timing and reporting for kvplan_bench_kernels.
//
//   Harness h(quick);
//   h.measure_copy_bandwidth();                         // the ceiling: a large device-to-device copy
//   h.add({"decode_paged", "B=1 L=32768 ...", bytes, flops, [&](Stream s) { return launch_...(p, s); }, check});
//   h.run_all();  h.print_table();
//
// Each case is warmed up, then timed with CUDA events around every repetition; the median is
// reported, with achieved bandwidth (bytes each input read once and each output written once, as
// counted by the case) as a share of the measured copy bandwidth (bytes read + written), and
// FLOP/s. A case's `check` compares the kernel with its CPU reference on the same inputs first;
// a case that fails its check is reported as FAIL and not timed.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::bench {

struct KernelCase {
  std::string kernel;
  std::string shape;
  double bytes = 0;
  double flops = 0;
  std::function<kernels::Status(kernels::Stream)> run;
  std::function<std::string()> check;  // "" when it matches the reference, else what differs
  // filled by run_all
  double median_us = 0;
  std::string status = "not run";
};

class Harness {
 public:
  explicit Harness(bool quick) : reps_(quick ? 10 : 50), warmup_(quick ? 2 : 5) {}

  void measure_copy_bandwidth() {
    const size_t n = size_t{1} << 30;
    void *a = nullptr, *b = nullptr;
    if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess) {
      std::printf("copy bandwidth: cudaMalloc of 2 GiB failed\n");
      return;
    }
    cudaMemset(a, 0x5A, n);
    std::vector<float> t;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i < warmup_ + reps_; ++i) {
      cudaEventRecord(e0);
      cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (i >= warmup_) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    copy_bytes_per_s_ = 2.0 * static_cast<double>(n) / (t[t.size() / 2] * 1e-3);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
  }

  void add(KernelCase c) { cases_.push_back(std::move(c)); }

  void run_all() {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (KernelCase& c : cases_) {
      std::string bad = c.check ? c.check() : std::string();
      if (!bad.empty()) {
        c.status = "FAIL: " + bad;
        continue;
      }
      std::vector<float> t;
      bool ok = true;
      for (int i = 0; i < warmup_ + reps_ && ok; ++i) {
        cudaEventRecord(e0);
        kernels::Status s = c.run(nullptr);
        cudaEventRecord(e1);
        cudaError_t e = cudaEventSynchronize(e1);
        if (!s.ok() || e != cudaSuccess) {
          c.status = "FAIL: " + (s.ok() ? std::string(cudaGetErrorString(e)) : s.describe());
          ok = false;
          break;
        }
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (i >= warmup_) t.push_back(ms);
      }
      if (!ok) continue;
      std::sort(t.begin(), t.end());
      c.median_us = t[t.size() / 2] * 1e3;
      c.status = "ok";
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }

  void print_table(FILE* out) const {
    std::fprintf(out, "device copy bandwidth (read+write): %.0f GB/s\n", copy_bytes_per_s_ / 1e9);
    std::fprintf(out, "%-24s %-40s %10s %8s %6s %8s  %s\n", "kernel", "shape", "us", "GB/s", "%copy", "TFLOP/s", "check");
    for (const KernelCase& c : cases_) {
      if (c.status != "ok") {
        std::fprintf(out, "%-24s %-40s %10s %8s %6s %8s  %s\n", c.kernel.c_str(), c.shape.c_str(), "-", "-", "-", "-",
                     c.status.c_str());
        continue;
      }
      const double s = c.median_us * 1e-6;
      const double gbs = c.bytes / s / 1e9;
      std::fprintf(out, "%-24s %-40s %10.1f %8.0f %5.0f%% %8.2f  ok\n", c.kernel.c_str(), c.shape.c_str(), c.median_us,
                   gbs, copy_bytes_per_s_ > 0 ? 100.0 * c.bytes / s / copy_bytes_per_s_ : 0.0, c.flops / s / 1e12);
    }
  }

  void write_csv(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return;
    std::fprintf(f, "kernel,shape,us,bytes,flops,gb_per_s,share_of_copy,tflop_per_s,status\n");
    for (const KernelCase& c : cases_) {
      const double s = c.median_us * 1e-6;
      std::fprintf(f, "%s,\"%s\",%.2f,%.0f,%.0f,%.1f,%.4f,%.3f,\"%s\"\n", c.kernel.c_str(), c.shape.c_str(), c.median_us,
                   c.bytes, c.flops, s > 0 ? c.bytes / s / 1e9 : 0.0,
                   s > 0 && copy_bytes_per_s_ > 0 ? c.bytes / s / copy_bytes_per_s_ : 0.0, s > 0 ? c.flops / s / 1e12 : 0.0,
                   c.status.c_str());
    }
    std::fclose(f);
  }

  const std::vector<KernelCase>& cases() const { return cases_; }
  double copy_bytes_per_s() const { return copy_bytes_per_s_; }

 private:
  int reps_;
  int warmup_;
  double copy_bytes_per_s_ = 0;
  std::vector<KernelCase> cases_;
};

}  // namespace kvplan::bench
