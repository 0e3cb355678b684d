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
//  - data_parallel: engine ranks, each with its own KV cache and requests, its own copy of the
//    attention and dense layers (split tensor_parallel ways). For MLA models this is
//    data-parallel attention: each rank stores the latent of its own requests only. A model's
//    routed experts are not copied per rank: without expert parallelism every expert's width is
//    split over all tensor_parallel × data_parallel GPUs (expert_tensor_parallel), and each GPU
//    runs its slice over the tokens of every rank, gathered before the experts and reduce-
//    scattered after (vLLM's FusedMoEParallelConfig.make flattens TP across DP whether or not EP is
//    on, then dispatches with its all-gather / reduce-scatter all2all backend; SGLang's
//    --enable-dp-attention and TensorRT-LLM's attention DP shard the MoE over all tp GPUs alike).
//  - expert_parallel: the routed experts are spread over all tensor_parallel × data_parallel GPUs
//    of a stage (whole experts, not sharded widths); attention and dense layers stay as above.
//  - expert_parallel_ranks: a smaller expert-parallel size, a divisor of tensor_parallel ×
//    data_parallel (0: all of them): the experts are spread over that many groups and each
//    expert's width split over the GPUs of a group (MoE TP × EP: TensorRT-LLM's
//    moe_tensor_parallel_size × moe_expert_parallel_size, SGLang's --ep-size below --tp-size;
//    vLLM has no such split).
#pragma once

namespace kvplan {

struct ModelConfig;
struct WeightFormat;

struct Parallelism {
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int data_parallel = 1;
  bool expert_parallel = false;
  int expert_parallel_ranks = 0;  // with expert_parallel: 0 = tensor_parallel × data_parallel

  // Groups the routed experts are spread over (1 without expert parallelism).
  int expert_parallel_size() const {
    if (!expert_parallel) return 1;
    return expert_parallel_ranks > 0 ? expert_parallel_ranks : tensor_parallel * data_parallel;
  }
  // GPUs each routed expert's width is split over (1 with expert parallelism over every GPU; never
  // below 1, also for an EP size validate_split refuses).
  int expert_tensor_parallel() const {
    const int n = tensor_parallel * data_parallel / expert_parallel_size();
    return n > 0 ? n : 1;
  }
  int gpus() const { return tensor_parallel * pipeline_parallel * data_parallel; }
};

// The splits engines refuse: heads, widths and experts that do not divide, fp8 block scales that
// would straddle a shard (vLLM: "... is not divisible by weight quantization block_n"), expert
// parallelism on a dense model. Throws ConfigError naming the flag, the value and the rule.
void validate_split(const ModelConfig& model, const Parallelism& parallel, const WeightFormat& weights);

}  // namespace kvplan
