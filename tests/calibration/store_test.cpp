// CalibrationStore: schema and version, provenance round trip, one transaction per shape, a crash
// mid-run, resume, import without overwriting, and the errors a user sees.
#include "kvplan/calibration/store.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kvplan::calibration {
namespace {

RunInfo sample_run(const std::string& uuid = "GPU-1234", const std::string& started = "2025-01-31T12:00:00Z") {
  RunInfo r;
  r.gpu_name = "NVIDIA H100 80GB HBM3";
  r.gpu_uuid = uuid;
  r.driver_version = "580.159.04";
  r.cuda_version = "13.0";
  r.cupti_version = "130000";
  r.clocks_seen = R"({"sm_mhz":[1980,1980],"mem_mhz":[2619,2619]})";
  r.kvplan_version = "0.1.0";
  r.git_commit = "abc1234";
  r.host = "gpu-node-7";
  r.started_utc = started;
  r.mode = "quick";
  r.num_sms = 132;
  r.memory_bytes = 85'520'809'984;
  return r;
}

Measurement row(const std::string& kernel, int b, double median_ns = 1000) {
  Measurement m;
  m.kernel = kernel;
  m.op_class = kernel == "gemm_bf16" ? "gemm" : "attention_decode";
  m.params_json = R"({"B":)" + std::to_string(b) + "}";
  m.n = 50;
  m.min_ns = median_ns * 0.95;
  m.median_ns = median_ns;
  m.p90_ns = median_ns * 1.1;
  m.mean_ns = median_ns * 1.02;
  m.bytes = 4096.0 * b;
  m.flops = 2048.0 * b;
  m.event_median_ns = median_ns * 1.25;
  m.cupti_event_ratio = 0.8;
  return m;
}

// A gemm fit of run `id` with plausible errors.
StoredFit sample_fit(int64_t id) {
  StoredFit fit;
  fit.run_ids = std::to_string(id);
  fit.op_class = "gemm";
  fit.mape = 0.02;
  fit.p90_rel_error = 0.04;
  fit.num_points = 3;
  fit.source = "measured (h100-sxm run 1)";
  return fit;
}

std::string temp_path(const std::string& name) {
  std::string p = ::testing::TempDir() + "kvplan_store_" + name + "_" + std::to_string(getpid()) + ".sqlite";
  std::filesystem::remove(p);
  return p;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const StoreError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Store, NewFileHasSchemaAndVersion) {
  const std::string path = temp_path("schema");
  {
    CalibrationStore db = CalibrationStore::open(path, OpenMode::kCreate);
    EXPECT_EQ(db.schema_version(), 1);
    EXPECT_EQ(db.path(), path);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  std::vector<std::string> tables;
  sqlite3_exec(
      raw, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
      [](void* out, int, char** v, char**) {
        static_cast<std::vector<std::string>*>(out)->push_back(v[0]);
        return 0;
      },
      &tables, nullptr);
  EXPECT_EQ(tables, (std::vector<std::string>{"fits", "kernels", "measurements", "runs", "schema_version"}));
  int version = -1;
  sqlite3_exec(
      raw, "PRAGMA user_version",
      [](void* out, int, char** v, char**) {
        *static_cast<int*>(out) = std::stoi(v[0]);
        return 0;
      },
      &version, nullptr);
  EXPECT_EQ(version, 1);
  sqlite3_close(raw);
  // Reopening an existing file keeps it.
  EXPECT_EQ(CalibrationStore::open(path, OpenMode::kExisting).schema_version(), 1);
}

TEST(Store, NewerSchemaIsRefused) {
  const std::string path = temp_path("newer");
  { CalibrationStore::open(path, OpenMode::kCreate); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 2", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  std::string msg = error_of([&] { CalibrationStore::open(path, OpenMode::kExisting); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("schema version 2 is newer than this kvplan supports (1)"), std::string::npos) << msg;
}

TEST(Store, ErrorsNameTheFileAndTheProblem) {
  const std::string missing = temp_path("missing");
  std::string msg = error_of([&] { CalibrationStore::open(missing, OpenMode::kExisting); });
  EXPECT_NE(msg.find("'" + missing + "': file does not exist"), std::string::npos) << msg;

  const std::string text = temp_path("text");
  std::ofstream(text) << "this is not a database, just some text that is long enough to fill a header page\n";
  msg = error_of([&] { CalibrationStore::open(text, OpenMode::kExisting); });
  EXPECT_NE(msg.find(text), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a kvplan calibration database"), std::string::npos) << msg;

  const std::string other = temp_path("other");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  msg = error_of([&] { CalibrationStore::open(other, OpenMode::kCreate); });
  EXPECT_NE(msg.find("not a kvplan calibration database (SQLite application_id=0x0"), std::string::npos) << msg;

  CalibrationStore db = CalibrationStore::in_memory();
  int64_t id = db.begin_run(sample_run());
  msg = error_of([&] { db.record_shape(id + 5, {row("decode_paged", 1)}); });
  EXPECT_NE(msg.find("run id " + std::to_string(id + 5) + " is unknown (runs in the file: " + std::to_string(id) + ")"),
            std::string::npos)
      << msg;
}

TEST(Store, ProvenanceRoundTrip) {
  CalibrationStore db = CalibrationStore::in_memory();
  const RunInfo in = sample_run();
  int64_t id = db.begin_run(in);
  StoredRun r = db.run(id);
  EXPECT_EQ(r.info.gpu_name, in.gpu_name);
  EXPECT_EQ(r.info.gpu_uuid, in.gpu_uuid);
  EXPECT_EQ(r.info.driver_version, in.driver_version);
  EXPECT_EQ(r.info.cuda_version, in.cuda_version);
  EXPECT_EQ(r.info.cupti_version, in.cupti_version);
  EXPECT_EQ(r.info.clocks_seen, in.clocks_seen);
  EXPECT_EQ(r.info.kvplan_version, in.kvplan_version);
  EXPECT_EQ(r.info.git_commit, in.git_commit);
  EXPECT_EQ(r.info.host, in.host);
  EXPECT_EQ(r.info.started_utc, in.started_utc);
  EXPECT_EQ(r.info.mode, in.mode);
  EXPECT_EQ(r.info.num_sms, 132);
  EXPECT_EQ(r.info.memory_bytes, 85'520'809'984);
  EXPECT_EQ(r.status, RunStatus::kRunning);
  EXPECT_EQ(r.finished_utc, "");
  db.end_run(id, RunStatus::kComplete);
  r = db.run(id);
  EXPECT_EQ(r.status, RunStatus::kComplete);
  EXPECT_EQ(r.finished_utc.size(), 20u) << r.finished_utc;  // 2025-01-31T12:00:00Z

  // Measurement fields round trip too.
  Measurement m = row("gemm_bf16", 3, 1234.5);
  db.record_shape(id, {m});
  std::vector<StoredMeasurement> got = db.measurements();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].run_id, id);
  EXPECT_EQ(got[0].m.kernel, "gemm_bf16");
  EXPECT_EQ(got[0].m.op_class, "gemm");
  EXPECT_EQ(got[0].m.params_json, R"({"B":3})");
  EXPECT_EQ(got[0].m.n, 50);
  EXPECT_DOUBLE_EQ(got[0].m.min_ns, 1234.5 * 0.95);
  EXPECT_DOUBLE_EQ(got[0].m.median_ns, 1234.5);
  EXPECT_DOUBLE_EQ(got[0].m.p90_ns, 1234.5 * 1.1);
  EXPECT_DOUBLE_EQ(got[0].m.mean_ns, 1234.5 * 1.02);
  EXPECT_DOUBLE_EQ(got[0].m.bytes, 4096.0 * 3);
  EXPECT_DOUBLE_EQ(got[0].m.flops, 2048.0 * 3);
  EXPECT_DOUBLE_EQ(got[0].m.event_median_ns, 1234.5 * 1.25);
  EXPECT_DOUBLE_EQ(got[0].m.cupti_event_ratio, 0.8);
  // record_shape filled the catalogue.
  ASSERT_EQ(db.kernels().size(), 1u);
  EXPECT_EQ(db.kernels()[0].op_class, "gemm");
}

TEST(Store, OneTransactionPerShape) {
  CalibrationStore db = CalibrationStore::in_memory();
  int64_t id = db.begin_run(sample_run());
  db.record_shape(id, {row("decode_paged", 1), row("gemm_bf16", 1)});
  // The second row repeats a stored (run, kernel, params): the whole shape is rejected.
  std::string msg = error_of([&] { db.record_shape(id, {row("decode_paged", 2), row("decode_paged", 1)}); });
  EXPECT_NE(msg.find("the shape was not stored"), std::string::npos) << msg;
  EXPECT_EQ(db.measurements().size(), 2u);
  EXPECT_FALSE(db.has_shape(id, "decode_paged", R"({"B":2})"));
  EXPECT_TRUE(db.has_shape(id, "decode_paged", R"({"B":1})"));
}

// The fits of one `calibrate fit` were stored one INSERT at a time, so a failure (or a kill) after
// the first class left a partial set in the file (issue 27). Now they are one transaction: the
// second fit here has a NaN error (SQLite stores NaN as NULL, and the column is NOT NULL), so the
// call fails, and the file holds no fit of that call, not the first one.
TEST(Store, FitsOfOneCallAreStoredAllOrNothing) {
  CalibrationStore db = CalibrationStore::in_memory();
  const int64_t id = db.begin_run(sample_run());
  const StoredFit good = sample_fit(id);
  StoredFit bad = good;
  bad.op_class = "attention_decode";
  bad.mape = std::nan("");
  EXPECT_THROW(db.record_fits({good, bad}), StoreError);
  EXPECT_TRUE(db.fits().empty());
  EXPECT_EQ(db.record_fits({good, good}), 2);
  EXPECT_EQ(db.fits().size(), 2u);
}

// A child process writes three shapes, opens a fourth transaction, and dies with _exit() before
// committing it and before end_run. The parent finds exactly the three shapes and a running run.
TEST(Store, CrashMidRunKeepsCompletedShapes) {
  const std::string path = temp_path("crash");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    CalibrationStore db = CalibrationStore::open(path, OpenMode::kCreate);
    int64_t id = db.begin_run(sample_run());
    for (int b = 1; b <= 3; ++b) db.record_shape(id, {row("decode_paged", b), row("gemm_bf16", b)});
    // A fourth shape half written: raw connection, transaction never committed.
    sqlite3* raw = nullptr;
    sqlite3_open(path.c_str(), &raw);
    sqlite3_exec(raw,
                 "BEGIN IMMEDIATE; INSERT INTO measurements (run_id, kernel, op_class, params_json, n, min_ns, "
                 "median_ns, p90_ns, mean_ns, bytes, flops, event_median_ns, cupti_event_ratio) VALUES "
                 "(1, 'decode_paged', 'attention_decode', '{\"B\":4}', 1, 1, 1, 1, 1, 1, 1, 1, 1);",
                 nullptr, nullptr, nullptr);
    _exit(0);  // no destructors, no COMMIT, no end_run
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  CalibrationStore db = CalibrationStore::open(path, OpenMode::kExisting);
  std::vector<StoredRun> runs = db.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::kRunning);  // never finished
  EXPECT_EQ(runs[0].num_rows, 6);
  EXPECT_EQ(db.measurements().size(), 6u);
  for (int b = 1; b <= 3; ++b) EXPECT_TRUE(db.has_shape(runs[0].id, "decode_paged", "{\"B\":" + std::to_string(b) + "}"));
  EXPECT_FALSE(db.has_shape(runs[0].id, "decode_paged", R"({"B":4})"));
}

// --resume: reopen the run, skip the shapes it has, measure the rest.
TEST(Store, ResumeSkipsExistingShapes) {
  const std::string path = temp_path("resume");
  int64_t id = 0;
  {
    CalibrationStore db = CalibrationStore::open(path, OpenMode::kCreate);
    id = db.begin_run(sample_run());
    db.record_shape(id, {row("decode_paged", 1)});
    db.record_shape(id, {row("decode_paged", 2)});
    db.end_run(id, RunStatus::kFailed);
  }
  CalibrationStore db = CalibrationStore::open(path, OpenMode::kExisting);
  ASSERT_TRUE(db.reopen_run(id));
  EXPECT_EQ(db.run(id).status, RunStatus::kRunning);
  EXPECT_FALSE(db.reopen_run(id + 100));
  int measured = 0;
  for (int b = 1; b <= 4; ++b) {
    Measurement m = row("decode_paged", b);
    if (db.has_shape(id, m.kernel, m.params_json)) continue;
    db.record_shape(id, {m});
    ++measured;
  }
  EXPECT_EQ(measured, 2);
  db.end_run(id, RunStatus::kComplete);
  EXPECT_EQ(db.run(id).num_rows, 4);
  MeasurementFilter f;
  f.kernel = "decode_paged";
  f.run_id = id;
  EXPECT_EQ(db.measurements(f).size(), 4u);
  f.kernel = "gemm_bf16";
  EXPECT_TRUE(db.measurements(f).empty());
}

TEST(Store, ImportMergesAsNewRunsAndSkipsReimport) {
  const std::string a_path = temp_path("import_a");
  const std::string b_path = temp_path("import_b");
  {
    CalibrationStore a = CalibrationStore::open(a_path, OpenMode::kCreate);
    int64_t id = a.begin_run(sample_run("GPU-A"));
    a.record_shape(id, {row("decode_paged", 1, 100), row("gemm_bf16", 1, 200)});
    a.end_run(id, RunStatus::kComplete);
  }
  {
    CalibrationStore b = CalibrationStore::open(b_path, OpenMode::kCreate);
    int64_t id1 = b.begin_run(sample_run("GPU-B", "2025-02-01T00:00:00Z"));
    b.record_shape(id1, {row("decode_paged", 1, 300)});  // same shape as in a: a different run, kept
    b.end_run(id1, RunStatus::kComplete);
    int64_t id2 = b.begin_run(sample_run("GPU-B", "2025-02-02T00:00:00Z"));
    b.record_shape(id2, {row("decode_paged", 7, 400)});
  }
  CalibrationStore a = CalibrationStore::open(a_path, OpenMode::kExisting);
  ImportResult r = a.import_database(b_path);
  EXPECT_EQ(r.new_run_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(r.skipped_runs.empty());
  EXPECT_EQ(r.rows, 2);
  std::vector<StoredRun> runs = a.runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].imported_from, "");
  EXPECT_EQ(runs[1].imported_from, b_path + " run 1");
  EXPECT_EQ(runs[1].info.gpu_uuid, "GPU-B");
  EXPECT_EQ(runs[1].status, RunStatus::kComplete);
  EXPECT_EQ(runs[2].status, RunStatus::kRunning);  // the status travels with the run
  // The original run's rows are untouched.
  MeasurementFilter f;
  f.run_id = 1;
  std::vector<StoredMeasurement> own = a.measurements(f);
  ASSERT_EQ(own.size(), 2u);
  EXPECT_DOUBLE_EQ(own[0].m.median_ns, 100);
  f.run_id = 2;
  ASSERT_EQ(a.measurements(f).size(), 1u);
  EXPECT_DOUBLE_EQ(a.measurements(f)[0].m.median_ns, 300);

  // Again: both runs are already here.
  ImportResult again = a.import_database(b_path);
  EXPECT_TRUE(again.new_run_ids.empty());
  EXPECT_EQ(again.skipped_runs, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(again.rows, 0);
  EXPECT_EQ(a.runs().size(), 3u);
  EXPECT_EQ(a.measurements().size(), 4u);

  std::string msg = error_of([&] { a.import_database(a_path); });
  EXPECT_NE(msg.find("cannot import a file into itself"), std::string::npos) << msg;
}

TEST(Store, SummaryCountsRowsAgreementAndFits) {
  CalibrationStore db = CalibrationStore::in_memory();
  int64_t id = db.begin_run(sample_run());
  Measurement a = row("decode_paged", 1), b = row("decode_paged", 2), c = row("gemm_bf16", 1);
  a.cupti_event_ratio = 0.9;
  b.cupti_event_ratio = 1.0;
  c.cupti_event_ratio = 1.04;
  db.record_shape(id, {a, b, c});
  db.register_kernel({"decode_paged", "attention_decode", "paged GQA decode"});
  db.record_fit(sample_fit(id));
  StoreSummary s = db.summary();
  EXPECT_EQ(s.schema_version, 1);
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].num_rows, 3);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].kernel, "decode_paged");
  EXPECT_EQ(s.kernels[0].rows, 2);
  EXPECT_EQ(s.kernels[1].rows, 1);
  EXPECT_EQ(db.kernels()[0].description, "paged GQA decode");
  EXPECT_EQ(s.agreement.rows, 3);
  EXPECT_DOUBLE_EQ(s.agreement.min, 0.9);
  EXPECT_DOUBLE_EQ(s.agreement.median, 1.0);
  EXPECT_DOUBLE_EQ(s.agreement.max, 1.04);
  EXPECT_DOUBLE_EQ(s.agreement.within_5_percent, 2.0 / 3.0);
  ASSERT_EQ(s.fits.size(), 1u);
  EXPECT_EQ(s.fits[0].source, "measured (h100-sxm run 1)");
  EXPECT_EQ(s.fits[0].created_utc.size(), 20u);
}

}  // namespace
}  // namespace kvplan::calibration
