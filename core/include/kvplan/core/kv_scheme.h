// kvplan/core/kv_scheme.h — how the KV cache is stored and how the model is split across GPUs.
//
//   KvScheme s;                       // bf16, paged with 16 tokens per block
//   s.kv_dtype = DType::kInt4;        // int4 with a scale and zero point per 32 elements
//   s.quant_group_size = 32;
//   Parallelism p{.tensor_parallel = 4};
//   validate(s, p, model);            // throws ConfigError naming field, value and rule
//
// Exact meanings (DESIGN §3):
//  - bf16/fp16: 2 bytes per element. fp8 e4m3/e5m2: 1 byte per element, plus fp32 scales that
//    are per tensor (one for K and one for V per layer) or per KV head; they do not grow with tokens.
//  - int8/int4: bits/8 bytes per element plus, per group of quant_group_size elements along the
//    head dimension, one fp16 scale and (asymmetric) one fp16 zero point.
//  - int2 is KIVI-style 2-bit: keys quantized per channel over groups of quant_group_size tokens,
//    values per token over groups of quant_group_size channels, each group with an fp16 scale and
//    zero point; the most recent kivi_residual_tokens tokens stay in 16-bit.
//  - Token eviction: H2O keeps at most h2o_budget_tokens; StreamingLLM keeps sink_tokens plus the
//    last streaming_window_tokens. Quality is not modelled.
//  - Low-rank KV projection: K and V are stored as rank-`low_rank` latents per KV head.
//  - Cross-layer sharing: in each run of cross_layer_share layers only the first stores KV.
#pragma once

#include <optional>
#include <string>

#include "kvplan/core/dtype.h"
#include "kvplan/core/parallelism.h"

namespace kvplan {

struct ModelConfig;

enum class Eviction { kNone, kH2O, kStreaming };
enum class Fp8Scales { kPerTensor, kPerHead };

struct KvScheme {
  DType kv_dtype = DType::kBF16;
  int quant_group_size = 64;   // int8/int4: elements per group; int2 (KIVI): tokens per key group
  bool quant_asymmetric = true;
  int kivi_residual_tokens = 128;
  Fp8Scales fp8_scales = Fp8Scales::kPerTensor;
  bool paged = true;           // false: contiguous reservation per request
  int tokens_per_block = 16;
  Eviction eviction = Eviction::kNone;
  int h2o_budget_tokens = 0;
  int sink_tokens = 4;
  int streaming_window_tokens = 0;
  int low_rank = 0;            // 0: off
  int cross_layer_share = 1;   // 1: off
  DType state_dtype = DType::kF32;  // SSM / linear-attention recurrent state
  std::string state_dtype_source;   // why state_dtype (recurrent_state_dtype.h); shown with the state
  // MLA models only: 0 stores the latent (kv_lora_rank + qk_rope_head_dim per token). A positive
  // value stores per-head K and V, each padded to this head size, the way vLLM did before its MLA
  // cache (<= 0.7.0: 256). Set by the engine accounting, not by users.
  int mla_expanded_head_dim = 0;
  // Hybrid models under vLLM V1: each recurrent layer's state is stored in one page of the
  // attention layers' size, this many bytes (its state padded up to it). 0: the state's own size.
  // Set by the engine accounting, not by users.
  int64_t state_page_bytes = 0;

  std::string describe() const;  // e.g. "int4 g32 asym, paged b16, H2O budget 1024"
};

// Checks the scheme against the model and the parallel split. Throws ConfigError.
void validate(const KvScheme& scheme, const Parallelism& parallel, const ModelConfig& model);

// The one cache dtype every engine keeps this model's KV in, if only one exists (DeepSeek-V4: fp8,
// vLLM's fp8_ds_mla); "auto" means it.
std::optional<DType> only_kv_dtype(const ModelConfig& model);
// The scheme a model is listed with when none is chosen: KvScheme{} (bf16), or only_kv_dtype's.
KvScheme listing_scheme(const ModelConfig& model);

}  // namespace kvplan
