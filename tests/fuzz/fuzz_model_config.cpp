// Fuzz target: a Hugging Face config.json, then everything kvplan derives from it (parameters,
// weight bytes, KV layout, the engine memory plan, one step's operators).
#include <cstdint>

#include "fuzz_support.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/step_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvplan::fuzz::write_input(data, size, "_config.json");
  kvplan::fuzz::expect_only_config_errors([&] {
    kvplan::ModelParseOptions options;
    options.allow_unknown_architecture = size % 2 == 0;
    const kvplan::ModelConfig m = kvplan::load_model_config_file(path, options);
    (void)kvplan::count_parameters(m).total();
    const kvplan::WeightFormat w{m.dtype == kvplan::DType::kF32 ? kvplan::DType::kBF16 : m.dtype, m.quantization};
    (void)kvplan::weight_bytes_total(m, w);
    static const kvplan::GpuSpec gpu = kvplan::resolve_gpu("h100-sxm");
    for (int tp : {1, 2}) {
      kvplan::Parallelism p;
      p.tensor_parallel = tp;
      kvplan::ServingConfig c;
      c.weights = w;
      c.max_model_len = 4096;
      const kvplan::MemoryPlan plan = kvplan::plan_memory(m, gpu, kvplan::KvScheme{}, p, c);
      kvplan::KvLayout layout = kvplan::build_kv_layout(m, plan.kv_scheme, p, plan.pipeline_stage);
      (void)layout.request_allocated_bytes(4096);
      kvplan::StepShapeBuilder b(layout);
      b.add_decode(1000);
      b.add_prefill(0, 512, true);
      (void)kvplan::build_step_ops(m, layout, p, b.shape());
    }
  });
  return 0;
}
