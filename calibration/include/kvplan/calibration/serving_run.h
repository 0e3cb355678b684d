// kvplan/calibration/serving_run.h — one whole-model benchmark run of a user's own deployment, read
// from the file its benchmark client wrote, in one record whatever the client:
//
//   std::vector<ServingRun> runs = read_serving_runs("bench/qps4.json");   // ConfigError on bad input
//   runs[0].load;  runs[0].ttft.mean_ms;  runs[0].mean_input_tokens;  runs[0].format;
//
// Formats (each with its own field names and units; see the reader of each):
//   - `vllm bench serve --save-result` JSON (one object, or one per line as some scripts append
//     them), with the `--save-detailed` per-request arrays (input_lens, output_lens, ttfts, itls)
//     when present: serving_run_vllm.cpp;
//   - SGLang `python -m sglang.bench_serving --output-file` JSONL: serving_run_sglang.cpp;
//   - genai-perf `profile_export_genai_perf.json` / AIPerf `profile_export_aiperf.json`:
//     serving_run_genai_perf.cpp;
//   - GuideLLM `guidellm benchmark --output-path report.json`: serving_run_guidellm.cpp.
// A run states its load (concurrency, request rate or burst) and lengths, or it is refused naming
// the field. What a file does not say about the deployment (model, GPU, engine, parallelism) stays
// empty here: the start-up log or the command line fixes it (plan/runs_fit.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvplan::calibration {

// A latency statistic as the file gives it, in milliseconds (absent: the file does not say).
struct RunLatency {
  std::optional<double> mean_ms, median_ms, p99_ms;
};

enum class RunLoad {
  kConcurrency,  // a closed loop: at most `concurrency` requests in flight (max_concurrency)
  kRate,         // open loop: requests at `rate_per_s` (Poisson or constant, `poisson`)
  kBurst,        // every request sent at t = 0 (request rate inf, no concurrency cap)
};

struct ServingRun {
  std::string file;    // the path it was read from
  std::string id;      // "<file>" or "<file> #<line>" when a file holds several runs
  std::string format;  // "vllm bench serve", "sglang bench_serving", "genai-perf", "aiperf", "guidellm"
  std::string date;    // as the file gives it ("" when it does not)

  // What the file says about the deployment ("" / 0: not stated).
  std::string model;           // model id as the client sent it
  std::string backend;         // the client's backend name (not necessarily the serving engine)
  std::string engine;          // vllm | sglang | trtllm, only when the file names the server
  std::string engine_version;

  RunLoad load = RunLoad::kRate;
  int64_t concurrency = 0;  // kConcurrency: the cap
  double rate_per_s = 0;    // kRate
  // kRate: coefficient of variation of the gaps between sends: 1 Poisson (vLLM burstiness 1, SGLang,
  // GuideLLM poisson), 1/sqrt(b) for vLLM's gamma gaps of burstiness b, 0 constant.
  double arrival_cv = 1.0;
  int64_t num_prompts = 0;  // requests sent
  int64_t completed = 0;    // requests that finished (the statistics cover these); -1: not stated

  double mean_input_tokens = 0, mean_output_tokens = 0;  // per completed request
  bool per_request = false;                              // the file had per-request arrays
  std::vector<int64_t> input_lens, output_lens;          // per request, when present

  double duration_s = 0;
  RunLatency ttft, tpot, itl, e2e;
  double request_throughput_per_s = 0, output_throughput_tokens_per_s = 0;

  // Every top-level string or number of the run's object, as text (vLLM's --metadata KEY=VALUE
  // lands there): what `calibrate from-runs --where KEY=VALUE` selects runs by.
  std::map<std::string, std::string> fields;

  // "concurrency 16", "rate 4 req/s (Poisson)", "burst of 200"
  std::string load_text() const;
};

// Every run in `path` (a file may hold several: JSON lines, GuideLLM's benchmarks array). Throws
// ConfigError naming the file, the run and the field when a run lacks its load, its lengths or
// any latency, or the file is in none of the formats above.
std::vector<ServingRun> read_serving_runs(const std::string& path);

// Every run of every file whose top-level fields match all of `where` ("KEY=VALUE" each; vLLM's
// --metadata). ConfigError for a malformed KEY=VALUE, or when no run is left.
std::vector<ServingRun> read_serving_runs(const std::vector<std::string>& paths, const std::vector<std::string>& where);

// The same from text (`name` stands for the file in messages and ids).
std::vector<ServingRun> parse_serving_runs(const std::string& text, const std::string& name);

}  // namespace kvplan::calibration
