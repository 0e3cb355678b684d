// gui/src/planner/zero_default.h — what a setting whose 0 stands for something else ("0 means the
// engine's default", "0 means no H2O eviction") is under the current scenario, for the form to show
// inside the empty field instead of a bare 0. Engine defaults come from the memory accounting itself
// (core plan_memory, the figures the simulation also runs with), never from a copy. Plain C++, no Qt.
//
//   plan::Scenario s;  s.engine.name = Engine::kSglang;  s.hardware.tensor_parallel_size = 8;
//   zero_default_text(plan::setting("mem-fraction-static"), s);   // "0.81, SGLang's default at TP 8"
//   zero_default_text(plan::setting("h2o-budget"), s);            // "no H2O eviction"
#pragma once

#include <string>

#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"

namespace kvplan::gui {

// Whether the setting's default is 0 and its note says what 0 stands for ("0 means ...").
bool zero_means_something(const plan::Setting& setting);

// What 0 stands for under the scenario: the effective value and where it comes from for engine
// defaults, the note's meaning otherwise ("no target"). "" for a setting without such a 0. When the
// scenario cannot be resolved (an error the form shows elsewhere), the note's meaning.
std::string zero_default_text(const plan::Setting& setting, const plan::Scenario& scenario);

}  // namespace kvplan::gui
