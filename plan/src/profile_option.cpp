#include "kvplan/plan/profile_option.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kvplan/calibration/fit_run.h"
#include "kvplan/calibration/fitter.h"
#include "kvplan/core/default_profile.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/published_profiles.h"

namespace kvplan::plan {

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
  if (path == "auto") return default_profile(gpu).profile;
  if (path == "datasheet") return PerfProfile::datasheet_default(gpu);
  if (path == "published") {
    if (const PerfProfile* p = published_profile(gpu.id)) return *p;
    throw ConfigError(fmt::format("--profile=published: no published profile for --gpu={} (published: {}); use "
                                  "--profile=auto to transfer the nearest one",
                                  gpu.id, fmt::join(published_profile_gpus(), ", ")));
  }
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

std::string profile_option_label(const std::string& path, const PerfProfile& profile, const GpuSpec& gpu) {
  if (path == "auto") return default_profile(gpu).summary;
  if (path == "datasheet") return fmt::format("datasheet defaults for {} (--profile=datasheet)", gpu.id);
  if (path == "published") return fmt::format("published {} profile (--profile=published)", gpu.id);
  return fmt::format("{} profile from --profile={} (GPU {})", profile.source_kind(), path, profile.gpu_id());
}

}  // namespace kvplan::plan
