// gui/src/planner/model_charts.h — charts drawn whole from a model, for the views whose series set
// changes with the data (bar charts of memory terms and layer groups, the calibration scatter).
// Line charts with a fixed set of series use replace_series (chart_util.h) instead.
//
//   draw_memory_chart(chart, memory_model, "GPU (stage 0)");
//   draw_calibration_chart(chart, calibration_model);
#pragma once

#include <QString>

class QChart;

namespace kvplan::gui {

class CalibrationModel;
class LayerGroupModel;
class MemoryBreakdownModel;

// One horizontal stacked bar, one set per breakdown row (GiB).
void draw_memory_chart(QChart* chart, const MemoryBreakdownModel& model, const QString& category);
// One bar per layer group: bytes per token of all its layers.
void draw_layer_chart(QChart* chart, const LayerGroupModel& model);
// Measured against fitted kernel times (log-log, with the diagonal) when the model has rows; the
// profile's compute-efficiency curves when it has only a profile; a hint when it has neither.
void draw_calibration_chart(QChart* chart, const CalibrationModel& model);

}  // namespace kvplan::gui
