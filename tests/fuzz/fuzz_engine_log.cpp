// Fuzz target: a serving engine's start-up log (vLLM, SGLang, TensorRT-LLM), the scenario kvplan
// reads from it and the comparison with its prediction.
#include <cstdint>

#include "fuzz_support.h"
#include "kvplan/core/vllm_log.h"
#include "kvplan/core/vllm_log_scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kvplan::fuzz::expect_only_config_errors([&] {
    const kvplan::VllmLog log = kvplan::parse_vllm_log(text, "fuzz.log");
    kvplan::LogOverrides o;
    if (log.kvplan_model.empty()) o.model = "llama-3.1-8b";
    if (log.kvplan_gpu.empty() && log.gpu.empty()) o.gpu = "h100-sxm";
    const kvplan::LogScenario s = kvplan::scenario_from_vllm_log(log, "fuzz.log", o);
    const kvplan::MemoryPlan plan = kvplan::plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
    (void)kvplan::compare_to_log(log, plan);
  });
  return 0;
}
