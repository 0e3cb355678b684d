// fit_profile: recovers known curve parameters from synthetic noisy rows, reports residuals at the
// noise level, and never produces NaN on degenerate input.
#include "kvplan/calibration/fitter.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/gpu_match.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan::calibration {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Rows generated from a known class profile: the model's time times exp(noise · N(0, 1)).
class Synth {
 public:
  Synth(OpClass c, OpClassProfile truth, double noise, uint64_t seed)
      : class_(c), truth_(std::move(truth)), noise_(noise), rng_(seed) {}

  void add(double flops, double bytes, const std::string& params = "{}") {
    Roofs r = roofs_for(class_, gpu(), DType::kBF16);
    double t = predicted_kernel_ns(truth_, flops, bytes, r);
    if (noise_ > 0) t *= std::exp(noise_ * normal_(rng_));
    Measurement m;
    m.kernel = "synthetic";
    m.op_class = std::string(op_class_name(class_));
    m.params_json = params;
    m.n = 20;
    m.min_ns = m.median_ns = m.p90_ns = m.mean_ns = t;
    m.flops = flops;
    m.bytes = bytes;
    rows.push_back(m);
  }
  static const GpuSpec& gpu() {
    static const GpuSpec g = resolve_gpu("h100-sxm");
    return g;
  }

  std::vector<Measurement> rows;

 private:
  OpClass class_;
  OpClassProfile truth_;
  double noise_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
};

OpClassProfile profile(EfficiencyCurve compute, EfficiencyCurve memory) {
  OpClassProfile p;
  p.compute = compute;
  p.memory = memory;
  return p;
}

const ClassFit& only_fit(const FitReport& r) {
  EXPECT_EQ(r.classes.size(), 1u);
  return r.classes.front();
}

void expect_finite(const OpClassProfile& p) {
  for (double v : {p.compute.e_max, p.compute.half_size, p.memory.e_max, p.memory.half_size}) {
    EXPECT_TRUE(std::isfinite(v));
  }
  EXPECT_GT(p.compute.e_max, 0.0);
  EXPECT_LE(p.compute.e_max, 1.0);
  EXPECT_GT(p.memory.e_max, 0.0);
  EXPECT_LE(p.memory.e_max, 1.0);
}

// Memory-bound class, e_max 0.8, half size 2 MiB, 2% multiplicative noise, 48 sizes 16 KiB..1 GiB.
TEST(Fitter, RecoversMemoryCurveFromNoisyRows) {
  Synth s(OpClass::kKvWrite, profile({0.5, 0}, {0.8, 2 * kMiB}), 0.02, 42);
  for (int i = 0; i < 48; ++i) s.add(0, 16 * 1024.0 * std::pow(2.0, 16.0 * i / 47.0));
  FitReport r = fit_profile(s.rows, Synth::gpu(), "h100-sxm run 1");
  const ClassFit& f = only_fit(r);
  EXPECT_TRUE(f.memory.fitted);
  EXPECT_EQ(f.memory.active_rows, 48);
  EXPECT_FALSE(f.compute.fitted);  // no FLOPs: the compute curve stays the datasheet's
  EXPECT_NEAR(f.profile.memory.e_max, 0.8, 0.8 * 0.03);
  EXPECT_NEAR(f.profile.memory.half_size, 2 * kMiB, 2 * kMiB * 0.06);
  // MAPE of N(0, 0.02) multiplicative noise: 0.02 · sqrt(2/π) ≈ 0.016; p90 ≈ 1.645 · 0.02 ≈ 0.033.
  EXPECT_GT(f.mape, 0.010);
  EXPECT_LT(f.mape, 0.024);
  EXPECT_GT(f.p90_rel_error, 0.020);
  EXPECT_LT(f.p90_rel_error, 0.045);
  EXPECT_EQ(r.profile.at(OpClass::kKvWrite).source, "measured (h100-sxm run 1)");
  EXPECT_TRUE(r.warnings.empty());
}

// GEMMs 2·M·N·K over M = 1..8192: small M streams weights (memory-bound), large M is compute-bound.
TEST(Fitter, RecoversBothSidesOfAGemmRoofline) {
  const GpuSpec& g = Synth::gpu();
  const double compute_half = 3e-6 * g.peak_flops_bf16 * 0.7;  // 3 us fixed latency at e_max 0.7
  Synth s(OpClass::kGemm, profile({0.7, compute_half}, {0.9, 1.0 * kMiB}), 0.02, 7);
  for (double n : {4096.0, 8192.0, 14336.0}) {
    for (double k : {4096.0, 8192.0}) {
      for (double m = 1; m <= 8192; m *= 2) s.add(2 * m * n * k, 2 * (m * k + k * n + m * n));
    }
  }
  FitReport r = fit_profile(s.rows, g, "h100-sxm run 2");
  const ClassFit& f = only_fit(r);
  ASSERT_TRUE(f.compute.fitted);
  ASSERT_TRUE(f.memory.fitted);
  EXPECT_GE(f.compute.active_rows, 3);
  EXPECT_GE(f.memory.active_rows, 3);
  EXPECT_NEAR(f.profile.compute.e_max, 0.7, 0.7 * 0.03);
  EXPECT_NEAR(f.profile.compute.half_size, compute_half, compute_half * 0.15);
  EXPECT_NEAR(f.profile.memory.e_max, 0.9, 0.9 * 0.03);
  EXPECT_LT(f.mape, 0.025);
  expect_finite(f.profile);
}

// Tiny elementwise kernels: every size is far below the half size, so time ≈ the fixed latency
// half_size / (W · e_max) = 5 us. The latency is recovered; e_max is barely constrained but valid.
TEST(Fitter, OverheadDominatedTinySizes) {
  const GpuSpec& g = Synth::gpu();
  const double half = 5e-6 * g.memory_bandwidth_bytes_per_s * 0.75;  // ~12.6 MB
  Synth s(OpClass::kElementwise, profile({0.5, 0}, {0.75, half}), 0.02, 3);
  for (double b = 256; b <= 256 * 1024; b *= 2) s.add(0, b);
  FitReport r = fit_profile(s.rows, g, "h100-sxm run 3");
  const ClassFit& f = only_fit(r);
  expect_finite(f.profile);
  const double latency_s = f.profile.memory.half_size / (g.memory_bandwidth_bytes_per_s * f.profile.memory.e_max);
  EXPECT_NEAR(latency_s, 5e-6, 5e-6 * 0.03);
  EXPECT_LT(f.mape, 0.025);
}

// Decode attention over batches of mixed context lengths: bytes are the row's (the sum over the
// actual lengths), never recomputed from a mean. Two batches with the same mean length but
// different mixes have different bytes and times, and both are predicted.
TEST(Fitter, DecodeAttentionWithMixedLengths) {
  const double kv_bytes_per_token = 2 * 8 * 128 * 2;  // K and V, 8 KV heads, head_dim 128, bf16
  Synth s(OpClass::kAttentionDecode, profile({0.5, 0}, {0.7, 3 * kMiB}), 0.02, 11);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> log2_len(4, 15);  // 16 .. 32768 tokens, log-uniform
  for (int batch : {1, 2, 4, 8, 16, 32, 64, 128}) {
    for (int rep = 0; rep < 4; ++rep) {
      double tokens = 0;
      for (int i = 0; i < batch; ++i) tokens += std::round(std::exp2(log2_len(rng)));
      const double bytes = tokens * kv_bytes_per_token + batch * 32 * 128 * 2 * 2;  // + q in, out
      s.add(2.0 * tokens * 32 * 256, bytes, R"({"B":)" + std::to_string(batch) + "}");
    }
  }
  FitReport r = fit_profile(s.rows, Synth::gpu(), "h100-sxm run 4");
  const ClassFit& f = only_fit(r);
  EXPECT_TRUE(f.memory.fitted);
  EXPECT_FALSE(f.compute.fitted);
  EXPECT_EQ(f.compute.active_rows, 0);
  EXPECT_EQ(f.compute.how.rfind("datasheet (", 0), 0u) << f.compute.how;
  EXPECT_NEAR(f.profile.memory.e_max, 0.7, 0.7 * 0.03);
  EXPECT_NEAR(f.profile.memory.half_size, 3 * kMiB, 3 * kMiB * 0.10);
  EXPECT_LT(f.mape, 0.025);
}

TEST(Fitter, OnePointIsAClearError) {
  Synth s(OpClass::kKvWrite, profile({0.5, 0}, {0.8, 2 * kMiB}), 0.0, 1);
  s.add(0, 1e8);
  try {
    fit_profile(s.rows, Synth::gpu(), "h100-sxm run 5");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no operator class has >= 3 usable rows"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kv_write: 1"), std::string::npos) << msg;
  }
}

// Every row has the same size: e_max only, the datasheet's half_size kept.
// kv_write datasheet: e_max 0.6, half_size h = 2 us · W · 0.6 = 1.2 us · W.
// Rows timed at (s + h)/(0.5·W) = s/(0.5·W) + 2.4 us are exactly e_max 0.5 with half_size h.
TEST(Fitter, AllIdenticalSizesFitsEmaxOnly) {
  const GpuSpec& g = Synth::gpu();
  const double w = g.memory_bandwidth_bytes_per_s;
  const double s_bytes = 1e8;
  std::vector<Measurement> rows(5);
  for (Measurement& m : rows) {
    m.kernel = "kv_write";
    m.op_class = "kv_write";
    m.bytes = s_bytes;
    m.median_ns = (s_bytes / (0.5 * w) + 2.4e-6) * 1e9;
  }
  FitReport r = fit_profile(rows, g, "h100-sxm run 6");
  const ClassFit& f = only_fit(r);
  ASSERT_TRUE(f.memory.fitted);
  EXPECT_NE(f.memory.how.find("e_max only"), std::string::npos) << f.memory.how;
  EXPECT_NEAR(f.profile.memory.e_max, 0.5, 1e-9);
  EXPECT_NEAR(f.profile.memory.half_size, 1.2e-6 * w, 1e-6 * 1.2e-6 * w);
  EXPECT_LT(f.mape, 1e-9);
  expect_finite(f.profile);
}

TEST(Fitter, FasterThanTheRooflineClampsEmaxToOne) {
  Synth s(OpClass::kKvWrite, profile({0.5, 0}, {1.0, 0}), 0.0, 1);
  for (double b = 1e6; b <= 1e9; b *= 2) s.add(0, b);
  for (Measurement& m : s.rows) m.median_ns /= 1.2;  // 20% faster than datasheet bandwidth
  FitReport r = fit_profile(s.rows, Synth::gpu(), "x");
  const ClassFit& f = only_fit(r);
  EXPECT_EQ(f.profile.memory.e_max, 1.0);
  EXPECT_GE(f.profile.memory.half_size, 0.0);
  // The profile stays loadable (from_json refuses e_max > 1).
  EXPECT_NO_THROW(PerfProfile::from_json(r.profile.to_json(), "fit"));
}

TEST(Fitter, UnfittedClassesKeepDatasheetLabelled) {
  Synth s(OpClass::kKvWrite, profile({0.5, 0}, {0.8, 2 * kMiB}), 0.0, 1);
  for (double b = 1e5; b <= 1e9; b *= 4) s.add(0, b);
  Measurement bad = s.rows.front();
  bad.median_ns = std::nan("");
  s.rows.push_back(bad);
  Measurement other = s.rows.front();
  other.op_class = "warp_drive";
  s.rows.push_back(other);
  FitReport r = fit_profile(s.rows, Synth::gpu(), "h100-sxm run 9");
  EXPECT_EQ(r.profile.gpu_id(), "h100-sxm");
  EXPECT_EQ(r.profile.at(OpClass::kKvWrite).source, "measured (h100-sxm run 9)");
  EXPECT_EQ(r.profile.at(OpClass::kGemm).source, "datasheet");
  EXPECT_EQ(r.profile.at(OpClass::kGemm).note.rfind("no calibration rows for this class", 0), 0u);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("'warp_drive'"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("1 row(s) skipped"), std::string::npos) << r.warnings[1];
  // Launch overhead is not in CUPTI kernel durations: datasheet value kept.
  EXPECT_EQ(r.profile.at(OpClass::kKvWrite).launch_overhead_ns,
            PerfProfile::datasheet_default(Synth::gpu()).at(OpClass::kKvWrite).launch_overhead_ns);
}

TEST(Fitter, TransferRelabelsMeasuredClasses) {
  Synth s(OpClass::kKvWrite, profile({0.5, 0}, {0.8, 2 * kMiB}), 0.0, 1);
  for (double b = 1e5; b <= 1e9; b *= 4) s.add(0, b);
  FitReport r = fit_profile(s.rows, Synth::gpu(), "h100-sxm run 9");
  PerfProfile t = transfer_profile(r.profile, resolve_gpu("a100-80gb"));
  EXPECT_EQ(t.gpu_id(), "a100-80gb");
  EXPECT_EQ(t.at(OpClass::kKvWrite).source, "transferred (from h100-sxm)");
  EXPECT_NE(t.at(OpClass::kKvWrite).note.find("measured on h100-sxm run 9"), std::string::npos);
  EXPECT_EQ(t.at(OpClass::kKvWrite).memory.e_max, r.profile.at(OpClass::kKvWrite).memory.e_max);
  EXPECT_EQ(t.at(OpClass::kGemm).source, "datasheet");
}

TEST(Fitter, PredictedKernelTimeByHand) {
  OpClassProfile p = profile({0.5, 0}, {0.8, 1e6});
  Roofs roofs{1e15, 1e12};
  // compute: 1e12 / (1e15 · 0.5) = 2 ms; memory: e = 0.8 · 3e6 / 4e6 = 0.6 -> 3e6 / 6e11 = 5 us.
  EXPECT_DOUBLE_EQ(predicted_kernel_ns(p, 1e12, 3e6, roofs), 2e6);
  EXPECT_DOUBLE_EQ(predicted_kernel_ns(p, 0, 3e6, roofs), 5000);
  EXPECT_DOUBLE_EQ(predicted_kernel_ns(p, 0, 0, roofs), 0);
}

TEST(Fitter, RowDtypeSelectsThePeak) {
  Measurement m;
  m.params_json = R"({"dtype":"fp8","M":1})";
  EXPECT_EQ(row_compute_dtype(m), DType::kFp8E4M3);
  m.params_json = "not json";
  EXPECT_EQ(row_compute_dtype(m), DType::kBF16);
  const GpuSpec& g = Synth::gpu();
  EXPECT_EQ(roofs_for(OpClass::kCopyH2D, g, DType::kBF16).bandwidth, g.pcie_bytes_per_s);
  EXPECT_EQ(roofs_for(OpClass::kGemm, g, DType::kFp8E4M3).peak_flops, g.peak_flops_fp8);
}

TEST(GpuMatch, CudaNamesToPresets) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_EQ(match_gpu_preset("NVIDIA H100 80GB HBM3", 80 * kGiB), "h100-sxm");
  EXPECT_EQ(match_gpu_preset("NVIDIA H100 PCIe", 80 * kGiB), "h100-pcie");
  EXPECT_EQ(match_gpu_preset("NVIDIA H200", 141 * kGiB), "h200");
  EXPECT_EQ(match_gpu_preset("NVIDIA A100-SXM4-40GB", 40 * kGiB), "a100-40gb");
  EXPECT_EQ(match_gpu_preset("NVIDIA A100-SXM4-80GB", 80 * kGiB), "a100-80gb");
  EXPECT_EQ(match_gpu_preset("NVIDIA L40S", 48 * kGiB), "l40s");
  EXPECT_EQ(match_gpu_preset("NVIDIA L4", 24 * kGiB), "l4");
  EXPECT_EQ(match_gpu_preset("Tesla T4", 16 * kGiB), "t4");
  EXPECT_EQ(match_gpu_preset("NVIDIA GeForce RTX 4090", 24 * kGiB), "rtx-4090");
  EXPECT_EQ(match_gpu_preset("NVIDIA RTX 6000 Ada Generation", 48 * kGiB), "rtx-6000-ada");
  EXPECT_FALSE(match_gpu_preset("Mock GPU", 0).has_value());
  // Every id returned is a preset.
  for (const char* n : {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A10G", "NVIDIA A30", "NVIDIA RTX A6000",
                        "NVIDIA GeForce RTX 3090", "NVIDIA B200", "AMD Instinct MI300X"}) {
    auto id = match_gpu_preset(n, 80 * kGiB);
    ASSERT_TRUE(id.has_value()) << n;
    EXPECT_NO_THROW(resolve_gpu(*id)) << n;
  }
}

}  // namespace
}  // namespace kvplan::calibration
