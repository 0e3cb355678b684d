// kvplan/plan/report_document.h — the report's text content as a headline, plain sections and
// tables, built once from a ReportInput and rendered by both the HTML writer (here) and the PDF
// painter (gui/), so they agree.
//
//   ReportDocument d = build_report_document(input);
//   for (const ReportSection& s : d.sections) { ... s.heading, s.paragraphs, s.tables ... }
#pragma once

#include <string>
#include <vector>

#include "kvplan/plan/report.h"

namespace kvplan::plan {

struct ReportTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each row has header.size() cells
};

struct ReportSection {
  std::string heading;
  std::vector<std::string> paragraphs;
  std::vector<ReportTable> tables;
  bool prominent = false;     // warnings: drawn so that nobody reads past them
  bool charts_after = false;  // the charts follow this section (in both renderers)
};

struct ReportDocument {
  std::string title;
  std::string subtitle;  // kvplan version and the scenario's one-line setup
  // The answer, in large type right under the title: "122 concurrent users" (or "No capacity
  // answer"), then the SLO sentence (or why there is no answer).
  std::string headline;
  std::string headline_detail;
  std::vector<ReportSection> sections;  // the capacity answer's details first, then the warnings
};

ReportDocument build_report_document(const ReportInput& input);

}  // namespace kvplan::plan
