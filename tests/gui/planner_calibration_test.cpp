// The calibration view's model: rows from a calibration store, each with the fitted prediction.
#include <QAbstractItemModelTester>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "calibration_model.h"
#include "main_window.h"
#include "kvplan/calibration/fitter.h"
#include "kvplan/calibration/store.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan::gui {
namespace {

// GEMM rows generated from the model itself (e_max 0.8, half size 1e9 FLOPs on the bf16 roof), so
// the fitted profile predicts them closely.
std::vector<calibration::Measurement> exact_gemm_rows(const GpuSpec& gpu) {
  const calibration::Roofs roofs = calibration::roofs_for(OpClass::kGemm, gpu, DType::kBF16);
  OpClassProfile truth;
  truth.compute = {0.8, 1e9};
  truth.memory = {0.9, 0};
  std::vector<calibration::Measurement> rows;
  for (int i = 0; i < 8; ++i) {
    const double n = 256.0 * (1 << i);
    calibration::Measurement m;
    m.kernel = "gemm_bf16";
    m.op_class = "gemm";
    m.params_json = fmt::format("{{\"n\":{}}}", n);
    m.n = 10;
    m.flops = 2 * n * n * n;
    m.bytes = 3 * n * n * 2;
    m.median_ns = calibration::predicted_kernel_ns(truth, m.flops, m.bytes, roofs);
    m.min_ns = m.p90_ns = m.mean_ns = m.event_median_ns = m.median_ns;
    m.cupti_event_ratio = 1;
    rows.push_back(m);
  }
  return rows;
}

TEST(CalibrationModel, StoreRowsAgainstTheFit) {
  const GpuSpec gpu = resolve_gpu("h100-sxm");
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const std::string path = dir.filePath("cal.sqlite").toStdString();
  {
    calibration::CalibrationStore store = calibration::CalibrationStore::open(path, calibration::OpenMode::kCreate);
    calibration::RunInfo info;
    info.gpu_name = "NVIDIA H100 80GB HBM3";
    info.mode = "mock";
    const int64_t run = store.begin_run(info);
    for (const calibration::Measurement& m : exact_gemm_rows(gpu)) store.record_shape(run, {m});
    store.end_run(run, calibration::RunStatus::kComplete);
  }
  CalibrationModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_FALSE(m.has_profile());
  m.load(path, gpu);
  ASSERT_TRUE(m.has_profile());
  ASSERT_EQ(m.rowCount(), 8);
  EXPECT_EQ(m.classes(), QStringList{"gemm"});
  const std::vector<calibration::Measurement> rows = exact_gemm_rows(gpu);
  const calibration::Roofs roofs = calibration::roofs_for(OpClass::kGemm, gpu, DType::kBF16);
  for (int r = 0; r < m.rowCount(); ++r) {
    // The store orders rows by params_json text, not by size: find this row's source.
    const double flops = m.index(r, CalibrationModel::kFlopsColumn).data().toDouble();
    auto src = std::find_if(rows.begin(), rows.end(), [&](const calibration::Measurement& x) { return x.flops == flops; });
    ASSERT_NE(src, rows.end()) << r;
    const double measured = m.index(r, CalibrationModel::kMeasuredColumn).data().toDouble();
    const double fitted = m.index(r, CalibrationModel::kFittedColumn).data().toDouble();
    EXPECT_DOUBLE_EQ(measured, src->median_ns / 1e3) << r;
    // The fitted column is the loaded profile's own prediction for the row...
    EXPECT_DOUBLE_EQ(fitted, calibration::predicted_kernel_ns(m.profile()->at(OpClass::kGemm), src->flops,
                                                              src->bytes, roofs) / 1e3) << r;
    // ...and that profile fits rows drawn from the model within the fitter's tolerance.
    EXPECT_NEAR(fitted / measured, 1.0, 0.2) << r;
    EXPECT_DOUBLE_EQ(m.index(r, CalibrationModel::kErrorColumn).data().toDouble(), (fitted - measured) / measured);
  }
  EXPECT_EQ(m.measured_vs_fitted("gemm").size(), 8);

  // The window's calibration view follows the profile input.
  MainWindow w;
  ASSERT_TRUE(w.inputs().set_value("profile", path)) << w.inputs().first_error().toStdString();
  EXPECT_EQ(w.calibration_model().rowCount(), 8);
  const int view = static_cast<int>(w.view_names().indexOf("Calibration"));
  ASSERT_GE(view, 0);
  w.show_view(view);
  EXPECT_FALSE(w.view_widget(view)->grab().isNull());
  ASSERT_TRUE(w.inputs().set_value("profile", ""));
  EXPECT_FALSE(w.calibration_model().has_profile());
  const QList<QPointF> curve = m.efficiency_curve(OpClass::kGemm, 50);
  ASSERT_EQ(curve.size(), 50);
  EXPECT_NEAR(curve.back().y(), 0.8, 0.01);  // 1e14 FLOPs: saturated at e_max
  m.clear();
  EXPECT_EQ(m.rowCount(), 0);
  EXPECT_FALSE(m.has_profile());
}

TEST(CalibrationModel, MissingFileIsAConfigErrorAndLeavesTheModel) {
  CalibrationModel m;
  EXPECT_THROW(m.load("/nonexistent/cal.sqlite", resolve_gpu("h100-sxm")), ConfigError);
  EXPECT_THROW(m.load("/nonexistent/profile.json", resolve_gpu("h100-sxm")), ConfigError);
  EXPECT_FALSE(m.has_profile());
}

}  // namespace
}  // namespace kvplan::gui
