// Embedded published profiles (published_profiles.h).
#include "kvplan/core/published_profiles.h"

#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"

namespace kvplan {
namespace internal {
// Generated at build time from data/profiles (cmake/EmbedFiles.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_profile_files();
}  // namespace internal

namespace {

const std::map<std::string, PerfProfile, std::less<>>& profiles() {
  static const std::map<std::string, PerfProfile, std::less<>> all = [] {
    std::map<std::string, PerfProfile, std::less<>> out;
    for (const auto& [name, text] : internal::embedded_profile_files()) {
      const std::string what = fmt::format("data/profiles/{}", name);
      nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) throw ConfigError(fmt::format("{}: not valid JSON", what));
      PerfProfile p = PerfProfile::from_json(j, what);
      const std::string id = p.gpu_id();
      if (!out.emplace(id, std::move(p)).second) {
        throw ConfigError(fmt::format("{}: a second published profile for gpu '{}'", what, id));
      }
    }
    return out;
  }();
  return all;
}

}  // namespace

const PerfProfile* published_profile(std::string_view gpu_id) {
  auto it = profiles().find(gpu_id);
  return it == profiles().end() ? nullptr : &it->second;
}

std::vector<std::string> published_profile_gpus() {
  std::vector<std::string> ids;
  for (const auto& [id, p] : profiles()) ids.push_back(id);
  return ids;
}

}  // namespace kvplan
