// kvplan/core/param_count.h — parameter counts and weight bytes from a model's shapes.
//
//   ParamCount c = count_parameters(model);            // c.total() == 8,030,261,248 for Llama-3.1-8B
//   int64_t w = weight_bytes_per_gpu(model, WeightFormat{}, Parallelism{.tensor_parallel = 2});
//
// Counts are exact for unquantized checkpoints: every projection, bias, norm, router and expert,
// tied or untied LM head, and the vision encoder of multimodal checkpoints. Multi-token-prediction
// heads are not counted (engines do not load them unless speculative decoding uses them).
// Quantized bytes follow the checkpoint's on-disk tensors (weight_quant.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan {

struct ParamCount {
  int64_t embedding = 0;
  int64_t attention = 0;   // q/k/v/o projections or MLA down/up projections, their norms, biases, sinks
  int64_t recurrent = 0;   // Mamba / linear-attention mixers
  int64_t mlp = 0;         // dense MLPs
  int64_t experts = 0;     // routed experts (all of them)
  int64_t shared_experts = 0;
  int64_t routers = 0;
  int64_t norms = 0;       // per-layer and final norms
  int64_t lm_head = 0;     // 0 when tied to the embedding
  int64_t vision = 0;      // vision encoder and its projector into the language model
  int64_t active_experts = 0;  // routed-expert parameters used per token (top-k)

  int64_t total() const;
  int64_t active() const;  // parameters touched per token (MoE: top-k experts only)
};

ParamCount count_parameters(const ModelConfig& model);

// Weight storage: `dtype` is the 16-bit type of everything not quantized; `quant` says how the
// quantized linear layers are stored (weight_quant.h) and which modules it leaves in `dtype`.
struct WeightFormat {
  DType dtype = DType::kBF16;
  QuantizationConfig quant;

  static WeightFormat of(DType dtype16, QuantizationConfig q) { return WeightFormat{dtype16, std::move(q)}; }
  std::string describe() const;  // "bf16" or "fp8 e4m3, block 128x128 scales, ... (config.json ...)"
};

// Bytes of one GPU's weights, split by what they are and how they are stored.
struct WeightBytes {
  int64_t quantized = 0;     // linear layers stored in the quantized format (scales included)
  int64_t unquantized = 0;   // everything in 16-bit (or fp32)
  int64_t vision = 0;        // the vision encoder (16-bit; part of `unquantized`)
  int64_t experts = 0;       // routed experts held by this GPU (part of the two above)
  std::vector<std::string> kept_16bit;  // module classes that stay 16-bit although the checkpoint
                                        // is quantized, e.g. "attention", "lm_head"
  int64_t total() const { return quantized + unquantized; }
};

// Tensor parallelism shards attention heads, MLP and expert widths and the vocabulary (padded to a
// multiple of 64 per vLLM); norms are replicated; KV heads are replicated when
// num_key_value_heads < tp. Expert parallelism places whole experts: ceil(E / ep) per GPU.
// `pipeline_stage` selects a stage's layers (embedding on the first stage, LM head and final
// norm on the last). The vision encoder sits with the first stage, sharded like the text layers.
WeightBytes weight_bytes_breakdown(const ModelConfig& model, const WeightFormat& format,
                                   const Parallelism& parallel, int pipeline_stage = 0);
int64_t weight_bytes_per_gpu(const ModelConfig& model, const WeightFormat& format,
                             const Parallelism& parallel, int pipeline_stage = 0);

// Module classes of a decoder layer, as bits of a per-layer mask.
inline constexpr uint8_t kQuantAttention = 1;
inline constexpr uint8_t kQuantMlp = 2;
inline constexpr uint8_t kQuantExperts = 4;
inline constexpr uint8_t kQuantShared = 8;
inline constexpr uint8_t kQuantRecurrent = 16;
inline constexpr uint8_t kQuantAll = 31;

// Per layer, which module classes the format stores quantized (ignore lists applied to the
// layer's module names). The cost model reads weights and picks GEMM rates from it.
std::vector<uint8_t> quantized_module_mask(const ModelConfig& model, const WeightFormat& format);

// Whole-model weight bytes (one copy) in the format: the checkpoint's size on disk.
int64_t weight_bytes_total(const ModelConfig& model, const WeightFormat& format);
// The same from a count of the same model's parameters: an unquantized format stores each of them
// at the format's width (what the tensor pass would add up), so only a quantized one is enumerated.
int64_t weight_bytes_total(const ModelConfig& model, const WeightFormat& format, const ParamCount& counted);

}  // namespace kvplan
