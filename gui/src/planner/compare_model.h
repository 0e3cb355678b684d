// gui/src/planner/compare_model.h — two to four scenarios side by side: column 0 is the window's
// current scenario, columns 1..3 are pinned copies. Each column holds its scenario, its memory answer
// (computed at once) and its capacity answer: the current one is handed in by the window (its answer
// panel already searches it), the pinned ones are searched here one after another on one
// BackgroundJob. Rows are quantities; a cell that differs from the current column is bold on a
// tinted background, and the "what differs" row names the settings that differ.
//
//   CompareModel m;  m.set_current(scenario);        // memory rows now, capacity "searching…"
//   m.set_current_capacity(answer);                  // from the window's own search
//   m.pin_current();                                 // column 1: searched in the background
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

#include "background_job.h"
#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::gui {

// One compared scenario and what is known of its answers.
struct CompareColumn {
  enum class Capacity { kSearching, kAnswered, kFailed };
  uint64_t id = 0;  // stable while columns before it are removed
  plan::Scenario scenario;
  std::optional<plan::MemoryAnswer> memory;  // empty when the scenario does not resolve
  QString memory_error;                      // the ConfigError message then
  Capacity capacity_state = Capacity::kSearching;
  std::optional<plan::CapacityAnswer> capacity;
  plan::CapacitySummary summary;             // of `capacity`
  QString capacity_error;                    // kFailed: why (e.g. no SLO target)
};

class CompareModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Row {
    kModelRow, kGpuRow, kEngineRow, kKvCacheRow, kWorkloadRow, kSloRow, kDiffersRow,
    kHeadlineRow, kBindingRow, kTtftRow, kTpotRow, kUsdPerHourRow, kUsdPerUserRow, kSourceRow,
    kWeightsRow, kKvBudgetRow, kKvTokensRow, kKvBytesPerTokenRow, kRequestsAtMaxLenRow, kRowCount
  };
  static constexpr int kMaxColumns = 4;  // Current and three pinned

  explicit CompareModel(QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  // DisplayRole: text; EditRole: the number for numeric rows (users, bytes, tokens), else text;
  // FontRole / BackgroundRole: bold on a tint where the cell differs from column 0's; ToolTipRole:
  // the full text (bindings and sources are long).
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Column 0's scenario: memory answer now, capacity "searching…" until set_current_capacity.
  void set_current(const plan::Scenario& s);
  void set_current_capacity(const plan::CapacityAnswer& a);
  // The window's search failed (no SLO target, bad input): the answer rows say why.
  void set_current_capacity_failed(const QString& why);
  // Copies column 0 into a new pinned column (with its capacity answer when it has one, else it is
  // searched). False when four columns are shown already.
  bool pin_current();
  // Columns 1..count-1; a search of it is stopped. False for column 0 or out of range.
  bool remove_pinned(int column);
  // Tolerance and first load of the pinned columns' searches (should_stop and on_probe unused):
  // the window passes its own, so a pinned copy answers exactly as the answer panel did.
  void set_capacity_request(const plan::CapacityRequest& r);

  const CompareColumn& column(int c) const { return columns_.at(static_cast<size_t>(c)); }
  // The cell's text; "searching…" for an answer row of a column still searched.
  QString text(int row, int column) const;
  bool differs(int row, int column) const;
  BackgroundJob& job() { return job_; }

 private:
  void compute_memory(CompareColumn& c);
  void set_answer(CompareColumn& c, const plan::CapacityAnswer& a);
  void column_changed(int column);
  void search_next();
  int index_of(uint64_t id) const;
  // Pinned columns still searched whose scenario is the current one take its answer.
  void share_current_answer();

  std::vector<CompareColumn> columns_;  // [0] current, always present
  uint64_t next_id_ = 1;
  uint64_t searching_id_ = 0;  // the pinned column the job answers (0: none)
  plan::CapacityRequest request_;
  BackgroundJob job_;
};

}  // namespace kvplan::gui
