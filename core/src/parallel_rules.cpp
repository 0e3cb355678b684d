// The parallel splits real engines refuse (parallelism.h). Messages name the flag, the value and
// the rule, and where the rule comes from an engine's own check, say so.
#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/parallelism.h"

namespace kvplan {

namespace {

[[noreturn]] void refuse(const std::string& flag, int value, const std::string& rule) {
  throw ConfigError(fmt::format("{}={} {}", flag, value, rule));
}

// vLLM's Fp8LinearMethod / Fp8MoEMethod with weight_block_size: every output partition of a
// column-parallel layer must be a multiple of block_n, and every input partition of a
// row-parallel layer (tp > 1) a multiple of block_k, or the scales would straddle GPUs.
// `flag` names the split that makes `width` (the experts of a data-parallel deployment are split
// over tensor x data parallel GPUs).
void check_block(const ModelConfig& m, const QuantizationConfig& q, int tp, const char* what, int64_t width,
                 bool column, bool row, const char* flag = "tensor-parallel-size") {
  if (column && width % q.block_n != 0) {
    throw ConfigError(fmt::format(
        "{}={}: model '{}' {} of {} per GPU is not a multiple of the fp8 weight block_n={} "
        "(vLLM refuses: the block scales would straddle GPUs); use a smaller tensor-parallel size or "
        "--enable-expert-parallel",
        flag, tp, m.id, what, width, q.block_n));
  }
  if (row && tp > 1 && width % q.block_k != 0) {
    throw ConfigError(fmt::format(
        "{}={}: model '{}' {} of {} per GPU is not a multiple of the fp8 weight block_k={} "
        "(vLLM refuses: the block scales would straddle GPUs)",
        flag, tp, m.id, what, width, q.block_k));
  }
}

}  // namespace

void validate_split(const ModelConfig& m, const Parallelism& p, const WeightFormat& w) {
  const int tp = p.tensor_parallel;
  if (tp <= 0) refuse("tensor-parallel-size", tp, "must be a positive integer");
  if (p.pipeline_parallel <= 0) refuse("pipeline-parallel-size", p.pipeline_parallel, "must be a positive integer");
  if (p.data_parallel <= 0) refuse("data-parallel-size", p.data_parallel, "must be a positive integer");
  if (tp > 1024 || p.pipeline_parallel > 1024 || p.data_parallel > 4096) {
    throw ConfigError(fmt::format("parallel sizes tp={} pp={} dp={} are beyond any deployment kvplan models "
                                  "(at most 1024, 1024, 4096)",
                                  tp, p.pipeline_parallel, p.data_parallel));
  }
  if (p.pipeline_parallel > m.num_layers()) {
    refuse("pipeline-parallel-size", p.pipeline_parallel,
           fmt::format("must not exceed the model's {} layers", m.num_layers()));
  }
  const bool moe = m.has_moe();
  if (p.expert_parallel && !moe) {
    refuse("expert-parallel-size", p.expert_parallel_size(),
           fmt::format("needs a mixture-of-experts model; '{}' has no experts", m.id));
  }
  const bool block = w.quant.method == QuantMethod::kFp8Block;
  for (const LayerSpec& l : m.layers) {
    const MlpShape& s = l.mlp;
    if (s.kind == MlpKind::kMoe) {
      if (p.expert_parallel && p.expert_parallel_ranks > 0 && (tp * p.data_parallel) % p.expert_parallel_ranks != 0) {
        refuse("expert-parallel-size", p.expert_parallel_ranks,
               fmt::format("must divide tensor-parallel-size x data-parallel-size = {}", tp * p.data_parallel));
      }
      if (p.expert_parallel && s.num_experts < p.expert_parallel_size()) {
        refuse("expert-parallel-size", p.expert_parallel_size(),
               fmt::format("must not exceed the {} routed experts of model '{}'", s.num_experts, m.id));
      }
      // Without expert parallelism each expert is split over every tp x dp GPU, with a smaller EP
      // size over the GPUs of its group (parallelism.h).
      const int etp = p.expert_tensor_parallel();
      const char* etp_flag = p.expert_parallel && p.expert_parallel_ranks > 0
                                 ? "MoE tensor-parallel size (tensor x data parallel / expert-parallel-size)"
                             : p.data_parallel > 1 && !p.expert_parallel ? "tensor-parallel-size x data-parallel-size"
                                                                         : "tensor-parallel-size";
      if (s.expert_intermediate_size % etp != 0) {
        refuse(etp_flag, etp,
               fmt::format("must divide the expert width moe_intermediate_size={} of model '{}' (each expert is "
                           "split over all tensor x data parallel GPUs; or use --enable-expert-parallel)",
                           s.expert_intermediate_size, m.id));
      }
      const int64_t width = s.expert_intermediate_size / etp;
      if (block) check_block(m, w.quant, etp, "the expert width", width, true, true, etp_flag);
      if (s.shared_intermediate_size > 0) {
        if (s.shared_intermediate_size % tp != 0) {
          refuse("tensor-parallel-size", tp,
                 fmt::format("must divide the shared-expert width {} of model '{}'", s.shared_intermediate_size, m.id));
        }
        if (block) check_block(m, w.quant, tp, "the shared-expert width", s.shared_intermediate_size / tp, true, true);
      }
    } else if (s.intermediate_size > 0) {
      if (s.intermediate_size % tp != 0) {
        refuse("tensor-parallel-size", tp,
               fmt::format("must divide intermediate_size={} of model '{}'", s.intermediate_size, m.id));
      }
      if (block) check_block(m, w.quant, tp, "the MLP width", s.intermediate_size / tp, true, true);
    }
  }
  const bool attention = m.count_layers(LayerKind::kFullAttention) + m.count_layers(LayerKind::kSlidingAttention) +
                             m.count_layers(LayerKind::kChunkedAttention) > 0;
  if (attention && block) {
    auto check_attention = [&](const AttentionShape& a) {
      const int64_t kv = a.num_kv_heads >= tp ? a.num_kv_heads / tp : 1;
      check_block(m, w.quant, tp, "the query projection", static_cast<int64_t>(a.num_q_heads / tp) * a.head_dim, true,
                  false);
      check_block(m, w.quant, tp, "the key/value projection", kv * a.head_dim, true, false);
      check_block(m, w.quant, tp, "the output projection input",
                  static_cast<int64_t>(a.num_q_heads / tp) * a.v_head_dim, false, true);
    };
    check_attention(m.attention);
    if (const AttentionShape* own = own_attention_shape(m)) check_attention(*own);
  }
}

}  // namespace kvplan
