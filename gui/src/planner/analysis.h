// gui/src/planner/analysis.h — the planner's live analytic answer: the memory plan of the inputs and,
// for each compared KV scheme, its plan and how many users fit against context length. Plain C++
// (no Qt), so the arithmetic is tested without a display and the GUI only shows it.
//
//   Analysis a = analyze(memory_flags, default_schemes(), 200);   // microseconds per scheme
//   a.schemes[1].answer->plan.kv_cache_tokens;   a.users[1][199];  // users at a.contexts[199]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flag_parse.h"
#include "report_format.h"

namespace kvplan::gui {

// One compared scheme: memory-flag overrides on top of the inputs (scenario "compare" entries).
struct SchemeOverride {
  std::string label;
  cli::FlagValues overrides;
};

// kv-cache-dtype auto, fp8, int4, kivi2, and fp8 with a 4096-token streaming window.
std::vector<SchemeOverride> default_schemes();
// "kv-cache-dtype=fp8 streaming-window=4096"; "inputs" for no overrides.
std::string scheme_label(const cli::FlagValues& overrides);
std::vector<SchemeOverride> schemes_from_compare(const std::vector<cli::FlagValues>& compare);
// The Comparison tab's text: schemes separated by ';', each a space-separated list of memory-flag
// overrides, e.g. "inputs; kv-cache-dtype=fp8; kv-cache-dtype=int4 block-size=32" ("inputs": no
// overrides; empty parts are skipped). Throws ConfigError naming the part and the rule (values are checked later,
// per scheme, by the analysis).
std::vector<SchemeOverride> parse_schemes(const std::string& text);
std::string schemes_text(const std::vector<SchemeOverride>& schemes);

struct SchemeAnswer {
  std::string label;
  std::optional<cli::MemoryAnswer> answer;  // empty: the overrides are invalid (see error)
  std::string error;
};

struct Analysis {
  std::optional<cli::MemoryAnswer> base;  // the inputs themselves; empty when they are invalid
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
int64_t users_that_fit(const cli::MemoryAnswer& answer, int64_t context_tokens);

Analysis analyze(const cli::FlagValues& memory_flags, const std::vector<SchemeOverride>& schemes, int points);

}  // namespace kvplan::gui
