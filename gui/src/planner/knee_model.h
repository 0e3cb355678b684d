// gui/src/planner/knee_model.h — where latency turns up: TTFT and TPOT percentiles of every probed
// load of a capacity search (plus a few extra loads around its answer), one row per load, so the
// knee chart (knee_view.h) can show where each percentile crosses its SLO line.
//
//   std::vector<double> extra = knee_extra_loads(answer);            // GUI thread, instant
//   auto more = run_knee_probes(answer, extra, control.stop);        // background: a simulation each
//   knee.set_answer(answer, more);                                   // GUI thread: rows by load
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <functional>
#include <vector>

#include "kvplan/plan/simulate.h"
#include "kvplan/sim/capacity.h"

namespace kvplan::gui {

// Loads to simulate besides the search's own probes, so the whole knee shows: the search's probes
// cluster where the SLO's percentile crosses its target (it bisects there); 0.25x and 0.5x the answer
// reach the flat part where p99 still meets, 1.5x, 2x and 3x the steep part where p50 fails too.
// Whole users (at least 1) for a closed loop; loads within 2% of one already probed, or of another
// extra, are skipped. None when nothing could be simulated (weights do not fit); without a passing
// load the anchor is the smallest failing one; an unbounded search gets no loads above its answer.
std::vector<double> knee_extra_loads(const plan::CapacityAnswer& a);

// One sim::probe_load of a.config per load, in order; stop() is read between probes and true throws
// sim::SearchStopped (a probe itself runs to its end). Probes share one step cost model, as a
// search's do (results unchanged, only the memo is reused).
std::vector<sim::CapacityProbe> run_knee_probes(const plan::CapacityAnswer& a, const std::vector<double>& loads,
                                                const std::function<bool()>& stop);

// Row per distinct load, ascending. Latencies in ms. The middle percentile column is the SLO's own
// when that is one RunSummary keeps besides 50 and 99 (95 or 100 = max); otherwise p90.
class KneeModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kLoadColumn, kTtftP50Column, kTtftMidColumn, kTtftP99Column, kTpotP50Column, kTpotMidColumn, kTpotP99Column,
    kMeetsColumn, kColumnCount
  };
  struct Row {
    double load = 0;
    double ttft_ms[3] = {0, 0, 0};  // p50, mid, p99
    double tpot_ms[3] = {0, 0, 0};
    bool meets = false;
  };

  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // `binding`: the answer's binding constraint kind ("ttft", "tpot", "kv_memory"...; binding.h).
  // A load probed twice keeps its first probe (the same config and seed give the same run).
  void set_probes(std::vector<sim::CapacityProbe> probes, const sim::Slo& slo, double capacity, bool users,
                  const QString& binding = {});
  // The search's probes and `extra` (run_knee_probes), with the answer's SLO, capacity and binding.
  void set_answer(const plan::CapacityAnswer& a, const std::vector<sim::CapacityProbe>& extra);
  void clear();

  const std::vector<Row>& rows() const { return rows_; }
  const sim::Slo& slo() const { return slo_; }
  double capacity() const { return capacity_; }  // 0: no load met the SLO
  bool load_is_users() const { return users_; }
  const QString& binding() const { return binding_; }
  // set_answer: "<headline> <slo>. <binding>." from plan::summarize_capacity; "" after set_probes.
  const QString& summary() const { return summary_; }
  double mid_percentile() const { return mid_percentile_; }  // 90, 95 or 100
  bool empty() const { return rows_.empty(); }

 private:
  void assign(std::vector<sim::CapacityProbe> probes, const sim::Slo& slo, double capacity, bool users,
              const QString& binding, const QString& summary);

  std::vector<Row> rows_;
  sim::Slo slo_;
  double capacity_ = 0;
  bool users_ = false;
  QString binding_;
  QString summary_;
  double mid_percentile_ = 90;
};

}  // namespace kvplan::gui
