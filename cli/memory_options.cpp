#include "memory_options.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan::cli {

namespace {

const std::string& get(const FlagValues& flags, const std::string& name) {
  return flag_text(flags, memory_flag_defaults(), name);
}

int64_t to_int(const FlagValues& flags, const std::string& name, int64_t min) {
  const std::string& text = get(flags, name);
  int64_t v = parse_int_flag(name, text);
  if (v < min) throw ConfigError(fmt::format("--{}={} must be at least {}", name, text, min));
  return v;
}

double to_fraction(const FlagValues& flags, const std::string& name, bool allow_zero) {
  const std::string& text = get(flags, name);
  double v = parse_number_flag(name, text);
  if (v > 1 || v < 0 || (!allow_zero && v == 0)) {
    throw ConfigError(fmt::format("--{}={} must be in {}0, 1]", name, text, allow_zero ? "[" : "("));
  }
  return v;
}

bool to_bool(const FlagValues& flags, const std::string& name) {
  return parse_bool_flag(name, get(flags, name), false);
}

constexpr double kGiB = 1073741824.0;
// Large enough for any accelerator, small enough that GiB -> bytes stays far inside int64.
constexpr double kMaxGiB = 1048576;

// A number of GiB in bytes (truncated like the presets' usable_memory_gib).
int64_t to_gib_bytes(const FlagValues& flags, const std::string& name, bool allow_zero) {
  const std::string& text = get(flags, name);
  double v = parse_number_flag(name, text);
  if (v < 0 || (!allow_zero && v == 0) || v > kMaxGiB) {
    throw ConfigError(fmt::format("--{}={} must be a {} number of GiB (at most {})", name, text,
                                  allow_zero ? "non-negative" : "positive", kMaxGiB));
  }
  return static_cast<int64_t>(v * kGiB);
}

int to_int32(const FlagValues& flags, const std::string& name, int64_t min) {
  int64_t v = to_int(flags, name, min);
  if (v > std::numeric_limits<int>::max()) {
    throw ConfigError(fmt::format("--{}={} is too large", name, v));
  }
  return static_cast<int>(v);
}

}  // namespace

const FlagDefaults& memory_flag_defaults() {
  static const FlagDefaults defaults = {
      {"model", "llama-3.1-8b"},
      {"gpu", "h100-sxm"},
      {"gpu-total-memory", ""},   // GiB; "": the GPU's usable total
      {"gpu-memory-in-use", "0"}, // GiB held by other processes at engine start
      {"engine", "vllm"},
      {"engine-version", "0.10"},
      {"vllm-engine", "auto"},
      {"tensor-parallel-size", "1"},
      {"pipeline-parallel-size", "1"},
      {"data-parallel-size", "1"},
      {"enable-expert-parallel", "false"},
      {"expert-parallel-size", "0"},  // 0: tensor-parallel-size x data-parallel-size when enabled
      {"dtype", "auto"},
      {"quantization", "auto"},
      {"allow-unknown-architecture", "false"},
      {"weight-group-size", "128"},
      {"kv-cache-dtype", "auto"},
      {"kv-quant-group-size", "64"},
      {"kv-quant-symmetric", "false"},
      {"kivi-residual", "128"},
      {"fp8-scales", "per-tensor"},
      {"block-size", "16"},
      {"contiguous", "false"},
      {"max-model-len", "0"},
      {"gpu-memory-utilization", "0.9"},
      {"max-num-seqs", "0"},
      {"max-num-batched-tokens", "0"},
      {"enforce-eager", "false"},
      {"enable-chunked-prefill", "auto"},  // vLLM: auto follows the version's default
      {"mem-fraction-static", "0"},
      {"free-gpu-memory-fraction", "0.9"},
      {"h2o-budget", "0"},
      {"streaming-sinks", "0"},
      {"streaming-window", "0"},
      {"low-rank", "0"},
      {"cross-layer-share", "1"},
      {"mamba-ssm-cache-dtype", "fp32"},
      {"lengths", ""},
  };
  return defaults;
}

Scenario build_scenario(const FlagValues& flags) {
  check_known_flags(flags, memory_flag_defaults());
  Scenario s;
  ModelParseOptions parse;
  parse.allow_unknown_architecture = to_bool(flags, "allow-unknown-architecture");
  s.model = resolve_model(get(flags, "model"), parse);
  s.gpu = resolve_gpu(get(flags, "gpu"));
  ServingConfig& c = s.serving;
  if (!get(flags, "gpu-total-memory").empty()) {
    s.gpu.usable_memory_bytes = to_gib_bytes(flags, "gpu-total-memory", false);
    s.gpu.usable_memory_source = std::string(kGpuTotalMemoryGiven);
    s.gpu.usable_memory_estimated = false;
  }
  c.memory_in_use_bytes = to_gib_bytes(flags, "gpu-memory-in-use", true);
  if (c.memory_in_use_bytes >= s.gpu.usable_memory_bytes) {
    throw ConfigError(fmt::format("--gpu-memory-in-use={} must be less than the GPU's total memory ({:.2f} GiB, {})",
                                  get(flags, "gpu-memory-in-use"), s.gpu.usable_memory_bytes / kGiB,
                                  s.gpu.usable_memory_source));
  }
  c.engine = parse_engine(get(flags, "engine"));
  c.version = parse_engine_version(get(flags, "engine-version"));
  c.vllm_engine = parse_vllm_engine(get(flags, "vllm-engine"));
  c.rocm = s.gpu.vendor == "amd";
  s.parallel.tensor_parallel = to_int32(flags, "tensor-parallel-size", 1);
  s.parallel.pipeline_parallel = to_int32(flags, "pipeline-parallel-size", 1);
  s.parallel.data_parallel = to_int32(flags, "data-parallel-size", 1);
  const int ep = to_int32(flags, "expert-parallel-size", 0);
  s.parallel.expert_parallel = to_bool(flags, "enable-expert-parallel") || ep > 1;
  if (ep > 1 && ep != s.parallel.tensor_parallel * s.parallel.data_parallel) {
    throw ConfigError(fmt::format(
        "--expert-parallel-size={} must equal tensor-parallel-size x data-parallel-size = {} (kvplan spreads the "
        "experts over every GPU of a stage, as vLLM's --enable-expert-parallel does)",
        ep, s.parallel.tensor_parallel * s.parallel.data_parallel));
  }

  const std::string& dtype = get(flags, "dtype");
  DType act = dtype == "auto" ? (s.model.dtype == DType::kF32 ? DType::kBF16 : s.model.dtype)
                              : parse_dtype(dtype, "--dtype");
  if (act != DType::kBF16 && act != DType::kF16 && act != DType::kF32) {
    throw ConfigError(fmt::format("--dtype={} must be auto, bf16, fp16 or fp32 (use --quantization for "
                                  "fp8/int4 weights)", dtype));
  }
  c.weights.dtype = act;
  const std::string& quant = get(flags, "quantization");
  const int group = to_int32(flags, "weight-group-size", 1);
  if (quant == "auto") {
    c.weights.quant = s.model.quantization;  // the checkpoint's quantization_config, if any
  } else {
    c.weights.quant = quantization_from_flag(quant, group);
    if (s.model.quantization.quantized()) {
      c.weights.quant.notes.push_back(fmt::format(
          "--quantization {} overrides the checkpoint's quantization_config ({})", quant,
          s.model.quantization.description));
    }
  }

  KvScheme& k = s.scheme;
  const std::string& kv = get(flags, "kv-cache-dtype");
  if (kv == "auto") k.kv_dtype = act;
  else if (kv == "kivi2" || kv == "kivi") k.kv_dtype = DType::kInt2;
  else k.kv_dtype = parse_dtype(kv, "--kv-cache-dtype");
  k.quant_group_size = to_int32(flags, "kv-quant-group-size", 1);
  k.quant_asymmetric = !to_bool(flags, "kv-quant-symmetric");
  k.kivi_residual_tokens = to_int32(flags, "kivi-residual", 0);
  const std::string& scales = get(flags, "fp8-scales");
  if (scales == "per-head") k.fp8_scales = Fp8Scales::kPerHead;
  else if (scales != "per-tensor") throw ConfigError(fmt::format("--fp8-scales={} must be per-tensor or per-head", scales));
  k.tokens_per_block = to_int32(flags, "block-size", 1);
  k.paged = !to_bool(flags, "contiguous");
  int h2o = to_int32(flags, "h2o-budget", 0);
  int window = to_int32(flags, "streaming-window", 0);
  if (h2o > 0 && window > 0) {
    throw ConfigError(fmt::format("--h2o-budget={} and --streaming-window={}: choose one eviction scheme", h2o, window));
  }
  if (h2o > 0) {
    k.eviction = Eviction::kH2O;
    k.h2o_budget_tokens = h2o;
  } else if (window > 0) {
    k.eviction = Eviction::kStreaming;
    k.streaming_window_tokens = window;
    k.sink_tokens = to_int32(flags, "streaming-sinks", 0);
  }
  k.low_rank = to_int32(flags, "low-rank", 0);
  k.cross_layer_share = to_int32(flags, "cross-layer-share", 1);
  const std::string& state = get(flags, "mamba-ssm-cache-dtype");
  k.state_dtype = state == "auto" ? act : parse_dtype(state, "--mamba-ssm-cache-dtype");

  c.max_model_len = to_int(flags, "max-model-len", 0);
  c.gpu_memory_utilization = to_fraction(flags, "gpu-memory-utilization", false);
  c.max_num_seqs = to_int32(flags, "max-num-seqs", 0);
  c.max_num_batched_tokens = to_int(flags, "max-num-batched-tokens", 0);
  c.enforce_eager = to_bool(flags, "enforce-eager");
  {
    const std::string& chunked = get(flags, "enable-chunked-prefill");
    try {
      c.chunked_prefill = parse_chunked_prefill(chunked);
    } catch (const ConfigError&) {
      throw ConfigError(fmt::format("--enable-chunked-prefill={} must be auto, true or false", chunked));
    }
  }
  c.mem_fraction_static = to_fraction(flags, "mem-fraction-static", true);
  c.free_gpu_memory_fraction = to_fraction(flags, "free-gpu-memory-fraction", false);
  s.lengths = get(flags, "lengths");
  validate(k, s.parallel, s.model);
  return s;
}

}  // namespace kvplan::cli
