// The planner's models, headless: QAbstractItemModelTester (fatal mode) watches each model through
// its updates; the values are checked against core's own answers.
#include <QAbstractItemModelTester>
#include <QChart>
#include <QLegend>
#include <QLegendMarker>
#include <QTextDocument>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include <atomic>

#include "analysis.h"
#include "chart_util.h"
#include "inputs_model.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/settings.h"
#include "kvplan/plan/simulate.h"
#include "model_charts.h"
#include "results_models.h"
#include "simulation_models.h"
#include "simulation_worker.h"

namespace kvplan::gui {
namespace {

using Tester = QAbstractItemModelTester;

TEST(InputsModel, HasEverySettingAndStartsValid) {
  InputsModel m;
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  EXPECT_EQ(m.rowCount(), static_cast<int>(plan::settings().size()));
  EXPECT_TRUE(m.valid()) << m.first_error().toStdString();
  EXPECT_TRUE(m.values().empty());
  EXPECT_EQ(m.value("model"), "llama-3.1-8b");
  EXPECT_EQ(m.index(m.row_of("model"), InputsModel::kCheckColumn).data().toString(), "ok");
}

TEST(InputsModel, ErrorIsShownBesideTheFieldItNames) {
  InputsModel m;
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  QSignalSpy changed(&m, &InputsModel::inputs_changed);
  EXPECT_FALSE(m.set_value("gpu-memory-utilization", "1.5"));
  EXPECT_EQ(changed.count(), 1);
  const QString msg = m.message("gpu-memory-utilization");
  EXPECT_TRUE(msg.contains("--gpu-memory-utilization=1.5")) << msg.toStdString();
  EXPECT_TRUE(msg.contains("(0, 1]")) << msg.toStdString();
  EXPECT_TRUE(m.message("model").isEmpty());
  EXPECT_EQ(m.index(m.row_of("gpu-memory-utilization"), InputsModel::kCheckColumn).data().toString(), msg);

  // Fixing it clears the message; a conflict between two fields is shown beside the one just edited.
  EXPECT_TRUE(m.set_value("gpu-memory-utilization", "0.8"));
  EXPECT_TRUE(m.message("gpu-memory-utilization").isEmpty());
  EXPECT_TRUE(m.set_value("h2o-budget", "512"));
  EXPECT_FALSE(m.set_value("streaming-window", "1024"));
  EXPECT_TRUE(m.message("streaming-window").contains("choose one eviction scheme")) << m.first_error().toStdString();
  EXPECT_TRUE(m.message("h2o-budget").isEmpty());
  EXPECT_FALSE(m.set_value("streaming-sinks", "4"));  // names neither conflicting field: the first named
  EXPECT_TRUE(m.message("h2o-budget").contains("choose one eviction scheme")) << m.first_error().toStdString();
  EXPECT_TRUE(m.message("streaming-sinks").isEmpty());

  // Simulation flags are checked too.
  m.set_value("h2o-budget", "0");
  m.set_value("streaming-window", "0");
  EXPECT_TRUE(m.valid());
  EXPECT_FALSE(m.set_value("slo-percentile", "abc"));
  EXPECT_FALSE(m.message("slo-percentile").isEmpty()) << m.first_error().toStdString();
}

TEST(InputsModel, ValueCellsSuggestPresetsAndEnumNames) {
  InputsModel m;
  const QStringList models = m.index(m.row_of("model"), InputsModel::kValueColumn).data(InputsModel::kChoicesRole).toStringList();
  EXPECT_TRUE(models.contains("llama-3.1-8b"));
  EXPECT_EQ(models.size(), static_cast<int>(model_presets().size()));
  EXPECT_TRUE(m.choices("gpu").contains("h100-sxm"));
  EXPECT_TRUE(m.choices("kv-cache-dtype").contains("kivi2"));
  EXPECT_EQ(m.choices("contiguous"), (QStringList{"false", "true"}));
  EXPECT_TRUE(m.choices("max-model-len").isEmpty());
  EXPECT_FALSE(m.index(m.row_of("model"), InputsModel::kFlagColumn).data(InputsModel::kChoicesRole).isValid());
  // Every suggestion is accepted by the CLI's own validation.
  for (const char* flag : {"engine", "dtype", "quantization", "kv-cache-dtype", "fp8-scales", "gpu", "scheduler",
                           "preemption", "router", "arrivals", "contiguous", "enable-prefix-caching"}) {
    for (const QString& v : m.choices(flag)) {
      InputsModel fresh;
      if (std::string(flag) == "preemption" && v == "swap") fresh.set_value("swap-space", "4");
      if (std::string(flag) == "contiguous" && v == "true") fresh.set_value("kv-policy", "max-length");
      EXPECT_TRUE(fresh.set_value(flag, v.toStdString())) << flag << "=" << v.toStdString() << ": "
                                                          << fresh.first_error().toStdString();
    }
  }
}

TEST(InputsModel, ModelConfigFileFromDisk) {
  InputsModel m;
  EXPECT_TRUE(m.set_value("model", KVPLAN_SOURCE_DIR "/data/models/gemma-2-9b.json")) << m.first_error().toStdString();
  Analysis a = analyze(m.scenario(), {}, 10);
  ASSERT_TRUE(a.base);
  EXPECT_GT(a.base->layout.groups().size(), 1u);  // Gemma 2: full and sliding-window layers
  EXPECT_FALSE(m.set_value("model", "/nonexistent/config.json"));
  EXPECT_FALSE(m.message("model").isEmpty());
}

TEST(InputsModel, UnknownModelPresetIsShownOnTheModelField) {
  InputsModel m;
  EXPECT_FALSE(m.set_value("model", "no-such-model"));
  EXPECT_FALSE(m.message("model").isEmpty());
  EXPECT_TRUE(m.values().count("model") == 1);
}

TEST(InputsModel, SetValuesResetsAndKeepsOnlyNonDefaults) {
  InputsModel m;
  Tester tester(&m, Tester::FailureReportingMode::Fatal);
  m.set_values({{"kv-cache-dtype", "fp8"}, {"max-model-len", "8192"}, {"users", "8"}});
  EXPECT_TRUE(m.valid()) << m.first_error().toStdString();
  EXPECT_EQ(m.values(), (plan::SettingValues{{"kv-cache-dtype", "fp8"}, {"max-model-len", "8192"}, {"users", "8"}}));
  EXPECT_EQ(m.simulation_values(), (plan::SettingValues{{"users", "8"}}));
  EXPECT_EQ(m.scenario().engine.max_model_len, 8192);
  EXPECT_EQ(m.scenario().workload.users, 8);
  EXPECT_EQ(m.value("block-size"), "16");
  EXPECT_FALSE(m.setData(m.index(0, InputsModel::kFlagColumn), "x"));  // only values are editable
  EXPECT_FALSE(m.flags(m.index(0, InputsModel::kFlagColumn)) & Qt::ItemIsEditable);
  EXPECT_TRUE(m.flags(m.index(0, InputsModel::kValueColumn)) & Qt::ItemIsEditable);
}

TEST(Analysis, UsersThatFitMatchCoreByHand) {
  // Llama-3.1-8B in bf16 on one H100: 128 KiB per token, 16-token blocks of 2 MiB.
  const plan::SettingValues flags = {{"max-model-len", "8192"}};
  Analysis a = analyze(flags, default_schemes(), 200);
  ASSERT_TRUE(a.base);
  ASSERT_EQ(a.schemes.size(), 5u);
  ASSERT_EQ(a.contexts.size(), 200u);
  EXPECT_EQ(a.contexts.front(), 16);
  EXPECT_EQ(a.contexts.back(), 8192);
  // Geometric: the middle point is near sqrt(16 * 8192) = 362.
  EXPECT_GT(a.contexts[100], 330);
  EXPECT_LT(a.contexts[100], 400);
  for (size_t i = 1; i < a.contexts.size(); ++i) EXPECT_LE(a.contexts[i - 1], a.contexts[i]);
  const MemoryPlan& p = a.schemes[0].answer->plan;
  EXPECT_EQ(p.block_bytes, 16 * 131072);
  // At 8192 tokens a request holds 512 blocks.
  EXPECT_EQ(a.users[0].back(), p.num_blocks / 512);
  EXPECT_EQ(a.users[0].back(), p.requests_at_max_len);
  // fp8 halves the bytes per token: about twice the requests; kivi2 more than fp8; int4 between.
  EXPECT_NEAR(static_cast<double>(a.users[1].back()), 2.0 * static_cast<double>(a.users[0].back()), 2.0);
  EXPECT_GT(a.users[2].back(), a.users[1].back());
  EXPECT_GT(a.users[3].back(), a.users[2].back());
  // Fewer users fit as the context grows, for every scheme.
  for (const auto& row : a.users) {
    for (size_t i = 1; i < row.size(); ++i) EXPECT_LE(row[i], row[i - 1]);
  }
}

TEST(Analysis, InvalidSchemeKeepsItsErrorAndZeros) {
  Analysis a = analyze(plan::Scenario{}, {{"bad", {{"kv-cache-dtype", "fp9"}}}}, 10);
  ASSERT_TRUE(a.base);
  ASSERT_FALSE(a.schemes[0].answer);
  EXPECT_NE(a.schemes[0].error.find("fp9"), std::string::npos);
  for (int64_t u : a.users[0]) EXPECT_EQ(u, 0);
}

TEST(Analysis, SchemesTextRoundTripsAndNamesBadParts) {
  std::vector<SchemeOverride> s = parse_schemes("inputs; kv-cache-dtype=fp8;  --kv-cache-dtype=int4  block-size=32 ;");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(s[0].overrides.empty());
  EXPECT_EQ(s[0].label, "inputs");
  EXPECT_EQ(s[1].overrides, (plan::SettingValues{{"kv-cache-dtype", "fp8"}}));
  EXPECT_EQ(s[2].overrides, (plan::SettingValues{{"block-size", "32"}, {"kv-cache-dtype", "int4"}}));
  EXPECT_EQ(s[2].label, "block-size=32 kv-cache-dtype=int4");
  EXPECT_EQ(schemes_text(s), "inputs; kv-cache-dtype=fp8; block-size=32 kv-cache-dtype=int4");
  EXPECT_EQ(parse_schemes(schemes_text(default_schemes())).size(), 5u);
  try {
    parse_schemes("kv-cache-dtype=fp8; users=4");
    FAIL() << "users is a simulation flag";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("scheme ' users=4'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("users"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_schemes("fp8"), ConfigError);
  EXPECT_TRUE(parse_schemes("").empty());
}

TEST(ResultModels, PassTheTesterAndAddUpToTheGpu) {
  MemoryBreakdownModel memory;
  LayerGroupModel layers;
  CapacityModel capacity;
  ComparisonModel comparison;
  Tester t1(&memory, Tester::FailureReportingMode::Fatal);
  Tester t2(&layers, Tester::FailureReportingMode::Fatal);
  Tester t3(&capacity, Tester::FailureReportingMode::Fatal);
  Tester t4(&comparison, Tester::FailureReportingMode::Fatal);
  for (const char* util : {"0.9", "0.8"}) {
    Analysis a = analyze(plan::SettingValues{{"gpu-memory-utilization", util}}, default_schemes(), 200);
    ASSERT_TRUE(a.base);
    memory.set_plan(a.base->plan);
    layers.set_layout(a.base->layout);
    capacity.set_analysis(a);
    comparison.set_analysis(a);
    int64_t total = 0;
    for (int r = 0; r < memory.rowCount(); ++r) {
      total += memory.index(r, MemoryBreakdownModel::kBytesColumn).data().toLongLong();
    }
    EXPECT_EQ(total, a.base->plan.gpu_total_bytes) << util;
    EXPECT_EQ(layers.rowCount(), 1);  // Llama: one full-attention group
    EXPECT_EQ(layers.index(0, LayerGroupModel::kBytesColumn).data().toDouble(), 131072.0);
    EXPECT_EQ(capacity.rowCount(), 200);
    EXPECT_EQ(capacity.columnCount(), 6);
    EXPECT_EQ(capacity.index(199, 1).data().toLongLong(), a.users[0][199]);
    EXPECT_EQ(capacity.headerData(2, Qt::Horizontal).toString(), "fp8");
    EXPECT_EQ(comparison.rowCount(), 5);
    EXPECT_EQ(comparison.index(1, ComparisonModel::kKvTokensColumn).data().toLongLong(),
              a.schemes[1].answer->plan.kv_cache_tokens);
  }
  // A different number of schemes resets the shape.
  Analysis one = analyze(plan::Scenario{}, {{"fp8", {{"kv-cache-dtype", "fp8"}}}}, 50);
  capacity.set_analysis(one);
  comparison.set_analysis(one);
  EXPECT_EQ(capacity.columnCount(), 2);
  EXPECT_EQ(capacity.rowCount(), 50);
  EXPECT_EQ(comparison.rowCount(), 1);
  memory.clear();
  layers.clear();
  EXPECT_EQ(memory.rowCount(), 0);
}

// Qt Charts lays legend labels out as rich text: "KV fragmentation (< 1 block)" showed as "KV
// fragmentation (". Each bar set's label, read back as the legend reads it, is the term whole.
TEST(ModelCharts, MemoryLegendShowsEveryTermWhole) {
  MemoryBreakdownModel memory;
  Analysis a = analyze(plan::Scenario{}, default_schemes(), 10);
  ASSERT_TRUE(a.base);
  memory.set_plan(a.base->plan);
  QChart chart;
  draw_memory_chart(&chart, memory, QStringLiteral("GPU"));
  const QList<QLegendMarker*> markers = chart.legend()->markers();
  ASSERT_EQ(markers.size(), memory.rowCount());
  bool fragmentation = false;
  for (int r = 0; r < memory.rowCount(); ++r) {
    const QString term = memory.index(r, MemoryBreakdownModel::kTermColumn).data().toString();
    QTextDocument shown;
    shown.setHtml(markers[r]->label());
    EXPECT_EQ(shown.toPlainText(), term);
    fragmentation = fragmentation || term.startsWith(QStringLiteral("KV fragmentation (< 1 block)"));
  }
  EXPECT_TRUE(fragmentation);  // the term with a '<' is among them
}

TEST(ChartUtil, DownSamplingKeepsPeaksAndEnds) {
  CapacityModel capacity;
  Analysis a;
  a.schemes.push_back({"s", std::nullopt, ""});
  for (int i = 0; i < 1000; ++i) a.contexts.push_back(i);
  a.users.push_back(std::vector<int64_t>(1000, 5));
  a.users[0][537] = 99;  // one spike
  capacity.set_analysis(a);
  QList<QPointF> all = model_points(capacity, 0, 1, 2000);
  EXPECT_EQ(all.size(), 1000);
  QList<QPointF> few = model_points(capacity, 0, 1, 300);
  EXPECT_LE(few.size(), 301);
  EXPECT_EQ(few.front(), QPointF(0, 5));
  EXPECT_EQ(few.back(), QPointF(999, 5));
  bool spike = false;
  for (const QPointF& p : few) spike = spike || (p.x() == 537 && p.y() == 99);
  EXPECT_TRUE(spike);
  for (int i = 1; i < few.size(); ++i) EXPECT_LT(few[i - 1].x(), few[i].x());
}

sim::SimulationConfig small_config(int64_t requests) {
  const plan::Scenario s = plan::with_values(
      {}, {{"max-model-len", "4096"}, {"rate", "20"}, {"num-requests", std::to_string(requests)},
           {"prompt-lengths", "fixed:256"}, {"output-lengths", "fixed:32"}, {"slo-ttft-ms", "500"}, {"slo-tpot-ms", "50"}});
  return plan::simulation_config(s);
}

TEST(SimulationModels, OutcomeOfASmallJobPassesTheTester) {
  std::atomic<bool> stop{false};
  std::vector<double> fractions;
  SimulationJob job{small_config(60), {0.5, 2.0}};
  SimulationOutcome o = run_simulation_job(job, [&](double f) { fractions.push_back(f); }, stop);
  EXPECT_FALSE(o.cancelled);
  ASSERT_EQ(o.sweep.size(), 3u);
  EXPECT_DOUBLE_EQ(o.sweep[0].load, 10.0);
  EXPECT_DOUBLE_EQ(o.sweep[1].load, 20.0);
  EXPECT_DOUBLE_EQ(o.sweep[2].load, 40.0);
  EXPECT_EQ(o.result.summary.finished, 60);
  EXPECT_EQ(o.ttft_ms.size(), 60u);
  EXPECT_TRUE(std::is_sorted(o.ttft_ms.begin(), o.ttft_ms.end()));
  ASSERT_FALSE(fractions.empty());
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);

  TimeSeriesModel ts;
  LatencyCdfModel cdf;
  LoadSweepModel sweep;
  Tester t1(&ts, Tester::FailureReportingMode::Fatal);
  Tester t2(&cdf, Tester::FailureReportingMode::Fatal);
  Tester t3(&sweep, Tester::FailureReportingMode::Fatal);
  ts.set_rows(o.result.timeseries);
  cdf.set_outcome(o, 200);
  sweep.set_outcome(o, job.config.slo, false);
  EXPECT_EQ(ts.rowCount(), static_cast<int>(o.result.timeseries.size()));
  EXPECT_GT(ts.rowCount(), 0);
  EXPECT_EQ(cdf.rowCount(), 60);  // fewer requests than the bound: one row each
  EXPECT_DOUBLE_EQ(cdf.index(59, LatencyCdfModel::kFractionColumn).data().toDouble(), 1.0);
  EXPECT_DOUBLE_EQ(cdf.index(59, LatencyCdfModel::kTtftColumn).data().toDouble(), o.ttft_ms.back());
  EXPECT_DOUBLE_EQ(cdf.index(29, LatencyCdfModel::kTtftColumn).data().toDouble(), o.ttft_ms[29]);
  EXPECT_EQ(sweep.rowCount(), 3);
  EXPECT_DOUBLE_EQ(sweep.index(1, LoadSweepModel::kTtftP90Column).data().toDouble(), o.result.summary.ttft_ms.p90);
  EXPECT_DOUBLE_EQ(sweep.slo().ttft_ms, 500.0);
  cdf.set_outcome(o, 20);
  EXPECT_EQ(cdf.rowCount(), 20);
  EXPECT_DOUBLE_EQ(cdf.index(9, LatencyCdfModel::kTtftColumn).data().toDouble(), o.ttft_ms[29]);
}

TEST(SimulationModels, StopFlagCancelsTheJob) {
  std::atomic<bool> stop{true};
  SimulationOutcome o = run_simulation_job(SimulationJob{small_config(60), {}}, {}, stop);
  EXPECT_TRUE(o.cancelled);
  EXPECT_TRUE(o.sweep.empty());
}

TEST(SimulationModels, ScaledLoadScalesUsersRateAndTraceSpeed) {
  sim::SimulationConfig c = small_config(10);
  EXPECT_DOUBLE_EQ(workload_load(scaled_load(c, 1.5)), 30.0);
  c.workload.kind = sim::WorkloadKind::kClosedLoop;
  c.workload.closed.num_users = 8;
  EXPECT_EQ(scaled_load(c, 0.5).workload.closed.num_users, 4);
  EXPECT_EQ(scaled_load(c, 0.01).workload.closed.num_users, 1);
  c.workload.kind = sim::WorkloadKind::kTrace;
  c.workload.trace.time_scale = 1.0;
  EXPECT_DOUBLE_EQ(scaled_load(c, 2.0).workload.trace.time_scale, 0.5);
}

}  // namespace
}  // namespace kvplan::gui
