// calibration/src/serving_run_formats.h — the per-format readers behind read_serving_runs
// (serving_run.h) and the field helpers they share. Internal to kvplan_calibration.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/calibration/serving_run.h"

namespace kvplan::calibration::detail {

// Which reader a JSON object belongs to ("" when none).
std::string serving_run_format(const nlohmann::json& obj);

// Each fills `run` (file and id already set) from one object of its format; ConfigError naming
// run.id and the field on what the object lacks.
void read_vllm_bench_result(const nlohmann::json& obj, ServingRun& run);
void read_sglang_bench_serving(const nlohmann::json& obj, ServingRun& run);
void read_genai_perf_export(const nlohmann::json& obj, ServingRun& run);
// GuideLLM: one benchmark of the report's "benchmarks" array.
void read_guidellm_benchmark(const nlohmann::json& report, const nlohmann::json& benchmark, ServingRun& run);

// The number at `key` (a JSON number, or a string holding one; "inf" is infinity), nullopt when
// absent or null.
std::optional<double> number_at(const nlohmann::json& obj, const std::string& key);
// The same, refused naming run.id and the field when absent.
double required_number(const nlohmann::json& obj, const std::string& key, const ServingRun& run);
std::string string_at(const nlohmann::json& obj, const std::string& key);

// mean_<stem>_ms, median_<stem>_ms, p99_<stem>_ms (vLLM's and SGLang's summary names).
RunLatency summary_latency(const nlohmann::json& obj, const std::string& stem);
// The load of a vLLM / SGLang bench client: request_rate (a number or "inf") and max_concurrency
// (null: no cap); both finite is refused (kvplan's open loop has no cap). Poisson gaps for a rate.
void read_bench_client_load(const nlohmann::json& obj, ServingRun& run);

// Checks what every reader must have found: a load, lengths, a TTFT and a per-token latency.
void check_run(const ServingRun& run);

}  // namespace kvplan::calibration::detail
