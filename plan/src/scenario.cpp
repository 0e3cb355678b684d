// plan/src/scenario.cpp — resolve(): the scenario's presets loaded and its settings turned into
// core's types, with every rule that spans several fields (messages name the flags).
#include "kvplan/plan/scenario.h"

#include <optional>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/recurrent_state_dtype.h"

namespace kvplan::plan {

namespace {

constexpr double kGiB = 1073741824.0;

// GiB in bytes, truncated like the presets' usable_memory_gib.
int64_t gib_bytes(double gib) { return static_cast<int64_t>(gib * kGiB); }

}  // namespace

ResolvedScenario resolve(const Scenario& in) {
  ResolvedScenario s;
  ModelParseOptions parse;
  parse.allow_unknown_architecture = in.model.allow_unknown_architecture;
  s.model = resolve_model(in.model.id, parse);
  s.gpu = resolve_gpu(in.hardware.gpu);
  ServingConfig& c = s.serving;
  if (in.hardware.gpu_total_memory_gib) {
    s.gpu.usable_memory_bytes = gib_bytes(*in.hardware.gpu_total_memory_gib);
    s.gpu.usable_memory_source = std::string(kGpuTotalMemoryGiven);
    s.gpu.usable_memory_estimated = false;
  }
  c.memory_in_use_bytes = gib_bytes(in.hardware.gpu_memory_in_use_gib);
  if (c.memory_in_use_bytes >= s.gpu.usable_memory_bytes) {
    throw ConfigError(fmt::format("--gpu-memory-in-use={} must be less than the GPU's total memory ({:.2f} GiB, {})",
                                  in.hardware.gpu_memory_in_use_gib, s.gpu.usable_memory_bytes / kGiB,
                                  s.gpu.usable_memory_source));
  }
  c.engine = in.engine.name;
  c.version = in.engine.version;
  c.vllm_engine = in.engine.vllm_engine;
  c.rocm = s.gpu.vendor == "amd";
  s.parallel.tensor_parallel = in.hardware.tensor_parallel_size;
  s.parallel.pipeline_parallel = in.hardware.pipeline_parallel_size;
  s.parallel.data_parallel = in.hardware.data_parallel_size;
  const int ep = in.hardware.expert_parallel_size;
  s.parallel.expert_parallel = in.hardware.enable_expert_parallel || ep > 1;
  const int gpus_per_stage = s.parallel.tensor_parallel * s.parallel.data_parallel;
  if (ep > 1 && ep != gpus_per_stage) {
    // A smaller EP size splits each expert over the GPUs of its group (MoE TP x EP): TensorRT-LLM's
    // moe_expert_parallel_size, SGLang's --ep-size below --tp-size. vLLM's EP spans every GPU.
    if (c.engine == Engine::kVllm || gpus_per_stage % ep != 0) {
      throw ConfigError(fmt::format(
          "--expert-parallel-size={} must equal tensor-parallel-size x data-parallel-size = {}{}", ep, gpus_per_stage,
          c.engine == Engine::kVllm
              ? " (vLLM's --enable-expert-parallel spreads the experts over every GPU of a stage)"
              : fmt::format(", or divide it (MoE TP x EP: each expert split over {} / ep GPUs)", gpus_per_stage)));
    }
    s.parallel.expert_parallel_ranks = ep;
  }

  const DType act = in.model.dtype ? *in.model.dtype : (s.model.dtype == DType::kF32 ? DType::kBF16 : s.model.dtype);
  c.weights.dtype = act;
  const std::string& quant = in.model.quantization;
  if (quant == "auto") {
    c.weights.quant = s.model.quantization;  // the checkpoint's quantization_config, if any
  } else {
    c.weights.quant = quantization_from_flag(quant, in.model.weight_group_size);
    if (s.model.quantization.quantized()) {
      c.weights.quant.notes.push_back(fmt::format("--quantization {} overrides the checkpoint's quantization_config ({})",
                                                  quant, s.model.quantization.description));
    }
  }

  const KvCacheSettings& kv = in.kv_cache;
  KvScheme& k = s.scheme;
  k.kv_dtype = kv.dtype ? *kv.dtype : act;
  if (const std::optional<DType> only = only_kv_dtype(s.model); !kv.dtype && only) {
    // DeepSeek-V4: the engines keep its caches in fp8 only (vLLM forces fp8_ds_mla), so "auto" is fp8.
    k.kv_dtype = *only;
    s.model.notes.push_back(fmt::format(
        "model '{}': --kv-cache-dtype auto means fp8 here: vLLM and SGLang store DeepSeek-V4's window, compressed "
        "latents and indexer keys only in their fp8 layouts (584 B per latent, 132 B per indexer key)",
        s.model.id));
  }
  k.quant_group_size = kv.quant_group_size;
  k.quant_asymmetric = !kv.quant_symmetric;
  k.kivi_residual_tokens = kv.kivi_residual_tokens;
  k.fp8_scales = kv.fp8_scales;
  k.tokens_per_block = kv.block_size;
  k.paged = !kv.contiguous;
  if (kv.h2o_budget_tokens > 0 && kv.streaming_window_tokens > 0) {
    throw ConfigError(fmt::format("--h2o-budget={} and --streaming-window={}: choose one eviction scheme",
                                  kv.h2o_budget_tokens, kv.streaming_window_tokens));
  }
  if (kv.h2o_budget_tokens > 0) {
    k.eviction = Eviction::kH2O;
    k.h2o_budget_tokens = kv.h2o_budget_tokens;
  } else if (kv.streaming_window_tokens > 0) {
    k.eviction = Eviction::kStreaming;
    k.streaming_window_tokens = kv.streaming_window_tokens;
    k.sink_tokens = kv.streaming_sinks;
  }
  k.low_rank = kv.low_rank;
  k.cross_layer_share = kv.cross_layer_share;
  const RecurrentStateDtype state =
      resolve_state_dtype(s.model, c.engine, act, kv.mamba_ssm_cache_dtype, "given (--mamba-ssm-cache-dtype)");
  k.state_dtype = state.dtype;
  k.state_dtype_source = state.source;

  c.max_model_len = in.engine.max_model_len;
  c.gpu_memory_utilization = in.engine.gpu_memory_utilization;
  c.max_num_seqs = in.engine.max_num_seqs;
  c.max_num_batched_tokens = in.engine.max_num_batched_tokens;
  c.enforce_eager = in.engine.enforce_eager;
  c.chunked_prefill = in.engine.enable_chunked_prefill;
  c.mem_fraction_static = in.engine.mem_fraction_static;
  c.free_gpu_memory_fraction = in.engine.free_gpu_memory_fraction;
  if (!kv.fit_lengths.empty()) s.fit_lengths = parse_length_distribution(kv.fit_lengths, "--lengths");
  if (in.cost.usd_per_gpu_hour > 0) {
    s.usd_per_gpu_hour = in.cost.usd_per_gpu_hour;
    s.price_source = "given (--gpu-price)";
  } else if (s.gpu.price_usd_per_gpu_hour > 0) {
    s.usd_per_gpu_hour = s.gpu.price_usd_per_gpu_hour;
    s.price_source = s.gpu.price_source;
  }
  validate(k, s.parallel, s.model);
  return s;
}

}  // namespace kvplan::plan
