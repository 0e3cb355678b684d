// kvplan/plan/report_document.h — the report's text content as plain sections and tables, built
// once from a ReportInput and rendered by both the HTML writer (here) and the PDF painter (gui/),
// so they agree.
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
};

struct ReportDocument {
  std::string title;
  std::string subtitle;  // kvplan version and the scenario's one-line setup
  std::vector<ReportSection> sections;
};

ReportDocument build_report_document(const ReportInput& input);

}  // namespace kvplan::plan
