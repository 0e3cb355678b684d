// plan/src/internal/report_svg.h — two small chart kinds rendered as SVG text (no Qt): horizontal stacked
// bars and x/y lines. The report's HTML embeds them; its PDF paints the same SVG with QSvgRenderer.
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

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<double> x;
  std::vector<Series> series;
  bool log2_x = false;
};

inline constexpr double kChartWidth = 720;
double bar_chart_height(const BarChart& c);
inline constexpr double kLineChartHeight = 320;

std::string render_bar_chart(const BarChart& c);
std::string render_line_chart(const LineChart& c);
std::string xml_escape(const std::string& text);

}  // namespace kvplan::plan::internal
