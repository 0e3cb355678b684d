// tests/cli/report_cli_test.cpp — `kvplan report` end to end: every format written (exit 0), a bad
// scenario (exit 2, the field named), and --pdf in a build without Qt (exit 2, nothing written).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_cli.h"

namespace kvplan::cli {
namespace {

using kvplan::testing::run_cli;

std::string temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("kvplan_report_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kScenario = R"({"kvplan_scenario": 1, "name": "cli report",
  "memory": {"max-model-len": 4096},
  "simulate": {"rate": 4, "num-requests": 40, "prompt-lengths": "fixed:512", "output-lengths": "fixed:64", "seed": 1},
  "compare": [{"kv-cache-dtype": "auto"}, {"kv-cache-dtype": "fp8"}]})";

TEST(ReportCli, WritesEveryFormat) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/s.json") << kScenario;
  std::string outputs = " --html " + dir + "/r.html --csv " + dir + "/r.csv --json " + dir + "/r.json";
  if (KVPLAN_HAVE_REPORT_PDF) outputs += " --pdf " + dir + "/r.pdf";
  auto r = run_cli("report " + dir + "/s.json" + outputs);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(read(dir + "/r.html").find("<svg"), std::string::npos);
  EXPECT_NE(read(dir + "/r.html").find("131,072"), std::string::npos);  // bf16 KV bytes per token
  nlohmann::json j = nlohmann::json::parse(read(dir + "/r.json"));
  EXPECT_EQ(j.at("results").at("schemes").size(), 2u);
  EXPECT_TRUE(j.at("results").contains("simulation"));
  EXPECT_EQ(read(dir + "/r.csv").rfind("section,scheme,metric,value,unit,source\n", 0), 0u);
  if (KVPLAN_HAVE_REPORT_PDF) {
    EXPECT_EQ(read(dir + "/r.pdf").rfind("%PDF", 0), 0u);
  }
  std::filesystem::remove_all(dir);
}

TEST(ReportCli, BadScenarioExitsTwo) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/bad.json") << R"({"kvplan_scenario": 1, "memory": {"gpu-memory-utilization": "1.5"}})";
  kvplan::testing::expect_bad_input("report " + dir + "/bad.json --html " + dir + "/r.html",
                                    {"memory", "--gpu-memory-utilization=1.5"});
  EXPECT_FALSE(std::filesystem::exists(dir + "/r.html"));
  std::ofstream(dir + "/unknown.json") << R"({"kvplan_scenario": 1, "simulate": {"user": 3}})";
  kvplan::testing::expect_bad_input("report " + dir + "/unknown.json --json " + dir + "/r.json", {"simulate.user"});
  kvplan::testing::expect_bad_input("report " + dir + "/unknown.json", {"--html"});  // no output named
  std::filesystem::remove_all(dir);
}

TEST(ReportCli, PdfWithoutQtSaysSo) {
  if (KVPLAN_HAVE_REPORT_PDF) {
    GTEST_SKIP() << "this build has Qt: the PDF is written (WritesEveryFormat)";
  }
  const std::string dir = temp_dir();
  std::ofstream(dir + "/s.json") << kScenario;
  kvplan::testing::expect_bad_input("report " + dir + "/s.json --pdf " + dir + "/r.pdf", {"PDF needs a build with Qt"});
  EXPECT_FALSE(std::filesystem::exists(dir + "/r.pdf"));
  std::filesystem::remove_all(dir);
}

TEST(ReportCli, OneUnwritableOutputLeavesNoFileBehind) {
  // The JSON's folder does not exist: the HTML and CSV (and the PDF, with Qt) must not be left
  // behind either, nor any .partial file.
  const std::string dir = temp_dir();
  std::ofstream(dir + "/s.json") << kScenario;
  std::string outputs = " --html " + dir + "/r.html --csv " + dir + "/r.csv --json " + dir + "/missing/r.json";
  if (KVPLAN_HAVE_REPORT_PDF) outputs += " --pdf " + dir + "/r.pdf";
  kvplan::testing::expect_bad_input("report " + dir + "/s.json" + outputs, {dir + "/missing/r.json"});
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"s.json"});
  std::filesystem::remove_all(dir);
}

TEST(ReportCli, KvplanLinksNoQtAndNoCuda) {
  // `kvplan` starts in milliseconds: Qt lives in kvplan-report-pdf, CUDA in kvplan-calibrate-run.
  auto r = kvplan::testing::run_shell("ldd $KVPLAN");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* lib : {"libQt", "libcublas", "libcupti", "libcudart"}) {
    EXPECT_EQ(r.out.find(lib), std::string::npos) << lib << " in\n" << r.out;
  }
}

}  // namespace
}  // namespace kvplan::cli
