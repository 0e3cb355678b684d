#include "kvplan/core/vllm_log_scenario.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/recurrent_state_dtype.h"

namespace kvplan {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// A preset whose Hugging Face source names the same repository as the log's model.
std::string preset_for_hf_id(const std::string& model) {
  std::string name = lower(model);
  if (auto slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (name.empty()) return "";
  for (const ModelConfig& m : model_presets()) {
    std::string src = lower(m.source);
    if (has(src, "/" + name + "/")) return m.id;
  }
  return "";
}

constexpr double kGiB = 1073741824.0;

}  // namespace

std::string gpu_preset_from_text(const std::string& text) {
  std::string t = lower(text);
  // First the presets' own names: the whole text is an id, alias or device name; else the text
  // holds a device name as printed by the driver ("GPU 0: NVIDIA A30 (UUID ...)"), the longest
  // such name winning ("NVIDIA L40S" over "NVIDIA L4").
  std::string trimmed = t;
  trimmed.erase(0, trimmed.find_first_not_of(" \t"));
  trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
  std::string best;
  size_t best_length = 0;
  for (const GpuSpec& g : gpu_presets()) {
    if (trimmed == lower(g.id)) return g.id;
    for (const std::string& a : g.aliases) {
      if (trimmed == lower(a)) return g.id;
    }
    for (const std::string& d : g.device_names) {
      std::string name = lower(d);
      for (size_t at = t.find(name); at != std::string::npos; at = t.find(name, at + 1)) {
        // The device name must stand as whole words: "nvidia l4" is not in "nvidia l40s".
        size_t end = at + name.size();
        bool bounded = (at == 0 || !std::isalnum(static_cast<unsigned char>(t[at - 1]))) &&
                       (end == t.size() || !std::isalnum(static_cast<unsigned char>(t[end])));
        if (bounded && name.size() > best_length) {
          best = g.id;
          best_length = name.size();
        }
      }
    }
  }
  if (!best.empty()) return best;
  // Then free text ("A100 40GB", "8xL4(24gb)", "RTX 3090").
  if (has(t, "h200")) return "h200";
  if (has(t, "h100")) return has(t, "pcie") ? "h100-pcie" : "h100-sxm";
  if (has(t, "b200")) return "b200";
  if (has(t, "a100")) return has(t, "40") ? "a100-40gb" : "a100-80gb";
  if (has(t, "l40s")) return "l40s";
  if (has(t, "a10g")) return "a10g";
  if (has(t, "4090")) return "rtx-4090";
  if (has(t, "3090")) return "rtx-3090";
  if (has(t, "6000 ada")) return "rtx-6000-ada";
  if (has(t, "a6000")) return "rtx-a6000";
  if (has(t, "a30")) return "a30";
  if (has(t, "mi300x")) return "mi300x";
  if (has(t, " l4") || t.rfind("l4", 0) == 0 || has(t, "xl4")) return "l4";
  if (has(t, "t4")) return "t4";
  return "";
}

LogScenario scenario_from_vllm_log(const VllmLog& log, const std::string& log_path, const LogOverrides& o) {
  LogScenario s;
  std::string model = o.model;
  if (model.empty() && !log.kvplan_model.empty()) {
    model = log.kvplan_model;
    bool relative = model.find('/') != std::string::npos && model[0] != '/';
    if (relative) {
      auto slash = log_path.find_last_of('/');
      model = (slash == std::string::npos ? std::string() : log_path.substr(0, slash + 1)) + model;
    }
  }
  if (model.empty()) model = preset_for_hf_id(log.model);
  if (model.empty()) {
    throw ConfigError(fmt::format(
        "vllm log '{}': model '{}' is not a preset; pass --model with a preset id or a config.json",
        log.name, log.model));
  }
  s.model = resolve_model(model);

  std::string gpu = !o.gpu.empty() ? o.gpu : !log.kvplan_gpu.empty() ? log.kvplan_gpu : gpu_preset_from_text(log.gpu);
  if (gpu.empty()) {
    throw ConfigError(fmt::format("vllm log '{}': the GPU is not named; pass --gpu with a preset id", log.name));
  }
  s.gpu = resolve_gpu(gpu);
  if (log.total_gpu_memory_gib) {
    s.gpu.usable_memory_bytes = static_cast<int64_t>(*log.total_gpu_memory_gib * kGiB);
    s.gpu.usable_memory_source = "total GPU memory printed in the log";
    s.gpu.usable_memory_estimated = false;
  }

  ServingConfig& c = s.serving;
  c.engine = parse_engine(log.engine);
  c.rocm = s.gpu.vendor == "amd";
  if (c.engine == Engine::kVllm) {
    if (!log.version.empty()) {
      c.version = parse_engine_version(log.version);
    } else {
      s.assumptions.push_back("vLLM version not stated: 0.10 rules used");
    }
  }
  if (c.engine == Engine::kSglang) {
    c.mem_fraction_static = log.mem_fraction_static.value_or(0);
    if (!log.mem_fraction_static) s.assumptions.push_back("mem_fraction_static not stated: SGLang's default for the GPU and TP");
    if (log.free_at_start_gib && log.total_gpu_memory_gib == std::nullopt) {
      // Memory other processes held when SGLang started (a desktop, another engine): what is
      // missing from the free memory it measured at start beyond the CUDA context.
      const double in_use = s.gpu.usable_memory_bytes / kGiB - *log.free_at_start_gib - kSglangStartContextBytes / kGiB;
      if (in_use > 0.1) {
        c.memory_in_use_bytes = static_cast<int64_t>(in_use * kGiB);
        s.assumptions.push_back(fmt::format("memory in use by other processes at start: {:.2f} GiB (total minus the "
                                            "free memory SGLang printed at start minus the CUDA context)",
                                            in_use));
      }
    }
  }
  if (c.engine == Engine::kTrtllm) {
    c.free_gpu_memory_fraction = log.free_gpu_memory_fraction.value_or(0.9);
    if (!log.free_gpu_memory_fraction) s.assumptions.push_back("free_gpu_memory_fraction not stated: 0.9 (default)");
  }
  auto assume = [&](bool stated, const std::string& what) {
    if (!stated) s.assumptions.push_back(what);
  };
  c.gpu_memory_utilization = log.gpu_memory_utilization.value_or(0.9);
  assume(log.gpu_memory_utilization.has_value(), "gpu_memory_utilization not stated: 0.9 (default)");
  c.max_model_len = log.max_model_len.value_or(0);
  assume(log.max_model_len.has_value(), "max_model_len not stated: the model's max_position_embeddings");
  c.max_num_seqs = log.max_num_seqs.value_or(0);
  c.max_num_batched_tokens = log.max_num_batched_tokens.value_or(0);
  c.enforce_eager = log.enforce_eager.value_or(false);
  if (log.chunked_prefill) c.chunked_prefill = *log.chunked_prefill ? ChunkedPrefill::kOn : ChunkedPrefill::kOff;
  s.parallel.tensor_parallel = log.tensor_parallel_size.value_or(1);
  s.parallel.pipeline_parallel = log.pipeline_parallel_size.value_or(1);
  DType act = s.model.dtype == DType::kF32 ? DType::kBF16 : s.model.dtype;
  if (log.dtype && *log.dtype != "auto") act = parse_dtype(*log.dtype, "dtype");
  c.weights.dtype = act;
  c.weights.quant = s.model.quantization;
  if (log.quantization && lower(*log.quantization) != "none") {
    std::string q = lower(*log.quantization);
    if (!s.model.quantization.quantized()) {
      // Quantized at load time (vLLM's online fp8) or a checkpoint whose config kvplan was not given.
      if (has(q, "fp8")) {
        c.weights.quant = quantization_from_flag("fp8", 128);
      } else if (has(q, "bitsandbytes")) {
        c.weights.quant = quantization_from_flag("bitsandbytes", 64);
      } else {
        // A pre-quantized checkpoint (compressed-tensors, AWQ, GPTQ, ...) whose format only its
        // config.json states: refuse rather than guess.
        throw ConfigError(fmt::format(
            "log '{}': quantization={} but the model config '{}' has no quantization_config; give the "
            "checkpoint's config.json (with its quantization_config) as the model",
            log.name, q, s.model.id));
      }
    }
  }
  s.scheme.kv_dtype = act;
  if (log.kv_cache_dtype && *log.kv_cache_dtype != "auto") s.scheme.kv_dtype = parse_dtype(*log.kv_cache_dtype, "kv_cache_dtype");
  if (c.engine == Engine::kTrtllm && c.weights.quant.kv_cache_fp8 && !log.kv_cache_dtype) {
    s.scheme.kv_dtype = DType::kFp8E4M3;
    s.assumptions.push_back("fp8 KV cache: the checkpoint ships fp8 KV scales, which TensorRT-LLM uses by default");
  }
  std::optional<DType> stated_state;
  if (log.mamba_ssm_cache_dtype && *log.mamba_ssm_cache_dtype != "auto") {
    stated_state = parse_dtype(*log.mamba_ssm_cache_dtype, "mamba_ssm_cache_dtype");
  }
  const RecurrentStateDtype state = resolve_state_dtype(s.model, c.engine, act, stated_state, "stated in the log");
  s.scheme.state_dtype = state.dtype;
  s.scheme.state_dtype_source = state.source;
  s.scheme.tokens_per_block = log.block_size.value_or(c.engine == Engine::kTrtllm ? 64 : 16);
  if (c.engine == Engine::kTrtllm && log.trtllm_max_tokens) c.trtllm_max_tokens = *log.trtllm_max_tokens;
  return s;
}

std::vector<LogComparisonRow> compare_to_log(const VllmLog& log, const MemoryPlan& plan) {
  auto g = [](int64_t bytes) { return static_cast<double>(bytes) / kGiB; };
  std::vector<LogComparisonRow> rows;
  rows.push_back({"total GPU memory", log.total_gpu_memory_gib, g(plan.gpu_total_bytes), "GiB"});
  rows.push_back({"model weights", log.weights_gib, g(plan.term("weights")), "GiB"});
  rows.push_back({"activation peak", log.activation_peak_gib, g(plan.term("activation_peak")), "GiB"});
  rows.push_back({"non-torch memory", log.non_torch_gib, g(plan.term("non_torch")), "GiB"});
  rows.push_back({"KV cache memory", log.kv_cache_memory_gib, g(plan.kv_budget_bytes), "GiB"});
  std::optional<double> blocks;
  if (log.num_gpu_blocks) blocks = static_cast<double>(*log.num_gpu_blocks);
  rows.push_back({"KV cache blocks", blocks, static_cast<double>(plan.num_blocks), "blocks"});
  std::optional<double> tokens;
  if (log.kv_cache_tokens) tokens = static_cast<double>(*log.kv_cache_tokens);
  rows.push_back({"GPU KV cache size", tokens, static_cast<double>(plan.printed_kv_tokens), "tokens"});
  rows.push_back({"maximum concurrency", log.max_concurrency, plan.max_concurrency, "x"});
  // From 0.21 kvplan's term stands for vLLM's estimate (subtracted); before, for the capture.
  if (log.cuda_graph_estimate_gib) {
    rows.push_back({"CUDA graphs (estimate)", log.cuda_graph_estimate_gib, g(plan.term("cuda_graphs")), "GiB"});
  } else if (log.cuda_graph_gib) {
    rows.push_back({"CUDA graphs", log.cuda_graph_gib, g(plan.term("cuda_graphs")), "GiB"});
  }
  if (plan.engine == Engine::kSglang && (log.free_at_start_gib || log.free_after_weights_gib)) {
    // SGLang's "avail mem" before and after loading: total - context - in use, then minus weights.
    const int64_t at_start = plan.gpu_total_bytes - plan.term("cuda_context") - plan.term("memory_in_use");
    rows.push_back({"free at start", log.free_at_start_gib, g(at_start), "GiB"});
    rows.push_back({"free after weights", log.free_after_weights_gib, g(at_start - plan.term("weights")), "GiB"});
  }
  if (plan.engine == Engine::kTrtllm && log.free_after_load_gib) {
    // TensorRT-LLM's "available" memory, of which it takes free_gpu_memory_fraction: pool + reserve.
    rows.push_back({"free after loading", log.free_after_load_gib, g(plan.kv_budget_bytes + plan.term("reserve")), "GiB"});
  }
  return rows;
}

}  // namespace kvplan
