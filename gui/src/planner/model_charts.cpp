#include "model_charts.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QHorizontalStackedBarSeries>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>

#include "calibration_model.h"
#include "chart_util.h"
#include "results_models.h"

namespace kvplan::gui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

void draw_memory_chart(QChart* chart, const MemoryBreakdownModel& model, const QString& category) {
  clear_chart(chart);
  auto* series = new QHorizontalStackedBarSeries;
  for (const MemoryBreakdownModel::Row& r : model.rows()) {
    auto* set = new QBarSet(legend_name(r.term));
    *set << static_cast<double>(r.bytes) / kGiB;
    series->append(set);
  }
  chart->addSeries(series);
  auto* categories = new QBarCategoryAxis;
  categories->append(category);
  auto* gib_axis = new QValueAxis;
  gib_axis->setTitleText(QStringLiteral("GiB"));
  chart->addAxis(categories, Qt::AlignLeft);
  chart->addAxis(gib_axis, Qt::AlignBottom);
  series->attachAxis(categories);
  series->attachAxis(gib_axis);
  chart->legend()->setAlignment(Qt::AlignRight);
}

void draw_layer_chart(QChart* chart, const LayerGroupModel& model) {
  clear_chart(chart);
  auto* series = new QBarSeries;
  auto* set = new QBarSet(QStringLiteral("bytes per token (all layers of the group)"));
  auto* categories = new QBarCategoryAxis;
  for (int r = 0; r < model.rowCount(); ++r) {
    *set << model.index(r, LayerGroupModel::kBytesColumn).data().toDouble();
    categories->append(model.index(r, LayerGroupModel::kGroupColumn).data().toString());
  }
  series->append(set);
  chart->addSeries(series);
  auto* bytes_axis = new QValueAxis;
  bytes_axis->setTitleText(QStringLiteral("bytes / token"));
  bytes_axis->setLabelFormat(QStringLiteral("%.0f"));
  chart->addAxis(categories, Qt::AlignBottom);
  chart->addAxis(bytes_axis, Qt::AlignLeft);
  series->attachAxis(categories);
  series->attachAxis(bytes_axis);
}

void draw_calibration_chart(QChart* chart, const CalibrationModel& model) {
  clear_chart(chart);
  if (!model.has_profile()) {
    chart->setTitle(QStringLiteral("No profile loaded: set the 'profile' input to a calibration .sqlite or a profile .json"));
    return;
  }
  if (model.rowCount() > 0) {
    // Measured points against the fitted curves: on the diagonal, the fit predicts the kernel exactly.
    chart->setTitle(QStringLiteral("Kernel time: measured against the fitted profile (") + model.source() + ")");
    auto* x = new QLogValueAxis;
    auto* y = new QLogValueAxis;
    x->setTitleText(QStringLiteral("measured (µs)"));
    y->setTitleText(QStringLiteral("fitted profile (µs)"));
    x->setLabelFormat(QStringLiteral("%g"));
    y->setLabelFormat(QStringLiteral("%g"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    double lo = 1e300, hi = 0;
    for (const QString& c : model.classes()) {
      auto* s = new QScatterSeries;
      s->setName(c);
      s->setMarkerSize(7);
      QList<QPointF> pts;
      for (const QPointF& p : model.measured_vs_fitted(c)) {
        if (p.x() <= 0 || p.y() <= 0) continue;  // log axes
        pts.append(p);
        lo = std::min({lo, p.x(), p.y()});
        hi = std::max({hi, p.x(), p.y()});
      }
      s->replace(pts);
      chart->addSeries(s);
      s->attachAxis(x);
      s->attachAxis(y);
    }
    if (hi > 0) {
      auto* diagonal = new QLineSeries;
      diagonal->setName(QStringLiteral("fitted = measured"));
      diagonal->replace({{lo, lo}, {hi, hi}});
      chart->addSeries(diagonal);
      diagonal->attachAxis(x);
      diagonal->attachAxis(y);
      x->setRange(lo / 1.5, hi * 1.5);
      y->setRange(lo / 1.5, hi * 1.5);
    }
    return;
  }
  // A profile without measurements: its fitted compute-efficiency curves.
  chart->setTitle(QStringLiteral("Compute efficiency of the profile's curves (") + model.source() + ")");
  auto* x = new QValueAxis;
  auto* y = new QValueAxis;
  x->setTitleText(QStringLiteral("log10 FLOPs"));
  y->setTitleText(QStringLiteral("efficiency"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (OpClass c : {OpClass::kGemm, OpClass::kMoeGemm, OpClass::kAttentionPrefill, OpClass::kAttentionDecode}) {
    auto* s = new QLineSeries;
    s->setName(QString::fromUtf8(op_class_name(c).data(), static_cast<qsizetype>(op_class_name(c).size())));
    s->replace(model.efficiency_curve(c, 100));
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  x->setRange(6, 14);
  y->setRange(0, 1);
}

}  // namespace kvplan::gui
