// kvplan/core/param_count.h — parameter counts and weight bytes from a model's shapes.
//
//   ParamCount c = count_parameters(model);            // c.total() == 8,030,261,248 for Llama-3.1-8B
//   int64_t w = weight_bytes_per_gpu(model, WeightFormat{DType::kBF16}, Parallelism{.tensor_parallel = 2});
//
// Counts are exact for unquantized checkpoints: every projection, bias, norm, router and expert,
// tied or untied LM head. Multi-token-prediction heads are not counted (engines do not load them
// unless speculative decoding uses them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

struct ParamCount {
  int64_t embedding = 0;
  int64_t attention = 0;   // q/k/v/o projections or MLA down/up projections, their norms and biases
  int64_t recurrent = 0;   // Mamba / linear-attention mixers
  int64_t mlp = 0;         // dense MLPs
  int64_t experts = 0;     // routed experts (all of them)
  int64_t shared_experts = 0;
  int64_t routers = 0;
  int64_t norms = 0;       // per-layer and final norms
  int64_t lm_head = 0;     // 0 when tied to the embedding
  int64_t active_experts = 0;  // routed-expert parameters used per token (top-k)

  int64_t total() const;
  int64_t active() const;  // parameters touched per token (MoE: top-k experts only)
};

ParamCount count_parameters(const ModelConfig& model);

// Weight storage format. int4 stores 4-bit weights with one fp16 scale (and, asymmetric, one fp16
// zero point) per group of `group_size` input elements in every linear layer; embeddings, norms and
// routers stay in 16-bit. fp8 stores linear layers in 1 byte with per-channel fp32 scales.
struct WeightFormat {
  DType dtype = DType::kBF16;
  int group_size = 128;
  bool asymmetric = false;
};

// Bytes of weights held by one GPU: tensor parallelism shards attention heads, MLP and expert widths
// and the vocabulary (padded to a multiple of 64 per vLLM); norms are replicated; KV heads are
// replicated when num_key_value_heads < tp. `pipeline_stage` selects a stage's layers (embedding on
// the first stage, LM head and final norm on the last).
int64_t weight_bytes_per_gpu(const ModelConfig& model, const WeightFormat& format,
                             const Parallelism& parallel, int pipeline_stage = 0);

// Whole-model weight bytes (one copy) in the format.
int64_t weight_bytes_total(const ModelConfig& model, const WeightFormat& format);

}  // namespace kvplan
