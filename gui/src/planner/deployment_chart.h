// gui/src/planner/deployment_chart.h — the Deployments view's chart: one replica's cost per hour
// against the load it serves, for every candidate a `kvplan plan` search answered. The Pareto front
// is drawn as points joined by a staircase (the cheapest replica that serves at least x), the other
// searched candidates as faint points, and the cheapest deployment marked.
//
//   DeploymentChartSeries s = draw_deployment_chart(chart, plan);
//   connect(s.front, &QScatterSeries::clicked, [&](QPointF p) { pick(nearest_point(*chart, *s.front, p)); });
#pragma once

#include <QPointF>

#include "kvplan/plan/deployment.h"

class QChart;
class QLineSeries;
class QScatterSeries;
class QXYSeries;

namespace kvplan::gui {

struct DeploymentChartSeries {
  QScatterSeries* front = nullptr;     // point k is plan.front[k] (nullptr: nothing was drawn)
  QLineSeries* staircase = nullptr;
  QScatterSeries* others = nullptr;    // searched candidates off the front
  QScatterSeries* cheapest = nullptr;  // one point, or none
};

// Replaces the chart's series and axes. Axes are logarithmic when their values span a factor of 10
// or more (loads per replica from 1 to thousands), linear otherwise.
DeploymentChartSeries draw_deployment_chart(QChart* chart, const plan::DeploymentPlan& p);

// The index of the series' point nearest to `value` (in the series' coordinates) as drawn on the
// chart, so a click between two points of a log axis picks the one that looks nearer; -1 when empty.
int nearest_point(QChart& chart, QXYSeries& series, QPointF value);

}  // namespace kvplan::gui
