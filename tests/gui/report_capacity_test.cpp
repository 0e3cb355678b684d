// tests/gui/report_capacity_test.cpp — reports lead with the capacity answer: page 1 of the PDF (read
// back with pdftotext) holds the headline with find_capacity's number, the SLO sentence and the
// binding constraint; the HTML shows them and the warnings before any chart; JSON and CSV carry the
// same answer; a scenario that cannot be searched says why; a given answer is printed, not searched.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/gui/report_pdf.h"
#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/report.h"
#include "report_test_support.h"

namespace kvplan::gui {
namespace {

using plan::make_report_input;
using plan::ReportFiles;
using plan::ReportInput;
using testing::squeezed;
using testing::read_file;
using testing::ReportFilesTest;

constexpr const char* kNoPdftotext =
    "pdftotext not found: run scripts/setup.sh (it installs poppler-utils), then rerun; page 1 of the PDF "
    "cannot be checked without it";

// One scheme and a fixed-length closed loop keep the search quick; the SLO makes it searchable.
constexpr const char* kScenario = R"({"kvplan_scenario": 2, "name": "capacity report test",
    "model": {"id": "llama-3.1-8b"}, "hardware": {"gpu": "h100-sxm"}, "engine": {"max_model_len": 4096},
    "workload": {"users": 8, "think_time_s": 1, "prompt_lengths": "fixed:512", "output_lengths": "fixed:64",
                 "duration_s": 20, "seed": 3},
    "slo": {"ttft_ms": 1000, "tpot_ms": 50}})";

plan::ScenarioFile scenario() { return plan::parse_scenario_json(kScenario, "test"); }

const ReportInput& input() {
  static const ReportInput in = make_report_input(scenario());
  return in;
}

// What `kvplan capacity` answers for the same scenario, searched independently of the report.
const plan::CapacityAnswer& searched() {
  static const plan::CapacityAnswer a = plan::find_capacity(plan::report_base_scenario(scenario()));
  return a;
}

std::string headline_of(double users) { return fmt::format("{:g} concurrent users", users); }

TEST(ReportCapacityInput, TheAnswerIsFindCapacitys) {
  const ReportInput& in = input();
  ASSERT_TRUE(in.capacity.has_value()) << in.no_capacity_why;
  ASSERT_TRUE(in.capacity_summary.has_value());
  EXPECT_TRUE(in.no_capacity_why.empty());
  ASSERT_GT(searched().search.best, 0) << "the test scenario must have an answer";
  EXPECT_TRUE(in.capacity->users);
  EXPECT_EQ(in.capacity->search.best, searched().search.best);
  EXPECT_EQ(in.capacity->search.probes.size(), searched().search.probes.size());
  EXPECT_EQ(in.capacity_summary->headline, headline_of(searched().search.best));
  EXPECT_EQ(in.capacity_summary->binding, plan::summarize_capacity(searched()).binding);
}

TEST_F(ReportFilesTest, PdfPageOneHoldsTheAnswer) {
  ReportFiles files;
  files.pdf = path("r.pdf");
  write_report(input(), files);
  const std::optional<std::string> page1 = testing::pdf_page_text(files.pdf, 1);
  if (!page1) FAIL() << kNoPdftotext;
  const std::string text = squeezed(*page1);
  const plan::CapacitySummary s = plan::summarize_capacity(searched());
  const size_t headline = text.find(squeezed(headline_of(searched().search.best)));
  ASSERT_NE(headline, std::string::npos) << *page1;
  ASSERT_GT(headline, 0u);
  EXPECT_FALSE(std::isdigit(static_cast<unsigned char>(text[headline - 1]))) << "a larger number: " << *page1;
  const size_t slo = text.find(squeezed(s.slo));
  const size_t binding = text.find(squeezed(s.binding));
  EXPECT_NE(slo, std::string::npos) << s.slo << "\n" << *page1;
  EXPECT_NE(binding, std::string::npos) << s.binding << "\n" << *page1;
  EXPECT_NE(text.find(squeezed(s.cost)), std::string::npos) << s.cost << "\n" << *page1;
  EXPECT_NE(text.find(squeezed(s.source)), std::string::npos) << s.source << "\n" << *page1;
  // In the order a reader needs them: the number, the SLO it meets, what binds.
  EXPECT_LT(headline, slo);
  EXPECT_LT(slo, binding);
}

TEST_F(ReportFilesTest, HtmlShowsTheAnswerAndTheWarningsBeforeAnyChart) {
  // A given answer with a warning: every warning must come before the charts.
  plan::CapacityAnswer known = searched();
  known.warnings.push_back("test warning: read before the charts");
  const ReportInput in = make_report_input(scenario(), known);
  ReportFiles files;
  files.html = path("r.html");
  write_report(in, files);
  const std::string html = read_file(files.html);
  const size_t first_chart = html.find("<svg");
  ASSERT_NE(first_chart, std::string::npos);
  const plan::CapacitySummary s = plan::summarize_capacity(known);
  for (const std::string& part : {s.headline, s.binding, s.cost, std::string("test warning: read before the charts"),
                                  std::string("Assumptions and sources")}) {
    const size_t at = html.find(part);
    EXPECT_NE(at, std::string::npos) << part;
    EXPECT_LT(at, first_chart) << part;
  }
  EXPECT_LT(html.find(s.headline), html.find("Warnings"));
  // The latency-against-load charts come first, with the SLO lines and the capacity marked.
  EXPECT_LT(first_chart, html.find("p90 TTFT against load"));
  EXPECT_NE(html.find("p90 time per output token against load"), std::string::npos);
  EXPECT_NE(html.find("SLO 1 s"), std::string::npos);
  EXPECT_NE(html.find("SLO 50 ms"), std::string::npos);
  EXPECT_NE(html.find("capacity: " + s.headline), std::string::npos);
}

TEST_F(ReportFilesTest, JsonAndCsvCarryTheSameAnswer) {
  ReportFiles files;
  files.json = path("r.json");
  files.csv = path("r.csv");
  write_report(input(), files);
  const nlohmann::json j = nlohmann::json::parse(read_file(files.json));
  ASSERT_TRUE(j["capacity"].is_object());
  EXPECT_EQ(j["capacity"]["best"].get<double>(), searched().search.best);
  EXPECT_EQ(j["capacity"]["probes"].size(), searched().search.probes.size());
  EXPECT_EQ(j["capacity"]["binding_constraint"]["kind"], searched().binding.kind);
  EXPECT_EQ(j["capacity"]["summary"]["headline"], headline_of(searched().search.best));
  EXPECT_EQ(j["capacity"]["summary"]["slo"], plan::summarize_capacity(searched()).slo);
  // The CSV's first rows are the answer.
  std::istringstream csv(read_file(files.csv));
  std::string header, best, headline;
  std::getline(csv, header);
  std::getline(csv, best);
  std::getline(csv, headline);
  EXPECT_EQ(best, fmt::format("capacity,base,best,{},users,computed", searched().search.best));
  EXPECT_EQ(headline, fmt::format("capacity,base,headline,{},,computed", headline_of(searched().search.best)));
}

TEST_F(ReportFilesTest, AGivenAnswerIsPrintedNotSearchedAgain) {
  // A number no search of this scenario gives: if it is printed, the report used the given answer.
  plan::CapacityAnswer known = searched();
  known.search.best = 4242;
  known.warnings.push_back("test warning: on the first page");
  const ReportInput in = make_report_input(scenario(), known);
  ASSERT_TRUE(in.capacity.has_value());
  EXPECT_EQ(in.capacity->search.best, 4242);
  EXPECT_EQ(in.capacity_summary->headline, "4242 concurrent users");
  ReportFiles files;
  files.pdf = path("r.pdf");
  files.json = path("r.json");
  write_report(in, files);
  EXPECT_EQ(nlohmann::json::parse(read_file(files.json))["capacity"]["best"], 4242);
  const std::optional<std::string> page1 = testing::pdf_page_text(files.pdf, 1);
  if (!page1) FAIL() << kNoPdftotext;
  EXPECT_NE(squeezed(*page1).find(squeezed("4242 concurrent users")), std::string::npos) << *page1;
  EXPECT_NE(squeezed(*page1).find(squeezed("test warning: on the first page")), std::string::npos) << *page1;
}

TEST_F(ReportFilesTest, NoSloSaysWhyOnPageOne) {
  // No SLO and no workload: the memory answer only, and the first page says so.
  const plan::ScenarioFile s = plan::parse_scenario_json(R"({"kvplan_scenario": 2, "name": "memory only",
      "model": {"id": "llama-3.1-8b"}, "hardware": {"gpu": "h100-sxm"}})",
                                                         "test");
  const ReportInput in = make_report_input(s);
  EXPECT_FALSE(in.capacity.has_value());
  EXPECT_EQ(in.no_capacity_why.rfind("no SLO target and no workload given: memory answer only", 0), 0u) << in.no_capacity_why;
  ReportFiles files{path("m.pdf"), path("m.html"), path("m.csv"), path("m.json")};
  write_report(in, files);
  const nlohmann::json j = nlohmann::json::parse(read_file(files.json));
  EXPECT_TRUE(j["capacity"].is_null());
  EXPECT_EQ(j["no_capacity_answer"], in.no_capacity_why);
  EXPECT_NE(read_file(files.csv).find("capacity,,no_capacity_answer,"), std::string::npos);
  const std::string html = read_file(files.html);
  EXPECT_LT(html.find("No capacity answer"), html.find("<svg"));
  const std::optional<std::string> page1 = testing::pdf_page_text(files.pdf, 1);
  if (!page1) FAIL() << kNoPdftotext;
  const std::string text = squeezed(*page1);
  EXPECT_NE(text.find(squeezed("No capacity answer")), std::string::npos) << *page1;
  EXPECT_NE(text.find(squeezed("no SLO target and no workload given: memory answer only")), std::string::npos) << *page1;
}

TEST(ReportCapacityInput, EachReasonForNoAnswer) {
  // A workload without an SLO: simulated once, not searched.
  plan::ScenarioFile s = scenario();
  s.scenario.slo = {};
  s.scenario.workload.duration_s = 5;
  const ReportInput no_slo = make_report_input(s);
  EXPECT_FALSE(no_slo.capacity.has_value());
  EXPECT_TRUE(no_slo.simulation.has_value());
  EXPECT_EQ(no_slo.no_capacity_why.rfind("no SLO target given:", 0), 0u) << no_slo.no_capacity_why;
  EXPECT_NE(no_slo.no_capacity_why.find("slo.ttft_ms"), std::string::npos) << no_slo.no_capacity_why;
  // An SLO without a workload section: nothing to search.
  s = scenario();
  s.simulate = false;
  const ReportInput no_workload = make_report_input(s);
  EXPECT_FALSE(no_workload.capacity.has_value());
  EXPECT_EQ(no_workload.no_capacity_why.rfind("no workload given:", 0), 0u) << no_workload.no_capacity_why;
}

TEST(ReportCapacityInput, ASearchThatCannotRunNamesTheField) {
  // A trace of one request has no arrival spread to scale: the rate search refuses it.
  const std::filesystem::path trace = std::filesystem::temp_directory_path() / "kvplan_report_one_request.csv";
  std::ofstream(trace) << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n";
  plan::ScenarioFile s = scenario();
  s.scenario.workload.users.reset();
  s.scenario.workload.trace = trace.string();
  try {
    make_report_input(s);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("capacity report test"), std::string::npos) << msg;
    EXPECT_NE(msg.find("capacity search"), std::string::npos) << msg;
    EXPECT_NE(msg.find(trace.string()), std::string::npos) << msg;
  }
  std::filesystem::remove(trace);
}

}  // namespace
}  // namespace kvplan::gui
