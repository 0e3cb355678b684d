// gui/src/report_pdf.cpp — the PDF report: the same sections, tables and charts as the HTML,
// painted with QPainter on a QPdfWriter (A4, several pages). Charts are the SVG documents of
// report_svg_charts painted through QSvgRenderer, so the PDF and the HTML draw identical charts.
#include <QByteArray>
#include <QFont>
#include <QFontMetricsF>
#include <QGuiApplication>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QPen>
#include <QSvgRenderer>

#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/gui/report_pdf.h"
#include "kvplan/plan/report_document.h"

namespace kvplan::gui {

namespace {

// QPainter needs fonts, and fonts need a QGuiApplication. The CLI has none: create one on the
// offscreen platform (never needs a display) and keep it for the life of the process.
void ensure_gui_application() {
  if (QCoreApplication::instance() != nullptr) return;
  static int argc = 3;
  static char arg0[] = "kvplan", arg1[] = "-platform", arg2[] = "offscreen";
  static char* argv[] = {arg0, arg1, arg2, nullptr};
  static std::unique_ptr<QGuiApplication> app = std::make_unique<QGuiApplication>(argc, argv);
}

QString q(const std::string& s) { return QString::fromStdString(s); }

// Lays out text top to bottom, starting a new page when the next block does not fit.
class PdfLayout {
 public:
  static constexpr double kDpi = 96;  // 1 unit = 1 CSS pixel, the SVG charts' unit

  explicit PdfLayout(QPdfWriter& writer) : writer_(writer), painter_(&writer) {
    if (!painter_.isActive()) throw ConfigError("report: the PDF painter could not start");
    width_ = writer.width();
    height_ = writer.height();
  }
  ~PdfLayout() { painter_.end(); }

  void heading(const std::string& text, double size) {
    QFont f = font(size, true);
    need(QFontMetricsF(f).height() * 2.2);
    y_ += size > 14 ? 0 : 10;
    paragraph_with(text, f);
    y_ += 4;
  }
  void paragraph(const std::string& text) { paragraph_with(text, font(9, false)); }
  // The answer under the title: large, bold, a line of its own.
  void headline(const std::string& text, const std::string& detail) {
    y_ += 6;
    paragraph_with(text, font(24, true));
    paragraph_with(detail, font(12, false));
    y_ += 6;
  }
  // Warnings in bold red inside a red frame, so they cannot be mistaken for ordinary notes.
  void warnings(const plan::ReportSection& s) {
    const double top = y_;
    const int page = pages_;
    y_ += 4;
    painter_.setPen(QColor(198, 40, 40));
    paragraph_with(s.heading, font(12, true), 6);
    for (const std::string& p : s.paragraphs) paragraph_with(p, font(9, true), 6);
    painter_.setPen(Qt::black);
    y_ += 4;
    // A frame only when the block stayed on one page (it would be cut by a page break otherwise).
    if (page == pages_) {
      painter_.setPen(QPen(QColor(198, 40, 40), 2));
      painter_.drawRect(QRectF(0, top, width_, y_ - top));
      painter_.setPen(Qt::black);
    }
    y_ += 8;
  }

  void table(const plan::ReportTable& t) {
    const QFont body = font(8, false), head = font(8, true);
    const size_t n = t.header.size();
    // Natural column widths (capped), scaled down to the page width when wider.
    std::vector<double> w(n, 30);
    for (size_t c = 0; c < n; ++c) {
      w[c] = std::max(w[c], QFontMetricsF(head).horizontalAdvance(q(t.header[c])) + 8);
      for (const auto& row : t.rows) {
        if (c < row.size()) w[c] = std::max(w[c], QFontMetricsF(body).horizontalAdvance(q(row[c])) + 8);
      }
      w[c] = std::min(w[c], 320.0);
    }
    // Too wide: narrow columns (a source word, a number) keep their width and the wide ones, which
    // wrap well, give up the difference; scaling all of them alike cut "datasheet" to "datash".
    constexpr double kNarrow = 90;
    double total = 0, wide = 0;
    for (double x : w) {
      total += x;
      if (x > kNarrow) wide += x;
    }
    if (total > width_) {
      const double scale = wide > 0 && wide > total - width_ ? (wide - (total - width_)) / wide : width_ / total;
      for (double& x : w) {
        if (x > kNarrow || wide <= total - width_) x *= scale;
      }
    }
    row(t.header, w, head, true);
    for (const auto& r : t.rows) row(r, w, body, false);
    y_ += 8;
  }

  void chart(const plan::SvgChart& c) {
    double scale = std::min(1.0, width_ / c.width);
    double h = c.height * scale;
    need(h + 10);
    QSvgRenderer renderer(QByteArray::fromStdString(c.svg));
    if (!renderer.isValid()) throw ConfigError(fmt::format("report: chart '{}' is not valid SVG", c.title));
    renderer.render(&painter_, QRectF(0, y_, c.width * scale, h));
    y_ += h + 12;
  }

  void new_page() {
    writer_.newPage();
    ++pages_;
    y_ = 0;
  }
  int pages() const { return pages_; }

 private:
  static QFont font(double points, bool bold) {
    QFont f("DejaVu Sans");
    // No ligatures: the PDF's text then reads back (search, copy, pdftotext) as written, "fi" and
    // not "ﬁ". Shaping is cosmetic for the Latin text of a report.
    f.setStyleStrategy(QFont::PreferNoShaping);
    f.setPointSizeF(points);
    f.setBold(bold);
    return f;
  }
  void need(double h) {
    if (y_ > 0 && y_ + h > height_) new_page();
  }
  // `inset`: left and right padding (inside the warnings frame).
  void paragraph_with(const std::string& text, const QFont& f, double inset = 0) {
    painter_.setFont(f);
    QRectF box = painter_.boundingRect(QRectF(0, 0, width_ - 2 * inset, 1e6), Qt::TextWordWrap, q(text));
    need(box.height());
    painter_.drawText(QRectF(inset, y_, width_ - 2 * inset, box.height()), Qt::TextWordWrap, q(text));
    y_ += box.height() + 4;
  }
  void row(const std::vector<std::string>& cells, const std::vector<double>& w, const QFont& f, bool header) {
    painter_.setFont(f);
    double h = 0;
    for (size_t c = 0; c < w.size() && c < cells.size(); ++c) {
      h = std::max(h, painter_.boundingRect(QRectF(0, 0, w[c] - 6, 1e6), Qt::TextWordWrap, q(cells[c])).height());
    }
    h += 4;
    need(h);
    double x = 0;
    for (size_t c = 0; c < w.size(); ++c) {
      QRectF cell(x, y_, w[c], h);
      if (header) painter_.fillRect(cell, QColor(240, 240, 240));
      painter_.setPen(QColor(200, 200, 200));
      painter_.drawRect(cell);
      painter_.setPen(Qt::black);
      if (c < cells.size()) painter_.drawText(cell.adjusted(3, 2, -3, -2), Qt::TextWordWrap, q(cells[c]));
      x += w[c];
    }
    y_ += h;
  }

  QPdfWriter& writer_;
  QPainter painter_;
  double width_ = 0, height_ = 0, y_ = 0;
  int pages_ = 1;
};

}  // namespace

void write_report_pdf(const plan::ReportInput& in, const std::string& path) {
  ensure_gui_application();
  const plan::ReportDocument d = plan::build_report_document(in);
  QPdfWriter writer(q(path));
  writer.setResolution(static_cast<int>(PdfLayout::kDpi));
  writer.setPageSize(QPageSize(QPageSize::A4));
  writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
  writer.setTitle(q(d.title));
  writer.setCreator(q("kvplan " + in.kvplan_version));
  {
    PdfLayout page(writer);
    // Page 1 holds the answer: the headline, its details and the warnings come before anything
    // long enough to push them off it.
    page.heading(d.title, 18);
    page.paragraph(d.subtitle);
    page.headline(d.headline, d.headline_detail);
    for (const plan::ReportSection& s : d.sections) {
      if (s.prominent) {
        page.warnings(s);
      } else {
        page.heading(s.heading, 14);
        for (const std::string& p : s.paragraphs) page.paragraph(p);
        for (const plan::ReportTable& t : s.tables) page.table(t);
      }
      if (s.charts_after) {
        // Charts on their own pages, where the HTML shows them.
        page.new_page();
        page.heading("Charts", 14);
        for (const plan::SvgChart& c : plan::report_svg_charts(in)) page.chart(c);
        page.new_page();
      }
    }
  }  // the painter ends here and QPdfWriter finishes the file when it goes out of scope
}

void write_report(const plan::ReportInput& in, const plan::ReportFiles& files) {
  plan::write_report_data(in, files, [&](const std::string& path) { write_report_pdf(in, path); });
}

}  // namespace kvplan::gui
