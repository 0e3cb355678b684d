// `vllm bench serve --save-result` (benchmarks/benchmark_serving.py before 0.9) JSON: the summary in
// ms (mean_ttft_ms, median_tpot_ms, mean_itl_ms, mean_e2el_ms, ...), request_rate (a number or
// "inf"), burstiness (gamma shape of the gaps; 1 = Poisson), max_concurrency (null: no cap),
// num_prompts, completed, total_input_tokens / total_output_tokens, and with --save-detailed the
// per-request arrays input_lens, output_lens, ttfts (SECONDS) and itls (lists of seconds).
#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "serving_run_formats.h"

namespace kvplan::calibration::detail {

namespace {

std::vector<int64_t> int_array(const nlohmann::json& obj, const std::string& key) {
  std::vector<int64_t> out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return out;
  for (const nlohmann::json& v : *it) out.push_back(v.is_number() ? v.get<int64_t>() : 0);
  return out;
}

}  // namespace

void read_vllm_bench_result(const nlohmann::json& obj, ServingRun& run) {
  run.date = string_at(obj, "date");
  run.model = string_at(obj, "model_id");
  run.backend = string_at(obj, "backend");
  run.num_prompts = static_cast<int64_t>(required_number(obj, "num_prompts", run));
  run.completed = static_cast<int64_t>(required_number(obj, "completed", run));
  run.duration_s = number_at(obj, "duration").value_or(0);
  run.request_throughput_per_s = number_at(obj, "request_throughput").value_or(0);
  run.output_throughput_tokens_per_s = number_at(obj, "output_throughput").value_or(0);

  read_bench_client_load(obj, run);
  if (run.load == RunLoad::kRate) {
    const double burstiness = number_at(obj, "burstiness").value_or(1.0);
    if (!(burstiness > 0)) {
      throw ConfigError(fmt::format("run {} ({}): burstiness={} must be > 0", run.id, run.format, burstiness));
    }
    run.arrival_cv = 1.0 / std::sqrt(burstiness);  // gamma gaps of shape b: CV 1/sqrt(b)
  }

  run.ttft = summary_latency(obj, "ttft");
  run.tpot = summary_latency(obj, "tpot");
  run.itl = summary_latency(obj, "itl");
  run.e2e = summary_latency(obj, "e2el");

  // --save-detailed: the per-request arrays. A failed request has output length 0 and TTFT 0.
  run.input_lens = int_array(obj, "input_lens");
  run.output_lens = int_array(obj, "output_lens");
  run.per_request = !run.input_lens.empty() && run.input_lens.size() == run.output_lens.size();
  if (run.per_request) {
    double in = 0, out = 0, ttft_s = 0;
    int64_t ok = 0;
    const nlohmann::json* ttfts = obj.contains("ttfts") && obj.at("ttfts").is_array() ? &obj.at("ttfts") : nullptr;
    for (size_t i = 0; i < run.input_lens.size(); ++i) {
      if (run.output_lens[i] <= 0) continue;
      in += static_cast<double>(run.input_lens[i]);
      out += static_cast<double>(run.output_lens[i]);
      if (ttfts && i < ttfts->size() && (*ttfts)[i].is_number()) ttft_s += (*ttfts)[i].get<double>();
      ++ok;
    }
    if (ok > 0) {
      run.mean_input_tokens = in / static_cast<double>(ok);
      run.mean_output_tokens = out / static_cast<double>(ok);
      if (!run.ttft.mean_ms && ttfts) run.ttft.mean_ms = ttft_s / static_cast<double>(ok) * 1000.0;
    }
  }
  if (!(run.mean_input_tokens > 0) && run.completed > 0) {
    run.mean_input_tokens = required_number(obj, "total_input_tokens", run) / static_cast<double>(run.completed);
    run.mean_output_tokens = required_number(obj, "total_output_tokens", run) / static_cast<double>(run.completed);
  }
}

}  // namespace kvplan::calibration::detail
