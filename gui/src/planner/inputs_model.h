// gui/src/planner/inputs_model.h — every memory and simulation flag as an editable table row (flag,
// value, check). Each edit is validated at once with the CLI's own build_scenario/build_simulation;
// the ConfigError message is shown beside the field it names.
//
//   InputsModel inputs;
//   inputs.set_value("kv-cache-dtype", "fp9");   // false; message("kv-cache-dtype") says why
//   cli::FlagValues mem = inputs.memory_flags();  // only values that differ from the defaults
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "flag_parse.h"

namespace kvplan::gui {

class InputsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kFlagColumn, kValueColumn, kCheckColumn, kColumnCount };
  // data(value cell, kChoicesRole): QStringList of suggested values (presets, enum names), empty
  // for free-form fields. The editor offers them in an editable combo box; any text may be typed.
  static constexpr int kChoicesRole = Qt::UserRole + 1;
  enum class Section { kMemory, kSimulation };

  explicit InputsModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Sets one flag and revalidates. Returns whether all inputs are valid afterwards; throws
  // std::out_of_range for a flag that is not a field.
  bool set_value(const std::string& flag, const std::string& value);
  std::string value(const std::string& flag) const;
  // Replaces every value (absent flags take their defaults), e.g. from a scenario file.
  void set_flags(const cli::FlagValues& memory, const cli::FlagValues& simulation);

  // Non-default values only, so saved scenarios stay short.
  cli::FlagValues memory_flags() const;
  cli::FlagValues simulation_flags() const;

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
    std::string name;
    Section section = Section::kMemory;
    std::string default_value;
    std::string value;
    QString message;
  };

  void revalidate(bool notify = true);  // notify: emit dataChanged for changed messages
  int field_named_in(const std::string& message) const;

  std::vector<Field> fields_;
  bool valid_ = true;
  int last_edited_ = 0;
};

}  // namespace kvplan::gui
