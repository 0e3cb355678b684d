#include "knee_model.h"

#include <algorithm>
#include <cmath>

#include "kvplan/plan/capacity_summary.h"
#include "kvplan/plan/summary_percentile.h"

namespace kvplan::gui {

namespace {

// Two loads closer than this (relative) are one point on the chart: the search bisects down to 2%
// (CapacityRequest::tolerance), so an extra load that close adds nothing the search did not show.
constexpr double kSameLoad = 0.02;

bool near(double a, double b) { return std::abs(a - b) <= kSameLoad * std::max(std::abs(a), std::abs(b)); }

// RunSummary keeps p50, p90, p95, p99 and max; the chart's middle line is the SLO's percentile
// when it is one of those other than 50 and 99, so the judged line is always drawn.
double mid_percentile_of(const sim::Slo& slo) {
  return slo.percentile == 95 || slo.percentile == 100 ? slo.percentile : 90;
}

QString number(double v, int decimals) { return QString::number(v, 'f', decimals); }

}  // namespace

std::vector<double> knee_extra_loads(const plan::CapacityAnswer& a) {
  const sim::CapacitySearch& s = a.search;
  if (s.probes.empty()) return {};  // nothing was simulated (weights leave no KV budget)
  const double anchor = s.best > 0 ? s.best : s.first_failing;
  if (anchor <= 0) return {};
  static constexpr double kFactors[] = {0.25, 0.5, 1.5, 2, 3};
  std::vector<double> taken;
  for (const sim::CapacityProbe& p : s.probes) taken.push_back(p.load);
  std::vector<double> out;
  for (double f : kFactors) {
    if (s.unbounded && f > 1) continue;  // the search limit was reached: nothing above to show
    double load = anchor * f;
    if (a.users) load = std::max(1.0, std::round(load));
    const bool seen = std::any_of(taken.begin(), taken.end(), [&](double t) { return near(t, load); });
    if (seen) continue;
    taken.push_back(load);
    out.push_back(load);
  }
  return out;
}

std::vector<sim::CapacityProbe> run_knee_probes(const plan::CapacityAnswer& a, const std::vector<double>& loads,
                                                const std::function<bool()>& stop) {
  sim::SimulationConfig config = a.config;
  if (!loads.empty() && !config.step_timer && !config.shared_cost_model) {
    config.shared_cost_model = sim::make_step_cost_model(config);
  }
  std::vector<sim::CapacityProbe> out;
  out.reserve(loads.size());
  for (double load : loads) {
    if (stop && stop()) throw sim::SearchStopped();
    out.push_back(sim::probe_load(config, load));
  }
  if (stop && stop()) throw sim::SearchStopped();
  return out;
}

int KneeModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int KneeModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant KneeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  const int c = index.column();
  if (role == Qt::TextAlignmentRole && c != kMeetsColumn) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const bool display = role == Qt::DisplayRole;
  if (c == kLoadColumn) return display ? QVariant(number(r.load, users_ ? 0 : 2)) : QVariant(r.load);
  if (c == kMeetsColumn) return display ? QVariant(r.meets ? QStringLiteral("yes") : QStringLiteral("no")) : QVariant(r.meets);
  const double v = c <= kTtftP99Column ? r.ttft_ms[c - kTtftP50Column] : r.tpot_ms[c - kTpotP50Column];
  return display ? QVariant(number(v, 1)) : QVariant(v);
}

QVariant KneeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  const QString mid = QStringLiteral("p%1").arg(mid_percentile_);
  switch (section) {
    case kLoadColumn: return users_ ? QStringLiteral("Users") : QStringLiteral("Load (req/s)");
    case kTtftP50Column: return QStringLiteral("TTFT p50 (ms)");
    case kTtftMidColumn: return QStringLiteral("TTFT %1 (ms)").arg(mid);
    case kTtftP99Column: return QStringLiteral("TTFT p99 (ms)");
    case kTpotP50Column: return QStringLiteral("TPOT p50 (ms)");
    case kTpotMidColumn: return QStringLiteral("TPOT %1 (ms)").arg(mid);
    case kTpotP99Column: return QStringLiteral("TPOT p99 (ms)");
    case kMeetsColumn: return QStringLiteral("Meets SLO");
    default: return {};
  }
}

void KneeModel::set_probes(std::vector<sim::CapacityProbe> probes, const sim::Slo& slo, double capacity, bool users,
                           const QString& binding) {
  assign(std::move(probes), slo, capacity, users, binding, QString());
}

void KneeModel::assign(std::vector<sim::CapacityProbe> probes, const sim::Slo& slo, double capacity, bool users,
                       const QString& binding, const QString& summary) {
  // Stable: of equal loads the first probe stays first, and unique() keeps it.
  std::stable_sort(probes.begin(), probes.end(),
                   [](const sim::CapacityProbe& a, const sim::CapacityProbe& b) { return a.load < b.load; });
  probes.erase(std::unique(probes.begin(), probes.end(),
                           [](const sim::CapacityProbe& a, const sim::CapacityProbe& b) { return a.load == b.load; }),
               probes.end());
  const double mid = mid_percentile_of(slo);
  std::vector<Row> rows;
  rows.reserve(probes.size());
  for (const sim::CapacityProbe& p : probes) {
    const sim::RunSummary& s = p.summary;
    rows.push_back(Row{p.load, {s.ttft_ms.p50, *plan::summary_percentile(s.ttft_ms, mid), s.ttft_ms.p99},
                       {s.tpot_ms.p50, *plan::summary_percentile(s.tpot_ms, mid), s.tpot_ms.p99}, p.meets});
  }
  beginResetModel();
  rows_ = std::move(rows);
  slo_ = slo;
  capacity_ = capacity;
  users_ = users;
  binding_ = binding;
  summary_ = summary;
  mid_percentile_ = mid;
  endResetModel();
  emit headerDataChanged(Qt::Horizontal, 0, kColumnCount - 1);
}

void KneeModel::set_answer(const plan::CapacityAnswer& a, const std::vector<sim::CapacityProbe>& extra) {
  std::vector<sim::CapacityProbe> all = a.search.probes;
  all.insert(all.end(), extra.begin(), extra.end());
  const plan::CapacitySummary s = plan::summarize_capacity(a);
  assign(std::move(all), a.config.slo, a.search.best, a.users, QString::fromStdString(a.binding.kind),
         QString::fromStdString(s.headline + " " + s.slo + ". " + s.binding + "."));
}

void KneeModel::clear() {
  if (rows_.empty() && capacity_ == 0) return;
  beginResetModel();
  rows_.clear();
  capacity_ = 0;
  binding_.clear();
  summary_.clear();
  endResetModel();
}

}  // namespace kvplan::gui
