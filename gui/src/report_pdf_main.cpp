// kvplan-report-pdf SCENARIO.json --pdf F [--html F] [--csv F] [--json F] — the Qt half of
// `kvplan report`: kvplan hands it any report that asks for a PDF (cli/report_command.cpp, through
// cli/sibling_exec.h), so that only this executable links Qt. It is built into kvplan's folder
// (gui/CMakeLists.txt) so that kvplan finds it next to itself. Same analysis, same files, same exit codes as kvplan (2 for bad
// input, 70 for an internal error); every file is written all or nothing.
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kvplan/config.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/gui/report_pdf.h"
#include "kvplan/plan/scenario_file.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{fmt::format("kvplan-report-pdf {} — the PDF writer behind `kvplan report --pdf`", KVPLAN_VERSION)};
  std::string scenario;
  kvplan::plan::ReportFiles files;
  app.add_option("scenario", scenario, "Scenario JSON (docs/reports.md)")->required();
  app.add_option("--pdf", files.pdf, "PDF file to write")->required();
  app.add_option("--html", files.html, "Self-contained HTML file to write");
  app.add_option("--csv", files.csv, "CSV file to write");
  app.add_option("--json", files.json, "JSON file to write");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "kvplan: " << e.what() << "\n";
    return 2;
  }
  try {
    kvplan::plan::ReportInput input = kvplan::plan::make_report_input(kvplan::plan::load_scenario_file(scenario));
    kvplan::gui::write_report(input, files);
    for (const std::string& f : {files.pdf, files.html, files.csv, files.json}) {
      if (!f.empty()) std::cout << "wrote " << f << "\n";
    }
    return 0;
  } catch (const kvplan::ConfigError& e) {
    std::cerr << "kvplan: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvplan: internal error: " << e.what()
              << "\nThis is a bug in kvplan, not in your input. Please report it with the command line and the "
                 "files it names.\n";
    return 70;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int status = run(argc, argv);
  try {
    kvplan::check_stdout();
  } catch (const kvplan::ConfigError& e) {
    std::cerr << "kvplan: " << e.what() << "\n";
    return status == 0 ? 2 : status;
  }
  return status;
}
