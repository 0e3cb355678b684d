// gui/src/planner/collapsible_section.h — a titled group whose body folds away under its header (an
// arrow button), for the input form's sections and their "Advanced" sub-groups.
//
//   auto* s = new CollapsibleSection(QStringLiteral("Engine"));
//   new QFormLayout(s->body());  s->set_expanded(false);
#pragma once

#include <QString>
#include <QWidget>

class QToolButton;

namespace kvplan::gui {

class CollapsibleSection : public QWidget {
  Q_OBJECT

 public:
  explicit CollapsibleSection(const QString& title, QWidget* parent = nullptr);

  QWidget* body() const { return body_; }
  QString title() const;
  void set_title(const QString& title);
  bool is_expanded() const;
  void set_expanded(bool expanded);
  // A bold header for top-level groups; the body keeps the normal font.
  void set_header_bold(bool bold);

 signals:
  void expanded_changed(bool expanded);

 private:
  QToolButton* header_ = nullptr;
  QWidget* body_ = nullptr;
};

}  // namespace kvplan::gui
