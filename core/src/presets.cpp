#include "kvplan/core/presets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/did_you_mean.h"
#include "internal/json_fields.h"
#include "kvplan/core/error.h"

namespace kvplan {
namespace internal {
// Generated at build time from data/ (cmake/EmbedFiles.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_model_files();
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_gpu_files();
}  // namespace internal

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// lower(name) == lowered, without building the lower-case copy: resolve_model and resolve_gpu run
// it over every preset name on each call (the plan layer resolves a scenario per answer).
bool lower_equals(std::string_view name, std::string_view lowered) {
  return name.size() == lowered.size() &&
         std::equal(name.begin(), name.end(), lowered.begin(), [](unsigned char c, unsigned char l) {
           return static_cast<unsigned char>(std::tolower(c)) == l;
         });
}

bool ends_with_json(const std::string& lowered) {
  return lowered.size() > 5 && lowered.compare(lowered.size() - 5, 5, ".json") == 0;
}

bool is_file(std::string_view path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(std::string(path)), ec);
}

nlohmann::json parse_embedded(std::string_view name, std::string_view text) {
  return internal::parse_python_json(text, fmt::format("preset file '{}'", name));
}

// Every name a GPU preset answers to, so that two presets never claim the same one.
void check_unique_gpu_names(const std::vector<GpuSpec>& gpus) {
  std::map<std::string, std::string> owner;  // lower-case name -> preset id
  for (const GpuSpec& g : gpus) {
    auto claim = [&](const std::string& what, const std::string& name) {
      auto [it, inserted] = owner.emplace(lower(name), g.id);
      if (!inserted && it->second != g.id) {
        throw ConfigError(fmt::format("gpu preset '{}': {} '{}' is already a name of gpu preset '{}'", g.id, what,
                                      name, it->second));
      }
    };
    claim("id", g.id);
    for (const std::string& a : g.aliases) claim("alias", a);
    for (const std::string& d : g.device_names) claim("device name", d);
  }
}

// A preset's repo ids: "_kvplan_hf_repos" and the repo its source URL names, as written.
std::vector<std::string> repos_of(const ModelConfig& m) {
  std::vector<std::string> out = m.hf_repos;
  std::string from_source = hf_repo_from_url(m.source);
  if (!from_source.empty()) {
    bool listed = std::any_of(out.begin(), out.end(), [&](const std::string& r) { return lower(r) == lower(from_source); });
    if (!listed) out.push_back(from_source);
  }
  return out;
}

// Listed repos must look like ORG/NAME and belong to one preset. (A repo named only by source
// URLs may be shared, e.g. by a preset and a trimmed variant of it: the listed one wins, then the
// first preset.)
void check_model_repos(const std::vector<ModelConfig>& models) {
  std::map<std::string, std::string> owner;  // lower-case repo -> preset id
  for (const ModelConfig& m : models) {
    for (size_t i = 0; i < m.hf_repos.size(); ++i) {
      const std::string& r = m.hf_repos[i];
      auto slash = r.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == r.size() || r.find('/', slash + 1) != std::string::npos) {
        throw ConfigError(fmt::format("model '{}': _kvplan_hf_repos[{}]={} must look like ORG/NAME", m.id, i, r));
      }
      auto [it, inserted] = owner.emplace(lower(r), m.id);
      if (!inserted && it->second != m.id) {
        throw ConfigError(fmt::format("model '{}': _kvplan_hf_repos[{}]={} is already listed by model '{}'", m.id, i,
                                      r, it->second));
      }
    }
  }
}

std::string model_ids() {
  std::string known;
  for (const ModelConfig& m : model_presets()) known += (known.empty() ? "" : ", ") + m.id;
  return known;
}

std::string gpu_ids() {
  std::string known;
  for (const GpuSpec& g : gpu_presets()) known += (known.empty() ? "" : ", ") + g.id;
  return known;
}

std::string hint(const std::string& did_you_mean) { return did_you_mean.empty() ? "" : "; " + did_you_mean; }

}  // namespace

std::string hf_repo_from_url(std::string_view url) {
  for (std::string_view prefix : {"https://huggingface.co/", "http://huggingface.co/", "huggingface.co/"}) {
    if (url.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = url.substr(prefix.size());
    auto first = rest.find('/');
    if (first == std::string_view::npos || first == 0) return "";
    auto second = rest.find('/', first + 1);
    std::string_view repo = rest.substr(0, second);
    if (repo.size() == first + 1) return "";
    return std::string(repo);
  }
  return "";
}

const std::vector<ModelConfig>& model_presets() {
  static const std::vector<ModelConfig> presets = [] {
    std::vector<ModelConfig> out;
    for (const auto& [name, text] : internal::embedded_model_files()) {
      nlohmann::json j = parse_embedded(name, text);
      std::string id = j.value("_kvplan_id", std::string(name));
      out.push_back(parse_model_config(j, id));
    }
    check_model_repos(out);
    return out;
  }();
  return presets;
}

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = [] {
    std::vector<GpuSpec> out;
    for (const auto& [name, text] : internal::embedded_gpu_files()) {
      nlohmann::json j = parse_embedded(name, text);
      if (!j.is_array()) throw ConfigError(fmt::format("preset file '{}': expected an array of GPUs", name));
      for (const nlohmann::json& g : j) out.push_back(parse_gpu_spec(g));
    }
    check_unique_gpu_names(out);
    return out;
  }();
  return presets;
}

ModelConfig resolve_model(std::string_view text, const ModelParseOptions& options) {
  const std::string key = lower(text);
  for (const ModelConfig& m : model_presets()) {
    if (lower_equals(m.id, key)) return m;
  }
  const bool has_slash = key.find('/') != std::string::npos;
  if ((has_slash || ends_with_json(key)) && is_file(text)) return load_model_config_file(std::string(text), options);
  if (has_slash) {
    for (const ModelConfig& m : model_presets()) {
      for (const std::string& r : m.hf_repos) {
        if (lower_equals(r, key)) return m;
      }
    }
    for (const ModelConfig& m : model_presets()) {
      if (lower_equals(hf_repo_from_url(m.source), key)) return m;
    }
  }

  std::vector<internal::NameCandidate> candidates;
  for (const ModelConfig& m : model_presets()) {
    if (!has_slash) candidates.push_back({m.id, m.id, m.id});
    for (const std::string& r : repos_of(m)) {
      // Without a '/', compare with the repo's name part: "Llama-3.1-8B-Instruct" finds its repo.
      std::string name = has_slash ? r : r.substr(r.find('/') + 1);
      candidates.push_back({name, m.id, fmt::format("{} (preset {})", r, m.id)});
    }
  }
  const std::string suggestion = hint(internal::did_you_mean(text, candidates));
  if (has_slash && !ends_with_json(key)) {
    throw ConfigError(fmt::format("model={}: no such file, and no preset for the Hugging Face repo {}{}; presets: {}",
                                  text, text, suggestion, model_ids()));
  }
  if (has_slash || ends_with_json(key)) {
    throw ConfigError(fmt::format("model={}: no such file (a path to a config.json){}; presets: {}", text, suggestion,
                                  model_ids()));
  }
  throw ConfigError(fmt::format(
      "model={} is not a preset id, a Hugging Face repo id of a preset or a path to a config.json{}; presets: {}", text,
      suggestion, model_ids()));
}

GpuSpec resolve_gpu(std::string_view text) {
  const std::string key = lower(text);
  for (const GpuSpec& g : gpu_presets()) {
    if (lower_equals(g.id, key)) return g;
    for (const std::string& a : g.aliases) {
      if (lower_equals(a, key)) return g;
    }
    for (const std::string& d : g.device_names) {
      if (lower_equals(d, key)) return g;
    }
  }
  if (key.find('/') != std::string::npos || ends_with_json(key)) {
    if (is_file(text)) return load_gpu_spec_file(std::string(text));
    throw ConfigError(fmt::format("gpu={}: no such file (a custom GPU is a JSON file with one GPU object, see "
                                  "docs/gpus.md); presets: {}",
                                  text, gpu_ids()));
  }
  std::vector<internal::NameCandidate> candidates;
  for (const GpuSpec& g : gpu_presets()) {
    candidates.push_back({g.id, g.id, g.id});
    for (const std::string& a : g.aliases) candidates.push_back({a, g.id, fmt::format("{} (alias {})", g.id, a)});
    for (const std::string& d : g.device_names) {
      candidates.push_back({d, g.id, fmt::format("{} (device name {})", g.id, d)});
    }
  }
  throw ConfigError(fmt::format("gpu={} is not a GPU preset id, alias, device name or JSON file{}; presets: {}", text,
                                hint(internal::did_you_mean(text, candidates)), gpu_ids()));
}

}  // namespace kvplan
