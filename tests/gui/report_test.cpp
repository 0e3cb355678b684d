// tests/gui/report_test.cpp — the report library: the PDF exists and has pages, the HTML holds
// the scenario's numbers and SVG charts, the CSV and JSON parse, every assumption has a source, and
// a bad scenario field fails with a ConfigError naming it.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/gui/report_pdf.h"
#include "kvplan/plan/report.h"
#include "kvplan/plan/text.h"
#include "report_test_support.h"

namespace kvplan::gui {
namespace {

using plan::Assumption;
using plan::kSourceWords;
using plan::make_report_input;
using plan::ReportFiles;
using plan::ReportInput;
using testing::count;
using testing::ReportFilesTest;
using testing::read_file;

plan::ScenarioFile test_scenario() {
  return plan::parse_scenario_json(R"({"kvplan_scenario": 2, "name": "report test",
      "model": {"id": "llama-3.1-8b"}, "hardware": {"gpu": "h100-sxm"}, "engine": {"max_model_len": 8192},
      "kv_cache": {"fit_lengths": "lognormal:6.9,1.0"},
      "workload": {"users": 8, "think_time_s": 2, "prompt_lengths": "fixed:1024", "output_lengths": "fixed:128",
                   "duration_s": 30, "seed": 5}, "slo": {"ttft_ms": 2000, "tpot_ms": 100},
      "compare": [{"kv_cache": {"dtype": "auto"}}, {"kv_cache": {"dtype": "fp8"}}, {"kv_cache": {"dtype": "int4"}}]})",
                                   "test");
}

// One analysis for every test (the simulation is the slow part).
const ReportInput& input() {
  static const ReportInput in = make_report_input(test_scenario());
  return in;
}

TEST(ReportInputTest, OneAnswerPerSchemeAndTheSimulation) {
  const ReportInput& in = input();
  ASSERT_EQ(in.plans.size(), 3u);
  ASSERT_EQ(in.answers.size(), 3u);
  EXPECT_EQ(in.scheme_labels[0], "kv-cache-dtype=auto");
  EXPECT_EQ(in.answers[0].kv_bytes_per_token, 131072);  // 32 layers x 8 KV heads x 128 x 2 (K,V) x 2 B
  EXPECT_EQ(in.answers[1].kv_bytes_per_token, 65536);   // fp8
  EXPECT_GT(in.plans[1].num_blocks, in.plans[0].num_blocks);
  ASSERT_TRUE(in.simulation.has_value());
  EXPECT_GT(in.simulation->summary.finished, 0);
  EXPECT_FALSE(in.simulation->timeseries.empty());
  // Requests that fit: one row per scheme, fewer at longer contexts, more with smaller KV.
  ASSERT_EQ(in.users_vs_context.users.size(), 3u);
  ASSERT_GE(in.users_vs_context.context_tokens.size(), 3u);
  EXPECT_EQ(in.users_vs_context.context_tokens.back(), 8192);
  const auto& bf16 = in.users_vs_context.users[0];
  EXPECT_GE(bf16.front(), bf16.back());
  EXPECT_GT(in.users_vs_context.users[1].back(), bf16.back());
  EXPECT_EQ(bf16.back(), in.plans[0].requests_at_max_len);
  EXPECT_NE(in.kvplan_version.find("0."), std::string::npos);
}

TEST(ReportInputTest, EveryAssumptionHasASourceWord) {
  const ReportInput& in = input();
  ASSERT_FALSE(in.sourced.empty());
  ASSERT_EQ(in.sourced.size(), in.assumptions.size());
  bool datasheet = false;
  for (const Assumption& a : in.sourced) {
    EXPECT_NE(std::find(kSourceWords.begin(), kSourceWords.end(), a.source), kSourceWords.end()) << a.what << ": " << a.source;
    EXPECT_FALSE(a.what.empty());
    datasheet = datasheet || a.source == "datasheet";
  }
  EXPECT_TRUE(datasheet);
  for (const std::string& s : in.assumptions) EXPECT_EQ(s.front(), '[') << s;
}

TEST_F(ReportFilesTest, PdfExistsAndHasPages) {
  ReportFiles files;
  files.pdf = path("r.pdf");
  write_report(input(), files);
  std::string pdf = read_file(files.pdf);
  ASSERT_GT(pdf.size(), 1000u);
  EXPECT_EQ(pdf.rfind("%PDF", 0), 0u);
  // "/Type /Page" also prefixes "/Type /Pages" (the page tree); count the page objects only.
  size_t pages = count(pdf, "/Type /Page") - count(pdf, "/Type /Pages");
  EXPECT_GE(pages, 2u) << "pages: " << pages;
  EXPECT_NE(pdf.find("%%EOF"), std::string::npos);
}

TEST_F(ReportFilesTest, HtmlHoldsTheScenarioNumbersAndCharts) {
  const ReportInput& in = input();
  ReportFiles files;
  files.html = path("r.html");
  write_report(in, files);
  std::string html = read_file(files.html);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("131,072"), std::string::npos);  // bf16 KV bytes per token
  EXPECT_NE(html.find("65,536"), std::string::npos);   // fp8
  for (const MemoryPlan& p : in.plans) {
    EXPECT_NE(html.find(plan::with_commas(p.num_blocks)), std::string::npos) << p.num_blocks;
    EXPECT_NE(html.find(plan::with_commas(p.kv_cache_tokens)), std::string::npos);
  }
  EXPECT_GE(count(html, "<svg"), 5u);  // memory, users vs context, TTFT, TPOT, KV over time
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_NE(html.find(in.kvplan_version), std::string::npos);
  EXPECT_NE(html.find("datasheet"), std::string::npos);
  EXPECT_NE(html.find("--kv-cache-dtype"), std::string::npos);  // the inputs
  // Self-contained: nothing fetched from elsewhere.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

// Splits one RFC 4180 line (no embedded line breaks in this report) into fields.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  EXPECT_FALSE(quoted) << line;
  return out;
}

TEST_F(ReportFilesTest, CsvParsesWithOneColumnCount) {
  const ReportInput& in = input();
  ReportFiles files;
  files.csv = path("r.csv");
  write_report(in, files);
  std::istringstream csv(read_file(files.csv));
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  const std::vector<std::string> header = csv_fields(line);
  ASSERT_EQ(header.size(), 6u);
  int rows = 0, blocks_rows = 0, sim_rows = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f = csv_fields(line);
    ASSERT_EQ(f.size(), header.size()) << line;
    ++rows;
    if (f[0] == "memory" && f[2] == "num_blocks") {
      ++blocks_rows;
      size_t i = static_cast<size_t>(std::find(in.scheme_labels.begin(), in.scheme_labels.end(), f[1]) - in.scheme_labels.begin());
      ASSERT_LT(i, in.plans.size()) << f[1];
      EXPECT_EQ(f[3], std::to_string(in.plans[i].num_blocks));
    }
    if (f[0] == "simulation") ++sim_rows;
    if (f[0] == "memory" && f[2] == "kv_bytes_per_token" && f[1] == "kv-cache-dtype=auto") {
      EXPECT_EQ(f[3], "131072");
    }
  }
  EXPECT_EQ(blocks_rows, 3);
  EXPECT_GT(sim_rows, 10);
  EXPECT_GT(rows, 50);
}

TEST_F(ReportFilesTest, JsonParsesWithEveryPart) {
  const ReportInput& in = input();
  ReportFiles files;
  files.json = path("r.json");
  write_report(in, files);
  nlohmann::json j = nlohmann::json::parse(read_file(files.json));
  for (const char* key : {"inputs", "assumptions", "results", "kvplan_version"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["kvplan_version"], in.kvplan_version);
  EXPECT_EQ(j["inputs"]["kvplan_scenario"], 2);
  EXPECT_EQ(j["inputs"]["engine"]["max_model_len"], 8192);
  // The inputs are a scenario file: they load back to the same scenario.
  plan::ScenarioFile back = plan::parse_scenario_json(j["inputs"].dump(), "report inputs");
  EXPECT_EQ(plan::scenario_json(back), plan::scenario_json(in.scenario));
  ASSERT_EQ(j["results"]["schemes"].size(), 3u);
  EXPECT_EQ(j["results"]["schemes"][0]["kv_bytes_per_token"], 131072);
  EXPECT_EQ(j["results"]["schemes"][2]["num_blocks"], in.plans[2].num_blocks);
  EXPECT_TRUE(j["results"]["simulation"].contains("summary"));
  ASSERT_FALSE(j["assumptions"].empty());
  for (const auto& a : j["assumptions"]) {
    std::string source = a.at("source");
    EXPECT_NE(std::find(kSourceWords.begin(), kSourceWords.end(), source), kSourceWords.end()) << a.dump();
  }
}

TEST_F(ReportFilesTest, AllFormatsAtOnceAndTheShippedExample) {
  std::filesystem::current_path(KVPLAN_SOURCE_DIR);  // the example's trace paths are repository-relative
  plan::ScenarioFile s = plan::load_scenario_file("data/scenarios/chat-h100.json");
  s.scenario.workload.duration_s = 20;  // keep the test quick
  ReportInput in = make_report_input(s);
  ReportFiles files{path("a.pdf"), path("a.html"), path("a.csv"), path("a.json")};
  write_report(in, files);
  for (const std::string& f : {files.pdf, files.html, files.csv, files.json}) EXPECT_GT(std::filesystem::file_size(f), 0u) << f;
  EXPECT_NE(read_file(files.html).find("azure_llm_2023_conv.csv"), std::string::npos);
}

TEST(ReportErrors, BadFieldFailsNamingIt) {
  // A typed field can only hold what its rule allows; a rule that spans fields fails at analysis.
  plan::ScenarioFile s = test_scenario();
  s.scenario.hardware.gpu_memory_in_use_gib = 1000;
  try {
    make_report_input(s);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("report test"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--gpu-memory-in-use=1000"), std::string::npos) << msg;
  }
  s = test_scenario();
  s.compare[2]["kv-cache-dtype"] = "int3";
  try {
    make_report_input(s);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("compare[2]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("int3"), std::string::npos) << msg;
  }
  s = test_scenario();
  s.scenario.workload.prompt_lengths = "trace:/nonexistent.csv:prompt";
  EXPECT_THROW(make_report_input(s), ConfigError);
  ReportFiles unwritable;
  unwritable.html = "/nonexistent/dir/r.html";
  EXPECT_THROW(write_report(input(), unwritable), ConfigError);
}

}  // namespace
}  // namespace kvplan::gui
