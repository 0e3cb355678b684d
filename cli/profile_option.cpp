#include "profile_option.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/fit_run.h"
#include "kvplan/calibration/fitter.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"

namespace kvplan::cli {

namespace {

// A JSON document starts with '{' after optional whitespace; an SQLite file with its magic string.
bool looks_like_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c)) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  }
  return false;
}

}  // namespace

PerfProfile load_profile_option(const std::string& path, const GpuSpec& gpu) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw ConfigError(fmt::format("--profile={}: file does not exist (a PerfProfile .json or a calibration .sqlite)", path));
  }
  PerfProfile profile;
  if (looks_like_json(path)) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const nlohmann::json j = parse_json_input(ss.str(), fmt::format("--profile={}", path));
    try {
      profile = PerfProfile::from_json(j, path);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("--profile={}: {}", path, e.what()));
    }
  } else {
    try {
      calibration::CalibrationStore db = calibration::CalibrationStore::open(path, calibration::OpenMode::kExisting);
      profile = calibration::fit_run(db, std::nullopt).report.profile;
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("--profile={}: {}", path, e.what()));
    }
  }
  if (profile.gpu_id() != gpu.id) profile = calibration::transfer_profile(profile, gpu);
  return profile;
}

}  // namespace kvplan::cli
