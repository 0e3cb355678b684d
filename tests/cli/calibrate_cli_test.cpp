// End-to-end tests of `kvplan calibrate inspect | import | fit | run` and `--profile` on
// simulate: databases are generated here through the calibration library, from the fitter's
// own model with known curves.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/fitter.h"
#include "kvplan/calibration/store.h"
#include "kvplan/config.h"
#include "kvplan/core/presets.h"
#include "run_cli.h"

namespace {

namespace cal = kvplan::calibration;
using kvplan::testing::expect_bad_input;
using kvplan::testing::run_cli;

std::string temp_path(const std::string& name) {
  std::string p = ::testing::TempDir() + "kvplan_calcli_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove(p);
  return p;
}

cal::RunInfo run_info(const std::string& uuid) {
  cal::RunInfo r;
  r.gpu_name = "NVIDIA H100 80GB HBM3";
  r.gpu_uuid = uuid;
  r.driver_version = "580.159.04";
  r.cuda_version = "13.0";
  r.cupti_version = "130000";
  r.clocks_seen = R"({"sm_mhz":[1980,1980]})";
  r.kvplan_version = "0.1.0";
  r.git_commit = "abc1234";
  r.host = "node-1";
  r.started_utc = "2025-03-01T10:00:00Z";
  r.mode = "quick";
  r.num_sms = 132;
  r.memory_bytes = 85'520'809'984;
  return r;
}

// A complete run of 12 kv_write shapes timed exactly by e_m(s) = 0.8 · s / (s + 2 MiB) on the
// H100's datasheet bandwidth, CUPTI/event ratio 0.98.
std::string make_db(const std::string& name, const std::string& uuid = "GPU-aaaa") {
  const std::string path = temp_path(name) + ".sqlite";
  cal::CalibrationStore db = cal::CalibrationStore::open(path, cal::OpenMode::kCreate);
  const int64_t run = db.begin_run(run_info(uuid));
  kvplan::OpClassProfile truth;
  truth.memory = {0.8, 2.0 * 1024 * 1024};
  const kvplan::GpuSpec gpu = kvplan::resolve_gpu("h100-sxm");
  const cal::Roofs roofs = cal::roofs_for(kvplan::OpClass::kKvWrite, gpu, kvplan::DType::kBF16);
  for (int i = 0; i < 12; ++i) {
    cal::Measurement m;
    m.kernel = "kv_write_bf16";
    m.op_class = "kv_write";
    m.params_json = R"({"tokens":)" + std::to_string(1 << i) + "}";
    m.n = 20;
    m.bytes = 65536.0 * (1 << i);
    m.median_ns = m.min_ns = m.p90_ns = m.mean_ns = cal::predicted_kernel_ns(truth, 0, m.bytes, roofs);
    m.event_median_ns = m.median_ns / 0.98;
    m.cupti_event_ratio = 0.98;
    db.record_shape(run, {m});
  }
  db.end_run(run, cal::RunStatus::kComplete);
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json json_of(const std::string& out) {
  size_t begin = out.find('{');
  return nlohmann::json::parse(out.substr(begin, out.rfind('}') - begin + 1));
}

bool has_source(const nlohmann::json& summary, const std::string& line_start) {
  for (const auto& s : summary["cost_sources"]) {
    if (s.get<std::string>().rfind(line_start, 0) == 0) return true;
  }
  return false;
}

TEST(CalibrateCli, InspectListsRunsKernelsAgreement) {
  const std::string db = make_db("inspect");
  auto r = run_cli("calibrate inspect " + db);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* f : {"schema version 1", "runs: 1", "run 1 [complete] NVIDIA H100 80GB HBM3 (GPU-aaaa)",
                        "driver 580.159.04", "CUDA 13.0", "CUPTI 130000", "mode quick", "12 rows", "GPUs: 1",
                        "kv_write_bf16", "CUPTI/event agreement: 12 rows", "median 0.980", "; 100.0% within ±5%",
                        "fits: 0"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << "missing '" << f << "' in:\n" << r.out;
  }
  auto j = run_cli("calibrate inspect --json " + db);
  ASSERT_EQ(j.status, 0) << j.out;
  nlohmann::json doc = json_of(j.out);
  EXPECT_EQ(doc["runs"][0]["gpu_uuid"], "GPU-aaaa");
  EXPECT_EQ(doc["kernels"][0]["rows"], 12);
}

TEST(CalibrateCli, ImportMergesAndSkipsReimport) {
  const std::string a = make_db("import_a", "GPU-aaaa");
  const std::string b = make_db("import_b", "GPU-bbbb");
  const std::string dest = temp_path("import_dest") + ".sqlite";
  auto r1 = run_cli("calibrate import " + dest + " " + a);
  ASSERT_EQ(r1.status, 0) << r1.out;
  EXPECT_NE(r1.out.find("imported 1 run(s), 12 rows"), std::string::npos) << r1.out;
  auto r2 = run_cli("calibrate import " + dest + " " + b);
  ASSERT_EQ(r2.status, 0) << r2.out;
  EXPECT_NE(r2.out.find("(new run ids 2)"), std::string::npos) << r2.out;
  auto r3 = run_cli("calibrate import " + dest + " " + a);
  ASSERT_EQ(r3.status, 0) << r3.out;
  EXPECT_NE(r3.out.find("imported 0 run(s), 0 rows"), std::string::npos) << r3.out;
  EXPECT_NE(r3.out.find("skipped 1 run(s)"), std::string::npos) << r3.out;
  auto inspect = run_cli("calibrate inspect " + dest);
  EXPECT_NE(inspect.out.find("runs: 2"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("GPUs: 2"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("imported from " + a + " run 1"), std::string::npos) << inspect.out;
}

TEST(CalibrateCli, FitWritesProfileAndStoresFits) {
  const std::string db = make_db("fit");
  const std::string out = temp_path("fit") + ".json";
  auto r = run_cli("calibrate fit " + db + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 class(es) fitted (h100-sxm run 1)"), std::string::npos) << r.out;
  nlohmann::json p = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(p["gpu"], "h100-sxm");
  EXPECT_EQ(p["classes"]["kv_write"]["source"], "measured (h100-sxm run 1)");
  EXPECT_NEAR(p["classes"]["kv_write"]["memory"]["e_max"].get<double>(), 0.8, 1e-6);
  EXPECT_NEAR(p["classes"]["kv_write"]["memory"]["half_size"].get<double>(), 2.0 * 1024 * 1024, 1.0);
  EXPECT_EQ(p["classes"]["gemm"]["source"], "datasheet");
  auto inspect = run_cli("calibrate inspect " + db);
  EXPECT_NE(inspect.out.find("fits: 1"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("kv_write"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("MAPE 0.0%"), std::string::npos) << inspect.out;
}

TEST(CalibrateCli, SimulateWithProfileShowsWhereCostsComeFrom) {
  const std::string db = make_db("profile");
  const std::string json = temp_path("profile") + ".json";
  ASSERT_EQ(run_cli("calibrate fit " + db + " --out " + json).status, 0);
  const std::string sim = " --json --rate 20 --num-requests 30 --seed 1";
  // Same GPU: measured.
  auto same = run_cli("simulate --profile " + json + sim);
  ASSERT_EQ(same.status, 0) << same.out;
  nlohmann::json s = json_of(same.out);
  EXPECT_TRUE(has_source(s, "kv_write: measured (h100-sxm run 1)")) << s["cost_sources"].dump(1);
  EXPECT_TRUE(has_source(s, "gemm: datasheet")) << s["cost_sources"].dump(1);
  // Another GPU: transferred. The .sqlite is fitted on the fly.
  auto other = run_cli("simulate --gpu a100-80gb --profile " + db + sim);
  ASSERT_EQ(other.status, 0) << other.out;
  s = json_of(other.out);
  EXPECT_TRUE(has_source(s, "kv_write: transferred (from h100-sxm)")) << s["cost_sources"].dump(1);
  EXPECT_TRUE(has_source(s, "gemm: datasheet")) << s["cost_sources"].dump(1);
  // Text output names the full labels.
  auto text = run_cli("simulate --gpu a100-80gb --profile " + db + " --rate 20 --num-requests 30 --seed 1");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("transferred (from h100-sxm) (kv_write)"), std::string::npos) << text.out;
  // capacity takes the flag too.
  auto cap = run_cli("capacity --profile " + json + " --json --num-requests 30 --slo-ttft-ms 2000 --tolerance 0.5");
  EXPECT_EQ(cap.status, 0) << cap.out;
}

TEST(CalibrateCli, BadInputExitsTwoWithFieldValueRule) {
  const std::string missing = temp_path("missing") + ".sqlite";
  expect_bad_input("calibrate inspect " + missing, {missing, "file does not exist"});
  const std::string text = temp_path("text") + ".sqlite";
  std::ofstream(text) << "not a database at all, only text, but long enough to look like a page header........\n";
  expect_bad_input("calibrate inspect " + text, {text, "not a kvplan calibration database"});
  const std::string db = make_db("bad");
  const std::string out = temp_path("bad") + ".json";
  expect_bad_input("calibrate fit " + db + " --run 99 --out " + out, {db, "run id 99 is unknown", "runs in the file: 1"});
  expect_bad_input("calibrate fit " + db + " --run abc --out " + out, {"--run=abc", "integer"});
  expect_bad_input("calibrate fit " + db + " --gpu nope --out " + out, {"nope"});
  expect_bad_input("calibrate import " + db + " " + missing, {missing, "file does not exist"});
  expect_bad_input("simulate --profile " + missing, {"--profile=" + missing, "file does not exist"});
  const std::string bad_json = temp_path("badjson") + ".json";
  std::ofstream(bad_json) << R"({"gpu": "h100-sxm", "classes": {"gemm": {"compute": {"e_max": 1.5, "half_size": 0}}}})";
  expect_bad_input("simulate --profile " + bad_json, {"--profile=" + bad_json, "e_max=1.5 must be in (0, 1]"});
}

TEST(CalibrateCli, RunIsHandedToTheGpuExecutable) {
  // kvplan links no CUDA library; `calibrate run` execs kvplan-calibrate-run next to it (GPU
  // builds) or says what is missing (exit 2). Without a device the GPU executable says so (exit 3).
  auto bad = run_cli("calibrate run --quick --out " + temp_path("run") + ".sqlite --reps -1");
  const std::string out = temp_path("run") + ".sqlite";
  auto r = run_cli("calibrate run --quick --out " + out);
  std::error_code ec;
  std::filesystem::remove(out, ec);
  if (!KVPLAN_ENABLE_CUDA || !std::filesystem::exists(std::filesystem::path(KVPLAN_BIN).parent_path() /
                                                       "kvplan-calibrate-run")) {
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("kvplan-calibrate-run is not installed next to kvplan"), std::string::npos) << r.out;
    return;
  }
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--reps=-1: must be a whole number from 1"), std::string::npos) << bad.out;
  if (r.status == 0) GTEST_SKIP() << "a GPU is present: the run measured (tested by scripts/calibrate_device.sh)";
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("no usable CUDA device"), std::string::npos) << r.out;
}

// The shipped published tables (data/measurements) for one GPU: import-published, then fit every
// run; the profile's classes are labelled "published (...)" and carry grids and held-out errors.
TEST(CalibrateCli, ImportPublishedThenFitAllRuns) {
  const std::string db = temp_path("published") + ".sqlite";
  const std::string out = temp_path("published") + ".json";
  auto imp = run_cli("calibrate import-published " + std::string(KVPLAN_SOURCE_DIR) + "/data/measurements --gpu l40s --out " + db);
  ASSERT_EQ(imp.status, 0) << imp.out;
  EXPECT_NE(imp.out.find("imported 2 published run(s)"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("fits in the L2 not imported"), std::string::npos) << imp.out;
  auto inspect = run_cli("calibrate inspect " + db);
  EXPECT_NE(inspect.out.find("mode published"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("on published: aiconfigurator, vLLM 0.24.0"), std::string::npos) << inspect.out;
  auto fit = run_cli("calibrate fit " + db + " --run all --gpu l40s --out " + out);
  ASSERT_EQ(fit.status, 0) << fit.out;
  EXPECT_NE(fit.out.find("fitted runs 1, 2 of"), std::string::npos) << fit.out;
  nlohmann::json p = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(p["classes"]["gemm"]["source"], "published (aiconfigurator, vLLM 0.24.0, NVIDIA L40S)");
  EXPECT_EQ(p["classes"]["attention_decode"]["source"], "published (aiconfigurator, vLLM 0.24.0, NVIDIA L40S)");
  EXPECT_EQ(p["classes"]["attention_prefill"]["source"], "datasheet");
  EXPECT_TRUE(p["classes"]["gemm"]["grids"].contains("bf16"));
  EXPECT_GT(p["classes"]["gemm"]["heldout_p90_rel_error"].get<double>(), 0.0);
  EXPECT_GT(p["classes"]["attention_decode"]["floor_ns"].get<double>(), 1000.0);
  // the file loads back as a profile for simulate
  auto sim = run_cli("simulate --gpu l40s --profile " + out + " --json --rate 5 --num-requests 20 --seed 1");
  ASSERT_EQ(sim.status, 0) << sim.out;
  EXPECT_TRUE(has_source(json_of(sim.out), "gemm: published (aiconfigurator, vLLM 0.24.0, NVIDIA L40S)"));
  // the same run twice gives the same profile
  const std::string again = temp_path("published_again") + ".json";
  ASSERT_EQ(run_cli("calibrate fit " + db + " --run 1,2 --gpu l40s --out " + again).status, 0);
  EXPECT_EQ(slurp(out), slurp(again));
}

TEST(CalibrateCli, ImportPublishedBadInput) {
  const std::string db = temp_path("published_bad") + ".sqlite";
  const std::string missing = temp_path("no_such_dir");
  expect_bad_input("calibrate import-published " + missing + " --out " + db, {missing, "is not a directory"});
  const std::string dir = temp_path("published_dir");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/aiconfigurator_vllm_gemm_h100_h200.csv")
      << "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\nh100_sxm,0.24.0,bfloat16,16,4096,x,0.01\n";
  expect_bad_input("calibrate import-published " + dir + " --out " + db,
                   {"aiconfigurator_vllm_gemm_h100_h200.csv line 2: field 'k'='x' must be an integer"});
  expect_bad_input("calibrate import-published " + dir + " --gpu nope --out " + db, {"nope"});
  std::filesystem::remove_all(dir);
}

TEST(CalibrateCli, RunNeedsAGpuBuild) {
  if (KVPLAN_ENABLE_CUDA) GTEST_SKIP() << "CUDA build: `calibrate run` measures (tested on the GPU)";
  auto r = run_cli("calibrate run --quick --out " + temp_path("run") + ".sqlite");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("this kvplan was built without CUDA; calibration needs a GPU build"), std::string::npos) << r.out;
}

}  // namespace

namespace {

TEST(CalibrateCli, InspectJsonOfADatabaseWithInvalidUtf8) {
  // Found by the fuzz regressions: a text column with invalid UTF-8 reached json::dump (exit 70).
  const std::string db = std::string(KVPLAN_SOURCE_DIR) + "/tests/fuzz/regressions/fuzz_calibration_db/non_utf8_gpu_name.sqlite";
  auto r = run_cli("calibrate inspect " + db + " --json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(j.dump().find("NVIDIA \xEF\xBF\xBD"), std::string::npos) << r.out;  // U+FFFD replaces the bad bytes
}

}  // namespace
