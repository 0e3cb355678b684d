// gui/src/planner/knee_view.h — latency against load around the capacity answer: two panels (TTFT,
// TPOT), each with its p50 / p90 / p99 lines on a log axis (ms), its SLO target as a dashed line and
// the capacity as a vertical line, over the KneeModel's table. The panel of the metric that binds the
// answer is titled so. Redrawn whole from the model on every reset (a few dozen points).
//
//   KneeModel knee;  KneeView view(&knee);      // placeholder until the model has rows
//   knee.set_answer(answer, extra_probes);      // the view redraws itself
#pragma once

#include <QWidget>

class QChart;
class QLabel;
class QLineSeries;
class QLogValueAxis;
class QStackedWidget;
class QValueAxis;

namespace kvplan::gui {

class KneeModel;

class KneeView : public QWidget {
  Q_OBJECT

 public:
  // One metric's chart and its series (the view owns them; exposed for tests and screenshots).
  struct Panel {
    QChart* chart = nullptr;
    QValueAxis* x = nullptr;
    QLogValueAxis* y = nullptr;
    QLineSeries* lines[3] = {nullptr, nullptr, nullptr};  // p50, the model's middle percentile, p99
    QLineSeries* slo = nullptr;       // dashed; no points without a target
    QLineSeries* capacity = nullptr;  // vertical; no points without a passing load
  };

  explicit KneeView(KneeModel* model, QWidget* parent = nullptr);

  const Panel& ttft() const { return panels_[0]; }
  const Panel& tpot() const { return panels_[1]; }
  bool showing_placeholder() const;
  QString placeholder() const;  // what the view says instead of charts
  QString caption() const;  // the line above the charts: SLO sentence and binding

 private:
  void redraw();
  void draw_panel(Panel& panel, int first_column, double target_ms, bool binding);

  KneeModel* model_;
  Panel panels_[2];
  QStackedWidget* stack_ = nullptr;
  QLabel* caption_ = nullptr;
  QLabel* placeholder_ = nullptr;
};

}  // namespace kvplan::gui
