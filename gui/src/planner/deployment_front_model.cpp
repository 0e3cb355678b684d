#include "deployment_front_model.h"

#include <QBrush>
#include <QColor>

namespace kvplan::gui {

DeploymentFrontModel::DeploymentFrontModel(QObject* parent) : QAbstractTableModel(parent) {}

void DeploymentFrontModel::set_plan(const plan::DeploymentPlan& p) {
  beginResetModel();
  rows_.clear();
  for (size_t i : p.front) rows_.push_back(p.candidates[i]);
  users_ = p.users;
  endResetModel();
}

void DeploymentFrontModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

const plan::DeploymentCandidate& DeploymentFrontModel::candidate(int row) const {
  return rows_.at(static_cast<size_t>(row));
}

int DeploymentFrontModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DeploymentFrontModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant DeploymentFrontModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const plan::DeploymentCandidate& c = rows_[static_cast<size_t>(index.row())];
  const int column = index.column();
  if (role == Qt::ToolTipRole) {
    return QString::fromStdString(column == kBindingColumn ? c.binding_why
                                  : column == kStepTimesColumn ? c.step_time_source
                                                               : c.price_source);
  }
  if (role == Qt::ForegroundRole) {
    // A datasheet answer has no measured or published timing behind it: say so in red.
    return column == kStepTimesColumn && c.step_time_kind == "datasheet" ? QVariant(QBrush(QColor(190, 0, 0))) : QVariant();
  }
  if (role == Qt::TextAlignmentRole) {
    const bool text = column == kLabelColumn || column == kBindingColumn || column == kStepTimesColumn;
    return text ? QVariant() : QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const bool edit = role == Qt::EditRole;
  auto number = [edit](double v, int decimals) { return edit ? QVariant(v) : QVariant(QString::number(v, 'f', decimals)); };
  switch (column) {
    case kLabelColumn: return QString::fromStdString(c.label);
    case kGpusColumn: return QVariant::fromValue<qlonglong>(c.gpus_per_replica);
    case kReplicasColumn: return QVariant::fromValue<qlonglong>(c.replicas);
    case kReplicaUsdColumn: return number(c.replica_usd_per_hour(), 2);
    case kDeploymentUsdColumn: return number(c.usd_per_hour, 2);
    case kLoadColumn:
      if (edit) return c.capacity;
      // "+": the search stopped at its ceiling without failing the SLO (as the CLI writes it).
      return QString::number(c.capacity, 'g', users_ ? 10 : 3) + (c.unbounded ? QStringLiteral("+") : QString());
    case kBindingColumn: return QString::fromStdString(c.binding);
    case kTtftColumn: return number(c.p90_ttft_ms, 0);
    case kTpotColumn: return number(c.p90_tpot_ms, 1);
    case kStepTimesColumn: return QString::fromStdString(c.step_time_kind);
    default: return {};
  }
}

QVariant DeploymentFrontModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  switch (section) {
    case kLabelColumn: return QStringLiteral("Replica");
    case kGpusColumn: return QStringLiteral("GPUs");
    case kReplicasColumn: return QStringLiteral("Replicas");
    case kReplicaUsdColumn: return QStringLiteral("$/hour per replica");
    case kDeploymentUsdColumn: return QStringLiteral("$/hour (all replicas)");
    case kLoadColumn: return users_ ? QStringLiteral("Users/replica") : QStringLiteral("Req/s per replica");
    case kBindingColumn: return QStringLiteral("Binding");
    case kTtftColumn: return QStringLiteral("p90 TTFT ms");
    case kTpotColumn: return QStringLiteral("p90 TPOT ms");
    case kStepTimesColumn: return QStringLiteral("Step times");
    default: return {};
  }
}

}  // namespace kvplan::gui
