#include "simulation_models.h"

#include <algorithm>
#include <cmath>

namespace kvplan::gui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QVariant header(const char* const* names, int count, int section, Qt::Orientation orientation, int role) {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  return section >= 0 && section < count ? QVariant(QString(names[section])) : QVariant();
}

// Nearest-rank quantile of sorted values (metrics.h's rule), 0 for none.
double quantile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(fraction * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
  return sorted[i];
}

}  // namespace

// ---- TimeSeriesModel ----

int TimeSeriesModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int TimeSeriesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant TimeSeriesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const sim::TimeSeriesRow& r = rows_[static_cast<size_t>(index.row())];
  auto gib = [](int64_t b) { return static_cast<double>(b) / kGiB; };
  switch (index.column()) {
    case kTimeColumn: return static_cast<double>(r.time_ns) / 1e9;
    case kUsedColumn: return gib(r.kv_token_bytes);
    case kAllocatedColumn: return gib(r.kv_allocated_bytes);
    case kFragmentationColumn: return gib(r.kv_internal_fragmentation_bytes + r.kv_external_fragmentation_bytes);
    case kCapacityColumn: return gib(r.kv_capacity_bytes);
    case kRunningColumn: return QVariant::fromValue<qlonglong>(r.running);
    case kWaitingColumn: return QVariant::fromValue<qlonglong>(r.waiting);
    default: return {};
  }
}

QVariant TimeSeriesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  static const char* const kNames[] = {"Time (s)", "KV used (GiB)", "KV allocated (GiB)", "Fragmentation (GiB)",
                                       "KV capacity (GiB)", "Running", "Waiting"};
  return header(kNames, kColumnCount, section, orientation, role);
}

void TimeSeriesModel::set_rows(std::vector<sim::TimeSeriesRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

// ---- LatencyCdfModel ----

int LatencyCdfModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int LatencyCdfModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant LatencyCdfModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  return rows_[static_cast<size_t>(index.row())][static_cast<size_t>(index.column())];
}

QVariant LatencyCdfModel::headerData(int section, Qt::Orientation orientation, int role) const {
  static const char* const kNames[] = {"Fraction", "TTFT (ms)", "TPOT (ms)", "E2E (ms)"};
  return header(kNames, kColumnCount, section, orientation, role);
}

void LatencyCdfModel::set_outcome(const SimulationOutcome& o, int max_rows) {
  beginResetModel();
  rows_.clear();
  const size_t n = std::max({o.ttft_ms.size(), o.tpot_ms.size(), o.e2e_ms.size()});
  const int rows = static_cast<int>(std::min<size_t>(n, static_cast<size_t>(std::max(max_rows, 0))));
  for (int i = 1; i <= rows; ++i) {
    const double f = static_cast<double>(i) / rows;
    rows_.push_back({f, quantile(o.ttft_ms, f), quantile(o.tpot_ms, f), quantile(o.e2e_ms, f)});
  }
  endResetModel();
}

// ---- LoadSweepModel ----

int LoadSweepModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(points_.size()); }
int LoadSweepModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant LoadSweepModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const LoadPoint& p = points_[static_cast<size_t>(index.row())];
  const sim::RunSummary& s = p.summary;
  switch (index.column()) {
    case kLoadColumn: return p.load;
    case kTtftP50Column: return s.ttft_ms.p50;
    case kTtftP90Column: return s.ttft_ms.p90;
    case kTtftP99Column: return s.ttft_ms.p99;
    case kTpotP50Column: return s.tpot_ms.p50;
    case kTpotP90Column: return s.tpot_ms.p90;
    case kTpotP99Column: return s.tpot_ms.p99;
    case kGoodputColumn: return s.goodput_requests_per_s;
    case kMeetsColumn: return s.meets_slo ? QStringLiteral("yes") : QStringLiteral("no");
    default: return {};
  }
}

QVariant LoadSweepModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role == Qt::DisplayRole && orientation == Qt::Horizontal && section == kLoadColumn) {
    return users_ ? QStringLiteral("Users") : QStringLiteral("Load (req/s)");
  }
  static const char* const kNames[] = {"Load", "TTFT p50 (ms)", "TTFT p90 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)",
                                       "TPOT p90 (ms)", "TPOT p99 (ms)", "Goodput (req/s)", "Meets SLO"};
  return header(kNames, kColumnCount, section, orientation, role);
}

void LoadSweepModel::set_outcome(const SimulationOutcome& outcome, const sim::Slo& slo, bool users) {
  beginResetModel();
  points_ = outcome.sweep;
  slo_ = slo;
  users_ = users;
  endResetModel();
}

}  // namespace kvplan::gui
