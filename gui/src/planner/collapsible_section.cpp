#include "collapsible_section.h"

#include <QToolButton>
#include <QVBoxLayout>

namespace kvplan::gui {

CollapsibleSection::CollapsibleSection(const QString& title, QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  header_ = new QToolButton;
  header_->setText(title);
  header_->setCheckable(true);
  header_->setChecked(true);
  header_->setAutoRaise(true);
  header_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  header_->setArrowType(Qt::DownArrow);
  header_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  layout->addWidget(header_);
  body_ = new QWidget;
  layout->addWidget(body_);
  connect(header_, &QToolButton::toggled, this, [this](bool on) {
    header_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    body_->setVisible(on);
    // The layouts above cache their size hints; without this a folded group keeps its unfolded
    // height inside a parent that did not ask again.
    for (QWidget* w = this; w != nullptr; w = w->parentWidget()) {
      if (w->layout() != nullptr) w->layout()->invalidate();
      w->updateGeometry();
    }
    emit expanded_changed(on);
  });
}

QString CollapsibleSection::title() const { return header_->text(); }

void CollapsibleSection::set_title(const QString& title) { header_->setText(title); }

bool CollapsibleSection::is_expanded() const { return header_->isChecked(); }

// Through the button, so the arrow, the body and the signal follow one path.
void CollapsibleSection::set_expanded(bool expanded) { header_->setChecked(expanded); }

void CollapsibleSection::set_header_bold(bool bold) {
  QFont f = header_->font();
  f.setBold(bold);
  header_->setFont(f);
}

}  // namespace kvplan::gui
