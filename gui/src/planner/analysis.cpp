#include "analysis.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "kvplan/core/error.h"

namespace kvplan::gui {

std::vector<SchemeOverride> default_schemes() {
  return {
      {"auto (16-bit)", {{"kv-cache-dtype", "auto"}}},
      {"fp8", {{"kv-cache-dtype", "fp8"}}},
      {"int4", {{"kv-cache-dtype", "int4"}}},
      {"kivi2", {{"kv-cache-dtype", "kivi2"}}},
      {"fp8 + window 4096", {{"kv-cache-dtype", "fp8"}, {"streaming-window", "4096"}, {"streaming-sinks", "4"}}},
  };
}

std::string scheme_label(const plan::SettingValues& overrides) {
  if (overrides.empty()) return "inputs";
  std::string out;
  for (const auto& [name, value] : overrides) {
    if (!out.empty()) out += ' ';
    out += name + '=' + value;
  }
  return out;
}

std::vector<SchemeOverride> schemes_from_compare(const std::vector<plan::SettingValues>& compare) {
  std::vector<SchemeOverride> out;
  out.reserve(compare.size());
  for (const plan::SettingValues& c : compare) out.push_back({scheme_label(c), c});
  return out;
}

std::vector<SchemeOverride> parse_schemes(const std::string& text) {
  std::vector<SchemeOverride> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    plan::SettingValues overrides;
    size_t i = 0;
    bool any_text = false;
    while (i < part.size()) {
      while (i < part.size() && std::isspace(static_cast<unsigned char>(part[i]))) ++i;
      size_t j = i;
      while (j < part.size() && !std::isspace(static_cast<unsigned char>(part[j]))) ++j;
      if (j > i) {
        any_text = true;
        const std::string item = part.substr(i, j - i);
        if (item == "inputs") {  // the inputs unchanged
          i = j;
          continue;
        }
        const size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0) {
          throw ConfigError("scheme '" + part + "': '" + item + "' must be flag=value");
        }
        std::string name = item.substr(0, eq);
        if (name.rfind("--", 0) == 0) name = name.substr(2);
        overrides[name] = item.substr(eq + 1);
      }
      i = j;
    }
    for (const auto& [name, value] : overrides) {
      const plan::Setting* row = plan::find_setting(name);
      if (row == nullptr || row->command != plan::Command::kMemory) {
        throw ConfigError("scheme '" + part + "': --" + name + "=" + value + ": unknown option (not a memory setting)");
      }
    }
    if (any_text) out.push_back({scheme_label(overrides), std::move(overrides)});
    start = end + 1;
  }
  return out;
}

std::string schemes_text(const std::vector<SchemeOverride>& schemes) {
  std::string out;
  for (const SchemeOverride& s : schemes) {
    if (!out.empty()) out += "; ";
    if (s.overrides.empty()) out += "inputs";
    for (const auto& [name, value] : s.overrides) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      out += name + '=' + value;
    }
  }
  return out;
}

int64_t users_that_fit(const plan::MemoryAnswer& answer, int64_t context_tokens) {
  const MemoryPlan& plan = answer.plan;
  if (!plan.fits || plan.kv_budget_bytes <= 0) return 0;
  if (answer.layout.scheme().paged && plan.block_bytes > 0) {
    // Blocks, not bytes: a paged engine hands out whole blocks, and its pool is num_blocks large.
    const int64_t blocks = answer.layout.request_blocks(context_tokens);
    const int64_t state = answer.layout.state_bytes_per_request();
    if (state == 0) return blocks > 0 ? plan.num_blocks / blocks : 0;
    const int64_t bytes = answer.layout.request_allocated_bytes(context_tokens);
    return bytes > 0 ? plan.kv_budget_bytes / bytes : 0;
  }
  const int64_t bytes = answer.layout.request_bytes(context_tokens);
  return bytes > 0 ? plan.kv_budget_bytes / bytes : 0;
}

Analysis failed_analysis(const std::string& error, const std::vector<SchemeOverride>& schemes) {
  Analysis a;
  a.error = error;
  for (const SchemeOverride& s : schemes) {
    a.schemes.push_back({s.label, std::nullopt, error});
    a.users.emplace_back();
  }
  return a;
}

Analysis analyze(const plan::SettingValues& inputs, const std::vector<SchemeOverride>& schemes, int points) {
  plan::Scenario s;
  try {
    plan::set_values(s, inputs);
  } catch (const ConfigError& e) {
    return failed_analysis(e.what(), schemes);
  }
  return analyze(s, schemes, points);
}

Analysis analyze(const plan::Scenario& inputs, const std::vector<SchemeOverride>& schemes, int points) {
  Analysis a;
  try {
    a.base = plan::answer_memory(inputs);
  } catch (const ConfigError& e) {
    a.error = e.what();
  }
  a.schemes.reserve(schemes.size());
  for (const SchemeOverride& s : schemes) {
    SchemeAnswer sa;
    sa.label = s.label;
    try {
      sa.answer = plan::answer_memory(plan::with_values(inputs, s.overrides));
    } catch (const ConfigError& e) {
      sa.error = e.what();
    }
    a.schemes.push_back(std::move(sa));
  }
  const int64_t max_len = a.base ? std::max<int64_t>(a.base->plan.max_model_len, 1) : 0;
  const int64_t first = a.base ? std::max<int64_t>(a.base->plan.tokens_per_block, 1) : 0;
  if (max_len > 0 && points > 0) {
    a.contexts.reserve(static_cast<size_t>(points));
    // Geometric spacing: the curves are close to users ∝ 1/context, read on log-log axes.
    const double ratio = static_cast<double>(max_len) / static_cast<double>(std::min(first, max_len));
    for (int i = 0; i < points; ++i) {
      const double t = points == 1 ? 1.0 : static_cast<double>(i) / (points - 1);
      const int64_t c = std::llround(static_cast<double>(std::min(first, max_len)) * std::pow(ratio, t));
      a.contexts.push_back(std::clamp<int64_t>(c, 1, max_len));
    }
  }
  for (const SchemeAnswer& s : a.schemes) {
    std::vector<int64_t> row(a.contexts.size(), 0);
    if (s.answer) {
      for (size_t i = 0; i < a.contexts.size(); ++i) row[i] = users_that_fit(*s.answer, a.contexts[i]);
    }
    a.users.push_back(std::move(row));
  }
  return a;
}

}  // namespace kvplan::gui
