#include "calibration_model.h"

#include <QFileInfo>

#include <cmath>

#include "kvplan/calibration/fitter.h"
#include "kvplan/calibration/store.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/profile_option.h"

namespace kvplan::gui {

int CalibrationModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int CalibrationModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant CalibrationModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  switch (index.column()) {
    case kClassColumn: return r.op_class;
    case kKernelColumn: return r.kernel;
    case kFlopsColumn: return r.flops;
    case kBytesColumn: return r.bytes;
    case kMeasuredColumn: return r.measured_us;
    case kFittedColumn: return r.fitted_us;
    case kErrorColumn: return r.measured_us > 0 ? (r.fitted_us - r.measured_us) / r.measured_us : 0.0;
    default: return {};
  }
}

QVariant CalibrationModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  static const char* const kNames[] = {"Class", "Kernel", "FLOPs", "Bytes", "Measured (µs)", "Fitted (µs)", "Rel. error"};
  return section >= 0 && section < kColumnCount ? QVariant(QString::fromUtf8(kNames[section])) : QVariant();
}

void CalibrationModel::set_measurements(const std::vector<calibration::Measurement>& rows, const GpuSpec& gpu,
                                        const std::string& label) {
  calibration::FitReport fit = calibration::fit_profile(rows, gpu, label);
  std::vector<Row> out;
  out.reserve(rows.size());
  for (const calibration::Measurement& m : rows) {
    OpClass c;
    try {
      c = parse_op_class(m.op_class, "measurement");
    } catch (const ConfigError&) {
      continue;  // fit_profile skipped it too (and warned)
    }
    const calibration::Roofs roofs = calibration::roofs_for(c, gpu, calibration::row_compute_dtype(m));
    const double predicted_ns = calibration::predicted_kernel_ns(fit.profile.at(c), m.flops, m.bytes, roofs);
    out.push_back({QString::fromStdString(m.op_class), QString::fromStdString(m.kernel), m.flops, m.bytes,
                   m.median_ns / 1e3, predicted_ns / 1e3});
  }
  beginResetModel();
  rows_ = std::move(out);
  profile_ = std::move(fit.profile);
  source_ = QString::fromStdString(label);
  endResetModel();
}

void CalibrationModel::load(const std::string& path, const GpuSpec& gpu) {
  const QString suffix = QFileInfo(QString::fromStdString(path)).suffix().toLower();
  if (suffix == "sqlite" || suffix == "db") {
    calibration::CalibrationStore store = calibration::CalibrationStore::open(path, calibration::OpenMode::kExisting);
    std::vector<calibration::Measurement> rows;
    for (const calibration::StoredMeasurement& s : store.measurements()) rows.push_back(s.m);
    set_measurements(rows, gpu, path);
    return;
  }
  PerfProfile p = plan::load_profile_option(path, gpu);
  beginResetModel();
  rows_.clear();
  profile_ = std::move(p);
  source_ = QString::fromStdString(path);
  endResetModel();
}

void CalibrationModel::clear() {
  beginResetModel();
  rows_.clear();
  profile_.reset();
  source_.clear();
  endResetModel();
}

QStringList CalibrationModel::classes() const {
  QStringList out;
  for (const Row& r : rows_) {
    if (!out.contains(r.op_class)) out << r.op_class;
  }
  return out;
}

QList<QPointF> CalibrationModel::measured_vs_fitted(const QString& op_class) const {
  QList<QPointF> out;
  for (const Row& r : rows_) {
    if (r.op_class == op_class) out.append(QPointF(r.measured_us, r.fitted_us));
  }
  return out;
}

QList<QPointF> CalibrationModel::efficiency_curve(OpClass c, int points) const {
  QList<QPointF> out;
  if (!profile_ || points < 2) return out;
  const EfficiencyCurve& curve = profile_->at(c).compute;
  for (int i = 0; i < points; ++i) {
    const double log_flops = 6.0 + 8.0 * i / (points - 1);
    out.append(QPointF(log_flops, curve.at(std::pow(10.0, log_flops))));
  }
  return out;
}

}  // namespace kvplan::gui
