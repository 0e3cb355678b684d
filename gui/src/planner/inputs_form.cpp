#include "inputs_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

#include "kvplan/plan/setting_help.h"
#include "setting_label.h"
#include "setting_relevance.h"
#include "zero_default.h"

namespace kvplan::gui {

namespace {

constexpr int kAdvancedIndent = 12;  // px: an Advanced group's rows sit under its header's arrow
constexpr int kSpinDecimals = 6;  // the finest step of any bounded number setting is 1e-6 (time-scale)

// A number as the command line would take it: no exponent, no trailing zeros ("0.9", "2000").
QString plain_number(double v, int decimals) {
  QString t = QString::number(v, 'f', decimals);
  if (t.contains('.')) {
    while (t.endsWith('0')) t.chop(1);
    if (t.endsWith('.')) t.chop(1);
  }
  return t;
}

// Shows 0.9 as "0.9", not "0.900000": the spin box keeps six decimals for its steps and rounding.
class PlainDoubleSpinBox : public QDoubleSpinBox {
 public:
  using QDoubleSpinBox::QDoubleSpinBox;
  QString textFromValue(double value) const override { return plain_number(value, decimals()); }
};

bool numeric(const plan::Setting& s) { return s.type == plan::ValueType::kInteger || s.type == plan::ValueType::kNumber; }

// A spin box cannot show "unset", nor a range it cannot hold: optional and unbounded numbers are
// typed into a line edit instead. An integer whose only maximum is its type's (block-size up to
// 2^31 - 1) counts as unbounded: a spin box would offer a range that means nothing, and a 10-digit
// width.
bool fits_spin_box(const plan::Setting& s) {
  if (!numeric(s) || s.optional || !s.minimum || !s.maximum) return false;
  if (s.type == plan::ValueType::kNumber) return true;
  return *s.minimum >= std::numeric_limits<int>::min() && *s.maximum < std::numeric_limits<int>::max();
}

// Short units read well inside the box ("ms", "GiB"); long ones ("fraction of GPU memory") would
// squeeze the number, and the label carries them anyway.
QString spin_suffix(const plan::Setting& s) {
  constexpr size_t kMaxSuffixChars = 16;
  if (s.unit.size() > kMaxSuffixChars) return {};
  return QStringLiteral(" ") + QString::fromStdString(s.unit);
}

QString tooltip(const plan::Setting& s) {
  return QStringLiteral("--%1 (%2 in a scenario file)\n%3")
      .arg(QString::fromStdString(s.flag), QString::fromStdString(s.file_key()),
           QString::fromStdString(plan::setting_help(s)));
}

// What an empty field means, shown greyed inside it.
QString placeholder(const plan::Setting& s) {
  if (!s.default_note.empty()) return QString::fromStdString(s.default_note);
  return s.default_text.empty() ? QStringLiteral("unset") : QString::fromStdString(s.default_text);
}

// An editable drop-down whose list filters as one types (any part of a name, any case); text that
// is not in the list is still taken (a Hugging Face id, a config.json path).
QComboBox* searchable_combo(const QStringList& choices) {
  auto* combo = new QComboBox;
  combo->setEditable(true);
  combo->setInsertPolicy(QComboBox::NoInsert);
  combo->addItems(choices);
  combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  combo->setMinimumContentsLength(6);
  auto* completer = new QCompleter(combo->model(), combo);
  completer->setFilterMode(Qt::MatchContains);
  completer->setCaseSensitivity(Qt::CaseInsensitive);
  completer->setCompletionMode(QCompleter::PopupCompletion);
  combo->setCompleter(completer);
  return combo;
}

}  // namespace

InputsForm::InputsForm(InputsModel& model, QWidget* parent) : QWidget(parent), model_(model) {
  build();
  refresh();
  connect(&model_, &InputsModel::inputs_changed, this, &InputsForm::refresh);
  connect(&model_, &QAbstractItemModel::modelReset, this, &InputsForm::open_changed_advanced);
}

void InputsForm::build() {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  const std::vector<std::string>& names = plan::setting_sections();
  sections_.resize(names.size());  // never resized again: fields point into it
  for (size_t i = 0; i < names.size(); ++i) {
    Section& sec = sections_[i];
    sec.name = names[i];
    sec.group = new CollapsibleSection(QString::fromStdString(section_title(sec.name)));
    sec.group->setObjectName(QString::fromStdString("section_" + sec.name));
    sec.group->set_header_bold(true);
    auto* body = new QVBoxLayout(sec.group->body());
    body->setContentsMargins(12, 0, 0, 6);
    sec.basic = new QFormLayout;
    body->addLayout(sec.basic);
    sec.advanced = new CollapsibleSection(QStringLiteral("Advanced"));
    sec.advanced->setObjectName(QString::fromStdString("advanced_" + sec.name));
    sec.advanced->set_expanded(false);
    sec.advanced_form = new QFormLayout(sec.advanced->body());
    sec.advanced_form->setContentsMargins(kAdvancedIndent, 0, 0, 0);
    body->addWidget(sec.advanced);
    for (QFormLayout* f : {sec.basic, sec.advanced_form}) {
      f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
      f->setRowWrapPolicy(QFormLayout::DontWrapRows);
      f->setLabelAlignment(Qt::AlignLeft);
    }
    layout->addWidget(sec.group);
  }
  layout->addStretch(1);

  const int label_width = fontMetrics().horizontalAdvance(QStringLiteral("Tensor parallel size (GPUs)")) + 8;
  fields_.reserve(plan::settings().size());
  for (const plan::Setting& s : plan::settings()) {
    Field f;
    f.setting = &s;
    for (Section& sec : sections_) {
      if (sec.name == s.section) f.section = &sec;
    }
    if (f.section == nullptr) continue;  // a section the form does not know: the "All flags" tab has it
    f.form = is_advanced(s) ? f.section->advanced_form : f.section->basic;
    f.cell = new QWidget;
    auto* cell = new QVBoxLayout(f.cell);
    cell->setContentsMargins(0, 0, 0, 0);
    cell->setSpacing(1);
    f.editor = make_editor(f);
    f.editor->setObjectName(QString::fromStdString("input_" + s.flag));
    f.editor->setToolTip(tooltip(s));
    if (s.flag == "model") {
      // A local config.json is as good a model as a preset.
      auto* row = new QHBoxLayout;
      row->addWidget(f.editor, 1);
      auto* open = new QPushButton(QStringLiteral("Open config.json…"));
      open->setObjectName(QStringLiteral("open_model_config"));
      connect(open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a model's config.json"), QString(),
                                                          QStringLiteral("Model config (*.json);;All files (*)"));
        if (!path.isEmpty()) model_.set_value("model", path.toStdString());
      });
      row->addWidget(open);
      cell->addLayout(row);
    } else {
      cell->addWidget(f.editor);
    }
    f.message = new QLabel;
    f.message->setObjectName(QString::fromStdString("message_" + s.flag));
    f.message->setWordWrap(true);
    f.message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    f.message->setStyleSheet(QStringLiteral("color: #b00020"));
    f.message->hide();
    cell->addWidget(f.message);
    auto* label = new QLabel(QString::fromStdString(setting_label(s)));
    // One label width in every group, so the editors line up; a long label wraps instead of
    // pushing its editor out of the dock. Advanced rows are indented by their group's margin.
    label->setWordWrap(true);
    label->setFixedWidth(label_width - (f.form == f.section->basic ? 0 : kAdvancedIndent));
    label->setToolTip(tooltip(s));
    label->setBuddy(f.editor);
    f.form->addRow(label, f.cell);
    fields_.push_back(f);
  }
}

QWidget* InputsForm::make_editor(Field& field) {
  const plan::Setting& s = *field.setting;
  const QStringList choices = model_.choices(s.flag);
  if (s.type == plan::ValueType::kBoolean && !s.optional) {
    auto* box = new QCheckBox;
    connect(box, &QCheckBox::toggled, this,
            [this, &s](bool on) { commit(s, on ? QStringLiteral("true") : QStringLiteral("false")); });
    return box;
  }
  if (!choices.isEmpty()) {
    QComboBox* combo = searchable_combo(choices);
    combo->lineEdit()->setPlaceholderText(placeholder(s));
    // A pick from the list (or the filtered list) commits at once; typed text when it is finished.
    connect(combo, &QComboBox::currentIndexChanged, this, [this, &s, combo] { commit(s, combo->currentText()); });
    connect(combo, &QComboBox::activated, this, [this, &s, combo] { commit(s, combo->currentText()); });
    connect(combo->lineEdit(), &QLineEdit::editingFinished, this, [this, &s, combo] { commit(s, combo->currentText()); });
    return combo;
  }
  if (fits_spin_box(s) && s.type == plan::ValueType::kInteger) {
    auto* spin = new QSpinBox;
    spin->setRange(static_cast<int>(*s.minimum), static_cast<int>(*s.maximum));
    spin->setSuffix(spin_suffix(s));
    spin->setKeyboardTracking(false);  // one commit when typing ends, not one per digit
    connect(spin, &QSpinBox::valueChanged, this, [this, &s](int v) { commit(s, QString::number(v)); });
    return spin;
  }
  if (fits_spin_box(s)) {
    auto* spin = new PlainDoubleSpinBox;
    spin->setLocale(QLocale::c());  // "0.9" as on the command line, whatever the desktop's locale
    spin->setDecimals(kSpinDecimals);
    spin->setRange(*s.minimum, *s.maximum);
    // Steps of about a hundredth of the range's order, so fractions step by 0.01 and ms by 1-10.
    const double span = *s.maximum - *s.minimum;
    spin->setSingleStep(span <= 1 ? 0.01 : span <= 100 ? 0.1 : 1);
    spin->setSuffix(spin_suffix(s));
    spin->setKeyboardTracking(false);
    connect(spin, &QDoubleSpinBox::valueChanged, this,
            [this, &s](double v) { commit(s, plain_number(v, kSpinDecimals)); });
    return spin;
  }
  auto* edit = new QLineEdit;
  edit->setPlaceholderText(placeholder(s));
  connect(edit, &QLineEdit::editingFinished, this, [this, &s, edit] { commit(s, edit->text()); });
  return edit;
}

void InputsForm::commit(const plan::Setting& setting, const QString& text) {
  if (writing_) return;  // a value the form is showing, not one the user typed
  const QString typed = text.trimmed();
  // An emptied field whose 0 stands for a default (its placeholder says which) is that 0.
  if (typed.isEmpty() && zero_means_something(setting)) return (void)model_.set_value(setting.flag, "0");
  model_.set_value(setting.flag, typed.toStdString());
}

void InputsForm::refresh() {
  writing_ = true;
  const plan::Scenario& scenario = model_.scenario();
  for (Field& f : fields_) {
    show_value(f);
    show_message(f);
    show_zero_meaning(f, scenario);
    // A field whose text is not the default stays in view even when its text is invalid (the model
    // keeps the default in scenario() then).
    const bool shown = setting_shown(*f.setting, scenario) || model_.value(f.setting->flag) != f.setting->default_text ||
                       !f.message->text().isEmpty();
    if (shown != f.shown) {
      f.form->setRowVisible(f.cell, shown);
      f.shown = shown;
    }
  }
  // Each group's title counts what it offers and what was changed or is wrong, so a collapsed
  // group still says that it holds something to look at.
  for (Section& sec : sections_) {
    int offered = 0, changed = 0, errors = 0, section_errors = 0;
    for (const Field& f : fields_) {
      if (f.section != &sec) continue;
      const bool bad = !f.message->text().isEmpty();
      section_errors += bad ? 1 : 0;
      if (f.form != sec.advanced_form || !f.shown) continue;
      ++offered;
      changed += model_.value(f.setting->flag) != f.setting->default_text ? 1 : 0;
      errors += bad ? 1 : 0;
    }
    QString title = QStringLiteral("Advanced (%1").arg(offered);
    if (changed > 0) title += QStringLiteral(", %1 changed").arg(changed);
    if (errors > 0) title += QStringLiteral(", %1 invalid").arg(errors);
    sec.advanced->set_title(title + QStringLiteral(")"));
    sec.advanced->setVisible(offered > 0);
    if (errors > 0) sec.advanced->set_expanded(true);  // an error is shown at its field, never folded away
    QString group_title = QString::fromStdString(section_title(sec.name));
    if (section_errors > 0) group_title += QStringLiteral(" — %1 invalid").arg(section_errors);
    sec.group->set_title(group_title);
    if (section_errors > 0) sec.group->set_expanded(true);
  }
  writing_ = false;
}

void InputsForm::show_value(Field& f) {
  const QString text = QString::fromStdString(model_.value(f.setting->flag));
  const QSignalBlocker block(f.editor);
  if (auto* box = qobject_cast<QCheckBox*>(f.editor)) {
    box->setChecked(text == QStringLiteral("true"));
  } else if (auto* combo = qobject_cast<QComboBox*>(f.editor)) {
    if (combo->currentText() != text) {
      // The list's entry when there is one, so picking it again later is a change of index.
      const int i = combo->findText(text, Qt::MatchFixedString | Qt::MatchCaseSensitive);
      if (i >= 0) combo->setCurrentIndex(i);
      combo->setEditText(text);
    }
  } else if (auto* spin = qobject_cast<QSpinBox*>(f.editor)) {
    bool ok = false;
    const qlonglong v = text.toLongLong(&ok);
    // Text the box cannot hold (out of range, not a number) leaves it as it is; the message under
    // it names the value.
    if (ok && v >= spin->minimum() && v <= spin->maximum()) spin->setValue(static_cast<int>(v));
  } else if (auto* dspin = qobject_cast<QDoubleSpinBox*>(f.editor)) {
    bool ok = false;
    const double v = text.toDouble(&ok);
    if (ok && std::isfinite(v) && v >= dspin->minimum() && v <= dspin->maximum()) dspin->setValue(v);
  } else if (auto* edit = qobject_cast<QLineEdit*>(f.editor)) {
    // A 0 that stands for a default is shown as the empty field, its placeholder saying what it is.
    const QString shown = zero_means_something(*f.setting) && text == QStringLiteral("0") ? QString() : text;
    if (edit->text() != shown) edit->setText(shown);
  }
}

void InputsForm::show_zero_meaning(Field& f, const plan::Scenario& scenario) {
  if (!zero_means_something(*f.setting)) return;
  // Only offered rows: each engine default costs a memory answer (microseconds, but per field).
  const bool offered = setting_shown(*f.setting, scenario);
  const QString meaning = offered ? QString::fromStdString(zero_default_text(*f.setting, scenario)) : QString();
  if (auto* edit = qobject_cast<QLineEdit*>(f.editor)) {
    if (edit->placeholderText() != meaning) edit->setPlaceholderText(meaning);
  } else if (auto* spin = qobject_cast<QAbstractSpinBox*>(f.editor)) {
    // A spin box has no placeholder: its special-value text is what it shows at its minimum, 0.
    if (auto* ispin = qobject_cast<QSpinBox*>(spin); ispin != nullptr && ispin->minimum() == 0) {
      if (ispin->specialValueText() != meaning) ispin->setSpecialValueText(meaning);
    } else if (auto* dspin = qobject_cast<QDoubleSpinBox*>(spin); dspin != nullptr && dspin->minimum() == 0) {
      if (dspin->specialValueText() != meaning) dspin->setSpecialValueText(meaning);
    }
  }
}

void InputsForm::show_message(Field& f) {
  const QString message = model_.message(f.setting->flag);
  if (message != f.message->text()) {
    f.message->setText(message);
    f.message->setVisible(!message.isEmpty());
  }
  const bool bad = !message.isEmpty();
  if (bad == f.marked) return;
  // By object name, so the border does not spread to a combo's list or a spin box's inner edit.
  f.editor->setStyleSheet(bad ? QStringLiteral("#%1 { border: 2px solid #b00020; }").arg(f.editor->objectName())
                              : QString());
  f.marked = bad;
}

void InputsForm::open_changed_advanced() {
  for (Section& sec : sections_) {
    bool changed = false;
    for (const Field& f : fields_) {
      if (f.section == &sec && f.form == sec.advanced_form) {
        changed = changed || model_.value(f.setting->flag) != f.setting->default_text;
      }
    }
    if (changed) sec.advanced->set_expanded(true);
  }
}

void InputsForm::set_advanced_expanded(bool expanded) {
  for (Section& sec : sections_) sec.advanced->set_expanded(expanded);
}

std::vector<CollapsibleSection*> InputsForm::sections() const {
  std::vector<CollapsibleSection*> out;
  for (const Section& sec : sections_) out.push_back(sec.group);
  return out;
}

CollapsibleSection* InputsForm::advanced_group(const std::string& section) const {
  for (const Section& sec : sections_) {
    if (sec.name == section) return sec.advanced;
  }
  return nullptr;
}

const InputsForm::Field* InputsForm::find(const std::string& flag) const {
  for (const Field& f : fields_) {
    if (f.setting->flag == flag) return &f;
  }
  return nullptr;
}

QWidget* InputsForm::editor(const std::string& flag) const {
  const Field* f = find(flag);
  return f == nullptr ? nullptr : f->editor;
}

QString InputsForm::shown_message(const std::string& flag) const {
  const Field* f = find(flag);
  return f == nullptr ? QString() : f->message->text();
}

bool InputsForm::is_shown(const std::string& flag) const {
  const Field* f = find(flag);
  return f != nullptr && f->shown;
}

}  // namespace kvplan::gui
