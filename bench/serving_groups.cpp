// Groups of whole-model runs (serving_groups.h).
#include "serving_groups.h"

#include <map>

#include "kvplan/core/error.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/presets.h"

namespace kvplan::bench {

std::string model_family(const ServingCase& c) {
  const auto preset = c.memory_flags.find("model");
  if (preset == c.memory_flags.end()) return "no preset";
  static std::map<std::string, std::string> memo;
  auto it = memo.find(preset->second);
  if (it != memo.end()) return it->second;
  std::string family = "?";
  try {
    const ModelConfig m = resolve_model(preset->second);
    bool moe = false;
    for (const LayerSpec& l : m.layers) moe |= l.mlp.kind == MlpKind::kMoe;
    const bool sparse = m.count_layers(LayerKind::kMla) > 0 && m.mla.index_topk > 0;
    if (m.count_layers(LayerKind::kLinearAttention) + m.count_layers(LayerKind::kMamba2) +
            m.count_layers(LayerKind::kMamba1) > 0) {
      family = "hybrid";
    } else if (sparse) {
      family = "DSA";
    } else if (m.count_layers(LayerKind::kMla) > 0) {
      family = moe ? "MLA + MoE" : "MLA";
    } else {
      family = moe ? "MoE" : "dense";
    }
  } catch (const ConfigError&) {
  }
  return memo[preset->second] = family;
}

std::string concurrency_bucket(const ServingCase& c) {
  const int64_t x = c.concurrency_per_replica();
  if (x <= 8) return "c<=8";
  if (x <= 32) return "c16-32";
  if (x <= 128) return "c64-128";
  return "c>128";
}

}  // namespace kvplan::bench
