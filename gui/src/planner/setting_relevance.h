// gui/src/planner/setting_relevance.h — which settings (plan/settings.h) a scenario reads, and which
// of them a planner sets on a first pass ("basic") rather than to fine-tune ("advanced"). The
// planner's form shows only what applies to the chosen engine, KV scheme and workload, so a knob the
// answer ignores (SGLang's --mem-fraction-static under vLLM) is never offered. Plain C++, no Qt.
//
//   plan::Scenario s;  s.engine.name = Engine::kSglang;
//   setting_applies(plan::setting("mem-fraction-static"), s);      // true
//   setting_shown(plan::setting("gpu-memory-utilization"), s);      // false while it is 0.9 (default)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"

namespace kvplan::gui {

// Whether the answer (memory plan or simulation) reads the setting under the scenario's engine, KV
// scheme and workload kind. Settings without a rule always apply.
bool setting_applies(const plan::Setting& setting, const plan::Scenario& scenario);

// What the form shows: a setting that applies, or one whose value differs from its default (a value
// that changes the answer, or one left over from another engine, is never hidden).
bool setting_shown(const plan::Setting& setting, const plan::Scenario& scenario);

// Settings a capacity question usually sets; the others sit in a collapsed "Advanced" group.
bool is_advanced(const plan::Setting& setting);

// The form's title of a settings section: "kv_cache" -> "KV cache" (the section name itself when
// unknown).
std::string section_title(std::string_view section);

// The flags that have a relevance rule, and the basic ones: for tests that check each names a
// setting (a renamed flag must not silently drop its rule).
std::vector<std::string_view> flags_with_rules();
std::vector<std::string_view> basic_flags();

}  // namespace kvplan::gui
