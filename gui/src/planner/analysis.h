// gui/src/planner/analysis.h — the planner's live analytic answer: the memory plan of the inputs and,
// for each compared KV scheme, its plan and how many users fit against context length. Plain C++
// (no Qt) over plan/'s answers, so the arithmetic is tested without a display and the GUI only
// shows it.
//
//   Analysis a = analyze(inputs.scenario(), default_schemes(), 200);   // microseconds per scheme
//   a.schemes[1].answer->plan.kv_cache_tokens;   a.users[1][199];  // users at a.contexts[199]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvplan/plan/memory.h"
#include "kvplan/plan/settings.h"

namespace kvplan::gui {

// One compared scheme: settings on top of the inputs (a scenario file's "compare" entries).
struct SchemeOverride {
  std::string label;
  plan::SettingValues overrides;
};

// kv-cache-dtype auto, fp8, int4, kivi2, and fp8 with a 4096-token streaming window.
std::vector<SchemeOverride> default_schemes();
// "kv-cache-dtype=fp8 streaming-window=4096"; "inputs" for no overrides.
std::string scheme_label(const plan::SettingValues& overrides);
std::vector<SchemeOverride> schemes_from_compare(const std::vector<plan::SettingValues>& compare);
// The Comparison tab's text: schemes separated by ';', each a space-separated list of memory-setting
// overrides (by flag), e.g. "inputs; kv-cache-dtype=fp8; kv-cache-dtype=int4 block-size=32" ("inputs": no
// overrides; empty parts are skipped). Throws ConfigError naming the part and the rule (values are checked later,
// per scheme, by the analysis).
std::vector<SchemeOverride> parse_schemes(const std::string& text);
std::string schemes_text(const std::vector<SchemeOverride>& schemes);

struct SchemeAnswer {
  std::string label;
  std::optional<plan::MemoryAnswer> answer;  // empty: the overrides are invalid (see error)
  std::string error;
};

struct Analysis {
  std::optional<plan::MemoryAnswer> base;  // the inputs themselves; empty when they are invalid
  std::string error;                      // why base is empty
  std::vector<SchemeAnswer> schemes;
  // [points] context lengths (tokens), geometrically spaced from tokens_per_block to the base
  // plan's max_model_len (both included).
  std::vector<int64_t> contexts;
  // [schemes][points] requests of that context length whose KV fits in the scheme's budget
  // (0 where the scheme is invalid or does not fit).
  std::vector<std::vector<int64_t>> users;
};

// Requests of `context_tokens` tokens that fit in the plan's KV budget: paged schemes count the
// blocks each request occupies, contiguous ones its exact bytes.
int64_t users_that_fit(const plan::MemoryAnswer& answer, int64_t context_tokens);

Analysis analyze(const plan::Scenario& inputs, const std::vector<SchemeOverride>& schemes, int points);
// The inputs as setting values on top of the defaults; a value that is not valid for its setting
// makes every answer fail with its message.
Analysis analyze(const plan::SettingValues& inputs, const std::vector<SchemeOverride>& schemes, int points);
// The answer when the inputs cannot even be typed (`error` says which field and why).
Analysis failed_analysis(const std::string& error, const std::vector<SchemeOverride>& schemes);

}  // namespace kvplan::gui
