#include "inputs_model.h"

#include <QBrush>
#include <QColor>

#include <cctype>
#include <stdexcept>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/setting_help.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::gui {

InputsModel::InputsModel(QObject* parent) : QAbstractTableModel(parent) {
  for (const plan::Setting& s : plan::settings()) fields_.push_back({&s, s.default_text, {}, true});
  revalidate(false);
}

int InputsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(fields_.size());
}

int InputsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant InputsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const Field& f = fields_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
      if (index.column() == kFlagColumn) return QString::fromStdString(f.setting->flag);
      if (index.column() == kValueColumn) return QString::fromStdString(f.value);
      if (index.column() == kCheckColumn) return f.message.isEmpty() ? QStringLiteral("ok") : f.message;
      break;
    case Qt::ToolTipRole:
      if (index.column() == kCheckColumn && !f.message.isEmpty()) return f.message;
      if (index.column() == kFlagColumn) {
        const plan::Setting& st = *f.setting;
        return QStringLiteral("--%1 (%2 in a scenario file): %3")
            .arg(QString::fromStdString(st.flag), QString::fromStdString(st.file_key()),
                 QString::fromStdString(plan::setting_help(st)));
      }
      break;
    case kChoicesRole:
      if (index.column() == kValueColumn) return choices(f.setting->flag);
      break;
    case Qt::ForegroundRole:
      if (!f.message.isEmpty()) return QBrush(QColor(0xb0, 0x00, 0x20));
      if (index.column() == kCheckColumn) return QBrush(QColor(0x20, 0x80, 0x20));
      break;
    default: break;
  }
  return {};
}

bool InputsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !index.isValid() || !checkIndex(index) || index.column() != kValueColumn) {
    return false;
  }
  Field& f = fields_[static_cast<size_t>(index.row())];
  const std::string text = value.toString().trimmed().toStdString();
  if (text == f.value) return true;
  f.value = text;
  last_edited_ = index.row();
  emit dataChanged(index, index, {Qt::DisplayRole, Qt::EditRole});
  revalidate();
  emit inputs_changed();
  return true;
}

Qt::ItemFlags InputsModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || !checkIndex(index)) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() == kValueColumn) f |= Qt::ItemIsEditable;
  return f;
}

QVariant InputsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  switch (section) {
    case kFlagColumn: return QStringLiteral("Input");
    case kValueColumn: return QStringLiteral("Value");
    case kCheckColumn: return QStringLiteral("Check");
    default: return {};
  }
}

bool InputsModel::set_value(const std::string& flag, const std::string& value) {
  const int row = row_of(flag);
  if (row < 0) throw std::out_of_range("no input named '" + flag + "'");
  setData(index(row, kValueColumn), QString::fromStdString(value));
  return valid_;
}

std::string InputsModel::value(const std::string& flag) const {
  const int row = row_of(flag);
  return row < 0 ? std::string() : fields_[static_cast<size_t>(row)].value;
}

void InputsModel::set_values(const plan::SettingValues& values) {
  beginResetModel();
  for (Field& f : fields_) {
    auto it = values.find(f.setting->flag);
    f.value = it == values.end() ? f.setting->default_text : it->second;
  }
  last_edited_ = 0;
  revalidate(false);
  endResetModel();
  emit inputs_changed();
}

plan::SettingValues InputsModel::simulation_values() const {
  plan::SettingValues out;
  for (const auto& [flag, value] : values()) {
    if (plan::setting(flag).command == plan::Command::kSimulate) out[flag] = value;
  }
  return out;
}

std::string InputsModel::memory_field_error() const {
  for (const Field& f : fields_) {
    if (!f.typed_ok && f.setting->command == plan::Command::kMemory) return f.message.toStdString();
  }
  return {};
}

std::string InputsModel::typed_field_error() const {
  for (const Field& f : fields_) {
    if (!f.typed_ok) return f.message.toStdString();
  }
  return {};
}

QString InputsModel::message(const std::string& flag) const {
  const int row = row_of(flag);
  return row < 0 ? QString() : fields_[static_cast<size_t>(row)].message;
}

int InputsModel::row_of(const std::string& flag) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].setting->flag == flag) return static_cast<int>(i);
  }
  return -1;
}

QStringList InputsModel::choices(const std::string& flag) const {
  QStringList out;
  const plan::Setting* s = plan::find_setting(flag);
  if (s == nullptr) return out;
  if (flag == "model") {
    for (const ModelConfig& m : model_presets()) out << QString::fromStdString(m.id);
  } else if (flag == "gpu") {
    for (const GpuSpec& g : gpu_presets()) out << QString::fromStdString(g.id);
  } else if (s->type == plan::ValueType::kBoolean) {
    // "" (unset) first where the default is derived, then false, true.
    if (s->optional) out << QString();
    out << QStringLiteral("false") << QStringLiteral("true");
  } else if (s->type == plan::ValueType::kChoice) {
    if (s->optional && s->default_text.empty()) out << QString();
    for (const std::string& c : s->choices) out << QString::fromStdString(c);
  }
  return out;
}

QString InputsModel::first_error() const {
  for (const Field& f : fields_) {
    if (!f.message.isEmpty()) return QString::fromStdString(f.setting->flag) + ": " + f.message;
  }
  return {};
}

// The field a ConfigError message is about. Fields named as "--name" or "name=" count; when the
// message names several (e.g. two flags that conflict), the one just edited wins, else the one
// named first. A message naming no field goes to the model or GPU field if it is about them, else
// to the field just edited.
int InputsModel::field_named_in(const std::string& message) const {
  // A model file's own errors ("model 'x': ...") belong to the model field when it was just edited,
  // even if the message suggests another flag (--allow-unknown-architecture).
  if (message.rfind("model '", 0) == 0 && last_edited_ == row_of("model")) return last_edited_;
  int first = -1;
  size_t first_pos = std::string::npos;
  size_t first_len = 0;
  for (size_t i = 0; i < fields_.size(); ++i) {
    const std::string& n = fields_[i].setting->flag;
    for (const std::string& needle : {"--" + n, n + "="}) {
      for (size_t pos = message.find(needle); pos != std::string::npos; pos = message.find(needle, pos + 1)) {
        const size_t end = pos + needle.size();
        const bool starts_word = needle[0] == '-' || pos == 0 || message[pos - 1] == ' ' || message[pos - 1] == '\'';
        // "--streaming-window" must not match inside "--streaming-windows"; "--kv" not "--kv-policy".
        const bool ends_word = needle.back() == '=' || end == message.size() ||
                               !(std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-');
        if (!starts_word || !ends_word) continue;
        if (static_cast<int>(i) == last_edited_) return last_edited_;
        if (pos < first_pos || (pos == first_pos && n.size() > first_len)) {
          first = static_cast<int>(i);
          first_pos = pos;
          first_len = n.size();
        }
      }
    }
  }
  if (first >= 0) return first;
  // Preset and model-file errors ("model 'x': ...", "unknown GPU ...") name no flag.
  if (message.rfind("model", 0) == 0 || message.find("config.json") != std::string::npos) return row_of("model");
  if (message.find("GPU") != std::string::npos || message.find("gpu") != std::string::npos) return row_of("gpu");
  return last_edited_;
}

void InputsModel::revalidate(bool notify) {
  std::vector<QString> before;
  before.reserve(fields_.size());
  for (Field& f : fields_) {
    before.push_back(f.message);
    f.message.clear();
  }
  valid_ = true;
  // Each field against its own rule: the message goes beside it.
  scenario_ = plan::Scenario{};
  for (Field& f : fields_) {
    try {
      f.setting->set(scenario_, f.value);
      f.typed_ok = true;
    } catch (const ConfigError& e) {
      f.typed_ok = false;
      f.message = QString::fromUtf8(e.what());
      valid_ = false;
    }
  }
  // Then the rules that span fields (presets, the parallel split, the workload), once every field
  // is typed: the message goes beside the field it names.
  if (valid_) {
    try {
      (void)plan::simulation_config(scenario_);
    } catch (const ConfigError& e) {
      valid_ = false;
      const int row = field_named_in(e.what());
      fields_[static_cast<size_t>(row)].message = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {  // e.g. a trace file that cannot be read
      valid_ = false;
      fields_[static_cast<size_t>(last_edited_)].message = QString::fromUtf8(e.what());
    }
  }
  for (size_t i = 0; notify && i < fields_.size(); ++i) {
    if (fields_[i].message != before[i]) {
      const QModelIndex cell = index(static_cast<int>(i), kCheckColumn);
      emit dataChanged(index(static_cast<int>(i), 0), cell, {Qt::DisplayRole, Qt::ToolTipRole, Qt::ForegroundRole});
    }
  }
}

}  // namespace kvplan::gui
