#include "compare_cells.h"

#include <QLocale>
#include <QStringList>

#include <cmath>
#include <set>

#include "kvplan/plan/settings.h"
#include "kvplan/plan/summary_percentile.h"

namespace kvplan::gui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QString q(const std::string& s) { return QString::fromStdString(s); }
QString setting_text(const plan::Scenario& s, const char* flag) { return q(plan::setting(flag).text(s)); }

// Thousands separated, whatever the desktop's locale: the figures are compared by eye across columns.
QString count(double v) {
  const QLocale c(QLocale::English);
  return v == std::floor(v) ? c.toString(static_cast<qlonglong>(v)) : c.toString(v, 'f', 1);
}

sim::Slo slo_of(const plan::Scenario& s) {
  sim::Slo slo;
  slo.ttft_ms = s.slo.ttft_ms;
  slo.tpot_ms = s.slo.tpot_ms;
  slo.e2e_ms = s.slo.e2e_ms;
  slo.percentile = s.slo.percentile;
  return slo;
}

// The workload preset and every workload setting changed from its default.
QString workload_text(const plan::Scenario& s) {
  QStringList parts{setting_text(s, "workload")};
  for (const auto& [flag, value] : plan::non_default_values(s)) {
    const plan::Setting& st = plan::setting(flag);
    if (st.section == "workload" && flag != "workload") parts << q(flag) + "=" + q(value);
  }
  return parts.join(QStringLiteral(", "));
}

// p90 (the SLO's percentile) of a latency at the answer's load.
QString at_answer(const CompareColumn& c, sim::Percentiles sim::RunSummary::*metric) {
  const plan::CapacityAnswer& a = *c.capacity;
  if (a.search.best <= 0) return QStringLiteral("—");
  const double pct = a.config.slo.percentile;
  const std::optional<double> v = plan::summary_percentile(a.search.at_best.*metric, pct);
  if (!v) return QStringLiteral("p%1 not kept by the run summary").arg(pct);
  return QStringLiteral("p%1 %2").arg(pct).arg(q(plan::latency_words(*v)));
}

QString answer_text(int row, const CompareColumn& c) {
  if (c.capacity_state == CompareColumn::Capacity::kSearching) return searching_text();
  if (c.capacity_state == CompareColumn::Capacity::kFailed) return c.capacity_error;
  const plan::CapacitySummary& s = c.summary;
  const plan::CostAtLoad cost = plan::capacity_cost(*c.capacity);
  switch (row) {
    case CompareModel::kHeadlineRow: return q(s.headline);
    case CompareModel::kBindingRow: return q(s.binding);
    case CompareModel::kTtftRow: return at_answer(c, &sim::RunSummary::ttft_ms);
    case CompareModel::kTpotRow: return at_answer(c, &sim::RunSummary::tpot_ms);
    case CompareModel::kUsdPerHourRow:
      if (!cost.usd_per_hour) return QStringLiteral("no price for this GPU");
      return QStringLiteral("$%1/hour for %2 GPU%3")
          .arg(*cost.usd_per_hour, 0, 'f', 2)
          .arg(cost.deployment.gpus)
          .arg(cost.deployment.gpus == 1 ? QString() : QStringLiteral("s"));
    case CompareModel::kUsdPerUserRow:
      if (!cost.usd_per_load_unit) return QStringLiteral("—");
      return QStringLiteral("$%1/hour per %2").arg(*cost.usd_per_load_unit, 0, 'f', 4).arg(c.capacity->users ? QStringLiteral("user") : QStringLiteral("request/s"));
    case CompareModel::kSourceRow: return q(s.source_kind);
    default: return {};
  }
}

}  // namespace

QString searching_text() { return QStringLiteral("searching…"); }

bool is_answer_row(int row) { return row >= CompareModel::kHeadlineRow && row <= CompareModel::kSourceRow; }

QString compare_row_name(int row) {
  static const char* const kNames[CompareModel::kRowCount] = {
      "Model", "GPU × TP × PP", "Engine", "KV cache", "Workload", "SLO", "What differs from Current",
      "Capacity", "Binding", "TTFT at the answer", "TPOT at the answer", "$/hour", "$/hour per user",
      "Step times", "Weights per GPU", "KV budget per GPU", "KV tokens per GPU", "KV bytes per token per GPU",
      "Requests at max length"};
  return row >= 0 && row < CompareModel::kRowCount ? QString::fromUtf8(kNames[row]) : QString();
}

QString differing_settings(const plan::Scenario& c, const plan::Scenario& current) {
  const plan::SettingValues a = plan::non_default_values(c);
  const plan::SettingValues b = plan::non_default_values(current);
  std::set<std::string> flags;
  for (const auto& kv : a) flags.insert(kv.first);
  for (const auto& kv : b) flags.insert(kv.first);
  QStringList out;
  for (const std::string& flag : flags) {
    // A setting left at its default is absent from non_default_values: its text is the default.
    const std::string mine = a.count(flag) ? a.at(flag) : plan::setting(flag).default_text;
    const std::string theirs = b.count(flag) ? b.at(flag) : plan::setting(flag).default_text;
    if (mine != theirs) out << q(flag) + "=" + q(mine.empty() ? "(default)" : mine);
  }
  return out.join(QStringLiteral(", "));
}

QString compare_cell_text(int row, const CompareColumn& c, const CompareColumn& current) {
  const plan::Scenario& s = c.scenario;
  switch (row) {
    case CompareModel::kModelRow: return q(s.model.id);
    case CompareModel::kGpuRow:
      return QStringLiteral("%1 × TP%2 × PP%3")
          .arg(q(s.hardware.gpu))
          .arg(s.hardware.tensor_parallel_size)
          .arg(s.hardware.pipeline_parallel_size);
    case CompareModel::kEngineRow: return c.memory ? q(c.memory->plan.engine_label) : setting_text(s, "engine");
    case CompareModel::kKvCacheRow:
      return c.memory ? q(c.memory->plan.kv_scheme.describe()) : setting_text(s, "kv-cache-dtype");
    case CompareModel::kWorkloadRow: return workload_text(s);
    case CompareModel::kSloRow: {
      const std::string words = plan::slo_sentence(slo_of(s));
      return words.empty() ? QStringLiteral("no target") : q(words);
    }
    case CompareModel::kDiffersRow: {
      if (&c == &current) return QStringLiteral("(the reference)");
      const QString d = differing_settings(s, current.scenario);
      return d.isEmpty() ? QStringLiteral("nothing") : d;
    }
    default: break;
  }
  if (is_answer_row(row)) return answer_text(row, c);
  if (!c.memory) return c.memory_error;
  const std::optional<double> v = compare_cell_number(row, c);
  switch (row) {
    case CompareModel::kWeightsRow:
    case CompareModel::kKvBudgetRow: return QStringLiteral("%1 GiB").arg(*v / kGiB, 0, 'f', 2);
    case CompareModel::kKvTokensRow: return count(*v);
    case CompareModel::kKvBytesPerTokenRow: return count(*v) + QStringLiteral(" B");
    case CompareModel::kRequestsAtMaxLenRow:
      return QStringLiteral("%1 at %2 tokens").arg(count(*v), count(static_cast<double>(c.memory->plan.max_model_len)));
    default: return {};
  }
}

std::optional<double> compare_cell_number(int row, const CompareColumn& c) {
  if (row == CompareModel::kHeadlineRow) {
    if (c.capacity_state != CompareColumn::Capacity::kAnswered) return std::nullopt;
    return c.capacity->search.best;
  }
  if (!c.memory) return std::nullopt;
  const MemoryPlan& p = c.memory->plan;
  switch (row) {
    case CompareModel::kWeightsRow: return static_cast<double>(p.term("weights"));
    case CompareModel::kKvBudgetRow: return static_cast<double>(p.kv_budget_bytes);
    case CompareModel::kKvTokensRow: return static_cast<double>(p.kv_cache_tokens);
    // Per GPU: the layout is of the plan's (capacity-limiting) pipeline stage, KV heads split by TP.
    case CompareModel::kKvBytesPerTokenRow: return c.memory->layout.bytes_per_token();
    case CompareModel::kRequestsAtMaxLenRow: return static_cast<double>(p.requests_at_max_len);
    default: return std::nullopt;
  }
}

}  // namespace kvplan::gui
