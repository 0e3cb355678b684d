#include "chart_util.h"

#include <QAbstractItemModel>
#include <QChart>
#include <QValueAxis>
#include <QXYSeries>

#include <algorithm>
#include <limits>

namespace kvplan::gui {

QList<QPointF> model_points(const QAbstractItemModel& model, int x_column, int y_column, int max_points) {
  const int rows = model.rowCount();
  QList<QPointF> out;
  auto point = [&](int row) {
    return QPointF(model.index(row, x_column).data(Qt::EditRole).toDouble(),
                   model.index(row, y_column).data(Qt::EditRole).toDouble());
  };
  if (rows <= max_points || max_points < 3) {
    out.reserve(rows);
    for (int r = 0; r < rows; ++r) out.append(point(r));
    return out;
  }
  const int buckets = max_points / 3;
  out.reserve(buckets * 3);
  for (int b = 0; b < buckets; ++b) {
    const int first = static_cast<int>(static_cast<int64_t>(rows) * b / buckets);
    const int last = static_cast<int>(static_cast<int64_t>(rows) * (b + 1) / buckets);  // exclusive
    int lo = first, hi = first;
    double lo_y = std::numeric_limits<double>::max(), hi_y = std::numeric_limits<double>::lowest();
    for (int r = first; r < last; ++r) {
      const double y = model.index(r, y_column).data(Qt::EditRole).toDouble();
      if (y < lo_y) { lo_y = y; lo = r; }
      if (y > hi_y) { hi_y = y; hi = r; }
    }
    int picks[3] = {first, std::min(lo, hi), std::max(lo, hi)};
    for (int i = 0; i < 3; ++i) {
      if (i > 0 && picks[i] == picks[i - 1]) continue;
      if (i == 2 && picks[2] == picks[0]) continue;
      out.append(point(picks[i]));
    }
  }
  out.append(point(rows - 1));
  return out;
}

void replace_series(QXYSeries* series, const QAbstractItemModel& model, int x_column, int y_column, int max_points) {
  series->replace(model_points(model, x_column, y_column, max_points));
}

QString legend_name(const QString& name) { return name.toHtmlEscaped(); }

void clear_chart(QChart* chart) {
  chart->removeAllSeries();
  for (QAbstractAxis* a : chart->axes()) {
    chart->removeAxis(a);
    delete a;
  }
}

void fit_axes(QChart* chart, QValueAxis* x_axis, QValueAxis* y_axis) {
  double x0 = std::numeric_limits<double>::max(), x1 = std::numeric_limits<double>::lowest();
  double y1 = 0;
  bool any = false;
  for (QAbstractSeries* s : chart->series()) {
    auto* xy = qobject_cast<QXYSeries*>(s);
    if (xy == nullptr || !xy->isVisible()) continue;
    for (const QPointF& p : xy->points()) {
      x0 = std::min(x0, p.x());
      x1 = std::max(x1, p.x());
      y1 = std::max(y1, p.y());
      any = true;
    }
  }
  if (!any) {
    x_axis->setRange(0, 1);
    y_axis->setRange(0, 1);
    return;
  }
  if (x1 <= x0) x1 = x0 + 1;
  x_axis->setRange(x0, x1);
  y_axis->setRange(0, y1 > 0 ? y1 * 1.05 : 1);
}

}  // namespace kvplan::gui
