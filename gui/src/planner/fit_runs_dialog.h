// gui/src/planner/fit_runs_dialog.h — File > "Fit to my benchmark runs...": picks the result files,
// fits them to the deployment the inputs describe (plan/runs_fit.h, as `kvplan calibrate
// from-runs`), shows the before/after table and the fitted terms, saves the "fitted to your runs"
// profile and returns its path, which the caller makes the current step-time source (--profile).
#pragma once

#include <optional>
#include <string>

#include "kvplan/plan/scenario.h"

class QWidget;

namespace kvplan::gui {

// nullopt when the user cancels or the fit is refused (the refusal is shown).
std::optional<std::string> fit_runs_dialog(QWidget* parent, const plan::Scenario& scenario);

}  // namespace kvplan::gui
