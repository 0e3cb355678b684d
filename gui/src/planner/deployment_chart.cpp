#include "deployment_chart.h"

#include <QChart>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

#include "chart_util.h"

namespace kvplan::gui {

namespace {

// A span of a factor of 10 or more reads better on a log axis (a 1-user and a 2,000-user replica
// both visible); below that a linear axis from 0 keeps distances honest.
constexpr double kLogSpan = 10.0;

QAbstractAxis* make_axis(double lo, double hi, const QString& title, const QString& format) {
  if (lo > 0 && hi / lo >= kLogSpan) {
    auto* axis = new QLogValueAxis;
    axis->setBase(10);
    axis->setMinorTickCount(-1);  // the minor ticks between decades, as on log paper
    axis->setRange(lo / 1.5, hi * 1.5);
    axis->setLabelFormat(format);
    axis->setTitleText(title + QStringLiteral(" (log)"));
    return axis;
  }
  auto* axis = new QValueAxis;
  axis->setRange(0, hi > 0 ? hi * 1.15 : 1);
  axis->applyNiceNumbers();  // ticks at round values ($2, $4, ...) rather than fifths of the range
  axis->setLabelFormat(format);
  axis->setTitleText(title);
  return axis;
}

QPointF point_of(const plan::DeploymentCandidate& c) { return {c.capacity, c.replica_usd_per_hour()}; }

}  // namespace

DeploymentChartSeries draw_deployment_chart(QChart* chart, const plan::DeploymentPlan& p) {
  clear_chart(chart);
  DeploymentChartSeries out;
  if (p.front.empty()) {
    chart->setTitle(QStringLiteral("No candidate serves any load under the SLO"));
    return out;
  }
  chart->setTitle(QStringLiteral("One replica: cost per hour against the load it serves under the SLO"));
  out.others = new QScatterSeries;
  out.others->setName(QStringLiteral("other candidates searched"));
  out.others->setMarkerSize(7);
  out.others->setColor(QColor(120, 120, 120, 90));
  out.others->setBorderColor(QColor(120, 120, 120, 90));
  out.staircase = new QLineSeries;
  out.staircase->setName(QStringLiteral("cheapest replica serving at least x"));
  out.staircase->setColor(QColor(31, 119, 180));
  out.front = new QScatterSeries;
  out.front->setName(QStringLiteral("Pareto front (click to load)"));
  out.front->setMarkerSize(11);
  out.front->setColor(QColor(31, 119, 180));
  out.cheapest = new QScatterSeries;
  out.cheapest->setName(QStringLiteral("cheapest deployment"));
  out.cheapest->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  out.cheapest->setMarkerSize(17);
  out.cheapest->setColor(QColor(0, 0, 0, 0));  // an outline around the point it marks
  out.cheapest->setBorderColor(QColor(214, 39, 40));
  QPen ring(QColor(214, 39, 40));
  ring.setWidth(3);
  out.cheapest->setPen(ring);

  QList<QPointF> front, stairs, others;
  double x_lo = std::numeric_limits<double>::max(), x_hi = 0, y_lo = x_lo, y_hi = 0;
  auto extend = [&](QPointF q) {
    x_lo = std::min(x_lo, q.x());
    x_hi = std::max(x_hi, q.x());
    y_lo = std::min(y_lo, q.y());
    y_hi = std::max(y_hi, q.y());
  };
  // Front points come cheapest first with growing load: between two of them the cheapest replica
  // serving a load x is the next one, so the line steps up at each point's load.
  for (size_t k = 0; k < p.front.size(); ++k) {
    const QPointF q = point_of(p.candidates[p.front[k]]);
    front.append(q);
    if (k > 0) stairs.append(QPointF(stairs.back().x(), q.y()));
    stairs.append(q);
    extend(q);
  }
  for (const plan::DeploymentCandidate& c : p.candidates) {
    if (c.capacity <= 0 || std::find(p.front.begin(), p.front.end(), c.index) != p.front.end()) continue;
    others.append(point_of(c));
    extend(others.back());
  }
  out.others->replace(others);
  out.staircase->replace(stairs);
  out.front->replace(front);
  if (p.cheapest) out.cheapest->append(point_of(p.candidates[*p.cheapest]));

  QAbstractAxis* x = make_axis(x_lo, x_hi, p.users ? QStringLiteral("users per replica") : QStringLiteral("req/s per replica"),
                               QStringLiteral("%g"));
  QAbstractAxis* y = make_axis(y_lo, y_hi, QStringLiteral("$/hour per replica"), QStringLiteral("%.2f"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QXYSeries* s : {static_cast<QXYSeries*>(out.others), static_cast<QXYSeries*>(out.staircase),
                       static_cast<QXYSeries*>(out.front), static_cast<QXYSeries*>(out.cheapest)}) {
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  return out;
}

int nearest_point(QChart& chart, QXYSeries& series, QPointF value) {
  const QPointF at = chart.mapToPosition(value, &series);
  int best = -1;
  double best_d = std::numeric_limits<double>::max();
  const QList<QPointF> points = series.points();
  for (int i = 0; i < points.size(); ++i) {
    const QPointF d = chart.mapToPosition(points[i], &series) - at;
    const double d2 = d.x() * d.x() + d.y() * d.y();
    if (d2 < best_d) {
      best_d = d2;
      best = i;
    }
  }
  return best;
}

}  // namespace kvplan::gui
