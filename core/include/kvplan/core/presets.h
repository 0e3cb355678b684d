// kvplan/core/presets.h — the model and GPU presets shipped in data/, embedded in the binary.
//
//   ModelConfig m = resolve_model("llama-3.1-8b");        // preset id, or a path to a config.json
//   GpuSpec g = resolve_gpu("h100-sxm");
//
// Unknown ids throw ConfigError listing the known ones.
#pragma once

#include <string_view>
#include <vector>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

const std::vector<ModelConfig>& model_presets();
const std::vector<GpuSpec>& gpu_presets();

// A preset id (case-insensitive), or a path to a config.json (anything containing '/' or ending
// in ".json").
ModelConfig resolve_model(std::string_view id_or_path);
GpuSpec resolve_gpu(std::string_view id);

}  // namespace kvplan
