#include "compare_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

namespace kvplan::gui {

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  pin_ = new QPushButton(QStringLiteral("Pin current scenario"));
  pin_->setObjectName(QStringLiteral("pin_current"));
  remove_ = new QPushButton(QStringLiteral("Remove"));
  remove_->setObjectName(QStringLiteral("remove_pinned"));
  remove_->setToolTip(QStringLiteral("Remove the selected pinned column"));
  note_ = new QLabel;
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(pin_);
  buttons->addWidget(remove_);
  buttons->addWidget(note_, 1);

  table_ = new QTableView;
  table_->setModel(&model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectColumns);
  table_->setWordWrap(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // A long workload or binding sentence would push the other columns off screen: elided, with the
  // whole text in the tooltip.
  table_->horizontalHeader()->setMaximumSectionSize(380);
  table_->setTextElideMode(Qt::ElideRight);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buttons);
  layout->addWidget(table_, 1);

  connect(pin_, &QPushButton::clicked, this, &CompareView::pin_current);
  connect(remove_, &QPushButton::clicked, this, [this] {
    const QModelIndex at = table_->currentIndex();
    if (at.isValid()) remove_pinned(at.column());
  });
  connect(&model_, &QAbstractItemModel::columnsInserted, this, &CompareView::update_buttons);
  connect(&model_, &QAbstractItemModel::columnsRemoved, this, &CompareView::update_buttons);
  connect(table_->selectionModel(), &QItemSelectionModel::currentChanged, this, &CompareView::update_buttons);
  update_buttons();
}

bool CompareView::pin_current() {
  const bool pinned = model_.pin_current();
  if (!pinned) note_->setText(QStringLiteral("At most %1 scenarios side by side: remove one first.").arg(CompareModel::kMaxColumns));
  return pinned;
}

void CompareView::update_buttons() {
  const int columns = model_.columnCount();
  pin_->setEnabled(columns < CompareModel::kMaxColumns);
  const QModelIndex at = table_->currentIndex();
  remove_->setEnabled(at.isValid() && at.column() > 0);
  if (columns < CompareModel::kMaxColumns) {
    note_->setText(columns == 1 ? QStringLiteral("Pin the current scenario, then change the inputs to compare.")
                                : QString());
  }
}

}  // namespace kvplan::gui
