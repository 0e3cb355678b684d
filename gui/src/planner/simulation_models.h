// gui/src/planner/simulation_models.h — table models over a simulation outcome: KV usage and
// fragmentation over simulated time, latency CDFs, and latency percentiles against load (with the
// SLO targets for the chart's reference lines).
//
//   TimeSeriesModel ts;  ts.set_rows(outcome.result.timeseries);
//   LatencyCdfModel cdf; cdf.set_outcome(outcome, 200);   // at most 200 rows
#pragma once

#include <QAbstractTableModel>

#include <array>
#include <vector>

#include "simulation_worker.h"

namespace kvplan::gui {

class TimeSeriesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kTimeColumn, kUsedColumn, kAllocatedColumn, kFragmentationColumn, kCapacityColumn, kRunningColumn,
    kWaitingColumn, kColumnCount
  };
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  void set_rows(std::vector<sim::TimeSeriesRow> rows);

 private:
  std::vector<sim::TimeSeriesRow> rows_;
};

// Row i: the fraction of requests at or below each column's latency (nearest-rank quantiles).
class LatencyCdfModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kFractionColumn, kTtftColumn, kTpotColumn, kE2eColumn, kColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  void set_outcome(const SimulationOutcome& outcome, int max_rows);

 private:
  std::vector<std::array<double, kColumnCount>> rows_;
};

class LoadSweepModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kLoadColumn, kTtftP50Column, kTtftP90Column, kTtftP99Column, kTpotP50Column, kTpotP90Column, kTpotP99Column,
    kGoodputColumn, kMeetsColumn, kColumnCount
  };
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  void set_outcome(const SimulationOutcome& outcome, const sim::Slo& slo, bool users);
  const sim::Slo& slo() const { return slo_; }
  bool load_is_users() const { return users_; }

 private:
  std::vector<LoadPoint> points_;
  sim::Slo slo_;
  bool users_ = false;
};

}  // namespace kvplan::gui
