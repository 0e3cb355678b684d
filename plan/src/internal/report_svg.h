// plan/src/internal/report_svg.h — two small chart kinds rendered as SVG text (no Qt): horizontal stacked
// bars and x/y lines (with optional reference lines and a marked x). The report's HTML embeds them; its PDF paints the same SVG with QSvgRenderer.
//
//   BarChart c{.title = "Memory per GPU", .unit = "GiB", .categories = {"fp8"}, .series = {{"weights", {15.0}}}};
//   std::string svg = render_bar_chart(c);
#pragma once

#include <string>
#include <vector>

namespace kvplan::plan::internal {

struct Series {
  std::string name;
  std::vector<double> values;  // bars: one per category; lines: y per x
};

struct BarChart {
  std::string title, unit;
  std::vector<std::string> categories;  // one bar (stacked) or bar group per category
  std::vector<Series> series;
  bool stacked = true;
};

// A dashed horizontal line across the plot (an SLO target).
struct YLine {
  std::string label;  // "SLO 2 s"
  double y = 0;
  size_t color_index = 0;  // the palette colour the series of the same index are drawn in
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<double> x;  // ascending
  std::vector<Series> series;
  bool log2_x = false;
  // Loads of a search: the x axis starts at 0 with round ticks, and every point gets a dot (the
  // points are few and unevenly spaced, each one a simulated run).
  bool x_from_zero = false;
  std::vector<YLine> y_lines;
  double x_mark = 0;          // > 0: a vertical line here (the capacity), labelled x_mark_label
  std::string x_mark_label;
  // > 0: the y axis ends here and larger values are drawn on the top edge (an overloaded probe's
  // latency would otherwise flatten every other point).
  double y_cap = 0;
};

inline constexpr double kChartWidth = 720;
double bar_chart_height(const BarChart& c);
inline constexpr double kLineChartHeight = 320;

std::string render_bar_chart(const BarChart& c);
std::string render_line_chart(const LineChart& c);
std::string xml_escape(const std::string& text);

}  // namespace kvplan::plan::internal
