// Reads benchmark-run files of any supported format into ServingRun records: which format an
// object is, the shared field helpers and the checks every run must pass.
#include "kvplan/calibration/serving_run.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "serving_run_formats.h"

namespace kvplan::calibration {

std::string ServingRun::load_text() const {
  switch (load) {
    case RunLoad::kConcurrency: return fmt::format("concurrency {}", concurrency);
    case RunLoad::kBurst: return fmt::format("burst of {}", num_prompts);
    case RunLoad::kRate: break;
  }
  if (arrival_cv == 1.0) return fmt::format("rate {:g} req/s (Poisson)", rate_per_s);
  if (arrival_cv == 0.0) return fmt::format("rate {:g} req/s (constant)", rate_per_s);
  return fmt::format("rate {:g} req/s (gaps CV {:.3g})", rate_per_s, arrival_cv);
}

namespace detail {

std::string serving_run_format(const nlohmann::json& obj) {
  if (!obj.is_object()) return "";
  if (obj.contains("benchmarks") && obj.at("benchmarks").is_array()) return "guidellm";
  // genai-perf and AIPerf: every metric an object with its "unit"; the run's settings under
  // "input_config" (genai-perf) or "input_config"/"aiperf_version" (AIPerf).
  if (obj.contains("time_to_first_token") && obj.at("time_to_first_token").is_object()) {
    return obj.contains("aiperf_version") ? "aiperf" : "genai-perf";
  }
  // SGLang's bench_serving names E2E "e2e_latency" and counts retokenized output; vLLM's "e2el".
  if (obj.contains("mean_e2e_latency_ms") || obj.contains("median_e2e_latency_ms") ||
      obj.contains("total_output_tokens_retokenized")) {
    return "sglang bench_serving";
  }
  if (obj.contains("mean_ttft_ms") || obj.contains("median_ttft_ms") || obj.contains("ttfts")) {
    return "vllm bench serve";
  }
  return "";
}

std::optional<double> number_at(const nlohmann::json& obj, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s == "inf" || s == "Infinity") return std::numeric_limits<double>::infinity();
    try {
      size_t used = 0;
      const double v = std::stod(s, &used);
      if (used == s.size()) return v;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

double required_number(const nlohmann::json& obj, const std::string& key, const ServingRun& run) {
  const std::optional<double> v = number_at(obj, key);
  if (!v) {
    throw ConfigError(fmt::format("run {} ({}): field '{}' is missing or not a number", run.id, run.format, key));
  }
  return *v;
}

std::string string_at(const nlohmann::json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

RunLatency summary_latency(const nlohmann::json& obj, const std::string& stem) {
  RunLatency l;
  l.mean_ms = number_at(obj, "mean_" + stem + "_ms");
  l.median_ms = number_at(obj, "median_" + stem + "_ms");
  l.p99_ms = number_at(obj, "p99_" + stem + "_ms");
  return l;
}

void read_bench_client_load(const nlohmann::json& obj, ServingRun& run) {
  const double rate = required_number(obj, "request_rate", run);
  const std::optional<double> cap = number_at(obj, "max_concurrency");
  if (cap && std::isfinite(rate)) {
    throw ConfigError(fmt::format("run {} ({}): request_rate {} and max_concurrency {} together: kvplan's open-loop "
                                  "client has no concurrency cap; use runs with one or the other",
                                  run.id, run.format, rate, *cap));
  }
  if (cap) {
    run.load = RunLoad::kConcurrency;
    run.concurrency = static_cast<int64_t>(*cap);
  } else if (!std::isfinite(rate)) {
    run.load = RunLoad::kBurst;
  } else {
    run.load = RunLoad::kRate;
    run.rate_per_s = rate;
    run.arrival_cv = 1.0;
  }
}

void check_run(const ServingRun& run) {
  auto refuse = [&](const std::string& what) {
    throw ConfigError(fmt::format("run {} ({}): {}", run.id, run.format, what));
  };
  if (run.load == RunLoad::kConcurrency && run.concurrency <= 0) refuse("the concurrency must be a positive integer");
  if (run.load == RunLoad::kRate && !(run.rate_per_s > 0 && std::isfinite(run.rate_per_s))) {
    refuse(fmt::format("request rate {} must be a positive number", run.rate_per_s));
  }
  if (run.completed == 0) refuse("no completed requests (field 'completed')");
  if (!(run.mean_input_tokens > 0)) refuse("no input lengths (total_input_tokens, input_lens or the input sequence length)");
  if (!(run.mean_output_tokens > 0)) refuse("no output lengths (total_output_tokens, output_lens or the output sequence length)");
  if (!run.ttft.mean_ms && !run.ttft.median_ms) refuse("no TTFT (mean or median)");
  if (!run.tpot.mean_ms && !run.tpot.median_ms && !run.itl.mean_ms && !run.itl.median_ms) {
    refuse("no per-token latency (TPOT or ITL, mean or median)");
  }
}

}  // namespace detail

std::vector<ServingRun> parse_serving_runs(const std::string& text, const std::string& name) {
  // One JSON document, or JSON lines (vLLM scripts append --save-result objects; SGLang writes one
  // line per run).
  std::vector<nlohmann::json> docs;
  std::vector<int> lines;
  const nlohmann::json whole = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded()) {
    docs.push_back(whole);
    lines.push_back(0);
  } else {
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      docs.push_back(parse_json_input(line, fmt::format("benchmark run file '{}' line {}", name, n)));
      lines.push_back(n);
    }
  }
  if (docs.empty()) throw ConfigError(fmt::format("benchmark run file '{}': empty", name));
  std::vector<ServingRun> out;
  for (size_t d = 0; d < docs.size(); ++d) {
    const nlohmann::json& obj = docs[d];
    const std::string format = detail::serving_run_format(obj);
    const std::string where = lines[d] > 0 && docs.size() > 1 ? fmt::format("{} #{}", name, lines[d]) : name;
    if (format.empty()) {
      throw ConfigError(fmt::format(
          "benchmark run file '{}': {} is none of the formats kvplan reads (vllm bench serve --save-result JSON, "
          "SGLang bench_serving JSONL, genai-perf/AIPerf profile export, GuideLLM report)",
          name, lines[d] > 0 ? fmt::format("line {}", lines[d]) : std::string("the document")));
    }
    if (format == "guidellm") {
      const nlohmann::json& benchmarks = obj.at("benchmarks");
      for (size_t b = 0; b < benchmarks.size(); ++b) {
        ServingRun run;
        run.file = name;
        run.id = benchmarks.size() > 1 ? fmt::format("{} benchmark {}", where, b + 1) : where;
        run.format = format;
        detail::read_guidellm_benchmark(obj, benchmarks[b], run);
        detail::check_run(run);
        out.push_back(std::move(run));
      }
      continue;
    }
    ServingRun run;
    run.file = name;
    run.id = where;
    run.format = format;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (it->is_string()) run.fields[it.key()] = it->get<std::string>();
      else if (it->is_number()) run.fields[it.key()] = it->dump();
    }
    if (format == "vllm bench serve") detail::read_vllm_bench_result(obj, run);
    else if (format == "sglang bench_serving") detail::read_sglang_bench_serving(obj, run);
    else detail::read_genai_perf_export(obj, run);
    detail::check_run(run);
    out.push_back(std::move(run));
  }
  return out;
}

std::vector<ServingRun> read_serving_runs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("benchmark run file '{}': cannot read it", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_serving_runs(ss.str(), path);
}

std::vector<ServingRun> read_serving_runs(const std::vector<std::string>& paths, const std::vector<std::string>& where) {
  std::vector<std::pair<std::string, std::string>> keys;
  for (const std::string& w : where) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError(fmt::format("--where={} must be KEY=VALUE", w));
    keys.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  std::vector<ServingRun> out;
  for (const std::string& path : paths) {
    for (ServingRun& r : read_serving_runs(path)) {
      bool keep = true;
      for (const auto& [k, v] : keys) {
        auto it = r.fields.find(k);
        keep = keep && it != r.fields.end() && it->second == v;
      }
      if (keep) out.push_back(std::move(r));
    }
  }
  if (out.empty()) throw ConfigError("calibrate from-runs: no run left to fit (check the files and --where)");
  return out;
}

}  // namespace kvplan::calibration
