#include "compare_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include <memory>

#include "compare_cells.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/settings.h"

namespace kvplan::gui {

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {
  columns_.emplace_back();
  columns_[0].id = next_id_++;
  compute_memory(columns_[0]);
  // A pinned search that failed (no SLO target, a trace that cannot be read) says why in its column,
  // and the next pinned column is searched.
  connect(&job_, &BackgroundJob::failed, this, [this](const QString& message) {
    const int i = index_of(searching_id_);
    searching_id_ = 0;
    if (i > 0) {
      columns_[static_cast<size_t>(i)].capacity_state = CompareColumn::Capacity::kFailed;
      columns_[static_cast<size_t>(i)].capacity_error = message;
      column_changed(i);
    }
    search_next();
  });
}

int CompareModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kRowCount; }
int CompareModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QString CompareModel::text(int row, int column) const {
  return compare_cell_text(row, columns_.at(static_cast<size_t>(column)), columns_[0]);
}

bool CompareModel::differs(int row, int column) const {
  if (column <= 0 || column >= columnCount()) return false;
  if (row == kDiffersRow) return !differing_settings(columns_[static_cast<size_t>(column)].scenario, columns_[0].scenario).isEmpty();
  // An answer still searched on either side is not known to differ.
  if (is_answer_row(row)) {
    const auto answered = [](const CompareColumn& c) { return c.capacity_state == CompareColumn::Capacity::kAnswered; };
    if (!answered(columns_[0]) || !answered(columns_[static_cast<size_t>(column)])) return false;
  }
  return text(row, column) != text(row, 0);
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const int row = index.row(), col = index.column();
  switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole: return text(row, col);
    case Qt::EditRole: {
      const std::optional<double> v = compare_cell_number(row, columns_[static_cast<size_t>(col)]);
      return v ? QVariant(*v) : QVariant(text(row, col));
    }
    case Qt::FontRole: {
      if (!differs(row, col)) return {};
      QFont f;
      f.setBold(true);
      return f;
    }
    case Qt::BackgroundRole:
      return differs(row, col) ? QVariant(QBrush(QColor(0xff, 0xf0, 0xc0))) : QVariant();
    default: return {};
  }
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return compare_row_name(section);
  if (section == 0) return QStringLiteral("Current");
  return section > 0 && section < columnCount() ? QVariant(QStringLiteral("Pinned %1").arg(section)) : QVariant();
}

void CompareModel::compute_memory(CompareColumn& c) {
  c.memory.reset();
  c.memory_error.clear();
  try {
    c.memory = plan::answer_memory(c.scenario);
  } catch (const std::exception& e) {  // ConfigError names the flag, the value and the rule
    c.memory_error = QString::fromUtf8(e.what());
  }
}

void CompareModel::set_answer(CompareColumn& c, const plan::CapacityAnswer& a) {
  c.capacity = a;
  c.summary = plan::summarize_capacity(a);
  c.capacity_state = CompareColumn::Capacity::kAnswered;
  c.capacity_error.clear();
}

void CompareModel::column_changed(int column) {
  emit dataChanged(index(0, column), index(kRowCount - 1, column));
  // Highlights and the "what differs" row of every other column are judged against column 0.
  if (column == 0 && columnCount() > 1) emit dataChanged(index(0, 1), index(kRowCount - 1, columnCount() - 1));
}

void CompareModel::set_current(const plan::Scenario& s) {
  CompareColumn& c = columns_[0];
  c.scenario = s;
  compute_memory(c);
  c.capacity.reset();
  c.capacity_error.clear();
  c.capacity_state = CompareColumn::Capacity::kSearching;  // the window searches it
  column_changed(0);
}

void CompareModel::set_current_capacity(const plan::CapacityAnswer& a) {
  set_answer(columns_[0], a);
  column_changed(0);
  share_current_answer();
}

void CompareModel::set_current_capacity_failed(const QString& why) {
  CompareColumn& c = columns_[0];
  c.capacity.reset();
  c.capacity_state = CompareColumn::Capacity::kFailed;
  c.capacity_error = why;
  column_changed(0);
}

bool CompareModel::pin_current() {
  if (columnCount() >= kMaxColumns) return false;
  CompareColumn pinned = columns_[0];
  pinned.id = next_id_++;
  // An answer the window is still searching is searched here too: the window's search follows the
  // inputs and may be replaced before it answers.
  if (pinned.capacity_state != CompareColumn::Capacity::kAnswered) {
    pinned.capacity.reset();
    pinned.capacity_state = CompareColumn::Capacity::kSearching;
    pinned.capacity_error.clear();
  }
  const int at = columnCount();
  beginInsertColumns({}, at, at);
  columns_.push_back(std::move(pinned));
  endInsertColumns();
  search_next();
  return true;
}

bool CompareModel::remove_pinned(int column) {
  if (column <= 0 || column >= columnCount()) return false;
  const bool searched = columns_[static_cast<size_t>(column)].id == searching_id_;
  if (searched) {
    job_.cancel();  // its result would be dropped anyway; stop spending the CPU on it
    searching_id_ = 0;
  }
  beginRemoveColumns({}, column, column);
  columns_.erase(columns_.begin() + column);
  endRemoveColumns();
  search_next();
  return true;
}

void CompareModel::set_capacity_request(const plan::CapacityRequest& r) {
  request_.tolerance = r.tolerance;
  request_.start = r.start;
}

int CompareModel::index_of(uint64_t id) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

void CompareModel::share_current_answer() {
  const plan::SettingValues current = plan::non_default_values(columns_[0].scenario);
  for (size_t i = 1; i < columns_.size(); ++i) {
    CompareColumn& c = columns_[i];
    if (c.capacity_state != CompareColumn::Capacity::kSearching) continue;
    if (plan::non_default_values(c.scenario) != current) continue;
    if (c.id == searching_id_) {
      job_.cancel();
      searching_id_ = 0;
    }
    set_answer(c, *columns_[0].capacity);
    column_changed(static_cast<int>(i));
  }
  search_next();
}

void CompareModel::search_next() {
  if (searching_id_ != 0) return;
  for (const CompareColumn& c : columns_) {
    if (c.id == columns_[0].id || c.capacity_state != CompareColumn::Capacity::kSearching) continue;
    const uint64_t id = c.id;
    searching_id_ = id;
    auto out = std::make_shared<plan::CapacityAnswer>();
    plan::CapacityRequest request = request_;
    job_.start(
        [out, scenario = c.scenario, request](const BackgroundJob::Control& control) mutable {
          request.should_stop = control.stop;
          *out = plan::find_capacity(scenario, request);
        },
        [this, out, id] {
          searching_id_ = 0;
          const int i = index_of(id);
          if (i > 0) {
            set_answer(columns_[static_cast<size_t>(i)], *out);
            column_changed(i);
          }
          search_next();
        });
    return;
  }
}

}  // namespace kvplan::gui
