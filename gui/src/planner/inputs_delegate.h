// gui/src/planner/inputs_delegate.h — the inputs table's editor: an editable combo box offering the
// model's suggested values (InputsModel::kChoicesRole) where it has any, a line edit elsewhere.
//
//   view->setItemDelegateForColumn(InputsModel::kValueColumn, new InputsDelegate(view));
#pragma once

#include <QStyledItemDelegate>

namespace kvplan::gui {

class InputsDelegate : public QStyledItemDelegate {
  Q_OBJECT

 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  void setEditorData(QWidget* editor, const QModelIndex& index) const override;
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;
};

}  // namespace kvplan::gui
