// SGLang `python -m sglang.bench_serving --output-file F.jsonl`: one JSON object per run, appended.
// Latencies in ms under SGLang's own names: mean_/median_/p99_ttft_ms, _tpot_ms, _itl_ms and
// mean_/median_/p99_e2e_latency_ms (not vLLM's "e2el"); request_rate (a number or "inf");
// max_concurrency (null: no cap); total_input_tokens / total_output_tokens over the completed
// requests; duration (s). Older versions (2024) write only the medians of TTFT and ITL, the mean
// and median E2E, and no num_prompts.
#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "serving_run_formats.h"

namespace kvplan::calibration::detail {

void read_sglang_bench_serving(const nlohmann::json& obj, ServingRun& run) {
  run.backend = string_at(obj, "backend");
  // The native backends speak SGLang's own /generate endpoint: only an SGLang server answers them.
  if (run.backend == "sglang" || run.backend == "sglang-native") run.engine = "sglang";
  run.model = string_at(obj, "model_id");
  run.date = string_at(obj, "date");
  run.completed = static_cast<int64_t>(required_number(obj, "completed", run));
  run.num_prompts = static_cast<int64_t>(number_at(obj, "num_prompts").value_or(static_cast<double>(run.completed)));
  run.duration_s = number_at(obj, "duration").value_or(0);
  run.request_throughput_per_s = number_at(obj, "request_throughput").value_or(0);
  if (!(run.request_throughput_per_s > 0) && run.duration_s > 0) {
    run.request_throughput_per_s = static_cast<double>(run.completed) / run.duration_s;  // not written by old versions
  }
  run.output_throughput_tokens_per_s = number_at(obj, "output_throughput").value_or(0);

  read_bench_client_load(obj, run);  // bench_serving draws exponential gaps at the rate
  run.ttft = summary_latency(obj, "ttft");
  run.tpot = summary_latency(obj, "tpot");
  run.itl = summary_latency(obj, "itl");
  run.e2e = summary_latency(obj, "e2e_latency");
  if (run.completed > 0) {
    run.mean_input_tokens = required_number(obj, "total_input_tokens", run) / static_cast<double>(run.completed);
    run.mean_output_tokens = required_number(obj, "total_output_tokens", run) / static_cast<double>(run.completed);
  }
}

}  // namespace kvplan::calibration::detail
