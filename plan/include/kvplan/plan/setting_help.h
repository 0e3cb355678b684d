// kvplan/plan/setting_help.h — one setting's help line, the same words wherever a setting is
// explained: the CLI's --help (cli/setting_options.cpp) and the planner's tooltips (gui/).
//
//   plan::setting_help(plan::setting("max-model-len"));
//   // "Longest request, prompt + output (vLLM --max-model-len). Unit: tokens. Default: 0; 0 means ..."
#pragma once

#include <string>

#include "kvplan/plan/settings.h"

namespace kvplan::plan {

// "<description>. Unit: <unit>. Default: <default or 'unset'>[; <default_note>]."
std::string setting_help(const Setting& s);

}  // namespace kvplan::plan
