#include "internal/did_you_mean.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace kvplan::internal {

namespace {

// Case and separators do not count: "RTX 3090", "rtx_3090" and "rtx-3090" compare equal.
std::string normalized(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return c == ' ' || c == '_' ? '-' : static_cast<char>(std::tolower(c));
  });
  return out;
}

struct Scored {
  int tier = 1;      // 0: one holds the other ("h10" in "h100", "h100" in "h100-sxm5"); 1: a typo
  int distance = 0;  // edit distance
};

}  // namespace

int edit_distance(std::string_view a_in, std::string_view b_in) {
  const std::string a = normalized(a_in);
  const std::string b = normalized(b_in);
  // One row of the dynamic-programming table: row[j] = distance(a[0..i), b[0..j)).
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> closest_names(std::string_view query, const std::vector<NameCandidate>& candidates,
                                       size_t max) {
  const std::string q = normalized(query);
  if (q.empty() || max == 0) return {};
  const int limit = std::max(2, static_cast<int>(q.size()) / 3);
  std::vector<std::pair<Scored, const NameCandidate*>> qualified;
  for (const NameCandidate& c : candidates) {
    const std::string name = normalized(c.name);
    // The name extends the query (an abbreviation), or the query extends the name ("Qwen/Qwen2-7B-Instruct"
    // for "Qwen/Qwen2-7B"); short names are not looked for inside queries ("t4" is in too much).
    bool contains = (q.size() >= 2 && name.find(q) != std::string::npos) ||
                    (name.size() >= 3 && q.find(name) != std::string::npos);
    Scored s{contains ? 0 : 1, edit_distance(q, name)};
    if (contains || s.distance <= limit) qualified.push_back({s, &c});
  }
  std::stable_sort(qualified.begin(), qualified.end(), [](const auto& x, const auto& y) {
    return std::pair(x.first.tier, x.first.distance) < std::pair(y.first.tier, y.first.distance);
  });
  std::vector<std::string> out;
  std::set<std::string> groups;
  if (qualified.empty()) return out;
  const Scored best = qualified.front().first;
  const bool abbreviation = best.tier == 0 && best.distance >= 3;
  for (const auto& [s, c] : qualified) {
    if (out.size() == max) break;
    bool keep = (s.tier == best.tier && s.distance == best.distance) || (abbreviation && s.tier == 0);
    if (!keep || !groups.insert(c->group).second) continue;
    out.push_back(c->label);
  }
  return out;
}

std::string did_you_mean(std::string_view query, const std::vector<NameCandidate>& candidates) {
  std::vector<std::string> names = closest_names(query, candidates);
  if (names.empty()) return "";
  std::string text = "did you mean ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text + "?";
}

}  // namespace kvplan::internal
