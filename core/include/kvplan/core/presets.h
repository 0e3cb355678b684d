// kvplan/core/presets.h — the model and GPU presets shipped in data/, embedded in the binary, and
// how a name typed by a user becomes one.
//
//   ModelConfig m = resolve_model("meta-llama/Llama-3.1-8B-Instruct");  // id, HF repo or config.json
//   GpuSpec g = resolve_gpu("h100");                    // id, alias, device name or GPU JSON file
//
// Unknown names throw ConfigError with the closest known names ("did you mean ...?") and the list
// of presets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

const std::vector<ModelConfig>& model_presets();
const std::vector<GpuSpec>& gpu_presets();

// Case-insensitive, in this order: a preset id; an existing file (the text contains '/' or ends
// in ".json"), read as a Hugging Face config.json; a Hugging Face repo id ("org/name") that a
// preset lists in "_kvplan_hf_repos" or whose "_kvplan_source" URL names it.
// `options` applies to config.json files (presets are all supported architectures).
ModelConfig resolve_model(std::string_view text, const ModelParseOptions& options = {});

// Case-insensitive: a preset id, one of its aliases or device names; else, when the text contains
// '/' or ends in ".json", a file holding one GPU object in the preset schema (docs/gpus.md).
GpuSpec resolve_gpu(std::string_view text);

// The repo id "org/name" that a URL such as "https://huggingface.co/org/name/blob/main/config.json"
// names, or "" when it is not a huggingface.co URL with both parts.
std::string hf_repo_from_url(std::string_view url);

}  // namespace kvplan
