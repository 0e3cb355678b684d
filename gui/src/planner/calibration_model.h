// gui/src/planner/calibration_model.h — the calibration view's data: each measured kernel (from a
// calibration .sqlite) with the time the fitted profile predicts for it, so the chart can put
// measured points against the fitted curves. A PerfProfile .json has no measurements: the model
// then has no rows, and efficiency_curve() still draws the profile's curves.
//
//   CalibrationModel cal;
//   cal.load("h100.sqlite", resolve_gpu("h100-sxm"));     // fits the rows; throws ConfigError
//   cal.index(0, CalibrationModel::kFittedColumn);          // predicted µs of row 0
#pragma once

#include <QAbstractTableModel>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <optional>
#include <string>
#include <vector>

#include "kvplan/calibration/measurement.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/perf_profile.h"

namespace kvplan::gui {

class CalibrationModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kClassColumn, kKernelColumn, kFlopsColumn, kBytesColumn, kMeasuredColumn, kFittedColumn, kErrorColumn,
    kColumnCount
  };
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // A .sqlite calibration store (every row, fitted against `gpu`) or a PerfProfile .json.
  // Throws ConfigError; the model is unchanged then.
  void load(const std::string& path, const GpuSpec& gpu);
  // Rows measured elsewhere (tests): fitted against `gpu` with fit_profile.
  void set_measurements(const std::vector<calibration::Measurement>& rows, const GpuSpec& gpu, const std::string& label);
  void clear();

  bool has_profile() const { return profile_.has_value(); }
  const std::optional<PerfProfile>& profile() const { return profile_; }
  const QString& source() const { return source_; }
  QStringList classes() const;  // op classes with rows, in first-seen order
  // (measured µs, fitted µs) of every row of one class.
  QList<QPointF> measured_vs_fitted(const QString& op_class) const;
  // Compute efficiency of a class over FLOPs, log-spaced from 1e6 to 1e14: (log10 FLOPs, e).
  QList<QPointF> efficiency_curve(OpClass c, int points) const;

 private:
  struct Row {
    QString op_class, kernel;
    double flops = 0, bytes = 0, measured_us = 0, fitted_us = 0;
  };
  std::vector<Row> rows_;
  std::optional<PerfProfile> profile_;
  QString source_;
};

}  // namespace kvplan::gui
