// CalibrationStore: the SQLite schema, one transaction per shape, import and summary.
#include "kvplan/calibration/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace kvplan::calibration {

namespace {

// PRAGMA application_id of every kvplan calibration database: "KVPL" in ASCII. Tells a kvplan
// file from any other SQLite file before anything is read or written.
constexpr int32_t kApplicationId = 0x4B56504C;

// Version 1. Each statement is idempotent so a half-created file can be completed.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (
  version INTEGER NOT NULL,
  written_by TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  gpu_name TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  driver_version TEXT NOT NULL,
  cuda_version TEXT NOT NULL,
  cupti_version TEXT NOT NULL,
  clocks_seen TEXT NOT NULL,
  kvplan_version TEXT NOT NULL,
  git_commit TEXT NOT NULL,
  host TEXT NOT NULL,
  started_utc TEXT NOT NULL,
  mode TEXT NOT NULL,
  num_sms INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
  finished_utc TEXT NOT NULL DEFAULT '',
  imported_from TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS kernels (
  kernel TEXT PRIMARY KEY,
  op_class TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS measurements (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  kernel TEXT NOT NULL REFERENCES kernels(kernel),
  op_class TEXT NOT NULL,
  params_json TEXT NOT NULL,
  n INTEGER NOT NULL,
  min_ns REAL NOT NULL,
  median_ns REAL NOT NULL,
  p90_ns REAL NOT NULL,
  mean_ns REAL NOT NULL,
  bytes REAL NOT NULL,
  flops REAL NOT NULL,
  event_median_ns REAL NOT NULL,
  cupti_event_ratio REAL NOT NULL,
  UNIQUE (run_id, kernel, params_json)
);
CREATE TABLE IF NOT EXISTS fits (
  id INTEGER PRIMARY KEY,
  run_ids TEXT NOT NULL,
  op_class TEXT NOT NULL,
  compute_e_max REAL NOT NULL,
  compute_half_size REAL NOT NULL,
  memory_e_max REAL NOT NULL,
  memory_half_size REAL NOT NULL,
  launch_overhead_ns REAL NOT NULL,
  mape REAL NOT NULL,
  p90_rel_error REAL NOT NULL,
  num_points INTEGER NOT NULL,
  source TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '',
  created_utc TEXT NOT NULL
);
)sql";

constexpr const char* kRunColumns =
    "id, gpu_name, gpu_uuid, driver_version, cuda_version, cupti_version, clocks_seen, kvplan_version, "
    "git_commit, host, started_utc, mode, num_sms, memory_bytes, status, finished_utc, imported_from, "
    "(SELECT COUNT(*) FROM measurements m WHERE m.run_id = runs.id)";

constexpr const char* kMeasurementColumns =
    "run_id, kernel, op_class, params_json, n, min_ns, median_ns, p90_ns, mean_ns, bytes, flops, "
    "event_median_ns, cupti_event_ratio";

constexpr const char* kFitColumns =
    "id, run_ids, op_class, compute_e_max, compute_half_size, memory_e_max, memory_half_size, "
    "launch_overhead_ns, mape, p90_rel_error, num_points, source, note, created_utc";

RunStatus parse_status(std::string_view s) {
  if (s == "complete") return RunStatus::kComplete;
  if (s == "failed") return RunStatus::kFailed;
  return RunStatus::kRunning;
}

// One prepared statement; finalized on destruction. Binds are 1-based as in SQLite.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& what) : db_(db), what_(what) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
      throw StoreError(fmt::format("{}: {} ({})", what_, sqlite3_errmsg(db), sql));
    }
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  Statement& bind(int i, std::string_view v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Statement& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Statement& bind(int i, double v) {
    check(sqlite3_bind_double(stmt_, i, v));
    return *this;
  }

  // true: a row is ready; false: done.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(fmt::format("{}: {}", what_, sqlite3_errmsg(db_)));
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw StoreError(fmt::format("{}: bind failed: {}", what_, sqlite3_errmsg(db_)));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;
};

StoredRun read_run(const Statement& s) {
  StoredRun r;
  r.id = s.int64(0);
  RunInfo& i = r.info;
  i.gpu_name = s.text(1);
  i.gpu_uuid = s.text(2);
  i.driver_version = s.text(3);
  i.cuda_version = s.text(4);
  i.cupti_version = s.text(5);
  i.clocks_seen = s.text(6);
  i.kvplan_version = s.text(7);
  i.git_commit = s.text(8);
  i.host = s.text(9);
  i.started_utc = s.text(10);
  i.mode = s.text(11);
  i.num_sms = static_cast<int>(s.int64(12));
  i.memory_bytes = s.int64(13);
  r.status = parse_status(s.text(14));
  r.finished_utc = s.text(15);
  r.imported_from = s.text(16);
  r.num_rows = s.int64(17);
  return r;
}

StoredMeasurement read_measurement(const Statement& s) {
  StoredMeasurement r;
  r.run_id = s.int64(0);
  Measurement& m = r.m;
  m.kernel = s.text(1);
  m.op_class = s.text(2);
  m.params_json = s.text(3);
  m.n = static_cast<int>(s.int64(4));
  m.min_ns = s.real(5);
  m.median_ns = s.real(6);
  m.p90_ns = s.real(7);
  m.mean_ns = s.real(8);
  m.bytes = s.real(9);
  m.flops = s.real(10);
  m.event_median_ns = s.real(11);
  m.cupti_event_ratio = s.real(12);
  return r;
}

StoredFit read_fit(const Statement& s) {
  StoredFit f;
  f.id = s.int64(0);
  f.run_ids = s.text(1);
  f.op_class = s.text(2);
  f.compute_e_max = s.real(3);
  f.compute_half_size = s.real(4);
  f.memory_e_max = s.real(5);
  f.memory_half_size = s.real(6);
  f.launch_overhead_ns = s.real(7);
  f.mape = s.real(8);
  f.p90_rel_error = s.real(9);
  f.num_points = s.int64(10);
  f.source = s.text(11);
  f.note = s.text(12);
  f.created_utc = s.text(13);
  return f;
}

}  // namespace

std::string_view run_status_name(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning: return "running";
    case RunStatus::kComplete: return "complete";
    case RunStatus::kFailed: return "failed";
  }
  return "running";
}

std::string utc_now_iso8601() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct CalibrationStore::Impl {
  sqlite3* db = nullptr;
  std::string path;
  std::string what;  // "calibration database '<path>'" for messages
  int version = 0;

  ~Impl() {
    if (db != nullptr) sqlite3_close(db);
  }

  Statement prepare(const std::string& sql) const { return Statement(db, sql, what); }

  void exec(const std::string& sql) const {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err != nullptr ? err : sqlite3_errmsg(db);
      sqlite3_free(err);
      throw StoreError(fmt::format("{}: {}", what, msg));
    }
  }

  int64_t pragma_int(const char* name) const {
    Statement s = prepare(fmt::format("PRAGMA {}", name));
    return s.step() ? s.int64(0) : 0;
  }

  // Rolls back unless committed: an exception inside leaves the file as it was.
  class Transaction {
   public:
    explicit Transaction(const Impl& impl) : impl_(impl) { impl_.exec("BEGIN IMMEDIATE"); }
    void commit() {
      impl_.exec("COMMIT");
      done_ = true;
    }
    ~Transaction() {
      if (!done_) sqlite3_exec(impl_.db, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;

   private:
    const Impl& impl_;
    bool done_ = false;
  };

  // Checks the file is ours and not newer; creates the schema in an empty database.
  void init_schema(bool allow_create) {
    // Reading the header pragma is the first access: a non-SQLite file fails here.
    int64_t app_id = 0;
    int64_t user_version = 0;
    int64_t tables = 0;
    try {
      app_id = pragma_int("application_id");
      user_version = pragma_int("user_version");
      Statement s = prepare("SELECT COUNT(*) FROM sqlite_master");
      tables = s.step() ? s.int64(0) : 0;
    } catch (const StoreError&) {
      throw StoreError(fmt::format("{}: not a kvplan calibration database (not an SQLite file: {})", what,
                                   sqlite3_errmsg(db)));
    }
    if (app_id == 0 && tables == 0 && user_version == 0) {
      if (!allow_create) {
        throw StoreError(fmt::format("{}: not a kvplan calibration database (empty SQLite file)", what));
      }
      Transaction t(*this);
      exec(kSchemaSql);
      exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
      exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
      prepare("INSERT INTO schema_version (version, written_by) VALUES (?, 'kvplan')")
          .bind(1, kSchemaVersion)
          .run();
      t.commit();
      version = kSchemaVersion;
      return;
    }
    if (app_id != kApplicationId) {
      throw StoreError(fmt::format("{}: not a kvplan calibration database (SQLite application_id={:#x}, "
                                   "expected {:#x})",
                                   what, app_id, kApplicationId));
    }
    if (user_version > kSchemaVersion) {
      throw StoreError(fmt::format("{}: schema version {} is newer than this kvplan supports ({}); use a newer "
                                   "kvplan to read it",
                                   what, user_version, kSchemaVersion));
    }
    if (user_version < 1) {
      throw StoreError(fmt::format("{}: schema version {} is invalid (must be >= 1)", what, user_version));
    }
    version = static_cast<int>(user_version);
  }
};

CalibrationStore::CalibrationStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CalibrationStore::CalibrationStore(CalibrationStore&&) noexcept = default;
CalibrationStore& CalibrationStore::operator=(CalibrationStore&&) noexcept = default;
CalibrationStore::~CalibrationStore() = default;

CalibrationStore CalibrationStore::open(const std::string& path, OpenMode mode) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->what = fmt::format("calibration database '{}'", path);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (mode == OpenMode::kExisting && !exists) {
    throw StoreError(fmt::format("{}: file does not exist", impl->what));
  }
  if (exists && std::filesystem::is_directory(path, ec)) {
    throw StoreError(fmt::format("{}: is a directory, expected an SQLite file", impl->what));
  }
  int flags = SQLITE_OPEN_READWRITE | (mode == OpenMode::kCreate ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr) != SQLITE_OK) {
    std::string msg = impl->db != nullptr ? sqlite3_errmsg(impl->db) : "out of memory";
    throw StoreError(fmt::format("{}: cannot open ({})", impl->what, msg));
  }
  // Another process (the runner) may hold the write lock for one shape's transaction.
  sqlite3_busy_timeout(impl->db, 5000);
  impl->init_schema(mode == OpenMode::kCreate);
  impl->exec("PRAGMA foreign_keys = ON");
  return CalibrationStore(std::move(impl));
}

CalibrationStore CalibrationStore::in_memory() {
  auto impl = std::make_unique<Impl>();
  impl->path = ":memory:";
  impl->what = "calibration database ':memory:'";
  if (sqlite3_open(":memory:", &impl->db) != SQLITE_OK) {
    throw StoreError(fmt::format("{}: cannot open", impl->what));
  }
  impl->init_schema(true);
  impl->exec("PRAGMA foreign_keys = ON");
  return CalibrationStore(std::move(impl));
}

const std::string& CalibrationStore::path() const { return impl_->path; }
int CalibrationStore::schema_version() const { return impl_->version; }

int64_t CalibrationStore::begin_run(const RunInfo& i) {
  Statement s = impl_->prepare(
      "INSERT INTO runs (gpu_name, gpu_uuid, driver_version, cuda_version, cupti_version, clocks_seen, "
      "kvplan_version, git_commit, host, started_utc, mode, num_sms, memory_bytes, status) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running')");
  s.bind(1, i.gpu_name).bind(2, i.gpu_uuid).bind(3, i.driver_version).bind(4, i.cuda_version);
  s.bind(5, i.cupti_version).bind(6, i.clocks_seen).bind(7, i.kvplan_version).bind(8, i.git_commit);
  s.bind(9, i.host).bind(10, i.started_utc).bind(11, i.mode).bind(12, i.num_sms).bind(13, i.memory_bytes);
  s.run();
  return sqlite3_last_insert_rowid(impl_->db);
}

void CalibrationStore::end_run(int64_t run_id, RunStatus status) {
  run(run_id);  // unknown id -> StoreError
  impl_->prepare("UPDATE runs SET status = ?, finished_utc = ? WHERE id = ?")
      .bind(1, run_status_name(status))
      .bind(2, status == RunStatus::kRunning ? std::string() : utc_now_iso8601())
      .bind(3, run_id)
      .run();
}

bool CalibrationStore::reopen_run(int64_t run_id) {
  if (!find_run(run_id)) return false;
  impl_->prepare("UPDATE runs SET status = 'running', finished_utc = '' WHERE id = ?").bind(1, run_id).run();
  return true;
}

std::vector<StoredRun> CalibrationStore::runs() const {
  Statement s = impl_->prepare(fmt::format("SELECT {} FROM runs ORDER BY id", kRunColumns));
  std::vector<StoredRun> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

std::optional<StoredRun> CalibrationStore::find_run(int64_t run_id) const {
  Statement s = impl_->prepare(fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

StoredRun CalibrationStore::run(int64_t run_id) const {
  if (auto r = find_run(run_id)) return *r;
  std::string known;
  for (const StoredRun& r : runs()) known += fmt::format("{}{}", known.empty() ? "" : ", ", r.id);
  throw StoreError(fmt::format("{}: run id {} is unknown (runs in the file: {})", impl_->what, run_id,
                               known.empty() ? "none" : known));
}

void CalibrationStore::register_kernel(const KernelInfo& k) {
  impl_->prepare(
           "INSERT INTO kernels (kernel, op_class, description) VALUES (?, ?, ?) "
           "ON CONFLICT(kernel) DO UPDATE SET op_class = excluded.op_class, description = excluded.description")
      .bind(1, k.kernel)
      .bind(2, k.op_class)
      .bind(3, k.description)
      .run();
}

std::vector<KernelInfo> CalibrationStore::kernels() const {
  Statement s = impl_->prepare("SELECT kernel, op_class, description FROM kernels ORDER BY kernel");
  std::vector<KernelInfo> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), s.text(2)});
  return out;
}

void CalibrationStore::record_shape(int64_t run_id, const std::vector<Measurement>& rows) {
  run(run_id);  // unknown id -> StoreError, before anything is written
  Impl::Transaction t(*impl_);
  Statement kernel = impl_->prepare("INSERT OR IGNORE INTO kernels (kernel, op_class) VALUES (?, ?)");
  Statement ins = impl_->prepare(fmt::format(
      "INSERT INTO measurements ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", kMeasurementColumns));
  for (const Measurement& m : rows) {
    if (m.kernel.empty()) throw StoreError(fmt::format("{}: run {}: a measurement has no kernel id", impl_->what, run_id));
    kernel.bind(1, m.kernel).bind(2, m.op_class).run();
    kernel.reset();
    ins.bind(1, run_id).bind(2, m.kernel).bind(3, m.op_class).bind(4, m.params_json).bind(5, m.n);
    ins.bind(6, m.min_ns).bind(7, m.median_ns).bind(8, m.p90_ns).bind(9, m.mean_ns);
    ins.bind(10, m.bytes).bind(11, m.flops).bind(12, m.event_median_ns).bind(13, m.cupti_event_ratio);
    try {
      ins.run();
    } catch (const StoreError& e) {
      throw StoreError(fmt::format("{} (run {}, kernel '{}', params {}; the shape was not stored)", e.what(),
                                   run_id, m.kernel, m.params_json));
    }
    ins.reset();
  }
  t.commit();
}

bool CalibrationStore::has_shape(int64_t run_id, std::string_view kernel, std::string_view params_json) const {
  Statement s = impl_->prepare("SELECT 1 FROM measurements WHERE run_id = ? AND kernel = ? AND params_json = ?");
  s.bind(1, run_id).bind(2, kernel).bind(3, params_json);
  return s.step();
}

std::vector<StoredMeasurement> CalibrationStore::measurements(const MeasurementFilter& f) const {
  std::string sql = fmt::format("SELECT {} FROM measurements WHERE 1", kMeasurementColumns);
  if (f.run_id) sql += " AND run_id = ?1";
  if (!f.kernel.empty()) sql += " AND kernel = ?2";
  if (!f.op_class.empty()) sql += " AND op_class = ?3";
  sql += " ORDER BY run_id, kernel, params_json";
  Statement s = impl_->prepare(sql);
  if (f.run_id) s.bind(1, *f.run_id);
  if (!f.kernel.empty()) s.bind(2, f.kernel);
  if (!f.op_class.empty()) s.bind(3, f.op_class);
  std::vector<StoredMeasurement> out;
  while (s.step()) out.push_back(read_measurement(s));
  return out;
}

int64_t CalibrationStore::record_fit(const StoredFit& f) {
  Statement s = impl_->prepare(fmt::format(
      "INSERT INTO fits ({}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", kFitColumns));
  s.bind(1, f.run_ids).bind(2, f.op_class).bind(3, f.compute_e_max).bind(4, f.compute_half_size);
  s.bind(5, f.memory_e_max).bind(6, f.memory_half_size).bind(7, f.launch_overhead_ns).bind(8, f.mape);
  s.bind(9, f.p90_rel_error).bind(10, f.num_points).bind(11, f.source).bind(12, f.note);
  s.bind(13, f.created_utc.empty() ? utc_now_iso8601() : f.created_utc);
  s.run();
  return sqlite3_last_insert_rowid(impl_->db);
}

int64_t CalibrationStore::record_fits(const std::vector<StoredFit>& fits) {
  Impl::Transaction t(*impl_);
  for (const StoredFit& f : fits) record_fit(f);
  t.commit();
  return static_cast<int64_t>(fits.size());
}

std::vector<StoredFit> CalibrationStore::fits() const {
  Statement s = impl_->prepare(fmt::format("SELECT {} FROM fits ORDER BY id", kFitColumns));
  std::vector<StoredFit> out;
  while (s.step()) out.push_back(read_fit(s));
  return out;
}

ImportResult CalibrationStore::import_database(const std::string& other_path) {
  CalibrationStore other = open(other_path, OpenMode::kExisting);
  if (std::filesystem::exists(impl_->path) && std::filesystem::exists(other_path) &&
      std::filesystem::equivalent(impl_->path, other_path)) {
    throw StoreError(fmt::format("{}: cannot import a file into itself", impl_->what));
  }
  ImportResult result;
  for (const KernelInfo& k : other.kernels()) {
    impl_->prepare("INSERT OR IGNORE INTO kernels (kernel, op_class, description) VALUES (?, ?, ?)")
        .bind(1, k.kernel)
        .bind(2, k.op_class)
        .bind(3, k.description)
        .run();
  }
  for (const StoredRun& r : other.runs()) {
    Statement dup = impl_->prepare("SELECT id FROM runs WHERE gpu_uuid = ? AND started_utc = ? AND mode = ?");
    dup.bind(1, r.info.gpu_uuid).bind(2, r.info.started_utc).bind(3, r.info.mode);
    if (dup.step()) {
      result.skipped_runs.push_back(r.id);
      continue;
    }
    // One transaction per run: an import that fails midway leaves whole runs only.
    Impl::Transaction t(*impl_);
    int64_t id = begin_run(r.info);
    impl_->prepare("UPDATE runs SET status = ?, finished_utc = ?, imported_from = ? WHERE id = ?")
        .bind(1, run_status_name(r.status))
        .bind(2, r.finished_utc)
        .bind(3, r.imported_from.empty() ? fmt::format("{} run {}", other_path, r.id) : r.imported_from)
        .bind(4, id)
        .run();
    Statement ins = impl_->prepare(fmt::format(
        "INSERT INTO measurements ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", kMeasurementColumns));
    MeasurementFilter f;
    f.run_id = r.id;
    for (const StoredMeasurement& sm : other.measurements(f)) {
      const Measurement& m = sm.m;
      ins.bind(1, id).bind(2, m.kernel).bind(3, m.op_class).bind(4, m.params_json).bind(5, m.n);
      ins.bind(6, m.min_ns).bind(7, m.median_ns).bind(8, m.p90_ns).bind(9, m.mean_ns);
      ins.bind(10, m.bytes).bind(11, m.flops).bind(12, m.event_median_ns).bind(13, m.cupti_event_ratio);
      ins.run();
      ins.reset();
      ++result.rows;
    }
    t.commit();
    result.new_run_ids.push_back(id);
  }
  return result;
}

StoreSummary CalibrationStore::summary() const {
  StoreSummary s;
  s.schema_version = impl_->version;
  s.runs = runs();
  {
    Statement q = impl_->prepare(
        "SELECT k.kernel, k.op_class, (SELECT COUNT(*) FROM measurements m WHERE m.kernel = k.kernel) "
        "FROM kernels k ORDER BY k.kernel");
    while (q.step()) s.kernels.push_back({q.text(0), q.text(1), q.int64(2)});
  }
  {
    Statement q = impl_->prepare(
        "SELECT cupti_event_ratio FROM measurements WHERE cupti_event_ratio > 0 ORDER BY cupti_event_ratio");
    std::vector<double> ratios;
    while (q.step()) ratios.push_back(q.real(0));
    AgreementStats& a = s.agreement;
    a.rows = static_cast<int64_t>(ratios.size());
    if (!ratios.empty()) {
      a.min = ratios.front();
      a.max = ratios.back();
      const std::size_t n = ratios.size();
      a.median = n % 2 == 1 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
      auto within = std::count_if(ratios.begin(), ratios.end(), [](double r) { return std::abs(r - 1.0) <= 0.05; });
      a.within_5_percent = static_cast<double>(within) / static_cast<double>(n);
    }
  }
  s.fits = fits();
  return s;
}

}  // namespace kvplan::calibration
