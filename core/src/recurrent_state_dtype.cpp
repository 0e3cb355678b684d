// core/src/recurrent_state_dtype.cpp — the engines' default recurrent-state dtypes (see the header).
#include "kvplan/core/recurrent_state_dtype.h"

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

namespace {

bool has_lightning_attention(const ModelConfig& m) {
  return m.linear.kind == LinearAttentionKind::kLightning && m.count_layers(LayerKind::kLinearAttention) > 0;
}

bool has_kimi_delta_attention(const ModelConfig& m) {
  return m.linear.kind == LinearAttentionKind::kKimiDelta && m.count_layers(LayerKind::kLinearAttention) > 0;
}

bool is_qwen3_5(const ModelConfig& m) { return m.model_type.rfind("qwen3_5", 0) == 0; }
bool is_nemotron_h(const ModelConfig& m) { return m.model_type == "nemotron_h"; }

std::string declared_text(const ModelConfig& m) {
  return fmt::format("the config's {} ({})",
                     m.declared_state_dtype_field.empty() ? "mamba_ssm_dtype" : m.declared_state_dtype_field,
                     dtype_name(*m.declared_state_dtype));
}

// SGLang reads `mamba_ssm_dtype` (top level or text_config) and no other key.
bool sglang_reads_declared(const ModelConfig& m) {
  return m.declared_state_dtype && (m.declared_state_dtype_field.empty() ||
                                    m.declared_state_dtype_field.find("mamba_ssm_dtype") != std::string::npos);
}

}  // namespace

RecurrentStateDtype engine_state_dtype(const ModelConfig& m, Engine engine, DType model_dtype) {
  const bool declared = m.declared_state_dtype.has_value();
  switch (engine) {
    case Engine::kVllm:
      if (has_lightning_attention(m)) {
        return {model_dtype, fmt::format("vLLM keeps lightning-attention state in the model dtype ({}) "
                                         "(mamba_utils.py linear_attention_state_dtype)",
                                         dtype_name(model_dtype))};
      }
      if (has_kimi_delta_attention(m)) {
        return {DType::kF32, "vLLM keeps Kimi delta attention's recurrent state in fp32 whatever the flag "
                             "(mamba_utils.py kda_state_dtype)"};
      }
      if (is_nemotron_h(m)) {
        // models/config.py NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype (auto only);
        // versions before its DEFAULT_MAMBA_SSM_CACHE_DTYPE fell back to float16 instead.
        if (declared) {
          return {*m.declared_state_dtype, fmt::format("{}, which vLLM applies to Nemotron-H (models/config.py "
                                                       "NemotronHForCausalLMConfig)",
                                                       declared_text(m))};
        }
        return {DType::kF32, "vLLM's default for Nemotron-H when the config names no mamba_ssm_cache_dtype: fp32 "
                             "(models/config.py NemotronHForCausalLMConfig; float16 in older versions)"};
      }
      if (declared && is_qwen3_5(m)) {
        return {*m.declared_state_dtype,
                fmt::format("{}, which vLLM applies to Qwen3.5 (models/config.py "
                            "Qwen3_5ForConditionalGenerationConfig)",
                            declared_text(m))};
      }
      return {model_dtype, fmt::format("vLLM's --mamba-ssm-cache-dtype auto: the conv state's dtype, i.e. the "
                                       "model dtype ({}) (mamba_utils.py _mamba_state_dtype){}",
                                       dtype_name(model_dtype),
                                       declared ? fmt::format("; vLLM does not read {} for model_type {}",
                                                              declared_text(m), m.model_type)
                                                : "")};
    case Engine::kSglang:
      if (declared && !sglang_reads_declared(m)) {
        return {DType::kF32, fmt::format("SGLang's default: fp32; it reads mamba_ssm_dtype, not {} "
                                         "(configs/mamba_utils.py mamba2_state_dtype)",
                                         declared_text(m))};
      }
      if (declared) return {*m.declared_state_dtype, fmt::format("{} (SGLang configs/mamba_utils.py mamba2_state_dtype)", declared_text(m))};
      return {DType::kF32, "SGLang's default when the config names none: fp32 (configs/mamba_utils.py mamba2_state_dtype)"};
    case Engine::kTrtllm:
      if (declared) return {*m.declared_state_dtype, fmt::format("{} (TensorRT-LLM's mamba_ssm_cache_dtype auto, PR #11582)", declared_text(m))};
      return {model_dtype, fmt::format("TensorRT-LLM's mamba_ssm_cache_dtype auto when the config names none: the "
                                       "weights' dtype ({}) (PR #16065)",
                                       dtype_name(model_dtype))};
    case Engine::kStatic:
      if (declared) return {*m.declared_state_dtype, declared_text(m)};
      return {DType::kF32, "kvplan's default for static batching when the config names none: fp32"};
  }
  return {DType::kF32, ""};
}

RecurrentStateDtype chosen_state_dtype(const ModelConfig& m, Engine engine, DType model_dtype, DType chosen) {
  if (engine == Engine::kVllm && has_lightning_attention(m) && chosen != model_dtype) {
    throw ConfigError(fmt::format(
        "--mamba-ssm-cache-dtype={}: vLLM keeps {}'s lightning-attention state in the model dtype ({}) and does not "
        "read this flag (mamba_utils.py linear_attention_state_dtype); leave it at auto",
        dtype_name(chosen), m.name, dtype_name(model_dtype)));
  }
  if (engine == Engine::kVllm && has_kimi_delta_attention(m) && chosen != DType::kF32) {
    throw ConfigError(fmt::format(
        "--mamba-ssm-cache-dtype={}: vLLM keeps {}'s Kimi delta attention state in fp32 and does not read this flag "
        "(mamba_utils.py kda_state_dtype); leave it at auto",
        dtype_name(chosen), m.name));
  }
  return {chosen, "given (--mamba-ssm-cache-dtype)"};
}

RecurrentStateDtype resolve_state_dtype(const ModelConfig& m, Engine engine, DType model_dtype,
                                        std::optional<DType> chosen, std::string_view chosen_how) {
  if (!chosen) return engine_state_dtype(m, engine, model_dtype);
  RecurrentStateDtype d = chosen_state_dtype(m, engine, model_dtype, *chosen);
  d.source = std::string(chosen_how);
  return d;
}

}  // namespace kvplan
