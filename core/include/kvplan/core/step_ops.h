// kvplan/core/step_ops.h — the operators of one engine step on one GPU, with FLOPs and bytes.
//
//   StepShapeBuilder b(layout);  b.add_decode(1000);  b.add_prefill(0, 512, true);
//   StepOps ops = build_step_ops(model, layout, parallel, b.shape());   // ops.ops[i].flops, .bytes
//
// One step is one forward pass over the batch's prefill chunks and decode tokens (DESIGN §4) on one
// GPU: the tensor-parallel shard of every layer of one pipeline stage. Per layer it lists the
// projection GEMMs (or MLA down/up projections), RoPE, KV write with quantization, attention per
// layer kind for prefill and for decode, output projection, dense or MoE MLP, norms, activations
// and TP all-reduces; per step the embedding gather, final norm, LM head, logits gather, sampling
// and the offload copies. Formulas, with their reasons, are in docs/cost-model.md.
//
// The input is an aggregate StepShape, not the request list: per KV layer group the sum and max of
// held tokens over decode sequences and the causal pair count over prefill chunks, with sliding
// windows and eviction applied per request BEFORE summing (StepShapeBuilder does this exactly).
// Layers with the same shape share one op list (a "layer type") with a repeat count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/core/dtype.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/fused_moe.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/perf_profile.h"

namespace kvplan {

enum class Stream { kCompute, kComm, kCopy };
std::string_view stream_name(Stream s);  // "compute", "comm", "copy"

// Decode split-KV: at most this many CTAs share one (sequence, KV head). Bounds how much of the
// GPU the longest sequence of a batch can use (assumption from FlashAttention-2's split heuristic,
// which searches up to 128 splits but picks few; documented in docs/cost-model.md).
inline constexpr int kDecodeMaxSplits = 32;
// FlashMLA processes 64 query heads per CTA.
inline constexpr int kMlaHeadsPerCta = 64;

// Attention work of one KV layer group in a step (per layer of the group; windows and eviction
// already applied per request).
struct GroupStepWork {
  int64_t decode_tokens = 0;      // Σ over decode sequences of held tokens the queries attend to
                                  // (context + this step's query tokens, window/eviction applied)
  int64_t decode_tokens_max = 0;  // the largest single term of that sum
  int64_t decode_kv_bytes = 0;    // Σ exact per-layer bytes of those tokens (KvLayout::layer_bytes)
  int64_t prefill_pairs = 0;      // Σ causal (query, key) pairs over prefill chunks
  int64_t prefill_kv_tokens = 0;  // Σ held tokens the chunks' attention reads (cached prefix + new)
  // DeepSeek sparse attention (KvLayerGroup::sparse_topk > 0): what the sparse attention reads, each
  // query at most topk of the keys above (the indexer scores all of them).
  int64_t sparse_decode_tokens = 0;      // Σ over decode sequences of min(held, topk)
  int64_t sparse_prefill_pairs = 0;      // Σ over prefill queries of min(keys seen, topk)
};

struct StepShape {
  int64_t prefill_tokens = 0;      // new tokens of prefill chunks
  int64_t prefill_sequences = 0;   // prefill chunks
  int64_t decode_sequences = 0;
  int32_t decode_query_tokens = 1; // per decode sequence (k + 1 in speculative verify)
  int64_t emitting_sequences = 0;  // rows of the LM head (sequences whose logits are computed)
  std::vector<GroupStepWork> groups;  // one per KvLayout group, in layout order
  int64_t swap_in_bytes = 0;       // host -> device KV copies during this step (all layers)
  int64_t swap_out_bytes = 0;      // device -> host KV copies during this step

  int64_t decode_tokens() const { return decode_sequences * decode_query_tokens; }
  int64_t new_tokens() const { return prefill_tokens + decode_tokens(); }
};

// Causal (query, key) pairs of a chunk of `new_tokens` queries after `context` cached tokens when
// each query at position p (1-based, counting itself) sees min(p, cap) keys:
//   Σ_{p=context+1}^{context+new_tokens} min(p, cap).   Without a cap: c·(ctx + (c+1)/2).
int64_t causal_pairs(int64_t context, int64_t new_tokens, int64_t cap);

// The same for chunked local attention (Llama-4): the query at position p sees the
// ((p - 1) mod chunk) + 1 keys of its own chunk.
int64_t chunked_causal_pairs(int64_t context, int64_t new_tokens, int64_t chunk);

// Builds a StepShape request by request: O(groups) per request, no allocation after reset().
class StepShapeBuilder {
 public:
  explicit StepShapeBuilder(const KvLayout& layout);
  void reset(int32_t decode_query_tokens = 1);
  // A decode sequence with `context_tokens` in its cache; it always emits a token.
  void add_decode(int64_t context_tokens);
  // A prefill chunk of `new_tokens` after `context_tokens` cached ones; `emits` when the engine
  // computes its logits (the chunk ends the prompt; vLLM v1 computes them for every chunk).
  void add_prefill(int64_t context_tokens, int64_t new_tokens, bool emits);
  StepShape& shape() { return shape_; }
  const StepShape& shape() const { return shape_; }

 private:
  struct GroupRule {
    bool per_token = false;
    int64_t cap = 0;            // held-token cap (window / eviction), INT64_MAX when none
    int64_t chunk = 0;          // chunked local attention: chunk length (0: not chunked)
    int64_t bytes_per_token = 0;  // exact integer bytes per token per layer (non-KIVI)
    bool exact_per_request = false;  // KIVI: bytes from KvLayout::layer_bytes per request
    int64_t sparse_topk = 0;         // DSA: keys each query's sparse attention reads (0: dense)
  };
  const KvLayout* layout_;
  std::vector<GroupRule> rules_;
  StepShape shape_;
};

// One operator. FLOPs and bytes are for ONE layer instance (multiply by `repeat` for the step).
struct StepOp {
  const char* name = "";      // static, e.g. "qkv_proj", "attention_decode"
  OpClass op_class = OpClass::kElementwise;
  Stream stream = Stream::kCompute;
  DType dtype = DType::kBF16;  // compute type (selects GpuSpec::peak_flops)
  double flops = 0;
  double bytes = 0;           // weights read + activations read/written + KV read/written
  double critical_bytes = 0;  // decode attention: bytes of the longest sequence's KV
  int critical_ctas = 0;      // CTAs that can share the longest sequence (0: no limit)
  OpShape shape;              // for the profile's correction grids (perf_profile.h)
  DType grid_dtype = DType::kBF16;  // grid variant: GEMM compute dtype, attention KV dtype
  // Static name of the grid variant when it is not a dtype name (moe_gemm: "fp8_block/power_law_1.01").
  const char* grid_variant = nullptr;
  // moe_gemm only (fused_moe.h), for explanations: routed experts, top-k, the straggler rank's
  // pairs per the mean, the MoeRouting and the MoeFormat.
  int moe_experts = 0;
  int moe_top_k = 0;
  double moe_straggler = 0;
  uint8_t moe_routing = 0;
  uint8_t moe_format = 0;
  int kernels = 1;            // kernel launches per instance
  int layer_type = -1;        // StepOps::types index; -1: once per step
  int group = -1;             // KvLayout group index, for names like attention_decode(mla)
  int repeat = 1;             // instances in the step (layers of the type, or KV layers for swap-in)
  // A tensor-parallel all-reduce of the hidden activations (shape: payload bytes per rank, ranks):
  // serving engines may run their own kernel for it (custom_all_reduce.h).
  bool tp_all_reduce = false;

  // Every field (a new one joins by itself): the step cost model reuses an op's time when the op
  // at the same place in the previous costed step is equal to it.
  bool operator==(const StepOp&) const = default;
};

struct StepLayerType {
  int first_op = 0;      // ops [first_op, end_op) of StepOps::ops, in execution order
  int end_op = 0;
  int attention_op = -1; // first op that reads the KV cache (swap-in must finish before it); -1 none
  int count = 0;         // layers of this type in the stage
  bool holds_kv = false; // has a per-token KV group (receives a share of swap-in)
  int group = -1;        // KvLayout group of the layer's mixer
};

struct StepOps {
  std::vector<StepOp> ops;        // prologue | layer types | epilogue | copies
  std::vector<StepLayerType> types;
  std::vector<int> layer_types;   // [layers of the stage] the type of each layer, execution order
  int prologue_end = 0;           // ops [0, prologue_end) run before the first layer
  int epilogue_begin = 0;         // ops [epilogue_begin, epilogue_end) run after the last layer
  int epilogue_end = 0;
  int swap_in_op = -1;            // copy stream, repeat = KV layers, bytes per layer; -1 none
  int swap_out_op = -1;           // copy stream, once; -1 none
  int num_kv_layers = 0;          // layers of the stage with a per-token KV group

  // "attention_decode(sliding_attention(4096))", "qkv_proj", ...
  std::string display_name(const StepOp& op, const KvLayout& layout) const;
};

struct StepOpsOptions {
  WeightFormat weights;      // bf16 by default
  // Tensor-core type of GEMMs through quantized weights on the GPU being costed
  // (gemm_compute_dtype): fp8 / int8 for W8A8, bf16 for weight-only formats.
  DType gemm_dtype = DType::kBF16;
  // Per layer, the kQuant* module classes stored quantized (quantized_module_mask); empty: every
  // class when weights.quant is quantized, none otherwise.
  std::vector<uint8_t> quant_mask;
  int pipeline_stage = 0;    // layers of this stage (pipeline_stage_layers); embedding on stage 0
  bool force_head = false;   // add LM head + sampling even if this is not the last stage
  // Expert routing the fused MoE is costed under (fused_moe.h); nullopt: default_moe_routing(model).
  std::optional<MoeRouting> moe_routing;
  // The serving engine: whose published kernel tables price its MLA kernels (mixer_ops.h) and
  // its tensor-parallel all-reduce (vLLM's own, where the profile has that table).
  Engine engine = Engine::kVllm;
  // The profile has vLLM's own all-reduce table (collective grid "vllm_all_reduce"): with engine
  // vLLM its tensor-parallel all-reduces are that variant, the engine's measured dispatch (custom
  // kernel or NCCL by size), not NCCL's table or the custom_all_reduce.h model.
  bool vllm_all_reduce_table = false;
};

// Expected distinct experts touched when `tokens` tokens each pick `top_k` of `experts` uniformly
// and independently: E · (1 − (1 − k/E)^T). T = 1 gives k; large T gives E.
double expected_experts_touched(int experts, int top_k, int64_t tokens);

// DeepEP's expert dispatch (token hidden states to the ranks of their top-k experts, fp8 with one
// fp32 scale per 128 values) or combine (the experts' bf16 outputs back): per rank, `tokens` local
// tokens x top_k copies of `hidden` values, (ep-1)/ep of them off-GPU. Low-latency mode (decode) or
// normal mode (prefill): each its own grid variant ("deepep_ll_dispatch", ...). Shape: payload bytes, ranks.
enum class DeepEpPhase { kDispatch, kCombine };
StepOp deepep_op(DeepEpPhase phase, bool low_latency, double tokens, int top_k, int64_t hidden, int ep);

// The layout must come from build_kv_layout(model, scheme, parallel, options.pipeline_stage).
StepOps build_step_ops(const ModelConfig& model, const KvLayout& layout, const Parallelism& parallel,
                       const StepShape& shape, const StepOpsOptions& options = {});

// build_step_ops for many steps of one deployment: the layer types depend only on the model,
// layout, parallelism and options, so they are worked out once, and build() reuses the storage
// of `out`. The step cost model builds one list per memo miss, ~110,000 in a long trace.
//   StepOpsBuilder ops(model, layout, parallel, options);
//   ops.build(shape, out);   // out == build_step_ops(model, layout, parallel, shape, options)
// The model and layout must outlive the builder.
class StepOpsBuilder {
 public:
  StepOpsBuilder(const ModelConfig& model, const KvLayout& layout, const Parallelism& parallel,
                 StepOpsOptions options = {});
  // Replaces out's contents with the step's operators.
  void build(const StepShape& shape, StepOps& out) const;

 private:
  // Where a layer type's op list comes from: its first layer, and that layer's sharing and mask.
  struct TypeSource {
    int first_layer = 0;  // model layer index
    bool shared = false;  // cross-layer KV sharing: reads another layer's cache, writes none
    uint8_t quant_mask = 0;
    // Kimi-K3 attention residuals: the block representations the type's layers attend over,
    // summed over its layers in the stage (attn_res_sources in step_ops.cpp)
    double attn_res_sources = 0;
  };
  const ModelConfig* model_;
  const KvLayout* layout_;
  Parallelism parallel_;
  StepOpsOptions options_;
  std::vector<StepLayerType> types_;  // count, holds_kv and group; build() fills the op ranges
  std::vector<TypeSource> sources_;   // [types_.size()]
  std::vector<int> layer_types_;      // [layers of the stage]
  int num_kv_layers_ = 0;
};

}  // namespace kvplan
