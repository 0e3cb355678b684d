// Helpers for the model-family tests: a shipped preset's config.json, and a check that a config is
// refused with a message naming what is wrong.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/model_config.h"

namespace kvplan::test {

// data/models/<id>.json as written.
inline nlohmann::json preset_config(const std::string& id) {
  std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/data/models/" + id + ".json");
  return nlohmann::json::parse(in);
}

// parse_model_config(c) must throw ConfigError whose message contains `needle`.
inline void expect_refused(const nlohmann::json& c, const std::string& needle) {
  try {
    parse_model_config(c, "bad");
    ADD_FAILURE() << "accepted; expected a refusal naming " << needle;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace kvplan::test
