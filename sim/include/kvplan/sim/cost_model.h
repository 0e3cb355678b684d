// kvplan/sim/cost_model.h — how long one engine step takes on one GPU.
//
//   StepCostModel cost(model, gpu, scheme, parallel, PerfProfile::datasheet_default(gpu), {});
//   PrefillChunk chunks[] = {{.context_tokens = 0, .new_tokens = 512}};
//   int64_t decode[] = {1000, 37, 4096};
//   TimeNs t = cost.step_ns(StepWork{.prefill = chunks, .decode_contexts = decode});
//
// A step is one forward pass over prefill chunks and decode tokens (DESIGN §4). Its operators come
// from core's step operator list (GEMMs, attention per scheme from the batch's actual context-length
// mix, KV write/quantize, norms, collectives, LM head, sampling, offload copies). Each is costed by
// roofline with efficiency curves from a PerfProfile; the operators form a Boost.Graph DAG over the
// compute, communication and copy streams and the step time is its critical path. Results are
// memoised by a quantized batch signature (documented in the implementation).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kvplan/core/custom_all_reduce.h"
#include "kvplan/core/fused_moe.h"
#include "kvplan/core/param_count.h"
#include "kvplan/sim/step_timer.h"
#include "kvplan/sim/time.h"

namespace kvplan {
struct ModelConfig;
struct GpuSpec;
struct KvScheme;
struct Parallelism;
class PerfProfile;
}  // namespace kvplan

namespace kvplan::sim {

// PrefillChunk and StepWork are declared in step_timer.h.

// How a step with prefill tokens runs when CUDA graphs are on (decode-only steps always replay a
// full graph).
enum class MixedStepGraphs {
  kEager,      // every kernel launched (SGLang's extend batches, TensorRT-LLM's context steps)
  kPiecewise,  // everything but attention replays graphs; attention launched (vLLM V1's piecewise
               // graphs, CUDAGraphMode PIECEWISE / FULL_AND_PIECEWISE: vllm/config/compilation.py)
};

struct CostOptions {
  bool cuda_graphs = true;  // decode-only steps replay a CUDA graph: no per-kernel launch overhead
  MixedStepGraphs mixed_step_graphs = MixedStepGraphs::kEager;
  bool memoise = true;
  // How the weights are stored: bytes read per GEMM, and the tensor-core rate of W8A8 / W4A4
  // GEMMs (gemm_compute_dtype for this GPU). run_simulation sets it from ServingConfig::weights.
  WeightFormat weights;
  // The serving engine's own all-reduce for tensor-parallel activations (core/custom_all_reduce.h):
  // an all-reduce of at most max_payload_bytes costs the faster of it and the profile's collective
  // class (NCCL). nullopt: the profile prices every collective. Front ends set
  // engine_custom_all_reduce(engine, gpu).
  std::optional<CustomAllReduce> custom_all_reduce;
  // Expert routing of the fused MoE (core/fused_moe.h); nullopt: default_moe_routing(model).
  std::optional<MoeRouting> moe_routing;
  // The serving engine, for the operators whose published tables differ per engine (MLA kernels,
  // vLLM's all-reduce; core/mixer_ops.h). Front ends set the scenario's engine.
  Engine engine = Engine::kVllm;
};

// One operator's cost in a step, for explanations (CLI --explain, GUI, docs).
struct OpCost {
  std::string name;     // e.g. "attention_decode(full_attention)"
  std::string stream;   // "compute", "comm" or "copy"
  std::string op_class; // profile class, e.g. "gemm"
  double flops = 0;
  double bytes = 0;
  int64_t instances = 0;   // kernels' layers in the step (e.g. 32 for a per-layer op of an 8B model)
  TimeNs time_ns = 0;      // summed over the instances, launch overhead included
  double launch_ns = 0;    // of which launch overhead
  std::string limit;       // what sets one instance's time: "compute", "memory" or "floor"
  double grid_factor = 1;  // measured shape correction applied (1: none)
  std::string source;      // "measured (...)", "published (...)", "transferred (from X)", "datasheet"
  // What the class curve was applied to, where that is more than a shape: for moe_gemm
  // "fp8 block, power-law 1.01, 8 of 256 experts per token, straggler 1.6x mean".
  std::string detail;
};

struct StepBreakdown {
  TimeNs total_ns = 0;  // critical path of the DAG
  std::vector<OpCost> ops;  // summed over layers, in execution order
};

class StepCostModel : public StepTimer {
 public:
  StepCostModel(const ModelConfig& model, const GpuSpec& gpu, const KvScheme& scheme,
                const Parallelism& parallel, const PerfProfile& profile, CostOptions options = {});
  ~StepCostModel();
  StepCostModel(StepCostModel&&) noexcept;
  StepCostModel& operator=(StepCostModel&&) noexcept;

  // Step time (memoised). Deterministic: the same work always gives the same time.
  TimeNs step_ns(const StepWork& work) override;
  // Every operator with its time, and the critical path (not memoised).
  StepBreakdown explain(const StepWork& work) const;
  // Per operator class: where its efficiency numbers come from, e.g. "gemm: datasheet (...)".
  std::vector<std::string> sources() const;
  // How the weights are stored and which GEMM rate they get, e.g. "weights fp8 e4m3 ...: GEMMs read
  // the quantized bytes and run at the fp8_e4m3 rate (W8A8)".
  std::string weights_note() const;
  int64_t memo_hits() const;
  int64_t memo_misses() const;
  // The same step costed on the full DAG (one node per operator per layer, nothing collapsed) and
  // not memoised. Equals step_ns(work); kept so tests can prove the collapsed DAG is exact.
  TimeNs step_ns_uncollapsed(const StepWork& work) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvplan::sim
