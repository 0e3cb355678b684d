// Validates kvplan's vLLM memory model against real start-up logs from public issues
// (data/vllm_logs): predicts each log's "GPU KV cache size" (or "# GPU blocks" x block size) from
// the settings the log states, and prints printed vs predicted, with the median and worst error.
//
//   ./build/bench/kvplan_validate_vllm [data/vllm_logs]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/vllm_log_scenario.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::path(KVPLAN_SOURCE_DIR) / "data" / "vllm_logs";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".log") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<double> errors;
  fmt::print("{:<48} {:>7} {:>4} {:>6} {:>12} {:>12} {:>8} {:>9} {:>9} {:>8}\n", "log", "vLLM", "tp", "util",
             "printed", "kvplan", "error", "act. log", "act. kv", "weights");
  for (const fs::path& path : files) {
    std::string name = path.filename().string();
    try {
      kvplan::VllmLog log = kvplan::load_vllm_log(path.string());
      if (log.kvplan_model.empty()) {
        fmt::print("{:<48} skipped: {}\n", name, log.note.empty() ? "no kvplan_model annotation" : log.note);
        continue;
      }
      kvplan::LogScenario s = kvplan::scenario_from_vllm_log(log, path.string(), {});
      kvplan::MemoryPlan plan = kvplan::plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
      if (!log.kv_cache_tokens) {
        fmt::print("{:<48} skipped: prints KV memory ({:.2f} GiB, kvplan {:.2f}) but no token or block count\n", name,
                   log.kv_cache_memory_gib.value_or(0), plan.kv_budget_bytes / 1073741824.0);
        continue;
      }
      double printed = static_cast<double>(*log.kv_cache_tokens);
      double predicted = static_cast<double>(plan.kv_cache_tokens);
      double err = (predicted - printed) / printed;
      errors.push_back(std::fabs(err));
      auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
      fmt::print("{:<48} {:>7} {:>4} {:>6.2f} {:>12.0f} {:>12.0f} {:>+7.1f}% {:>9} {:>9.2f} {:>8}\n", name,
                 log.version.empty() ? "?" : log.version, s.parallel.tensor_parallel,
                 s.serving.gpu_memory_utilization, printed, predicted, 100 * err, opt(log.activation_peak_gib),
                 plan.term("activation_peak") / 1073741824.0, opt(log.weights_gib));
    } catch (const kvplan::ConfigError& e) {
      fmt::print("{:<48} error: {}\n", name, e.what());
    }
  }
  if (errors.empty()) return 1;
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  fmt::print("\n{} logs compared: median |error| of GPU KV cache size {:.1f}%, worst {:.1f}%\n", n, 100 * median,
             100 * sorted.back());
  return 0;
}
