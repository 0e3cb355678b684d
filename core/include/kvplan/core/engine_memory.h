// kvplan/core/engine_memory.h — where every byte of one GPU goes under a serving engine, and how
// many KV blocks, tokens and concurrent requests fit.
//
//   ServingConfig cfg;  cfg.engine = Engine::kVllm;  cfg.max_model_len = 8192;
//   MemoryPlan plan = plan_memory(model, gpu, scheme, parallel, cfg);
//   plan.printed_kv_tokens;  // vLLM's "GPU KV cache size: N tokens"
//   plan.max_concurrency;    // vLLM's "Maximum concurrency for M tokens per request: X"
//
// Each engine's budget rule (DESIGN §3):
//  - vLLM: total · gpu_memory_utilization − weights − activation peak of the profiling pass −
//    non-torch memory; num_blocks = floor(budget / block bytes). CUDA-graph memory comes out of
//    the (1 − utilization) headroom before 0.21 (shown, not subtracted); from 0.21 vLLM
//    profiles the graphs first and subtracts its estimate (gpu_worker.py).
//  - SGLang: mem_fraction_static · total − weights − CUDA context, in tokens (page size 1).
//  - TensorRT-LLM: free_gpu_memory_fraction · (memory free after the engine and its runtime
//    buffers are loaded), in blocks of tokens_per_block.
//  - Static (Hugging Face generate): every batch slot reserves max_model_len tokens.
// Memory other processes already hold on the GPU (`memory_in_use_bytes`, term "memory_in_use"):
//  - vLLM V1 (>= 0.8) requests total · gpu_memory_utilization and refuses to start when the free
//    memory is smaller; otherwise its budget does not change (shown, not subtracted).
//  - vLLM V0 (< 0.8) measures its peak with torch.cuda.mem_get_info, which counts other
//    processes: subtracted. So is it for SGLang (its pool is sized from the memory free at
//    start), TensorRT-LLM (before its fraction of the free memory is taken) and static batching.
// Terms that are estimates (activation peak, non-torch memory, CUDA context) say so in `how`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/length_distribution.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"

namespace kvplan {

enum class Engine { kVllm, kSglang, kTrtllm, kStatic };
std::string_view engine_name(Engine e);
Engine parse_engine(std::string_view text);  // vllm | sglang | trtllm | static

// An engine release, for the rules that changed between versions: vLLM's memory accounting and
// scheduler, SGLang's benchmark regime (sim::default_bench_start).
struct EngineVersion {
  int major = 0;
  int minor = 10;
  int patch = 0;
  bool at_least(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
  bool at_least(int ma, int mi, int pa) const {
    return major > ma || (major == ma && (minor > mi || (minor == mi && patch >= pa)));
  }
  std::string text() const;  // "0.10", or "0.7.1" when the patch level is not 0
};
EngineVersion parse_engine_version(std::string_view text);  // "0.10", "0.6.4.post1", "v0.7.1"

// vLLM's engine generation. kAuto follows the version: V1 from 0.8 (VLLM_USE_V1 on by default),
// V0 before. Releases 0.8–0.9 still fell back to V0 for features V1 lacked; --vllm-engine says
// which one ran.
enum class VllmEngine { kAuto, kV0, kV1 };
VllmEngine parse_vllm_engine(std::string_view text);  // auto | v0 | v1
bool vllm_uses_v1(const EngineVersion& version, VllmEngine engine);

// Chunked prefill (vLLM). kAuto follows the engine: always on in V1; in V0 (0.5+) on by default only
// when max_model_len exceeds 32K and the model has no sliding window and no vision encoder. Off
// means the profiling pass runs one prompt of max_model_len tokens.
enum class ChunkedPrefill { kAuto, kOn, kOff };
ChunkedPrefill parse_chunked_prefill(std::string_view text);  // auto | on | off
std::string_view chunked_prefill_name(ChunkedPrefill c);

// Memory in use on an idle GPU before SGLang measures what is free (CUDA context, torch): 0.38 GiB
// on an H100 (79.19 GiB total, "Load weight begin. avail mem=78.81 GB", data/vllm_logs/90).
inline constexpr int64_t kSglangStartContextBytes = 408021893;  // 0.38 GiB

// SGLang's mem_fraction_static when none is given (ServingConfig::mem_fraction_static 0), by
// tensor-parallel size (server_args, 0.4 series): what plan_memory uses, and what front ends show
// as the effective value of a 0.
double sglang_default_mem_fraction_static(int tensor_parallel);

struct ServingConfig {
  Engine engine = Engine::kVllm;
  EngineVersion version;               // release: vLLM behaviour (default 0.10, V1), SGLang bench start
  WeightFormat weights;                // --dtype / --quantization
  double gpu_memory_utilization = 0.9; // vLLM
  int64_t max_model_len = 0;           // 0: the model's max_position_embeddings
  int max_num_seqs = 0;                // 0: engine default
  int64_t max_num_batched_tokens = 0;  // 0: engine default
  bool enforce_eager = false;          // vLLM: no CUDA graphs
  VllmEngine vllm_engine = VllmEngine::kAuto;
  ChunkedPrefill chunked_prefill = ChunkedPrefill::kAuto;  // vLLM: sets the profiling pass size
  // Device platform of the GPU: ROCm builds of vLLM hold more memory outside torch's allocator.
  bool rocm = false;
  int64_t trtllm_max_tokens = 0;       // TensorRT-LLM kv_cache_config.max_tokens cap (0: none)
  double mem_fraction_static = 0;      // SGLang; 0: SGLang's default for the GPU and TP
  double free_gpu_memory_fraction = 0.9;  // TensorRT-LLM kv_cache_free_gpu_mem_fraction
  int64_t memory_in_use_bytes = 0;     // held by other processes when the engine starts (< total)
};

struct MemoryTerm {
  std::string key;    // stable id: "weights", "activation_peak", ...
  std::string label;  // human label
  int64_t bytes = 0;
  bool subtracted = true;  // false: shown for completeness, not taken from the KV budget
  std::string how;         // how it was computed, and whether it is an estimate
};

struct MemoryPlan {
  Engine engine = Engine::kVllm;
  KvScheme kv_scheme;                // the cache as this engine stores it (e.g. vLLM < 0.7.1 MLA)
  int data_parallel = 1;             // independent engine ranks; capacity figures are per rank
  std::vector<std::string> warnings; // what the answer should not be trusted for (every output)
  std::string engine_label;          // e.g. "vLLM 0.10 (V1 engine)"
  int64_t gpu_total_bytes = 0;       // usable total the engine sees
  int64_t engine_budget_bytes = 0;   // e.g. total · gpu_memory_utilization
  std::vector<MemoryTerm> terms;
  int64_t kv_budget_bytes = 0;       // what the KV cache may use (may be negative: does not fit)
  int tokens_per_block = 0;
  int64_t block_bytes = 0;           // one block across every KV layer on this GPU
  int64_t num_blocks = 0;
  int64_t kv_cache_tokens = 0;       // the pool's capacity in tokens (blocks x tokens per block)
  // The engine's printed "GPU KV cache size": kv_cache_tokens, except vLLM >= 0.20, which prints
  // int(max_concurrency x max_model_len) (kv_cache_utils.py _report_kv_cache_config, PR #38364).
  int64_t printed_kv_tokens = 0;
  int64_t max_model_len = 0;
  double max_concurrency = 0;        // the engine's printed "maximum concurrency" figure
  int64_t requests_at_max_len = 0;   // kvplan's own count: windows, eviction, state included
  int64_t request_bytes_at_max_len = 0;
  int64_t max_num_batched_tokens = 0;  // as used for the profiling pass
  int max_num_seqs = 0;
  int pipeline_stage = 0;            // the stage that limits capacity
  bool fits = true;
  std::vector<std::string> problems;  // why it does not fit, if it does not
  std::vector<std::string> notes;     // assumptions worth reading

  int64_t term(std::string_view key) const;  // bytes of a term, 0 if absent
  // Whole deployment: requests / tokens over every data-parallel rank.
  int64_t total_kv_cache_tokens() const { return kv_cache_tokens * data_parallel; }
  int64_t total_requests_at_max_len() const { return requests_at_max_len * data_parallel; }
};

MemoryPlan plan_memory(const ModelConfig& model, const GpuSpec& gpu, const KvScheme& scheme,
                       const Parallelism& parallel, const ServingConfig& config);

// How many requests fit at once when their lengths follow a distribution.
struct DistributionFit {
  std::string distribution;
  double mean_tokens = 0;
  int64_t p99_tokens = 0;
  double mean_request_bytes = 0;      // allocated bytes (blocks, state) per request, averaged
  int64_t p99_request_bytes = 0;
  int64_t requests_at_mean = 0;       // floor(KV budget / mean allocated bytes)
  int64_t requests_at_p99 = 0;        // floor(KV budget / allocated bytes of a p99 request)
};

DistributionFit fit_distribution(const MemoryPlan& plan, const KvLayout& layout,
                                 const LengthDistribution& lengths);

// A generic activation estimate from shapes: the forward pass over `num_tokens` (residual, layer
// input and the widest intermediate) plus fp32 logits and probabilities of `num_seqs` rows. Used for
// TensorRT-LLM, static batching and CUDA graphs; vLLM's own profiling rules are in vllm_profile.h.
int64_t vllm_activation_peak_bytes(const ModelConfig& model, const Parallelism& parallel,
                                   int64_t num_tokens, int num_seqs);

}  // namespace kvplan
