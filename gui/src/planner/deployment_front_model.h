// gui/src/planner/deployment_front_model.h — the Pareto front of a `kvplan plan` search (one replica's
// cost per hour against the load it serves) as a table, one row per front point, cheapest replica
// first: the same rows as `kvplan plan`'s front and front.csv. The Deployments view shows it as a
// table and draws its chart from the same plan.
//
//   DeploymentFrontModel m;
//   m.set_plan(plan::search_deployments(q));
//   m.candidate(0).label;   // "1 x l4, tp1 pp1"
#pragma once

#include <QAbstractTableModel>

#include <optional>

#include "kvplan/plan/deployment.h"

namespace kvplan::gui {

class DeploymentFrontModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kLabelColumn,
    kGpusColumn,          // GPUs per replica
    kReplicasColumn,      // replicas for the target
    kReplicaUsdColumn,    // $/hour of one replica
    kDeploymentUsdColumn, // $/hour of all replicas
    kLoadColumn,          // users (or req/s) per replica
    kBindingColumn,
    kTtftColumn,          // p90 TTFT at the answer, ms
    kTpotColumn,          // p90 TPOT at the answer, ms
    kStepTimesColumn,     // published, measured, transferred, datasheet, given
    kColumnCount
  };

  explicit DeploymentFrontModel(QObject* parent = nullptr);

  void set_plan(const plan::DeploymentPlan& p);
  void clear();
  // Row r's candidate (r in [0, rowCount())).
  const plan::DeploymentCandidate& candidate(int row) const;
  bool users() const { return users_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  // DisplayRole: text with units; EditRole: the number (or text) itself, for sorting and charts;
  // ForegroundRole: red for datasheet step times (an unvalidated latency answer).
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<plan::DeploymentCandidate> rows_;
  bool users_ = true;
};

}  // namespace kvplan::gui
