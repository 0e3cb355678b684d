// gui/src/planner/setting_label.h — a setting's name for people, derived from its flag and unit, for
// the input form's labels (the flag itself stays in the tooltip). Plain C++, no Qt.
//
//   setting_label(plan::setting("gpu-memory-utilization"));  // "GPU memory utilization (fraction of GPU memory)"
//   setting_label(plan::setting("slo-ttft-ms"));             // "SLO TTFT (ms)"
#pragma once

#include <string>

#include "kvplan/plan/settings.h"

namespace kvplan::gui {

// The flag's words with acronyms spelled as such (GPU, KV, SLO, vLLM, ...), the first capitalised;
// numbers get their unit in parentheses, and a trailing unit word of the flag ("-ms", "-gib") is
// dropped since the parentheses carry it.
std::string setting_label(const plan::Setting& setting);

}  // namespace kvplan::gui
