// kvplan/core/parallelism.h — how a deployment splits one model over GPUs, with vLLM's meaning of
// each size, and the divisibility rules a real engine enforces.
//
//   Parallelism p{.tensor_parallel = 8, .data_parallel = 2, .expert_parallel = true};
//   validate_split(model, p, weights);   // throws ConfigError naming the rule
//   p.gpus();                            // 16
//
// Meaning (vLLM's flags; SGLang's --enable-dp-attention is the same split for MLA models):
//  - tensor_parallel: attention heads, MLP widths and the vocabulary are sharded over these GPUs.
//  - pipeline_parallel: layers are split into stages.
//  - data_parallel: independent engine ranks, each with its own KV cache and requests; without
//    expert parallelism every rank holds a full copy of the weights. For MLA models this is
//    data-parallel attention: each rank stores the latent of its own requests only.
//  - expert_parallel: the routed experts are spread over all tensor_parallel × data_parallel GPUs
//    of a stage (whole experts, not sharded widths); attention and dense layers stay as above.
#pragma once

namespace kvplan {

struct ModelConfig;
struct WeightFormat;

struct Parallelism {
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int data_parallel = 1;
  bool expert_parallel = false;

  // GPUs the routed experts are spread over (1 without expert parallelism).
  int expert_parallel_size() const { return expert_parallel ? tensor_parallel * data_parallel : 1; }
  int gpus() const { return tensor_parallel * pipeline_parallel * data_parallel; }
};

// The splits engines refuse: heads, widths and experts that do not divide, fp8 block scales that
// would straddle a shard (vLLM: "... is not divisible by weight quantization block_n"), expert
// parallelism on a dense model. Throws ConfigError naming the flag, the value and the rule.
void validate_split(const ModelConfig& model, const Parallelism& parallel, const WeightFormat& weights);

}  // namespace kvplan
