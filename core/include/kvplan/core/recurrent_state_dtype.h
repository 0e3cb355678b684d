// kvplan/core/recurrent_state_dtype.h — the dtype each engine keeps a recurrent layer's state in
// (the Mamba SSM state, the Gated DeltaNet / lightning-attention recurrent state) when the user
// leaves it to the engine. The short-convolution state is always the model dtype.
//
//   RecurrentStateDtype d = engine_state_dtype(model, Engine::kVllm, DType::kBF16);
//   scheme.state_dtype = d.dtype;   // bf16 for Qwen3-Next, fp32 for Qwen3.5 (its config says so)
//   d.source;                       // the rule and the engine file it comes from
//
// The rules, per engine, with "declared" the config's mamba_ssm_dtype (model_config.h):
//  - vLLM: --mamba-ssm-cache-dtype auto is the conv state's dtype, i.e. the model dtype
//    (model_executor/layers/mamba/mamba_utils.py MambaStateDtypeCalculator). Only Qwen3.5 reads
//    its config (models/config.py Qwen3_5ForConditionalGenerationConfig, PR #34489). Lightning
//    attention (MiniMax) keeps its state in the model dtype whatever the flag says.
//  - SGLang: the declared dtype, else float32 (configs/mamba_utils.py mamba2_state_dtype).
//  - TensorRT-LLM: the declared dtype, else the weights' dtype (PRs #11582 and #16065).
//  - static batching (kvplan's own reservation model): the declared dtype, else float32.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kvplan/core/dtype.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/model_config.h"

namespace kvplan {

struct RecurrentStateDtype {
  DType dtype = DType::kF32;
  std::string source;  // why this dtype: the engine's rule and where it is written
};

// `model_dtype` is the dtype the model runs in (its config's, or --dtype).
RecurrentStateDtype engine_state_dtype(const ModelConfig& model, Engine engine, DType model_dtype);

// A dtype the user chose (--mamba-ssm-cache-dtype). Throws ConfigError where the engine does not
// apply it (vLLM's lightning attention), so that no answer describes a cache the engine never
// allocates; otherwise returns it with its source.
RecurrentStateDtype chosen_state_dtype(const ModelConfig& model, Engine engine, DType model_dtype, DType chosen);

// The dtype in force: `chosen` when given (checked as above, its source `chosen_how`), else the
// engine's rule. What scenarios and start-up logs resolve through.
RecurrentStateDtype resolve_state_dtype(const ModelConfig& model, Engine engine, DType model_dtype,
                                        std::optional<DType> chosen, std::string_view chosen_how);

}  // namespace kvplan
