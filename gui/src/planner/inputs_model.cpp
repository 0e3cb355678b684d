#include "inputs_model.h"

#include "kvplan/core/weight_quant.h"

#include <QBrush>
#include <QColor>

#include <cctype>
#include <stdexcept>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "memory_options.h"
#include "sim_options.h"

namespace kvplan::gui {

InputsModel::InputsModel(QObject* parent) : QAbstractTableModel(parent) {
  for (const auto& [name, value] : cli::memory_flag_defaults()) {
    fields_.push_back({name, Section::kMemory, value, value, {}});
  }
  for (const auto& [name, value] : cli::sim_flag_defaults()) {
    fields_.push_back({name, Section::kSimulation, value, value, {}});
  }
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
      if (index.column() == kFlagColumn) return QString::fromStdString(f.name);
      if (index.column() == kValueColumn) return QString::fromStdString(f.value);
      if (index.column() == kCheckColumn) return f.message.isEmpty() ? QStringLiteral("ok") : f.message;
      break;
    case Qt::ToolTipRole:
      if (index.column() == kCheckColumn && !f.message.isEmpty()) return f.message;
      if (index.column() == kFlagColumn) {
        return QStringLiteral("--%1 (%2 flag; default \"%3\")")
            .arg(QString::fromStdString(f.name), f.section == Section::kMemory ? "memory" : "simulation",
                 QString::fromStdString(f.default_value));
      }
      break;
    case kChoicesRole:
      if (index.column() == kValueColumn) return choices(f.name);
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

void InputsModel::set_flags(const cli::FlagValues& memory, const cli::FlagValues& simulation) {
  beginResetModel();
  for (Field& f : fields_) {
    const cli::FlagValues& src = f.section == Section::kMemory ? memory : simulation;
    auto it = src.find(f.name);
    f.value = it == src.end() ? f.default_value : it->second;
  }
  last_edited_ = 0;
  revalidate(false);
  endResetModel();
  emit inputs_changed();
}

cli::FlagValues InputsModel::memory_flags() const {
  cli::FlagValues out;
  for (const Field& f : fields_) {
    if (f.section == Section::kMemory && f.value != f.default_value) out[f.name] = f.value;
  }
  return out;
}

cli::FlagValues InputsModel::simulation_flags() const {
  cli::FlagValues out;
  for (const Field& f : fields_) {
    if (f.section == Section::kSimulation && f.value != f.default_value) out[f.name] = f.value;
  }
  return out;
}

QString InputsModel::message(const std::string& flag) const {
  const int row = row_of(flag);
  return row < 0 ? QString() : fields_[static_cast<size_t>(row)].message;
}

int InputsModel::row_of(const std::string& flag) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == flag) return static_cast<int>(i);
  }
  return -1;
}

QStringList InputsModel::choices(const std::string& flag) const {
  QStringList out;
  if (flag == "model") {
    for (const ModelConfig& m : model_presets()) out << QString::fromStdString(m.id);
  } else if (flag == "gpu") {
    for (const GpuSpec& g : gpu_presets()) out << QString::fromStdString(g.id);
  } else if (flag == "engine") {
    out = {"vllm", "sglang", "trtllm", "static"};
  } else if (flag == "dtype") {
    out = {"auto", "bf16", "fp16", "fp32"};
  } else if (flag == "quantization") {
    for (const std::string& q : quantization_flag_choices()) out << QString::fromStdString(q);
  } else if (flag == "kv-cache-dtype") {
    out = {"auto", "bf16", "fp16", "fp8", "fp8_e5m2", "int8", "int4", "kivi2"};
  } else if (flag == "mamba-ssm-cache-dtype") {
    out = {"auto", "fp32", "bf16", "fp16"};
  } else if (flag == "fp8-scales") {
    out = {"per-tensor", "per-head"};
  } else if (flag == "scheduler") {
    out = {"", "static", "orca", "vllm", "sglang"};
  } else if (flag == "kv-policy") {
    out = {"", "max-length", "pow2", "oracle", "paged"};
  } else if (flag == "preemption") {
    out = {"recompute", "swap"};
  } else if (flag == "router") {
    out = {"round-robin", "least-outstanding", "prefix-aware"};
  } else if (flag == "arrivals") {
    out = {"poisson", "gamma", "constant"};
  } else {
    const int row = row_of(flag);
    const std::string& d = row < 0 ? flag : fields_[static_cast<size_t>(row)].default_value;
    if (d == "true" || d == "false") out = {"false", "true"};
    else if (flag == "enable-prefix-caching" || flag == "chunked-prefill" || flag == "cuda-graphs") out = {"", "false", "true"};
  }
  return out;
}

QString InputsModel::first_error() const {
  for (const Field& f : fields_) {
    if (!f.message.isEmpty()) return QString::fromStdString(f.name) + ": " + f.message;
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
    const std::string& n = fields_[i].name;
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
  try {
    cli::Scenario s = cli::build_scenario(memory_flags());
    cli::build_simulation(s, simulation_flags());
  } catch (const ConfigError& e) {
    valid_ = false;
    const int row = field_named_in(e.what());
    fields_[static_cast<size_t>(row)].message = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {  // e.g. a trace file that cannot be read
    valid_ = false;
    fields_[static_cast<size_t>(last_edited_)].message = QString::fromUtf8(e.what());
  }
  for (size_t i = 0; notify && i < fields_.size(); ++i) {
    if (fields_[i].message != before[i]) {
      const QModelIndex cell = index(static_cast<int>(i), kCheckColumn);
      emit dataChanged(index(static_cast<int>(i), 0), cell, {Qt::DisplayRole, Qt::ToolTipRole, Qt::ForegroundRole});
    }
  }
}

}  // namespace kvplan::gui
