// `kvplan report SCENARIO.json --pdf F --html F --csv F --json F`: runs the scenario's analysis
// once and writes each requested format, all or nothing (plan::write_report_data).
//
// The kvplan executable has no Qt, so that it starts in milliseconds. HTML, CSV and JSON are
// written here; a report that asks for a PDF is handed, whole, to the kvplan-report-pdf executable
// next to kvplan (gui/src/report_pdf_main.cpp, built with KVPLAN_BUILD_GUI into kvplan's folder),
// which runs the same analysis once and writes every requested file.
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/report.h"
#include "kvplan/plan/scenario_file.h"
#include "sibling_exec.h"

namespace kvplan::cli {

namespace {

// A report with a PDF is written whole by kvplan-report-pdf (the only executable that links Qt).
[[noreturn]] void hand_to_pdf_executable(const ReportRequest& r) {
  std::vector<std::string> args{r.scenario, "--pdf", r.pdf};
  if (!r.html.empty()) args.insert(args.end(), {"--html", r.html});
  if (!r.csv.empty()) args.insert(args.end(), {"--csv", r.csv});
  if (!r.json.empty()) args.insert(args.end(), {"--json", r.json});
  exec_sibling("kvplan-report-pdf", args,
               fmt::format("--pdf={}: the PDF needs a build with Qt (KVPLAN_BUILD_GUI=ON); HTML, CSV and JSON "
                           "work without it",
                           r.pdf));
}

}  // namespace

int run_report(const ReportRequest& r) {
  plan::ReportFiles files{r.pdf, r.html, r.csv, r.json};
  if (files.pdf.empty() && files.html.empty() && files.csv.empty() && files.json.empty()) {
    throw ConfigError("kvplan report: name at least one output: --pdf, --html, --csv or --json");
  }
  const plan::ScenarioFile file = plan::load_scenario_file(r.scenario);
  // kvplan-report-pdf reads the same file without a word: the note is said once, here, before the
  // hand-over.
  const std::string note = plan::migration_note(file, r.scenario);
  if (!note.empty()) std::cerr << note << "\n";
  if (!files.pdf.empty()) hand_to_pdf_executable(r);
  plan::ReportInput input = plan::make_report_input(file);
  plan::write_report_data(input, files);
  for (const std::string& f : {files.html, files.csv, files.json}) {
    if (!f.empty()) std::cout << "wrote " << f << "\n";
  }
  return 0;
}

}  // namespace kvplan::cli
