// `kvplan report SCENARIO.json --pdf F --html F --csv F --json F`: runs the scenario's analysis
// once and writes each requested format. Built into the kvplan executable (not kvplan_cli_lib) with
// kvplan_report_core, plus kvplan_report (Qt) for the PDF when KVPLAN_BUILD_GUI is on.
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "kvplan/core/error.h"
#include "kvplan/gui/report.h"
#include "scenario_file.h"

namespace kvplan::cli {

int run_report(const ReportRequest& r) {
  gui::ReportFiles files{r.pdf, r.html, r.csv, r.json};
  if (files.pdf.empty() && files.html.empty() && files.csv.empty() && files.json.empty()) {
    throw ConfigError("kvplan report: name at least one output: --pdf, --html, --csv or --json");
  }
#ifndef KVPLAN_HAVE_REPORT_PDF
  if (!files.pdf.empty()) {
    std::cerr << fmt::format("kvplan report: --pdf={}: PDF needs a build with Qt (KVPLAN_BUILD_GUI); "
                             "HTML, CSV and JSON work in this build\n", files.pdf);
    return 2;
  }
#endif
  gui::ReportInput input = gui::make_report_input(load_scenario_file(r.scenario));
#ifdef KVPLAN_HAVE_REPORT_PDF
  gui::write_report(input, files);
#else
  gui::write_report_data(input, files);
#endif
  for (const std::string& f : {files.pdf, files.html, files.csv, files.json}) {
    if (!f.empty()) std::cout << "wrote " << f << "\n";
  }
  return 0;
}

}  // namespace kvplan::cli
