// GuideLLM `guidellm benchmark ... --output-path report.json`: {"benchmarks": [...]}, one entry per
// rate of the sweep. Each has args.strategy {type_: synchronous | concurrent (streams) | constant
// (rate) | poisson (rate) | throughput}, run_stats {start_time (epoch s), requests_made {successful}}
// worker.backend_model (the model served) and metrics.<name>.successful {mean, median, percentiles {p99}}, with the units in the names:
// time_to_first_token_ms, time_per_output_token_ms, inter_token_latency_ms (ms), request_latency
// (SECONDS), prompt_token_count / output_token_count (tokens), requests_per_second,
// output_tokens_per_second. Only successful requests are read.
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "serving_run_formats.h"

namespace kvplan::calibration::detail {

namespace {

const nlohmann::json* object_at(const nlohmann::json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

// metrics.<name>.successful
const nlohmann::json* successful(const nlohmann::json& metrics, const std::string& name) {
  const nlohmann::json* m = object_at(metrics, name);
  return m ? object_at(*m, "successful") : nullptr;
}

RunLatency latency(const nlohmann::json& metrics, const std::string& name, double ms_per_unit) {
  RunLatency l;
  const nlohmann::json* s = successful(metrics, name);
  if (s == nullptr) return l;
  if (auto v = number_at(*s, "mean")) l.mean_ms = *v * ms_per_unit;
  if (auto v = number_at(*s, "median")) l.median_ms = *v * ms_per_unit;
  if (const nlohmann::json* p = object_at(*s, "percentiles")) {
    if (auto v = number_at(*p, "p99")) l.p99_ms = *v * ms_per_unit;
  }
  return l;
}

double mean_of(const nlohmann::json& metrics, const std::string& name) {
  const nlohmann::json* s = successful(metrics, name);
  return s ? number_at(*s, "mean").value_or(0) : 0;
}

}  // namespace

void read_guidellm_benchmark(const nlohmann::json& report, const nlohmann::json& b, ServingRun& run) {
  (void)report;
  const nlohmann::json* args = object_at(b, "args");
  const nlohmann::json* strategy = args ? object_at(*args, "strategy") : nullptr;
  if (strategy == nullptr) {
    throw ConfigError(fmt::format("run {} ({}): args.strategy is missing (the load)", run.id, run.format));
  }
  const std::string type = string_at(*strategy, "type_");
  if (type == "synchronous") {
    run.load = RunLoad::kConcurrency;
    run.concurrency = 1;
  } else if (type == "concurrent") {
    run.load = RunLoad::kConcurrency;
    run.concurrency = static_cast<int64_t>(required_number(*strategy, "streams", run));
  } else if (type == "constant" || type == "poisson") {
    run.load = RunLoad::kRate;
    run.rate_per_s = required_number(*strategy, "rate", run);
    run.arrival_cv = type == "poisson" ? 1.0 : 0.0;
  } else {
    throw ConfigError(fmt::format("run {} ({}): args.strategy.type_='{}': kvplan reads synchronous, concurrent, "
                                  "constant and poisson benchmarks (throughput runs state no load to simulate)",
                                  run.id, run.format, type));
  }
  if (const nlohmann::json* stats = object_at(b, "run_stats")) {
    if (const nlohmann::json* made = object_at(*stats, "requests_made")) {
      run.completed = static_cast<int64_t>(number_at(*made, "successful").value_or(0));
      run.num_prompts = static_cast<int64_t>(number_at(*made, "total").value_or(static_cast<double>(run.completed)));
    }
    const std::optional<double> start = number_at(*stats, "start_time");
    const std::optional<double> end = number_at(*stats, "end_time");
    if (start && end) run.duration_s = *end - *start;
    if (start) {
      const std::time_t t = static_cast<std::time_t>(*start);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      run.date = buf;
    }
  }
  if (const nlohmann::json* worker = object_at(b, "worker")) run.model = string_at(*worker, "backend_model");
  const nlohmann::json* metrics = object_at(b, "metrics");
  if (metrics == nullptr) throw ConfigError(fmt::format("run {} ({}): metrics is missing", run.id, run.format));
  run.ttft = latency(*metrics, "time_to_first_token_ms", 1.0);
  run.tpot = latency(*metrics, "time_per_output_token_ms", 1.0);
  run.itl = latency(*metrics, "inter_token_latency_ms", 1.0);
  run.e2e = latency(*metrics, "request_latency", 1000.0);  // seconds
  run.mean_input_tokens = mean_of(*metrics, "prompt_token_count");
  run.mean_output_tokens = mean_of(*metrics, "output_token_count");
  run.request_throughput_per_s = mean_of(*metrics, "requests_per_second");
  run.output_throughput_tokens_per_s = mean_of(*metrics, "output_tokens_per_second");
}

}  // namespace kvplan::calibration::detail
