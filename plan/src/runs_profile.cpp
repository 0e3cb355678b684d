// The profile file `kvplan calibrate from-runs` writes (runs_fit.h, runs_profile_json) and the
// serving terms `--profile FILE` takes from it (read_runs_profile_terms). Its operator costs are
// the GPU's defaults (core/default_profile.h); every class is labelled "fitted to your runs (...)"
// because the step times it gives are those costs times the fitted factor plus the fitted terms
// — never "measured" (kvplan's own CUPTI runs) nor "published".
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/default_profile.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/runs_fit.h"

namespace kvplan::plan {

namespace {

constexpr const char* kLabel = "fitted to your runs";

// "2025-04-14" from vLLM's "20250414-141621"; other dates as given.
std::string run_date(const std::string& d) {
  if (d.size() >= 8 && d.find_first_not_of("0123456789") >= 8) {
    return fmt::format("{}-{}-{}", d.substr(0, 4), d.substr(4, 2), d.substr(6, 2));
  }
  return d.empty() ? "date not stated" : d;
}

}  // namespace

nlohmann::json runs_profile_json(const RunsFit& fit) {
  const RunsDeployment& d = fit.deployment;
  const GpuSpec gpu = resolve_gpu(d.gpu);
  const ProfileChoice base = default_profile(gpu);
  PerfProfile profile = base.profile;

  std::set<std::string> dates;
  for (const RunPoint& p : fit.points) dates.insert(run_date(p.run->date));
  std::string date_list;
  for (const std::string& s : dates) date_list += (date_list.empty() ? "" : ", ") + s;
  const std::string engine = d.engine + (d.engine_version.empty() ? "" : " " + d.engine_version);
  const std::string what = fmt::format("{} runs of {} with {} on {}, {}; {}", fit.points.size(), d.model, engine,
                                       d.gpu, date_list,
                                       fit.held_out ? "band from the held-out quarter"
                                                    : "band IN-SAMPLE (fewer than 4 runs: nothing held out)");
  for (size_t c = 0; c < kNumOpClasses; ++c) {
    OpClassProfile& k = profile.at(static_cast<OpClass>(c));
    k.note = fmt::format("operator costs under the fit: {} ({}); {}", k.source, base.summary, k.note);
    k.source = fmt::format("{} ({})", kLabel, what);
  }
  ProfileBand band;
  band.ttft_p90_rel_error = std::round(fit.after.ttft_p90_abs * 1000) / 1000;
  band.tpot_p90_rel_error = std::round(fit.after.tpot_p90_abs * 1000) / 1000;
  band.how = fmt::format("p90 |error| of {} and {} after the fit, {} ({} of {} runs; kvplan calibrate from-runs)",
                         fit.points.empty() ? "TTFT" : fit.points[0].ttft_stat,
                         fit.points.empty() ? "TPOT" : fit.points[0].tpot_stat,
                         fit.held_out ? "on the held-out quarter" : "IN-SAMPLE (fewer than 4 runs)", fit.after.runs,
                         fit.points.size());
  profile.set_band(band);

  nlohmann::json j = profile.to_json();
  nlohmann::json runs = nlohmann::json::array();
  for (const RunPoint& p : fit.points) {
    runs.push_back({{"id", p.run->id},
                    {"format", p.run->format},
                    {"date", run_date(p.run->date)},
                    {"load", p.run->load_text()},
                    {"held_out", p.held_out}});
  }
  const ServingTerms& t = fit.fitted;
  j["serving_fit"] = {{"label", kLabel},
                      {"model", d.model},
                      {"gpu", d.gpu},
                      {"engine", d.engine},
                      {"engine_version", d.engine_version},
                      {"held_out", fit.held_out},
                      {"runs", runs},
                      {"terms",
                       {{"request_overhead_ms", t.request_ms},
                        {"request_overhead_per_in_flight_ms", t.per_in_flight_ms},
                        {"request_overhead_per_in_flight_prefill_share", t.prefill_share},
                        {"step_overhead_ms", t.step_ms},
                        {"step_time_factor", t.factor}}}};
  return j;
}

std::optional<RunsProfileTerms> read_runs_profile_terms(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  if (c != '{') return std::nullopt;  // a calibration .sqlite
  in.seekg(0);
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = parse_json_input(ss.str(), fmt::format("--profile={}", path));
  if (!j.is_object() || !j.contains("serving_fit")) return std::nullopt;
  const nlohmann::json& f = j.at("serving_fit");
  const std::string where = fmt::format("--profile={}: serving_fit", path);
  auto text = [&](const char* key) {
    if (!f.is_object() || !f.contains(key) || !f.at(key).is_string()) {
      throw ConfigError(fmt::format("{}.{} must be a string", where, key));
    }
    return f.at(key).get<std::string>();
  };
  auto number = [&](const char* key) {
    const nlohmann::json& terms = f.at("terms");
    if (!terms.is_object() || !terms.contains(key) || !terms.at(key).is_number()) {
      throw ConfigError(fmt::format("{}.terms.{} must be a number", where, key));
    }
    return terms.at(key).get<double>();
  };
  if (!f.contains("terms")) throw ConfigError(fmt::format("{}.terms is missing", where));
  RunsProfileTerms r;
  r.label = text("label");
  if (r.label != kLabel) throw ConfigError(fmt::format("{}.label='{}' must be '{}'", where, r.label, kLabel));
  r.engine = text("engine");
  r.gpu = text("gpu");
  r.terms = ServingTerms{number("request_overhead_ms"), number("request_overhead_per_in_flight_ms"),
                         number("request_overhead_per_in_flight_prefill_share"), number("step_overhead_ms"),
                         number("step_time_factor")};
  if (!(r.terms.factor > 0)) throw ConfigError(fmt::format("{}.terms.step_time_factor must be > 0", where));
  return r;
}

void apply_runs_profile(const std::string& profile_path, const std::string& engine, const std::string& gpu_id,
                        sim::ServingOverheads& o) {
  const std::optional<RunsProfileTerms> r = read_runs_profile_terms(profile_path);
  if (!r) return;
  if (r->engine != engine) {
    throw ConfigError(fmt::format("--profile={}: fitted to your runs of engine {}, not --engine={}: its serving terms "
                                  "are that engine's; fit runs of this one",
                                  profile_path, r->engine, engine));
  }
  if (r->gpu != gpu_id) {
    throw ConfigError(fmt::format("--profile={}: fitted to your runs on {}, not --gpu={}: the step-time factor is that "
                                  "GPU's; fit runs on this one",
                                  profile_path, r->gpu, gpu_id));
  }
  const std::string source = fmt::format("{} (--profile={})", kLabel, profile_path);
  const ServingTerms& t = r->terms;
  o.request = sim::OverheadTerm{sim::overhead_ms_to_ns(t.request_ms, "serving_fit.terms.request_overhead_ms"), source};
  o.request_per_in_flight = sim::OverheadTerm{
      sim::overhead_ms_to_ns(t.per_in_flight_ms, "serving_fit.terms.request_overhead_per_in_flight_ms"), source};
  o.request_per_in_flight_prefill_share = sim::ShareTerm{t.prefill_share, source};
  o.step = sim::OverheadTerm{sim::overhead_ms_to_ns(t.step_ms, "serving_fit.terms.step_overhead_ms"), source};
  o.step_factor = sim::StepFactor{t.factor, source};
  o.prefill_step_factor = o.step_factor;
}

}  // namespace kvplan::plan
