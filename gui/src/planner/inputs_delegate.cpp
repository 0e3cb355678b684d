#include "inputs_delegate.h"

#include <QComboBox>
#include <QStringList>

#include "inputs_model.h"

namespace kvplan::gui {

QWidget* InputsDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  const QStringList choices = index.data(InputsModel::kChoicesRole).toStringList();
  if (choices.isEmpty()) return QStyledItemDelegate::createEditor(parent, option, index);
  auto* combo = new QComboBox(parent);
  combo->setEditable(true);  // a config.json path, or any value the CLI would take
  combo->addItems(choices);
  // Commit as soon as a suggestion is picked, so the views follow without leaving the cell.
  connect(combo, &QComboBox::activated, this, [this, combo] { emit const_cast<InputsDelegate*>(this)->commitData(combo); });
  return combo;
}

void InputsDelegate::setEditorData(QWidget* editor, const QModelIndex& index) const {
  if (auto* combo = qobject_cast<QComboBox*>(editor)) {
    combo->setCurrentText(index.data(Qt::EditRole).toString());
    return;
  }
  QStyledItemDelegate::setEditorData(editor, index);
}

void InputsDelegate::setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const {
  if (auto* combo = qobject_cast<QComboBox*>(editor)) {
    model->setData(index, combo->currentText(), Qt::EditRole);
    return;
  }
  QStyledItemDelegate::setModelData(editor, model, index);
}

}  // namespace kvplan::gui
