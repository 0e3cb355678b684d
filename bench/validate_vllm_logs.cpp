// Validates kvplan's engine memory model against real start-up logs from public issues
// (data/vllm_logs: vLLM, SGLang, TensorRT-LLM): predicts each log's KV capacity in tokens ("GPU KV
// cache size", "# GPU blocks" x block size, "#tokens", "max tokens in paged KV cache") from the
// settings the log states, and prints printed vs predicted per log, then the count, median and
// worst |error| overall, per engine and per GPU, and the logs it refused or skipped, with why.
//
//   ./build/bench/kvplan_validate_vllm [data/vllm_logs] [--markdown]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/vllm_log_scenario.h"

namespace {

struct Row {
  std::string name;
  std::string engine;
  std::string version;
  std::string gpu;
  std::string parallel;  // "tp2", "tp8 pp2"
  std::string util;      // the engine's memory setting ("auto": the engine's default for the GPU and TP)
  double printed = 0;
  double predicted = 0;
  double error = 0;  // (predicted - printed) / printed
  std::string act_log, act_kv, weights;
};

struct Skipped {
  std::string name;
  std::string why;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Count, median and worst |error| of the rows whose `key` equals each value.
template <typename Key>
void print_groups(const std::vector<Row>& rows, const std::string& title, Key key, bool markdown) {
  std::map<std::string, std::vector<const Row*>> groups;
  for (const Row& r : rows) groups[key(r)].push_back(&r);
  if (markdown) {
    fmt::print("\n| {} | logs | median abs error | worst abs error (log) |\n|---|---:|---:|---|\n", title);
  } else {
    fmt::print("\n{:<14} {:>5} {:>9} {:>9}  worst log\n", title, "logs", "median", "worst");
  }
  for (const auto& [name, members] : groups) {
    std::vector<double> errs;
    const Row* worst = members.front();
    for (const Row* r : members) {
      errs.push_back(std::fabs(r->error));
      if (std::fabs(r->error) > std::fabs(worst->error)) worst = r;
    }
    if (markdown) {
      fmt::print("| {} | {} | {:.1f}% | {:+.1f}% ({}) |\n", name, members.size(), 100 * median(errs),
                 100 * worst->error, worst->name.substr(0, 2));
    } else {
      fmt::print("{:<14} {:>5} {:>8.1f}% {:>+8.1f}%  {}\n", name, members.size(), 100 * median(errs),
                 100 * worst->error, worst->name);
    }
  }
}

// Whether a constant of the engine memory model was read off this log (docs/benchmarks.md, "What
// is in-sample"): the V0 forward copies (01-03), the reserved-block rule (13, 87), the 0.19
// non-torch figures (16-76, which include the V1 forward copies of 17 and 30 and the V1 sampler
// of 22-24) and the ROCm non-torch figures (85, 86). Their small errors are not independent
// evidence, so the summary gives the median of the other logs on its own.
bool constants_read_off(const std::string& name) {
  const int n = std::atoi(name.substr(0, 2).c_str());
  return (n >= 1 && n <= 3) || n == 13 || (n >= 16 && n <= 76) || n == 85 || n == 86 || n == 87;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(KVPLAN_SOURCE_DIR) / "data" / "vllm_logs";
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--markdown") markdown = true;
    else dir = fs::path(a);
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".log") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Row> rows;
  std::vector<Skipped> skipped;
  auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
  for (const fs::path& path : files) {
    std::string name = path.filename().string();
    try {
      kvplan::VllmLog log = kvplan::load_vllm_log(path.string());
      if (log.kvplan_model.empty()) {
        skipped.push_back({name, log.note.empty() ? "no kvplan_model annotation" : log.note});
        continue;
      }
      kvplan::LogScenario s = kvplan::scenario_from_vllm_log(log, path.string(), {});
      kvplan::MemoryPlan plan = kvplan::plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
      if (!log.kv_cache_tokens) {
        skipped.push_back({name, fmt::format("prints KV memory ({:.2f} GiB, kvplan {:.2f}) but no token or block count",
                                             log.kv_cache_memory_gib.value_or(0), plan.kv_budget_bytes / 1073741824.0)});
        continue;
      }
      Row r;
      r.name = name;
      r.engine = log.engine;
      r.version = log.version.empty() ? "?" : log.version;
      r.gpu = s.gpu.id;
      r.parallel = fmt::format("tp{}{}", s.parallel.tensor_parallel,
                               s.parallel.pipeline_parallel > 1 ? fmt::format(" pp{}", s.parallel.pipeline_parallel) : "");
      const double util = s.serving.engine == kvplan::Engine::kSglang   ? s.serving.mem_fraction_static
                          : s.serving.engine == kvplan::Engine::kTrtllm ? s.serving.free_gpu_memory_fraction
                                                                        : s.serving.gpu_memory_utilization;
      r.util = util > 0 ? fmt::format("{:.2f}", util) : "auto";
      r.printed = static_cast<double>(*log.kv_cache_tokens);
      r.predicted = static_cast<double>(plan.printed_kv_tokens);
      r.error = (r.predicted - r.printed) / r.printed;
      r.act_log = opt(log.activation_peak_gib);
      r.act_kv = fmt::format("{:.2f}", plan.term("activation_peak") / 1073741824.0);
      r.weights = opt(log.weights_gib);
      rows.push_back(r);
    } catch (const kvplan::ConfigError& e) {
      skipped.push_back({name, fmt::format("refused: {}", e.what())});
    }
  }
  if (markdown) {
    fmt::print("| log | engine | version | GPU | parallel | memory setting | printed tokens | kvplan tokens | error |\n"
               "|---|---|---|---|---|---:|---:|---:|---:|\n");
    for (const Row& r : rows) {
      fmt::print("| {} | {} | {} | {} | {} | {} | {:.0f} | {:.0f} | {:+.1f}% |\n", r.name, r.engine, r.version, r.gpu,
                 r.parallel, r.util, r.printed, r.predicted, 100 * r.error);
    }
  } else {
    fmt::print("{:<48} {:>6} {:>7} {:>8} {:>5} {:>12} {:>12} {:>8} {:>9} {:>9} {:>8}\n", "log", "engine", "version",
               "parallel", "mem", "printed", "kvplan", "error", "act. log", "act. kv", "weights");
    for (const Row& r : rows) {
      fmt::print("{:<48} {:>6} {:>7} {:>8} {:>5} {:>12.0f} {:>12.0f} {:>+7.1f}% {:>9} {:>9} {:>8}\n", r.name, r.engine,
                 r.version, r.parallel, r.util, r.printed, r.predicted, 100 * r.error, r.act_log, r.act_kv, r.weights);
    }
  }
  if (rows.empty()) return 1;
  std::vector<double> errors;
  for (const Row& r : rows) errors.push_back(std::fabs(r.error));
  const double worst = *std::max_element(errors.begin(), errors.end());
  print_groups(rows, "engine", [](const Row& r) { return r.engine; }, markdown);
  print_groups(rows, "GPU", [](const Row& r) { return r.gpu; }, markdown);
  print_groups(
      rows, "constants read off it",
      [](const Row& r) { return constants_read_off(r.name) ? std::string("yes (in-sample)") : std::string("no"); },
      markdown);

  if (markdown) fmt::print("\nRefused or skipped ({}):\n\n", skipped.size());
  else fmt::print("\nrefused or skipped ({}):\n", skipped.size());
  for (const Skipped& s : skipped) {
    std::string why = s.why;
    if (why.size() > 160) why = why.substr(0, 157) + "...";
    if (markdown) fmt::print("- {}: {}\n", s.name, why);
    else fmt::print("  {:<48} {}\n", s.name, why);
  }
  int above5 = 0;
  int above10 = 0;
  for (double e : errors) {
    above5 += e > 0.05 ? 1 : 0;
    above10 += e > 0.10 ? 1 : 0;
  }
  fmt::print("\n{} logs compared: median |error| of the KV cache size in tokens {:.1f}%, worst {:.1f}%; {} above 5%, "
             "{} above 10%\n",
             rows.size(), 100 * median(errors), 100 * worst, above5, above10);
  return 0;
}
