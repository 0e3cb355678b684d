#include "results_models.h"

#include <algorithm>

namespace kvplan::gui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QVariant right_aligned(int role) {
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

}  // namespace

// ---- MemoryBreakdownModel ----

int MemoryBreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int MemoryBreakdownModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant MemoryBreakdownModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::ToolTipRole) return r.how;
  if (index.column() == kGibColumn || index.column() == kBytesColumn) {
    if (role == Qt::TextAlignmentRole) return right_aligned(role);
  }
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (index.column()) {
    case kTermColumn: return r.term;
    case kGibColumn:
      return role == Qt::EditRole ? QVariant(static_cast<double>(r.bytes) / kGiB)
                                  : QVariant(QString::number(static_cast<double>(r.bytes) / kGiB, 'f', 2));
    case kBytesColumn: return QVariant::fromValue<qlonglong>(r.bytes);
    case kHowColumn: return r.how;
    default: return {};
  }
}

QVariant MemoryBreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  static const char* const kNames[] = {"Term", "GiB", "Bytes", "How"};
  return section >= 0 && section < kColumnCount ? QString(kNames[section]) : QVariant();
}

void MemoryBreakdownModel::set_plan(const MemoryPlan& plan) {
  std::vector<Row> rows;
  int64_t used = 0;
  for (const MemoryTerm& t : plan.terms) {
    if (!t.subtracted || t.bytes == 0) continue;
    rows.push_back({QString::fromStdString(t.label), t.bytes, QString::fromStdString(t.how)});
    used += t.bytes;
  }
  const int64_t budget = std::max<int64_t>(plan.kv_budget_bytes, 0);
  const int64_t blocks_bytes = std::min(budget, plan.num_blocks * plan.block_bytes);
  rows.push_back({QStringLiteral("KV cache (usable blocks)"), blocks_bytes,
                  QStringLiteral("%1 blocks x %2 bytes").arg(plan.num_blocks).arg(plan.block_bytes)});
  rows.push_back({QStringLiteral("KV fragmentation (< 1 block)"), budget - blocks_bytes,
                  QStringLiteral("KV budget minus whole blocks")});
  used += budget;
  rows.push_back({QStringLiteral("Outside the engine's budget"), std::max<int64_t>(plan.gpu_total_bytes - used, 0),
                  QStringLiteral("GPU total minus everything above (e.g. 1 - gpu_memory_utilization)")});
  if (static_cast<int>(rows.size()) != rowCount()) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
    return;
  }
  rows_ = std::move(rows);
  emit dataChanged(index(0, 0), index(rowCount() - 1, kColumnCount - 1));
}

void MemoryBreakdownModel::clear() {
  if (rows_.empty()) return;
  beginResetModel();
  rows_.clear();
  endResetModel();
}

// ---- LayerGroupModel ----

int LayerGroupModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(groups_.size());
}
int LayerGroupModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant LayerGroupModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const KvLayerGroup& g = groups_[static_cast<size_t>(index.row())];
  if (role == Qt::TextAlignmentRole && index.column() != kGroupColumn) return right_aligned(role);
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (index.column()) {
    case kGroupColumn: return QString::fromStdString(g.name);
    case kLayersColumn: return g.num_layers;
    case kWindowColumn: return g.window_tokens;
    case kBytesPerLayerColumn: return g.bytes_per_token;
    case kBytesColumn: return g.bytes_per_token * g.num_layers;
    default: return {};
  }
}

QVariant LayerGroupModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  static const char* const kNames[] = {"Layer group", "Layers", "Window", "Bytes/token/layer", "Bytes/token"};
  return section >= 0 && section < kColumnCount ? QString(kNames[section]) : QVariant();
}

void LayerGroupModel::set_layout(const KvLayout& layout) {
  beginResetModel();
  groups_ = layout.groups();
  endResetModel();
}

void LayerGroupModel::clear() {
  if (groups_.empty()) return;
  beginResetModel();
  groups_.clear();
  endResetModel();
}

// ---- CapacityModel ----

int CapacityModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(contexts_.size());
}
int CapacityModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : 1 + static_cast<int>(labels_.size());
}

QVariant CapacityModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  if (role == Qt::TextAlignmentRole) return right_aligned(role);
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const size_t row = static_cast<size_t>(index.row());
  if (index.column() == 0) return QVariant::fromValue<qlonglong>(contexts_[row]);
  return QVariant::fromValue<qlonglong>(users_[static_cast<size_t>(index.column() - 1)][row]);
}

QVariant CapacityModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  if (section == 0) return QStringLiteral("Context (tokens)");
  return section - 1 < labels_.size() ? QVariant(labels_[section - 1]) : QVariant();
}

void CapacityModel::set_analysis(const Analysis& analysis) {
  QStringList labels;
  for (const SchemeAnswer& s : analysis.schemes) labels << QString::fromStdString(s.label);
  const bool same_shape = labels.size() == labels_.size() && analysis.contexts.size() == contexts_.size();
  if (!same_shape) beginResetModel();
  labels_ = std::move(labels);
  contexts_ = analysis.contexts;
  users_ = analysis.users;
  if (!same_shape) {
    endResetModel();
  } else {
    if (!contexts_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    emit headerDataChanged(Qt::Horizontal, 0, columnCount() - 1);
  }
}

// ---- ComparisonModel ----

int ComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int ComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant ComparisonModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::TextAlignmentRole && index.column() != kSchemeColumn && index.column() != kStatusColumn) {
    return right_aligned(role);
  }
  if (role == Qt::ToolTipRole && index.column() == kStatusColumn) return r.status;
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (index.column()) {
    case kSchemeColumn: return r.scheme;
    case kBytesPerTokenColumn: return r.kv_bytes_per_token;
    case kKvBudgetColumn:
      return role == Qt::EditRole ? QVariant(static_cast<double>(r.kv_budget_bytes) / kGiB)
                                  : QVariant(QString::number(static_cast<double>(r.kv_budget_bytes) / kGiB, 'f', 2));
    case kKvTokensColumn: return QVariant::fromValue<qlonglong>(r.kv_cache_tokens);
    case kMaxConcurrencyColumn:
      return role == Qt::EditRole ? QVariant(r.max_concurrency) : QVariant(QString::number(r.max_concurrency, 'f', 2));
    case kRequestsAtMaxLenColumn: return QVariant::fromValue<qlonglong>(r.requests_at_max_len);
    case kStatusColumn: return r.status;
    default: return {};
  }
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  static const char* const kNames[] = {"Scheme", "KV bytes/token (model)", "KV budget/GPU (GiB)", "KV tokens",
                                       "Max concurrency", "Requests at max len", "Status"};
  return section >= 0 && section < kColumnCount ? QString(kNames[section]) : QVariant();
}

void ComparisonModel::set_analysis(const Analysis& analysis) {
  std::vector<Row> rows;
  for (const SchemeAnswer& s : analysis.schemes) {
    Row r;
    r.scheme = QString::fromStdString(s.label);
    if (!s.answer) {
      r.status = QString::fromStdString(s.error);
    } else {
      const MemoryPlan& p = s.answer->plan;
      r.kv_bytes_per_token = s.answer->kv_bytes_per_token;
      r.kv_budget_bytes = p.kv_budget_bytes;
      r.kv_cache_tokens = p.kv_cache_tokens;
      r.max_concurrency = p.max_concurrency;
      r.requests_at_max_len = p.requests_at_max_len;
      r.status = p.fits ? QStringLiteral("fits")
                        : QStringLiteral("does not fit: ") +
                              QString::fromStdString(p.problems.empty() ? std::string() : p.problems.front());
    }
    rows.push_back(std::move(r));
  }
  if (rows.size() != rows_.size()) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
    return;
  }
  rows_ = std::move(rows);
  if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, kColumnCount - 1));
}

}  // namespace kvplan::gui
