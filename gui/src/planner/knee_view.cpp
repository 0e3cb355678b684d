#include "knee_view.h"

#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

#include "chart_util.h"
#include "knee_model.h"
#include "kvplan/plan/capacity_summary.h"

namespace kvplan::gui {

namespace {

constexpr int kMaxPoints = 400;  // per series (docs/gui.md); a knee has a few dozen loads

const QColor kPercentileColors[3] = {QColor(0x2c, 0x7b, 0xb6), QColor(0xd9, 0x5f, 0x02), QColor(0x7b, 0x32, 0x94)};

QString load_words(double load, bool users) {
  return users ? QStringLiteral("%1 users").arg(load, 0, 'f', 0) : QStringLiteral("%1 req/s").arg(load, 0, 'g', 3);
}

void show_in_legend(QChart* chart, QLineSeries* series, bool shown) {
  for (QLegendMarker* m : chart->legend()->markers(series)) m->setVisible(shown);
}

KneeView::Panel make_panel(const QString& metric) {
  KneeView::Panel p;
  p.chart = new QChart;
  p.chart->setAnimationOptions(QChart::NoAnimation);  // a redraw must cost one paint
  p.chart->legend()->setAlignment(Qt::AlignBottom);
  p.chart->setTitle(metric);
  p.x = new QValueAxis;
  p.x->setLabelFormat(QStringLiteral("%g"));
  p.y = new QLogValueAxis;
  p.y->setTitleText(metric + QStringLiteral(" (ms, log scale)"));
  p.y->setLabelFormat(QStringLiteral("%g"));
  p.y->setMinorTickCount(-1);
  p.chart->addAxis(p.x, Qt::AlignBottom);
  p.chart->addAxis(p.y, Qt::AlignLeft);
  auto add = [&](const QString& name) {
    auto* s = new QLineSeries;
    s->setName(name);
    p.chart->addSeries(s);
    s->attachAxis(p.x);
    s->attachAxis(p.y);
    return s;
  };
  for (int i = 0; i < 3; ++i) {
    p.lines[i] = add(QString());
    p.lines[i]->setPointsVisible(true);
    p.lines[i]->setPen(QPen(kPercentileColors[i], 2));
  }
  p.slo = add(QStringLiteral("SLO target"));
  p.slo->setPen(QPen(QColor(0xc0, 0x30, 0x30), 2, Qt::DashLine));
  p.capacity = add(QStringLiteral("capacity"));
  p.capacity->setPen(QPen(QColor(0x30, 0x30, 0x30), 2));
  // The capacity's label sits at the line's top point only (the bottom one is hidden below).
  p.capacity->setPointLabelsVisible(true);
  p.capacity->setPointLabelsClipping(false);
  return p;
}

QChartView* chart_view(QChart* chart) {
  auto* v = new QChartView(chart);
  v->setRenderHint(QPainter::Antialiasing);
  v->setMinimumSize(360, 280);
  return v;
}

}  // namespace

KneeView::KneeView(KneeModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  panels_[0] = make_panel(QStringLiteral("TTFT"));
  panels_[1] = make_panel(QStringLiteral("TPOT"));

  placeholder_ = new QLabel;
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);

  auto* charts = new QWidget;
  auto* chart_row = new QHBoxLayout(charts);
  chart_row->setContentsMargins(0, 0, 0, 0);
  chart_row->addWidget(chart_view(panels_[0].chart));
  chart_row->addWidget(chart_view(panels_[1].chart));
  auto* table = new QTableView;
  table->setModel(model_);
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->verticalHeader()->setDefaultSectionSize(20);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(charts);
  split->addWidget(table);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);

  stack_ = new QStackedWidget;
  stack_->addWidget(placeholder_);
  stack_->addWidget(split);
  caption_ = new QLabel;
  caption_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(caption_);
  layout->addWidget(stack_, 1);

  connect(model_, &QAbstractItemModel::modelReset, this, &KneeView::redraw);
  connect(model_, &QAbstractItemModel::dataChanged, this, &KneeView::redraw);
  redraw();
}

bool KneeView::showing_placeholder() const { return stack_->currentIndex() == 0; }
QString KneeView::caption() const { return caption_->text(); }
QString KneeView::placeholder() const { return placeholder_->text(); }

void KneeView::redraw() {
  if (model_->empty()) {
    stack_->setCurrentIndex(0);
    // An answer without probes (the weights leave no room for KV) says so; no answer yet says how
    // to get one.
    caption_->setText(model_->summary());
    placeholder_->setText(model_->summary().isEmpty()
                              ? QStringLiteral("No capacity answer yet: run the capacity search (it needs an SLO "
                                               "target) to see latency against load.")
                              : QStringLiteral("No load was simulated for this answer."));
    return;
  }
  stack_->setCurrentIndex(1);
  const sim::Slo& slo = model_->slo();
  const QString& binding = model_->binding();
  draw_panel(panels_[0], KneeModel::kTtftP50Column, slo.ttft_ms, binding == QLatin1String("ttft"));
  draw_panel(panels_[1], KneeModel::kTpotP50Column, slo.tpot_ms, binding == QLatin1String("tpot"));
  if (!model_->summary().isEmpty()) {  // an answer's own sentences (plan::summarize_capacity)
    caption_->setText(model_->summary());
    return;
  }
  QString text = QString::fromStdString(plan::slo_sentence(slo));
  if (!text.isEmpty()) text = QStringLiteral("SLO: ") + text + QStringLiteral(". ");
  text += model_->capacity() > 0 ? QStringLiteral("Capacity %1").arg(load_words(model_->capacity(), model_->load_is_users()))
                                 : QStringLiteral("No probed load meets the SLO");
  if (!binding.isEmpty()) text += QStringLiteral("; binding constraint: ") + binding;
  caption_->setText(text + QStringLiteral("."));
}

void KneeView::draw_panel(Panel& p, int first_column, double target_ms, bool binding) {
  const bool users = model_->load_is_users();
  const QString metric = first_column == KneeModel::kTtftP50Column ? QStringLiteral("TTFT") : QStringLiteral("TPOT");
  p.chart->setTitle(binding ? metric + QStringLiteral(" — binds the capacity") : metric);
  QFont title_font = p.chart->titleFont();
  title_font.setBold(binding);
  p.chart->setTitleFont(title_font);
  p.x->setTitleText(users ? QStringLiteral("concurrent users") : QStringLiteral("load (requests/s)"));

  const QString names[3] = {QStringLiteral("p50"), QStringLiteral("p%1").arg(model_->mid_percentile()), QStringLiteral("p99")};
  double x0 = std::numeric_limits<double>::max(), x1 = 0;
  double y0 = std::numeric_limits<double>::max(), y1 = 0;
  for (int i = 0; i < 3; ++i) {
    QList<QPointF> points = model_points(*model_, KneeModel::kLoadColumn, first_column + i, kMaxPoints);
    // A log axis cannot place 0 ms (no request finished at that load): such points are left out.
    points.removeIf([](const QPointF& q) { return q.y() <= 0; });
    for (const QPointF& q : points) {
      x0 = std::min(x0, q.x());
      x1 = std::max(x1, q.x());
      y0 = std::min(y0, q.y());
      y1 = std::max(y1, q.y());
    }
    p.lines[i]->setName(names[i]);  // the panel's title names the metric; short names keep the legend whole
    p.lines[i]->replace(points);
  }
  if (y1 <= 0) {  // nothing finished at any load: an axis around the target, or 1..10 ms
    y0 = target_ms > 0 ? target_ms / 2 : 1;
    y1 = target_ms > 0 ? target_ms * 2 : 10;
  }
  if (x1 <= 0) {
    x0 = 0;
    x1 = 1;
  }
  if (target_ms > 0) {  // the target is always on the chart, even far above or below the lines
    y0 = std::min(y0, target_ms);
    y1 = std::max(y1, target_ms);
  }
  const double capacity = model_->capacity();
  if (capacity > 0) {
    x0 = std::min(x0, capacity);
    x1 = std::max(x1, capacity);
  }
  const double pad_x = (x1 - x0) * 0.04;
  const double lo = y0 / 1.6, hi = y1 * 1.6;  // room for the capacity label above the lines
  p.x->setRange(std::max(0.0, x0 - pad_x), x1 + pad_x);
  p.x->applyNiceNumbers();  // ticks at round loads, not at fractions of the padded range
  // A log axis labels powers of its base only: TPOT often spans less than a decade, where base 10
  // would leave one label; base 2 labels every doubling (at most ten over three decades).
  p.y->setBase(hi / lo < 1000 ? 2 : 10);
  p.y->setRange(lo, hi);

  // Across the whole (rounded) x range, so the target reads as a level, not a segment.
  p.slo->replace(target_ms > 0 ? QList<QPointF>{{p.x->min(), target_ms}, {p.x->max(), target_ms}} : QList<QPointF>{});
  p.slo->setName(target_ms > 0 ? QStringLiteral("SLO %1").arg(QString::fromStdString(plan::latency_words(target_ms)))
                               : QStringLiteral("SLO target"));
  show_in_legend(p.chart, p.slo, target_ms > 0);

  const QString label = QStringLiteral("capacity: ") + load_words(capacity, users);
  p.capacity->replace(capacity > 0 ? QList<QPointF>{{capacity, lo}, {capacity, hi / 1.25}} : QList<QPointF>{});
  p.capacity->setName(QStringLiteral("capacity"));  // the line's own label says how much
  p.capacity->setPointLabelsFormat(label);
  if (capacity > 0) p.capacity->setPointConfiguration(0, QXYSeries::PointConfiguration::LabelVisibility, false);
  show_in_legend(p.chart, p.capacity, capacity > 0);
}

}  // namespace kvplan::gui
