// kvplan/plan/report.h — the report of a scenario file: the analysis it shows (one memory answer
// per compared variant, requests that fit against context length, the simulation when the file has a
// workload, every assumption with its source) and its Qt-free renderings: self-contained HTML with
// SVG charts, CSV and JSON. `kvplan report` and the planner's Export both use it; the PDF (Qt) is
// gui/'s (kvplan/gui/report_pdf.h), painted from the same document and charts.
//
//   ReportInput in = make_report_input(load_scenario_file("chat.json"));   // runs the analysis
//   write_report_data(in, ReportFiles{.html = "r.html", .csv = "r.csv", .json = "r.json"});
//
// Every report leads with the capacity answer (plan::find_capacity of the scenario, when it has an
// SLO target and a workload to search; otherwise the reason there is none), then the warnings, the
// assumptions with each number's source (measured, published, transferred or datasheet), the
// charts, the inputs, the results and the kvplan version.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::plan {

// One number the results rest on, and where it comes from.
struct Assumption {
  std::string what;    // e.g. "GPU memory (NVIDIA H100 SXM5 80GB)"
  std::string value;   // e.g. "79.19 GiB"
  std::string source;  // one of kSourceWords
  std::string note;    // the source document, the formula, the calibration run
};
// measured: a kvplan calibration run on this GPU; published: fitted from public measurements;
// transferred: a profile of another GPU scaled to this one; datasheet: vendor
// figures or the datasheet-default cost model; config: the model's published config; computed:
// exact arithmetic on the shapes; estimate: kvplan's approximation (e.g. activation peak);
// input: a value the scenario sets.
inline const std::vector<std::string> kSourceWords = {"measured", "published", "transferred", "datasheet", "config",
                                                      "computed", "estimate",    "input"};

// Requests of one fixed length that fit in each scheme's KV budget, for a range of lengths.
struct FitCurve {
  std::vector<int64_t> context_tokens;      // x: 1024, 2048, ... up to max_model_len
  std::vector<std::vector<int64_t>> users;  // [scheme][context]
};

struct ReportInput {
  ScenarioFile scenario;
  // Filled by make_report_input: the memory answer per compared scheme, and the simulation (if the
  // scenario has a workload) with its time series.
  std::vector<std::string> scheme_labels;
  std::vector<MemoryPlan> plans;
  std::optional<sim::SimulationResult> simulation;
  std::optional<sim::SimulationConfig> simulation_config;
  std::vector<std::string> assumptions;  // each with its source: "[source] what: value (note)"

  // The capacity answer of the base variant (report_base_scenario) and its sentences, or why there
  // is none ("no SLO target given: ..."); exactly one of capacity and no_capacity_why is set.
  std::optional<CapacityAnswer> capacity;
  std::optional<CapacitySummary> capacity_summary;
  std::string no_capacity_why;

  std::vector<MemoryAnswer> answers;  // per scheme, same order as plans
  std::vector<Assumption> sourced;         // the structured form of `assumptions`
  FitCurve users_vs_context;
  std::string kvplan_version;              // "0.1.0 (abc1234)"
};

// Every distinct warning of the compared plans (unknown architecture read as generic, ...) and of
// the capacity answer (step times from the datasheet, ...), in order: the report puts them right
// after the answer, in every format.
std::vector<std::string> report_warnings(const ReportInput& input);

struct ReportFiles {
  std::string pdf, html, csv, json;  // empty: not written
};

// The variant a report simulates and searches: the scenario with the first compared variant's
// settings on top (the scenario itself when nothing is compared).
Scenario report_base_scenario(const ScenarioFile& scenario);

// Throws ConfigError naming the scenario field for bad input (flags are validated here), including
// a capacity search that cannot run ("scenario 'x': capacity search: ...").
ReportInput make_report_input(const ScenarioFile& scenario);
// The same with a capacity answer already computed (the planner has one; the report does not search
// again). `known` must be find_capacity's answer for report_base_scenario(scenario): the report
// prints it as the answer of this scenario and cannot check that it is. nullopt: search as above.
ReportInput make_report_input(const ScenarioFile& scenario, std::optional<CapacityAnswer> known);

// Renderers.
std::string report_html(const ReportInput& input);
std::string report_csv(const ReportInput& input);
nlohmann::json report_json(const ReportInput& input);
// One SVG document per chart: latency against load of the capacity probes (if searched), memory
// breakdown, users vs context, latency percentiles (if simulated), KV usage over time (if simulated).
struct SvgChart {
  std::string title;
  std::string svg;  // a complete <svg ...>...</svg> element
  double width = 0, height = 0;
};
std::vector<SvgChart> report_svg_charts(const ReportInput& input);
// Writes the HTML, CSV and JSON files named in `files`, and the PDF through `write_pdf` (called with
// the temporary path to paint; gui/'s write_report passes the Qt painter) when files.pdf is set and
// a writer is given. All or nothing: every
// file goes to <name>.partial first and is renamed only after all of them were written and checked,
// so a failure leaves none of the requested files behind.
void write_report_data(const ReportInput& input, const ReportFiles& files,
                       const std::function<void(const std::string& path)>& write_pdf = {});

}  // namespace kvplan::plan
