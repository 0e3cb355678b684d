// gui/src/planner/inputs_model.h — every setting of a plan::Scenario (plan/settings.h) as an editable
// table row (flag, value, check), bound to one typed Scenario. Each edit is checked at once: the
// setting's own rule (type, range, choices) beside that field, then plan::resolve and
// plan::simulation_config for rules that span fields, the ConfigError shown beside the field it
// names. Tooltips carry the setting's description, unit, default and scenario-file key.
//
//   InputsModel inputs;
//   inputs.set_value("kv-cache-dtype", "fp9");     // false; message("kv-cache-dtype") says why
//   plan::Scenario s = inputs.scenario();           // every valid value, typed
//   plan::SettingValues v = inputs.values();        // only values that differ from the defaults
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"

namespace kvplan::gui {

class InputsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kFlagColumn, kValueColumn, kCheckColumn, kColumnCount };
  // data(value cell, kChoicesRole): QStringList of suggested values (presets, enum names), empty
  // for free-form fields. The editor offers them in an editable combo box; any text may be typed.
  static constexpr int kChoicesRole = Qt::UserRole + 1;

  explicit InputsModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Sets one setting (by flag) and revalidates. Returns whether all inputs are valid afterwards;
  // throws std::out_of_range for a flag that is not a setting.
  bool set_value(const std::string& flag, const std::string& value);
  std::string value(const std::string& flag) const;
  // Replaces every value (absent settings take their defaults), e.g. from a scenario file.
  void set_values(const plan::SettingValues& values);
  void set_scenario(const plan::Scenario& scenario) { set_values(plan::non_default_values(scenario)); }

  // The typed scenario: every value that passes its own rule (a field whose text does not keeps its
  // default; valid() is false then).
  const plan::Scenario& scenario() const { return scenario_; }
  // The settings that differ from the defaults (typed, as plan writes them), so saved scenarios
  // stay short; simulation_values() only those the simulation alone reads.
  plan::SettingValues values() const { return plan::non_default_values(scenario_); }
  plan::SettingValues simulation_values() const;
  // The first message of a memory setting whose text does not pass its own rule ("" when none):
  // the analytic answer cannot be computed then.
  std::string memory_field_error() const;
  // The first message of any setting whose text does not pass its own rule ("" when none): such a
  // field holds its default in scenario(), so a file written from it would lose what was typed.
  // The message is the setting's ConfigError ("--max-num-seqs=abc must be an integer").
  std::string typed_field_error() const;

  bool valid() const { return valid_; }
  QString message(const std::string& flag) const;  // "" when that field is fine
  int row_of(const std::string& flag) const;       // -1 if absent
  QString first_error() const;
  QStringList choices(const std::string& flag) const;

 signals:
  // After every accepted edit or reset, valid or not.
  void inputs_changed();

 private:
  struct Field {
    const plan::Setting* setting = nullptr;
    std::string value;  // as typed
    QString message;
    bool typed_ok = true;  // the value passes the setting's own rule
  };

  void revalidate(bool notify = true);  // notify: emit dataChanged for changed messages
  int field_named_in(const std::string& message) const;

  std::vector<Field> fields_;
  plan::Scenario scenario_;
  bool valid_ = true;
  int last_edited_ = 0;
};

}  // namespace kvplan::gui
