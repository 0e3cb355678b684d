#include "answer_panel.h"

#include <QFont>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

namespace kvplan::gui {

namespace {

QString html(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

void set_badge(QLabel* badge, const QString& text, const char* background) {
  badge->setText(text);
  badge->setStyleSheet(QStringLiteral("border-radius: 4px; padding: 2px 8px; color: white; font-weight: bold; background: %1")
                           .arg(QString::fromLatin1(background)));
}

}  // namespace

AnswerPanel::AnswerPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("answerPanel"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(10, 6, 10, 6);
  layout->setSpacing(2);
  auto* top = new QHBoxLayout;
  headline_ = new QLabel;
  headline_->setObjectName(QStringLiteral("answerHeadline"));
  QFont big = headline_->font();
  big.setPointSizeF(big.pointSizeF() * 2.2);
  big.setBold(true);
  headline_->setFont(big);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  badge_ = new QLabel;
  badge_->setObjectName(QStringLiteral("answerState"));
  progress_ = new QProgressBar;
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(160);
  progress_->setFormat(QStringLiteral("searching %p%"));
  progress_->hide();
  top->addWidget(headline_);
  top->addSpacing(12);
  top->addWidget(badge_, 0, Qt::AlignVCenter);
  top->addWidget(progress_, 0, Qt::AlignVCenter);
  top->addStretch(1);
  layout->addLayout(top);
  slo_ = new QLabel;
  QFont medium = slo_->font();
  medium.setPointSizeF(medium.pointSizeF() * 1.3);
  slo_->setFont(medium);
  layout->addWidget(slo_);
  details_ = new QLabel;
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(details_);
  setStyleSheet(QStringLiteral("#answerPanel { background: #f4f7fb; border-bottom: 1px solid #c9d3df; }"));
  setAttribute(Qt::WA_StyledBackground, true);
}

void AnswerPanel::show_invalid(const QString& message) {
  state_ = State::kInvalid;
  headline_->setText(QStringLiteral("No answer"));
  headline_->setStyleSheet(QStringLiteral("color: #8a1020"));
  set_badge(badge_, QStringLiteral("invalid inputs"), "#b00020");
  progress_->hide();
  slo_->setText(QStringLiteral("Fix the input marked in red:"));
  details_->setText(message.toHtmlEscaped());
}

void AnswerPanel::show_provisional(const ProvisionalAnswer& a) {
  state_ = State::kProvisional;
  const QLocale c = QLocale::c();
  headline_->setText(QStringLiteral("≤ %1 requests in flight").arg(c.toString(static_cast<qlonglong>(a.requests))));
  headline_->setStyleSheet(QStringLiteral("color: #6b7480"));
  set_badge(badge_, QStringLiteral("provisional: memory only"), "#8a94a3");
  progress_->setVisible(a.searching);
  progress_->setValue(0);
  slo_->setText(a.searching ? QStringLiteral("the capacity search for users who %1 is running…").arg(a.slo.toHtmlEscaped())
                            : QStringLiteral("set an SLO target (TTFT, TPOT or E2E) to search how many users meet it"));
  details_->setText(QStringLiteral("KV memory holds %1 requests of %2 tokens (%3). Latency is not checked yet: the "
                                   "users that meet the SLO are usually far fewer.")
                        .arg(c.toString(static_cast<qlonglong>(a.requests)), c.toString(static_cast<qlonglong>(a.tokens)),
                             a.length_note.toHtmlEscaped()));
}

void AnswerPanel::show_progress(int percent) {
  if (state_ == State::kProvisional) progress_->setValue(percent);
}

void AnswerPanel::show_answer(const plan::CapacitySummary& s) {
  state_ = State::kCurrent;
  headline_->setText(QString::fromStdString(s.headline));
  headline_->setStyleSheet(QStringLiteral("color: #0b3d91"));
  set_badge(badge_, QStringLiteral("current"), "#2e7d32");
  progress_->hide();
  slo_->setText(html(s.slo));
  QStringList lines;
  lines << QStringLiteral("<b>%1</b>").arg(html(s.binding));
  if (!s.margins.empty()) {
    QStringList m;
    for (const std::string& x : s.margins) m << html(x);
    lines << QStringLiteral("other limits: ") + m.join(QStringLiteral("; "));
  }
  lines << QStringLiteral("cost: ") + html(s.cost);
  lines << QStringLiteral("step times: <i>%1</i> — %2").arg(html(s.source_kind), html(s.source));
  details_->setText(lines.join(QStringLiteral("<br>")));
}

void AnswerPanel::show_failed(const QString& message) {
  state_ = State::kFailed;
  headline_->setText(QStringLiteral("No answer"));
  headline_->setStyleSheet(QStringLiteral("color: #8a1020"));
  set_badge(badge_, QStringLiteral("search failed"), "#b00020");
  progress_->hide();
  slo_->clear();
  details_->setText(message.toHtmlEscaped());
}

QString AnswerPanel::headline() const { return headline_->text(); }

QString AnswerPanel::details() const {
  return QTextDocumentFragment::fromHtml(slo_->text() + QStringLiteral("<br>") + details_->text()).toPlainText();
}

}  // namespace kvplan::gui
