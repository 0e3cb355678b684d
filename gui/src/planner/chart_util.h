// gui/src/planner/chart_util.h — feeding Qt Charts from table models: points of two columns,
// down-sampled to a bound, handed to a series in one replace() call (one repaint, not one per point).
//
//   replace_series(line, capacity_model, 0, 1 + scheme, 400);
//   fit_axes(chart, x_axis, y_axis);   // ranges over every series' points
#pragma once

#include <QList>
#include <QPointF>
#include <QString>

class QAbstractItemModel;
class QChart;
class QValueAxis;
class QXYSeries;

namespace kvplan::gui {

// Points (x, y) of two numeric columns. Above max_points rows, each bucket of rows keeps its first
// point and its min and max y (in row order), so peaks survive the down-sampling.
QList<QPointF> model_points(const QAbstractItemModel& model, int x_column, int y_column, int max_points);
void replace_series(QXYSeries* series, const QAbstractItemModel& model, int x_column, int y_column, int max_points);
// A series or bar-set name as Qt Charts should be given it: its legend lays labels out as rich text,
// where a '<' opens a tag and swallows the rest ("KV fragmentation (< 1 block)" showed as "KV
// fragmentation ("). Escaped, the legend shows the name whole.
QString legend_name(const QString& name);
// Removes every series and axis of the chart (for charts redrawn whole when their data changes).
void clear_chart(QChart* chart);
// Axis ranges covering every XY series of the chart (y from 0), padded 5% at the top.
void fit_axes(QChart* chart, QValueAxis* x_axis, QValueAxis* y_axis);

}  // namespace kvplan::gui
