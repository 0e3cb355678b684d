// kvplan/gui/report_pdf.h — the PDF of a report (Qt Gui + Svg): the same sections, tables and
// charts as plan/'s HTML, painted with QPainter on a QPdfWriter. The report itself (analysis, HTML,
// CSV, JSON) is plan/'s, Qt-free (kvplan/plan/report.h).
//
//   plan::ReportInput in = plan::make_report_input(plan::load_scenario_file("chat.json"));
//   gui::write_report(in, plan::ReportFiles{.pdf = "r.pdf", .html = "r.html"});   // all or nothing
//
// Used by the planner's Export and by kvplan-report-pdf, the executable `kvplan report --pdf`
// hands its work to (src/report_pdf_main.cpp), so that `kvplan` itself never links Qt.
#pragma once

#include <string>

#include "kvplan/plan/report.h"

namespace kvplan::gui {

// Creates an offscreen QGuiApplication if none exists (never needs a display).
void write_report_pdf(const plan::ReportInput& input, const std::string& path);
// Every file in `files`, the PDF included, through plan::write_report_data (all or nothing).
void write_report(const plan::ReportInput& input, const plan::ReportFiles& files);

}  // namespace kvplan::gui
