// kvplan/plan/presets.h — the model and GPU presets as `kvplan models` and `kvplan gpus` list them.
//
//   nlohmann::json gpus = plan::gpus_json();   // id, memory, bandwidth, peaks, price, sources
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kvplan::plan {

nlohmann::json models_json();
std::string models_text();
nlohmann::json gpus_json();
std::string gpus_text();

}  // namespace kvplan::plan
