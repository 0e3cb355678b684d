// gui/src/planner/answer_panel.h — the top of the planner window: the answer in large type.
//
//   "124 concurrent users"            <- the capacity search's answer (plan::summarize_capacity)
//   meet p90 TTFT ≤ 2 s and p90 TPOT ≤ 50 ms
//   binding: p90 TPOT 49.6 ms of 50 ms (99%) · margins on every other limit · cost · step-time source
//
// The panel has a state, and says it: while the capacity search runs, the headline is the memory
// answer (instant, an upper bound: requests whose KV fits), marked "provisional"; a finished search
// replaces it; an input change puts it back to provisional at once, so an answer of older inputs is
// never shown as current. Invalid inputs show the CLI's message instead of any figure.
#pragma once

#include <QString>
#include <QWidget>

#include "kvplan/plan/capacity_summary.h"

class QLabel;
class QProgressBar;

namespace kvplan::gui {

// The instant, memory-only figure shown while the search runs.
struct ProvisionalAnswer {
  int64_t requests = 0;        // requests of `tokens` tokens whose KV fits (all replicas)
  int64_t tokens = 0;          // the request length it assumes
  QString length_note;         // "the workload's mean request (1,123 prompt + 233 output tokens)"
  QString slo;                 // plan::slo_sentence of the inputs ("" when no target is set)
  bool searching = false;      // a capacity search follows (false: no SLO target, nothing to search)
};

class AnswerPanel : public QWidget {
  Q_OBJECT

 public:
  enum class State { kInvalid, kProvisional, kCurrent, kFailed };

  explicit AnswerPanel(QWidget* parent = nullptr);

  void show_invalid(const QString& message);
  void show_provisional(const ProvisionalAnswer& answer);
  void show_progress(int percent);  // while provisional and searching
  void show_answer(const plan::CapacitySummary& summary);
  void show_failed(const QString& message);

  State state() const { return state_; }
  QString headline() const;   // the large line, as shown
  QString details() const;    // everything below it, as plain text

 private:
  State state_ = State::kInvalid;
  QLabel* badge_ = nullptr;     // "provisional", "current", "invalid inputs"
  QLabel* headline_ = nullptr;
  QLabel* slo_ = nullptr;
  QLabel* details_ = nullptr;
  QProgressBar* progress_ = nullptr;
};

}  // namespace kvplan::gui
