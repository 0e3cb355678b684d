// gui/src/planner/compare_view.h — the Compare tab: the CompareModel's table (quantities down,
// scenarios across) with "Pin current scenario" and "Remove" buttons. The window feeds it the
// current scenario and the answer its own panel found; pinned copies are searched here.
//
//   CompareView compare;
//   compare.set_current(scenario);  compare.set_current_capacity(answer);
//   compare.pin_current();          // a new column, its capacity searched in the background
#pragma once

#include <QWidget>

#include "compare_model.h"

class QLabel;
class QPushButton;
class QTableView;

namespace kvplan::gui {

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  void set_current(const plan::Scenario& s) { model_.set_current(s); }
  void set_current_capacity(const plan::CapacityAnswer& a) { model_.set_current_capacity(a); }
  void set_current_capacity_failed(const QString& why) { model_.set_current_capacity_failed(why); }
  bool pin_current();
  bool remove_pinned(int column) { return model_.remove_pinned(column); }

  CompareModel& model() { return model_; }
  BackgroundJob& job() { return model_.job(); }
  QTableView* table() const { return table_; }

 private:
  void update_buttons();

  CompareModel model_;
  QTableView* table_ = nullptr;
  QPushButton* pin_ = nullptr;
  QPushButton* remove_ = nullptr;
  QLabel* note_ = nullptr;
};

}  // namespace kvplan::gui
