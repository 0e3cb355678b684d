// genai-perf `profile_export_genai_perf.json` and AIPerf `profile_export_aiperf.json`: every metric
// an object with its statistics and its "unit" (time_to_first_token, inter_token_latency,
// request_latency in "ms" — "s", "us" and "ns" are converted too; output_token_throughput in
// tokens/sec; input_sequence_length / output_sequence_length in tokens; request_throughput in
// requests/sec; request_count), statistics "avg", "p50", "p99". The run's settings: genai-perf's
// "input_config" {concurrency, request_rate, model: [..]}, AIPerf's "input_config" {loadgen:
// {concurrency, request_rate}, endpoint: {model_names: [..]}}. Their inter-token latency leaves
// the first token out (it is TPOT per request, averaged): it is read as TPOT.
#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "serving_run_formats.h"

namespace kvplan::calibration::detail {

namespace {

// ms per one of the file's time units; 0 for an unknown unit.
double ms_per_unit(const std::string& unit) {
  if (unit == "ms" || unit == "ms/token") return 1.0;
  if (unit == "s" || unit == "sec" || unit == "s/token") return 1000.0;
  if (unit == "us" || unit == "us/token") return 1e-3;
  if (unit == "ns" || unit == "ns/token") return 1e-6;
  return 0.0;
}

const nlohmann::json* metric(const nlohmann::json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

RunLatency latency(const nlohmann::json& obj, const std::string& key, const ServingRun& run) {
  RunLatency l;
  const nlohmann::json* m = metric(obj, key);
  if (m == nullptr) return l;
  const std::string unit = string_at(*m, "unit");
  const double k = ms_per_unit(unit.empty() ? "ms" : unit);
  if (k == 0) {
    throw ConfigError(fmt::format("run {} ({}): {}.unit='{}' is not a time unit kvplan knows (ms, s, us, ns)", run.id,
                                  run.format, key, unit));
  }
  if (auto v = number_at(*m, "avg")) l.mean_ms = *v * k;
  if (auto v = number_at(*m, "p50")) l.median_ms = *v * k;
  if (auto v = number_at(*m, "p99")) l.p99_ms = *v * k;
  return l;
}

std::optional<double> stat(const nlohmann::json& obj, const std::string& key, const std::string& which = "avg") {
  const nlohmann::json* m = metric(obj, key);
  return m ? number_at(*m, which) : std::nullopt;
}

// input_config.<key> (genai-perf) or input_config.loadgen.<key> (AIPerf).
std::optional<double> load_setting(const nlohmann::json& config, const std::string& key) {
  if (auto v = number_at(config, key)) return v;
  if (const nlohmann::json* lg = metric(config, "loadgen")) return number_at(*lg, key);
  return std::nullopt;
}

std::string model_name(const nlohmann::json& config) {
  auto first = [](const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array() && !v.empty() && v[0].is_string()) return v[0].get<std::string>();
    return std::string();
  };
  if (config.contains("model")) return first(config.at("model"));
  if (const nlohmann::json* ep = metric(config, "endpoint"); ep && ep->contains("model_names")) {
    return first(ep->at("model_names"));
  }
  return "";
}

}  // namespace

void read_genai_perf_export(const nlohmann::json& obj, ServingRun& run) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* config = metric(obj, "input_config");
  const nlohmann::json& c = config ? *config : kEmpty;
  run.model = model_name(c);
  run.date = string_at(obj, "date");
  const std::optional<double> concurrency = load_setting(c, "concurrency");
  const std::optional<double> rate = load_setting(c, "request_rate");
  if (rate && *rate > 0 && std::isfinite(*rate)) {
    run.load = RunLoad::kRate;
    run.rate_per_s = *rate;
    run.arrival_cv = 1.0;  // both clients' default request-rate mode sends at Poisson times
  } else if (concurrency && *concurrency > 0) {
    run.load = RunLoad::kConcurrency;
    run.concurrency = static_cast<int64_t>(*concurrency);
  } else {
    throw ConfigError(fmt::format("run {} ({}): input_config states neither concurrency nor request_rate", run.id,
                                  run.format));
  }
  const std::optional<double> count = stat(obj, "request_count");
  run.completed = count ? static_cast<int64_t>(*count) : -1;
  run.num_prompts = run.completed;
  run.ttft = latency(obj, "time_to_first_token", run);
  run.tpot = latency(obj, "inter_token_latency", run);  // first token excluded: TPOT
  run.e2e = latency(obj, "request_latency", run);
  run.mean_input_tokens = stat(obj, "input_sequence_length").value_or(0);
  run.mean_output_tokens = stat(obj, "output_sequence_length").value_or(0);
  run.request_throughput_per_s = stat(obj, "request_throughput").value_or(0);
  run.output_throughput_tokens_per_s = stat(obj, "output_token_throughput").value_or(0);
}

}  // namespace kvplan::calibration::detail
