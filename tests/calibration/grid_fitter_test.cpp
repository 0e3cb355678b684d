// grid_fitter.h and heldout_split.h: a known shape correction is recovered on shapes the fit never
// saw; the held-out split is deterministic, by shape, and close to its percentage; a fitted profile
// with grids and floors survives JSON and prices rows exactly as before.
#include "kvplan/calibration/grid_fitter.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/fitter.h"
#include "kvplan/calibration/heldout_split.h"
#include "kvplan/calibration/row_ops.h"
#include "kvplan/core/error.h"
#include "kvplan/core/op_time.h"
#include "kvplan/core/presets.h"

namespace kvplan::calibration {
namespace {

// A smooth correction over (log2 m, log2 n, log2 k), up to ±45%: wave quantisation-like bumps.
double truth(double lm, double ln, double lk) {
  return 0.25 * std::sin(0.7 * lm) + 0.1 * std::cos(0.9 * ln) - 0.05 * (lk - 12) + 0.03 * lm * (ln - 12) / 4;
}

Measurement gemm_row(double m, double n, double k, double ns) {
  Measurement r;
  r.kernel = "aic_gemm_bf16";
  r.op_class = "gemm";
  r.params_json = nlohmann::json{{"m", m}, {"n", n}, {"k", k}, {"dtype", "bf16"}}.dump();
  const StepOp op = gemm_op(m, n, k, DType::kBF16);
  r.flops = op.flops;
  r.bytes = op.bytes;
  r.median_ns = ns;
  return r;
}

TEST(GridFitter, RecoversAKnownCorrectionOnUnseenShapes) {
  std::vector<GridSample> fit, unseen;
  Measurement key;
  key.kernel = std::string(1, 'g');
  for (int lm = 0; lm <= 14; ++lm) {
    for (int ln = 10; ln <= 16; ++ln) {
      for (int lk = 10; lk <= 14; ++lk) {
        key.params_json = nlohmann::json{{"m", lm}, {"n", ln}, {"k", lk}}.dump();
        GridSample s;
        s.x = {double(lm), double(ln), double(lk), 0};
        s.y = truth(lm, ln, lk);
        s.key_hash = split_hash(split_key(key));
        (is_heldout(key, 30) ? unseen : fit).push_back(s);
      }
    }
  }
  ASSERT_GT(unseen.size(), 100u);
  GridFit g = fit_shape_grid(fit, {"log2 m", "log2 n", "log2 k"});
  EXPECT_EQ(g.grid.knots[0].size(), 15u);  // the distinct values present
  EXPECT_EQ(g.grid.training_rows, static_cast<int64_t>(fit.size()));
  double worst = 0, sum = 0;
  for (const GridSample& s : unseen) {
    const double e = std::abs(std::log(g.grid.factor(std::span<const double>(s.x.data(), 3))) - s.y);
    worst = std::max(worst, e);
    sum += e;
  }
  // on shapes the fit never saw: ~1% on average, 6% at worst (the correction swings by ±45%)
  EXPECT_LT(sum / static_cast<double>(unseen.size()), 0.012);
  EXPECT_LT(worst, 0.06);
  EXPECT_LT(g.train_mean_abs, 0.005);
}

// The same through fit_profile: GEMM rows timed as the datasheet curves × exp(truth) on H100.
TEST(GridFitter, FitProfileRecoversTheCorrectionThroughTheCostFormula) {
  const GpuSpec gpu = resolve_gpu("h100-sxm");
  OpClassProfile curves = PerfProfile::datasheet_default(gpu).at(OpClass::kGemm);
  std::vector<Measurement> rows;
  for (int lm = 0; lm <= 14; ++lm) {
    for (int ln = 10; ln <= 16; ++ln) {
      for (int lk = 10; lk <= 14; ++lk) {
        Measurement r = gemm_row(std::exp2(lm), std::exp2(ln), std::exp2(lk), 0);
        r.median_ns = op_kernel_ns(curves, gpu, row_op(r)) * std::exp(truth(lm, ln, lk));
        rows.push_back(r);
      }
    }
  }
  const FitReport rep = fit_profile(rows, gpu, "synthetic");
  ASSERT_EQ(rep.classes.size(), 1u);
  const ClassFit& c = rep.classes[0];
  ASSERT_EQ(c.variants.size(), 1u);
  EXPECT_EQ(c.variants[0].variant, "bf16");
  EXPECT_GT(c.heldout.rows, 100);
  EXPECT_LT(c.heldout.median, 0.01);
  EXPECT_LT(c.heldout.p90, 0.03);
  EXPECT_DOUBLE_EQ(rep.profile.at(OpClass::kGemm).heldout_p90_rel_error, c.heldout.p90);
  // the floor is the fastest fitted kernel, in whole ns rounded down
  double fastest = 1e300;
  for (const Measurement& r : rows) {
    if (!is_heldout(r, 30)) fastest = std::min(fastest, r.median_ns);
  }
  EXPECT_LE(c.floor_ns, fastest);
  EXPECT_GT(c.floor_ns, fastest - 1);

  // JSON round trip: every row is priced exactly as before
  const PerfProfile back = PerfProfile::from_json(rep.profile.to_json(), "synthetic.json");
  for (const Measurement& r : rows) {
    EXPECT_DOUBLE_EQ(predicted_row_ns(back.at(OpClass::kGemm), gpu, r),
                     predicted_row_ns(rep.profile.at(OpClass::kGemm), gpu, r));
  }
}

TEST(HeldoutSplit, DeterministicByShapeNearItsPercentage) {
  // FNV-1a 64 reference values
  EXPECT_EQ(split_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(split_hash("a"), 0xaf63dc4c8601ec8cull);
  Measurement a;
  a.kernel = "k";
  a.params_json = R"({"m":16,"n":4096,"src_row":3})";
  Measurement b = a;
  b.params_json = R"({"m":16,"n":4096,"src_row":4})";  // a repeat of the same shape
  EXPECT_EQ(split_key(a), R"(k|{"m":16,"n":4096})");
  EXPECT_EQ(split_key(a), split_key(b));
  EXPECT_EQ(is_heldout(a, 30), is_heldout(b, 30));
  Measurement bad = a;
  bad.params_json = "not json";
  EXPECT_EQ(split_key(bad), "k|not json");

  int held = 0;
  const int n = 20000;
  std::vector<bool> first;
  for (int i = 0; i < n; ++i) {
    Measurement m;
    m.kernel = "aic_gemm_bf16";
    m.params_json = nlohmann::json{{"m", i % 200}, {"n", 1024 * (1 + i / 200)}}.dump();
    const bool h = is_heldout(m, 30);
    held += h ? 1 : 0;
    first.push_back(h);
  }
  EXPECT_NEAR(static_cast<double>(held) / n, 0.30, 0.015);
  // the same answer every time
  for (int i = 0; i < n; i += 97) {
    Measurement m;
    m.kernel = "aic_gemm_bf16";
    m.params_json = nlohmann::json{{"m", i % 200}, {"n", 1024 * (1 + i / 200)}}.dump();
    EXPECT_EQ(is_heldout(m, 30), first[static_cast<size_t>(i)]);
  }
  EXPECT_FALSE(is_heldout(a, 0));
  EXPECT_TRUE(is_heldout(a, 100));
}

TEST(GridFitter, DegenerateInputs) {
  EXPECT_THROW(fit_shape_grid({}, {"log2 m"}), ConfigError);
  std::vector<GridSample> one(1);
  one[0].y = 0.2;
  GridFit g = fit_shape_grid(one, {"log2 bytes", "ranks"});
  ASSERT_EQ(g.grid.size(), 1u);
  EXPECT_NEAR(g.grid.log_ratio[0], 0.2, 1e-3);
  for (double v : g.grid.log_ratio) EXPECT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace kvplan::calibration
