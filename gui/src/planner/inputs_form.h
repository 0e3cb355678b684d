// gui/src/planner/inputs_form.h — the planner's inputs as a form a planner reads: one collapsible
// group per settings section (Model, Hardware, Engine, KV cache, Workload, SLO, Cost), each setting a
// labelled editor that fits its type (searchable drop-downs for presets and choices, spin boxes with
// the unit and range, check boxes, line edits for optional values), only the settings that apply to
// the chosen engine, KV scheme and workload (setting_relevance.h), the rarely-set ones in a
// collapsed "Advanced" group. The form edits an InputsModel, which stays the one source of truth:
// the ConfigError of a bad value (the CLI's message) appears in red under its field.
//
//   InputsModel inputs;
//   InputsForm form(inputs);                       // in a QScrollArea
//   inputs.set_value("engine", "sglang");          // the form shows --mem-fraction-static now
#pragma once

#include <QString>
#include <QWidget>

#include <string>
#include <vector>

#include "collapsible_section.h"
#include "inputs_model.h"

class QFormLayout;
class QLabel;

namespace kvplan::gui {

class InputsForm : public QWidget {
  Q_OBJECT

 public:
  explicit InputsForm(InputsModel& model, QWidget* parent = nullptr);

  // The editor of a setting (QComboBox, QSpinBox, QDoubleSpinBox, QCheckBox or QLineEdit); nullptr
  // if there is no such setting.
  QWidget* editor(const std::string& flag) const;
  // The text under the field: InputsModel::message(flag), "" when the value is fine.
  QString shown_message(const std::string& flag) const;
  // Whether the setting is offered under the current engine, scheme and workload (a setting in a
  // collapsed group counts as offered).
  bool is_shown(const std::string& flag) const;
  // Opens or folds every section's "Advanced" group.
  void set_advanced_expanded(bool expanded);
  // The section groups, top to bottom, and one by its settings-file name ("kv_cache").
  std::vector<CollapsibleSection*> sections() const;
  CollapsibleSection* advanced_group(const std::string& section) const;

 private:
  struct Section {
    std::string name;  // "kv_cache"
    CollapsibleSection* group = nullptr;
    QFormLayout* basic = nullptr;
    CollapsibleSection* advanced = nullptr;
    QFormLayout* advanced_form = nullptr;
  };
  struct Field {
    const plan::Setting* setting = nullptr;
    Section* section = nullptr;
    QFormLayout* form = nullptr;  // basic or advanced_form of its section
    QWidget* cell = nullptr;      // the editor and the message under it: the form row's field
    QWidget* editor = nullptr;
    QLabel* message = nullptr;
    bool shown = true;
    bool marked = false;          // the editor carries the red border
  };

  void build();
  QWidget* make_editor(Field& field);
  void commit(const plan::Setting& setting, const QString& text);
  // Model -> form: values, messages and which rows are offered. Never rebuilds a widget.
  void refresh();
  void show_value(Field& field);
  void show_message(Field& field);
  // A setting whose 0 stands for a default: what it stands for (zero_default.h), as the empty line
  // edit's placeholder or the spin box's text at 0.
  void show_zero_meaning(Field& field, const plan::Scenario& scenario);
  // After a scenario is loaded: open the Advanced groups that hold a changed value.
  void open_changed_advanced();
  const Field* find(const std::string& flag) const;

  InputsModel& model_;
  std::vector<Section> sections_;  // sized once in build(): Field::section points into it
  std::vector<Field> fields_;
  bool writing_ = false;  // the form is writing the model's values back into its editors
};

}  // namespace kvplan::gui
