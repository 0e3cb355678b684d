// examples/plan_memory.cpp — kvplan as a C++ library: a typed scenario, the memory answer, and the
// same JSON `kvplan memory --json` prints (docs/library.md).
//
//   plan_memory                         # Llama-3.1-8B on one H100 SXM, fp8 KV, 8k context
//   plan_memory data/scenarios/chat-h100.json   # a scenario file instead (v2; v1 is migrated)
#include <iostream>

#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/scenario_file.h"

int main(int argc, char** argv) {
  namespace plan = kvplan::plan;
  try {
    plan::Scenario s;  // defaults: Llama-3.1-8B on one H100 SXM, vLLM 0.10
    if (argc > 1) {
      s = plan::load_scenario_file(argv[1]).scenario;
    } else {
      s.kv_cache.dtype = kvplan::DType::kFp8E4M3;
      s.engine.max_model_len = 8192;
    }
    const plan::MemoryAnswer a = plan::answer_memory(s);
    std::cerr << a.plan.kv_cache_tokens << " KV tokens, " << a.plan.requests_at_max_len
              << " requests of max_model_len at once\n";
    std::cout << kvplan::json_text(plan::memory_json(a), 2) << "\n";
  } catch (const kvplan::ConfigError& e) {  // bad input: the message names the field and the rule
    std::cerr << "plan_memory: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
