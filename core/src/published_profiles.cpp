// Embedded published profiles (published_profiles.h).
//
// Each file is parsed on first use of its GPU, not all of them on the first use of any: a run on
// one GPU parses ~0.8 MB of JSON instead of ~2.9 MB (the Azure trace run spent 18% of its
// instructions parsing the four profiles it does not use). A file is named after the GPU preset
// id it profiles (data/profiles/<id>.json); the id inside it must agree, which the parse checks.
#include "kvplan/core/published_profiles.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"

namespace kvplan {
namespace internal {
// Generated at build time from data/profiles (cmake/EmbedFiles.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_profile_files();
}  // namespace internal

namespace {

struct Entry {
  std::string id;         // the file name without ".json"
  std::string_view text;  // the embedded file
  std::once_flag parsed;
  std::optional<PerfProfile> profile;
  std::string error;  // the ConfigError's message when the file does not parse
};

// Sorted by id; built once (no parsing), so published_profile_gpus() costs no JSON.
std::vector<Entry>& entries() {
  static std::vector<Entry> all = [] {
    std::vector<std::pair<std::string, std::string_view>> files;
    for (const auto& [name, text] : internal::embedded_profile_files()) {
      std::string id(name);
      if (id.size() > 5 && id.ends_with(".json")) id.resize(id.size() - 5);
      files.emplace_back(std::move(id), text);
    }
    std::sort(files.begin(), files.end());
    std::vector<Entry> out(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      out[i].id = std::move(files[i].first);
      out[i].text = files[i].second;
    }
    return out;
  }();
  return all;
}

const PerfProfile& parse(Entry& e) {
  // call_once: concurrent first uses (plan --threads) parse once. The error is kept rather than
  // thrown through call_once, so every use reports it the same way.
  std::call_once(e.parsed, [&e] {
    const std::string what = fmt::format("data/profiles/{}.json", e.id);
    try {
      nlohmann::json j = nlohmann::json::parse(e.text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) throw ConfigError(fmt::format("{}: not valid JSON", what));
      PerfProfile p = PerfProfile::from_json(j, what);
      if (p.gpu_id() != e.id) {
        throw ConfigError(fmt::format("{}: profiles gpu '{}', but a published profile's file must be named after "
                                      "its gpu", what, p.gpu_id()));
      }
      e.profile.emplace(std::move(p));
    } catch (const ConfigError& error) {
      e.error = error.what();
    }
  });
  if (!e.profile) throw ConfigError(e.error);
  return *e.profile;
}

}  // namespace

const PerfProfile* published_profile(std::string_view gpu_id) {
  std::vector<Entry>& all = entries();
  auto it = std::lower_bound(all.begin(), all.end(), gpu_id, [](const Entry& e, std::string_view id) { return e.id < id; });
  if (it == all.end() || it->id != gpu_id) return nullptr;
  return &parse(*it);
}

std::vector<std::string> published_profile_gpus() {
  std::vector<std::string> ids;
  for (const Entry& e : entries()) ids.push_back(e.id);
  return ids;
}

}  // namespace kvplan
