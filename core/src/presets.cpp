#include "kvplan/core/presets.h"

#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

nlohmann::json parse_embedded(std::string_view name, std::string_view text) {
  return internal::parse_python_json(text, fmt::format("preset file '{}'", name));
}

}  // namespace

const std::vector<ModelConfig>& model_presets() {
  static const std::vector<ModelConfig> presets = [] {
    std::vector<ModelConfig> out;
    for (const auto& [name, text] : internal::embedded_model_files()) {
      nlohmann::json j = parse_embedded(name, text);
      std::string id = j.value("_kvplan_id", std::string(name));
      out.push_back(parse_model_config(j, id));
    }
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
    return out;
  }();
  return presets;
}

ModelConfig resolve_model(std::string_view id_or_path) {
  std::string key = lower(id_or_path);
  for (const ModelConfig& m : model_presets()) {
    if (lower(m.id) == key) return m;
  }
  bool looks_like_path = id_or_path.find('/') != std::string_view::npos ||
                         (key.size() > 5 && key.substr(key.size() - 5) == ".json");
  if (looks_like_path) return load_model_config_file(std::string(id_or_path));
  std::string known;
  for (const ModelConfig& m : model_presets()) known += (known.empty() ? "" : ", ") + m.id;
  throw ConfigError(fmt::format("model={} is not a preset id or a path to a config.json; presets: {}",
                                id_or_path, known));
}

GpuSpec resolve_gpu(std::string_view id) {
  std::string key = lower(id);
  for (const GpuSpec& g : gpu_presets()) {
    if (lower(g.id) == key) return g;
  }
  std::string known;
  for (const GpuSpec& g : gpu_presets()) known += (known.empty() ? "" : ", ") + g.id;
  throw ConfigError(fmt::format("gpu={} is not a GPU preset; presets: {}", id, known));
}

}  // namespace kvplan
