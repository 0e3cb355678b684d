// plan/src/report_svg.cpp — the SVG text of report_svg.h. Plain SVG 1.1 (rect, line, polyline,
// text) so browsers and QSvgRenderer (SVG Tiny 1.2) draw it the same way.
#include "internal/report_svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kvplan::plan::internal {

namespace {

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
const char* color(size_t i) { return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

constexpr double kLeft = 170, kRight = 20, kTop = 34, kBarHeight = 22, kBarGap = 10, kLegendRow = 18;

// A "nice" axis maximum and tick step: 1, 2 or 5 times a power of ten.
std::pair<double, double> nice_axis(double max_value) {
  if (max_value <= 0) return {1, 0.2};
  double raw = max_value / 5;
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  return {std::ceil(max_value / step) * step, step};
}

std::string number_text(double v) {
  if (std::fabs(v) >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (std::fabs(v) >= 1e4) return fmt::format("{:.0f}k", v / 1e3);
  return fmt::format("{:g}", v);
}

std::string header(double w, double h, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">"
      "<rect x=\"0\" y=\"0\" width=\"{0:.0f}\" height=\"{1:.0f}\" fill=\"#ffffff\"/>"
      "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{2}</text>",
      w, h, xml_escape(title));
}

std::string legend(const std::vector<Series>& series, double y) {
  std::string out;
  double x = 10;
  for (size_t i = 0; i < series.size(); ++i) {
    double width = 24 + 6.5 * static_cast<double>(series[i].name.size());
    if (x + width > kChartWidth - 10) {
      x = 10;
      y += kLegendRow;
    }
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>", x, y - 9, color(i));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", x + 14, y, xml_escape(series[i].name));
    x += width;
  }
  return out;
}

int legend_rows(const std::vector<Series>& series) {
  int rows = 1;
  double x = 10;
  for (const Series& s : series) {
    double width = 24 + 6.5 * static_cast<double>(s.name.size());
    if (x + width > kChartWidth - 10) {
      x = 10;
      ++rows;
    }
    x += width;
  }
  return rows;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

double bar_chart_height(const BarChart& c) {
  double rows = static_cast<double>(c.categories.size()) * (c.stacked ? 1.0 : static_cast<double>(c.series.size()));
  double groups = static_cast<double>(c.categories.size());
  return kTop + rows * kBarHeight + groups * kBarGap + 30 + legend_rows(c.series) * kLegendRow + 10;
}

std::string render_bar_chart(const BarChart& c) {
  const double h = bar_chart_height(c);
  const double plot_w = kChartWidth - kLeft - kRight;
  double max_value = 0;
  for (size_t k = 0; k < c.categories.size(); ++k) {
    double sum = 0;
    for (const Series& s : c.series) {
      double v = k < s.values.size() ? std::max(0.0, s.values[k]) : 0;
      sum = c.stacked ? sum + v : std::max(sum, v);
    }
    max_value = std::max(max_value, sum);
  }
  auto [axis_max, step] = nice_axis(max_value);
  const double scale = plot_w / axis_max;
  std::string out = header(kChartWidth, h, c.title);
  double y = kTop;
  for (size_t k = 0; k < c.categories.size(); ++k) {
    double group_h = kBarHeight * (c.stacked ? 1.0 : static_cast<double>(c.series.size()));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLeft - 6, y + group_h / 2 + 4,
                       xml_escape(c.categories[k]));
    double x = kLeft;
    for (size_t i = 0; i < c.series.size(); ++i) {
      double v = k < c.series[i].values.size() ? std::max(0.0, c.series[i].values[k]) : 0;
      double w = v * scale;
      double bar_y = c.stacked ? y : y + static_cast<double>(i) * kBarHeight;
      double bar_x = c.stacked ? x : kLeft;
      out += fmt::format("<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\">"
                         "<title>{}: {:.3g} {}</title></rect>",
                         bar_x, bar_y + 1, w, kBarHeight - 2, color(i), xml_escape(c.series[i].name), v, xml_escape(c.unit));
      if (!c.stacked) {
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\">{}</text>", bar_x + w + 4,
                           bar_y + kBarHeight / 2 + 4, fmt::format("{:.4g}", v));
      }
      if (c.stacked) x += w;
    }
    y += group_h + kBarGap;
  }
  // x axis with ticks.
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>", kLeft, y,
                     kLeft + plot_w);
  for (double t = 0; t <= axis_max + step / 2; t += step) {
    double tx = kLeft + t * scale;
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>", tx, y, y + 4);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", tx, y + 16, number_text(t));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLeft + plot_w, y + 30 - 2,
                     xml_escape(c.unit));
  out += legend(c.series, y + 30 + kLegendRow - 4);
  return out + "</svg>";
}

std::string render_line_chart(const LineChart& c) {
  const double h = kLineChartHeight;
  const double left = 70, right = 20, top = 34, bottom = 60 + kLegendRow * legend_rows(c.series);
  const double plot_w = kChartWidth - left - right, plot_h = h - top - bottom;
  auto xv = [&](double x) { return c.log2_x ? std::log2(std::max(x, 1.0)) : x; };
  double x_min = 0, x_max = 1, y_max = 0;
  if (!c.x.empty()) {
    x_min = xv(c.x.front());
    x_max = xv(c.x.back());
    if (x_max <= x_min) x_max = x_min + 1;
  }
  const auto x_axis = nice_axis(std::max(x_max, c.x_mark));
  if (c.x_from_zero) {
    x_min = 0;
    x_max = x_axis.first;
  }
  for (const Series& s : c.series) {
    for (double v : s.values) y_max = std::max(y_max, v);
  }
  // Room above a reference line, so that it and its label stay clear of the top edge.
  for (const YLine& l : c.y_lines) y_max = std::max(y_max, l.y * 1.1);
  const bool clipped = c.y_cap > 0 && y_max > c.y_cap;
  if (clipped) y_max = c.y_cap;
  // (no structured binding: clang before 16 cannot capture one in a lambda)
  const auto axis = nice_axis(y_max);
  const double axis_max = axis.first, step = axis.second;
  auto px = [&](double x) { return left + (xv(x) - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return top + plot_h - std::min(y, axis_max) / axis_max * plot_h; };
  std::string out = header(kChartWidth, h, c.title);
  for (double t = 0; t <= axis_max + step / 2; t += step) {
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>", left, py(t),
                       left + plot_w, py(t));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", left - 6, py(t) + 4, number_text(t));
  }
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>", left,
                     top + plot_h, left + plot_w);
  // x ticks: every point when there are few (log axes), else five even steps.
  std::vector<double> ticks;
  if (c.x_from_zero) {
    for (double t = 0; t <= x_max + x_axis.second / 2; t += x_axis.second) ticks.push_back(t);
  } else if (c.log2_x || c.x.size() <= 8) {
    ticks = c.x;
  } else if (!c.x.empty()) {
    for (int i = 0; i <= 5; ++i) ticks.push_back(c.x.front() + (c.x.back() - c.x.front()) * i / 5.0);
  }
  for (double t : ticks) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", px(t), top + plot_h + 16,
                       number_text(std::round(t * 10) / 10));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", left + plot_w / 2,
                     top + plot_h + 34, xml_escape(c.x_label));
  out += fmt::format("<text x=\"14\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0:.1f})\">{1}</text>",
                     top + plot_h / 2, xml_escape(c.y_label));
  for (size_t i = 0; i < c.series.size(); ++i) {
    std::string points;
    for (size_t k = 0; k < c.x.size() && k < c.series[i].values.size(); ++k) {
      points += fmt::format("{:.2f},{:.2f} ", px(c.x[k]), py(c.series[i].values[k]));
    }
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>", color(i), points);
    for (size_t k = 0; c.x_from_zero && k < c.x.size() && k < c.series[i].values.size(); ++k) {
      out += fmt::format("<circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"3\" fill=\"{}\"/>", px(c.x[k]),
                         py(c.series[i].values[k]), color(i));
    }
  }
  for (const YLine& l : c.y_lines) {
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
                       "stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>",
                       left, py(l.y), left + plot_w, color(l.color_index));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{}</text>", left + plot_w - 4,
                       py(l.y) - 4, color(l.color_index), xml_escape(l.label));
  }
  if (c.x_mark > 0) {
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#222\" "
                       "stroke-width=\"1.5\" stroke-dasharray=\"2,3\"/>",
                       px(c.x_mark), top, top + plot_h);
    // The label sits left of the line when the line is in the right half, so it stays inside.
    const bool right_half = px(c.x_mark) > left + plot_w / 2;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\" font-weight=\"bold\">{}</text>",
                       px(c.x_mark) + (right_half ? -4 : 4), top + 12, right_half ? "end" : "start",
                       xml_escape(c.x_mark_label));
  }
  if (clipped) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"10\" fill=\"#666\">"
                       "points on the top edge are above {}</text>",
                       left + plot_w, top - 4, number_text(axis_max));
  }
  out += legend(c.series, h - kLegendRow * legend_rows(c.series) + 4);
  return out + "</svg>";
}

}  // namespace kvplan::plan::internal
