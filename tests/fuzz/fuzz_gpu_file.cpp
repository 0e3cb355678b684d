// Fuzz target: a custom GPU JSON file (--gpu FILE) and a memory plan on it.
#include <cstdint>

#include "fuzz_support.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/presets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvplan::fuzz::write_input(data, size, "_gpu.json");
  kvplan::fuzz::expect_only_config_errors([&] {
    const kvplan::GpuSpec gpu = kvplan::resolve_gpu(path);
    static const kvplan::ModelConfig model = kvplan::resolve_model("llama-3.1-8b");
    kvplan::ServingConfig c;
    c.max_model_len = 8192;
    (void)kvplan::plan_memory(model, gpu, kvplan::KvScheme{}, kvplan::Parallelism{}, c);
  });
  return 0;
}
