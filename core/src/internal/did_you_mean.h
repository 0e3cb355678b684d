// "Did you mean ...?" suggestions for a mistyped preset id, alias, repo id or JSON field name.
//
//   std::vector<NameCandidate> c = {{"h100", "h100-sxm", "h100-sxm (alias h100)"}, ...};
//   std::string hint = did_you_mean("h10", c);   // "did you mean h100-sxm (alias h100)?" or ""
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvplan::internal {

// One name a thing can be called by. Several candidates may share a `group` (a preset's id, its
// aliases, its device names); a group is suggested at most once, under its best-matching name.
struct NameCandidate {
  std::string name;   // what the query is compared with (case-insensitively)
  std::string group;  // what it stands for, e.g. the preset id
  std::string label;  // how it is shown, e.g. "h100-sxm (alias h100)"
};

// Levenshtein distance (insert, delete, substitute: cost 1 each), ignoring case and treating ' ',
// '_' and '-' as the same character.
int edit_distance(std::string_view a, std::string_view b);

// Labels of at most `max` groups closest to `query`, compared as edit_distance does. A name
// qualifies when one of name and query holds the other (query of 2+ characters, name of 3+: "h10"
// for "h100", "Qwen/Qwen2-7B" for "Qwen/Qwen2-7B-Instruct"), or when it is within
// max(2, |query| / 3) edits. Holding ranks before a typo, then fewer edits, then candidate order.
// Only names as close as the best are kept, except when the best is an abbreviation (it holds
// the query and is 3+ edits away): then every other name that holds or is held by the query is
// kept too, up to `max`.
std::vector<std::string> closest_names(std::string_view query, const std::vector<NameCandidate>& candidates,
                                       size_t max = 3);

// "did you mean a?", "did you mean a or b?", "did you mean a, b or c?"; "" when nothing is close.
std::string did_you_mean(std::string_view query, const std::vector<NameCandidate>& candidates);

}  // namespace kvplan::internal
