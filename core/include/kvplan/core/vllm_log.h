// kvplan/core/vllm_log.h — reads the settings and the printed memory figures from a serving
// engine's start-up log (vLLM, SGLang or TensorRT-LLM), so kvplan can predict the same figures and
// show printed vs predicted term by term.
//
//   VllmLog log = parse_vllm_log(text, "run.log");
//   if (log.kv_cache_tokens) { ... }   // "GPU KV cache size: N tokens", "#tokens: N", "(N)" ...
//
// vLLM: V0 (0.2–0.7) and V1 (0.8+) formats. SGLang: "Load weight begin/end. avail mem=",
// "KV Cache is allocated. #tokens:", "max_total_num_tokens=" (its "GB" are GiB). TensorRT-LLM:
// "Memory usage when calculating max tokens in paged kv cache: total:, available:",
// "Number of blocks in KV cache primary pool", "Allocated X GiB for max tokens in paged KV cache (N)".
// Lines beginning with "# key:" at the top of a file are kvplan annotations (source, gpu, model,
// settings, engine) used by data/vllm_logs; a log taken straight from an engine needs none of
// them, except that the GPU must then be named with --gpu.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvplan {

struct VllmLog {
  std::string name;
  std::string engine = "vllm";  // annotation "# engine:" or recognised from the lines: vllm | sglang | trtllm
  // Settings (from the engine-config line, non-default args, command line or annotations).
  std::string model;        // HF id or path as printed
  std::string kvplan_model; // annotation "# kvplan_model:" (preset id or config path)
  std::string gpu;          // annotation "# gpu:" text
  std::string kvplan_gpu;   // annotation "# kvplan_gpu:" (preset id)
  std::string version;      // e.g. "0.7.1"
  std::string source;       // annotation "# source:"
  std::string use_line;     // annotation "# kvplan_use_line:": only lines containing it give KV figures
  std::string note;         // annotation "# kvplan_note:"
  std::optional<double> gpu_memory_utilization;
  std::optional<int64_t> max_model_len;
  std::optional<int> tensor_parallel_size;
  std::optional<int> pipeline_parallel_size;
  std::optional<std::string> dtype;
  std::optional<std::string> kv_cache_dtype;
  std::optional<std::string> mamba_ssm_cache_dtype;  // recurrent state dtype flag (SGLang: mamba_ssm_dtype)
  std::optional<std::string> quantization;
  std::optional<int> block_size;
  std::optional<int> max_num_seqs;
  std::optional<int64_t> max_num_batched_tokens;
  std::optional<bool> enforce_eager;
  // vLLM chunked prefill: enable_chunked_prefill / chunked_prefill_enabled, "Chunked prefill is
  // enabled", or V0's "The model has a long context length ... during the initial memory profiling
  // phase" warning, which vLLM prints only when chunked prefill stays off above 32K.
  std::optional<bool> chunked_prefill;
  // Printed figures (GiB as printed; vLLM's "GB" in old versions is GiB).
  std::optional<double> total_gpu_memory_gib;
  std::optional<double> weights_gib;
  std::optional<double> activation_peak_gib;
  std::optional<double> non_torch_gib;
  std::optional<double> kv_cache_memory_gib;
  std::optional<double> cuda_graph_gib;           // captured ("Graph capturing finished ... took")
  std::optional<double> cuda_graph_estimate_gib;  // vLLM >= 0.21: "Estimated CUDA graph memory: X GiB total"
  std::optional<int64_t> num_gpu_blocks;
  std::optional<int64_t> kv_cache_tokens;  // printed, or blocks × block size
  std::optional<double> max_concurrency;
  std::optional<int64_t> concurrency_tokens;  // the "for N tokens per request" figure
  // SGLang
  std::optional<double> mem_fraction_static;
  std::optional<double> free_at_start_gib;        // "Load weight begin. avail mem="
  std::optional<double> free_after_weights_gib;   // "Load weight end. ... avail mem="
  // TensorRT-LLM
  std::optional<double> free_gpu_memory_fraction;
  std::optional<double> free_after_load_gib;      // "... paged kv cache: total: X GiB, available: Y GiB"
  std::optional<int64_t> trtllm_max_tokens;       // a max_tokens cap that limited the pool
};

VllmLog parse_vllm_log(std::string_view text, std::string name);
VllmLog load_vllm_log(const std::string& path);  // throws ConfigError when unreadable

}  // namespace kvplan
