// gui/src/planner/results_models.h — table models over the live analytic answer. Each one feeds a
// table and a chart (the chart reads the model, never the analysis), so what is plotted is what the
// table shows.
//
//   MemoryBreakdownModel memory;  memory.set_plan(answer.plan);   // rows sum to the GPU's memory
//   CapacityModel capacity;       capacity.set_analysis(analysis); // column 0 context, 1.. schemes
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

#include "analysis.h"

namespace kvplan::gui {

// Where one GPU's memory goes: the engine's subtracted terms, the usable KV blocks, the budget's
// remainder smaller than a block (fragmentation), and what the engine leaves outside its budget.
class MemoryBreakdownModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kTermColumn, kGibColumn, kBytesColumn, kHowColumn, kColumnCount };
  struct Row {
    QString term;
    int64_t bytes = 0;
    QString how;
  };

  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_plan(const MemoryPlan& plan);
  void clear();
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
};

// KV bytes per token per layer group on one GPU.
class LayerGroupModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kGroupColumn, kLayersColumn, kWindowColumn, kBytesPerLayerColumn, kBytesColumn, kColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_layout(const KvLayout& layout);
  void clear();

 private:
  std::vector<KvLayerGroup> groups_;
};

// Users that fit against context length: row per context length, column 0 the length in tokens,
// column 1 + s the users of scheme s.
class CapacityModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Keeps the shape (rows, columns) when it is unchanged so views and charts update in place.
  void set_analysis(const Analysis& analysis);
  int scheme_count() const { return static_cast<int>(labels_.size()); }

 private:
  QStringList labels_;
  std::vector<int64_t> contexts_;
  std::vector<std::vector<int64_t>> users_;  // [schemes][contexts]
};

// One row per compared scheme: what it stores per token and what fits.
class ComparisonModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kSchemeColumn, kBytesPerTokenColumn, kKvBudgetColumn, kKvTokensColumn, kMaxConcurrencyColumn,
    kRequestsAtMaxLenColumn, kStatusColumn, kColumnCount
  };
  struct Row {
    QString scheme;
    double kv_bytes_per_token = 0;  // whole model, one copy
    int64_t kv_budget_bytes = 0;    // per GPU
    int64_t kv_cache_tokens = 0;
    double max_concurrency = 0;
    int64_t requests_at_max_len = 0;
    QString status;                 // "fits", "does not fit: ...", or the input error
  };

  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_analysis(const Analysis& analysis);
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
};

}  // namespace kvplan::gui
