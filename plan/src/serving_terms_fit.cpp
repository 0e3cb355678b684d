// The staged fit of an engine's serving terms to whole-model runs (runs_fit.h, fit_serving_terms):
// the steps bench/validate_serving documents at the top of its file, for one engine and one start
// rule:
//   1. the rows simulated with no terms (factor 1, no overheads);
//   2. step-time factor f and step overhead o by least squares of the relative TPOT error over the
//      step rows, o >= 0 (sim::fit_step_terms);
//   3. the rows rerun with f and o; request overhead a and per-in-flight overhead b by least
//      absolute relative TTFT error, b in ms per other request in flight or as a share of the
//      prompt's prefill alone per other in flight; the form with the smaller objective is kept
//      (sim::fit_request_terms);
//   4. the rows rerun with a and b (factor 1, no step overhead) and f, o refitted as in 2;
//   5. a and b refitted as in 3 with the new f and o.
// Rounded as shipped (sim/src/serving_overheads.cpp): factors to 0.001, ms to 1 us, shares to 1e-4.
#include <algorithm>
#include <cmath>

#include "kvplan/plan/runs_fit.h"
#include "kvplan/sim/serving_overheads.h"

namespace kvplan::plan {

namespace {

// v rounded to 1 / per_unit (as validate_serving always wrote it: round(v x 1000) / 1000).
double round_to(double v, double per_unit) { return std::round(v * per_unit) / per_unit; }

// The prefill factor the split step fit perturbs to: TPOT's prefill part is (TPOT at this factor -
// TPOT at 1) / (this - 1), a finite difference around the unscaled run.
constexpr double kProbePrefillFactor = 1.25;

// Σ |p + a + b·x − m| / m: the objective fit_request_terms minimises, for comparing two forms.
double request_cost(const std::vector<double>& p, const std::vector<double>& m, const std::vector<double>& x,
                    const sim::RequestTermsFit& f) {
  double cost = 0;
  for (size_t i = 0; i < p.size(); ++i) cost += std::fabs(p[i] + f.request_ms + f.per_in_flight_ms * x[i] - m[i]) / m[i];
  return cost;
}

}  // namespace

ServingTermsFitResult fit_serving_terms(
    const ServingFitRows& rows,
    const std::function<std::optional<std::pair<double, double>>(size_t, const ServingTerms&)>& simulate) {
  const size_t n = rows.measured_ttft_ms.size();
  ServingTermsFitResult out;
  ServingTerms& t = out.terms;

  // Steps 2 and 4: the step terms from TPOTs simulated with `base` (its step terms 1 and 0).
  auto fit_step = [&](const ServingTerms& base) {
    std::vector<double> decode, prefill, measured;
    for (size_t i = 0; i < n; ++i) {
      if (!rows.step_row[i]) continue;
      const auto p = simulate(i, base);
      if (!p) continue;
      double q = 0;
      if (rows.split_prefill_factor) {
        ServingTerms probe = base;
        probe.prefill_factor = kProbePrefillFactor;
        const auto scaled = simulate(i, probe);
        if (!scaled) continue;
        q = std::clamp((scaled->second - p->second) / (kProbePrefillFactor - 1), 0.0, p->second);
      }
      decode.push_back(p->second - q);
      prefill.push_back(q);
      measured.push_back(rows.measured_tpot_ms[i]);
    }
    out.step = rows.split_prefill_factor ? sim::fit_step_terms(decode, prefill, measured)
                                         : sim::fit_step_terms(decode, measured);
    t.factor = round_to(out.step.factor, 1000);
    t.prefill_factor = round_to(out.step.prefill_factor, 1000);
    t.step_ms = round_to(out.step.overhead_ms, 1000);
  };
  // Steps 3 and 5: the request terms from TTFTs simulated with the current step terms alone.
  auto fit_request = [&] {
    std::vector<double> predicted, measured, flat_x, shaped_x;
    const ServingTerms step_only{0, 0, 0, t.step_ms, t.factor, t.prefill_factor};
    for (size_t i = 0; i < n; ++i) {
      if (!rows.step_row[i]) continue;
      const auto p = simulate(i, step_only);
      if (!p) continue;
      predicted.push_back(p->first);
      measured.push_back(rows.measured_ttft_ms[i]);
      flat_x.push_back(rows.others_in_flight[i]);
      shaped_x.push_back(rows.others_in_flight[i] * rows.prompt_prefill_ms[i]);
    }
    const sim::RequestTermsFit flat = sim::fit_request_terms(predicted, measured, flat_x);
    const sim::RequestTermsFit shaped = sim::fit_request_terms(predicted, measured, shaped_x);
    out.prefill_shaped = request_cost(predicted, measured, shaped_x, shaped) < request_cost(predicted, measured, flat_x, flat);
    const sim::RequestTermsFit& kept = out.prefill_shaped ? shaped : flat;
    t.request_ms = round_to(kept.request_ms, 1000);
    t.per_in_flight_ms = out.prefill_shaped ? 0.0 : round_to(flat.per_in_flight_ms, 1000);
    t.prefill_share = out.prefill_shaped ? round_to(shaped.per_in_flight_ms, 10000) : 0.0;
    out.request = kept;
  };

  fit_step(ServingTerms{});
  fit_request();
  // Requests that reach the engine later change its batches: refit the step terms with the
  // request terms in place, then the request terms once more with those.
  fit_step(ServingTerms{t.request_ms, t.per_in_flight_ms, t.prefill_share, 0, 1.0, 1.0});
  fit_request();
  return out;
}

}  // namespace kvplan::plan
