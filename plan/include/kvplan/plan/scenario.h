// kvplan/plan/scenario.h — the typed scenario: one deployment question (model, hardware, engine,
// KV cache, workload, SLO, cost) as plain C++ values, and its resolution into core's types.
//
//   plan::Scenario s;                                   // Llama-3.1-8B on one H100 SXM, vLLM defaults
//   s.kv_cache.dtype = DType::kFp8E4M3;  s.engine.max_model_len = 8192;
//   plan::ResolvedScenario r = plan::resolve(s);        // presets loaded; throws ConfigError
//
// Every field is one row of the settings table (settings.h), which gives it its command-line flag,
// its scenario-file key, its unit, its range and its one-line description; the defaults written
// here are the ones `kvplan --help` shows. Field values are checked when set through the table
// (type, range, choices); resolve() checks what involves several fields or a file (presets, the
// parallel split, conflicting settings) and names the fields by their flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kvplan/core/dtype.h"
#include "kvplan/core/fused_moe.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/length_distribution.h"
#include "kvplan/plan/workload_presets.h"
#include "kvplan/sim/bench_client.h"
#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/scheduler_config.h"
#include "kvplan/sim/simulation.h"
#include "kvplan/sim/workload.h"

namespace kvplan::plan {

struct ModelSettings {
  std::string id = "llama-3.1-8b";  // preset id, Hugging Face repo id, or a config.json path
  bool allow_unknown_architecture = false;
  std::optional<DType> dtype;        // weights and activations; nullopt: the checkpoint's (fp32 -> bf16)
  std::string quantization = "auto";  // quantization_flag_choices(); "auto": the checkpoint's
  int32_t weight_group_size = 128;    // elements per quantization group
};

// Whether a disaggregated deployment's prefill pool spreads the experts (kSame: as the decode pool).
enum class PoolExpertParallel { kSame, kOn, kOff };

struct HardwareSettings {
  std::string gpu = "h100-sxm";                 // preset id, alias, device name or GPU JSON file
  std::optional<double> gpu_total_memory_gib;   // nullopt: the preset's usable total
  double gpu_memory_in_use_gib = 0;             // held by other processes at engine start
  int32_t tensor_parallel_size = 1;
  int32_t pipeline_parallel_size = 1;
  int32_t data_parallel_size = 1;
  bool enable_expert_parallel = false;
  int32_t expert_parallel_size = 0;  // 0: tensor x data parallel when enabled
  int32_t replicas = 1;              // simulated engine replicas behind the router
  sim::RouterKind router = sim::RouterKind::kRoundRobin;
  int32_t prefill_replicas = 0;      // > 0: prefill/decode disaggregation
  int32_t decode_replicas = 0;
  double kv_link_gbps = 0;           // GB/s per GPU, prefill -> decode; 0: kvplan's default link (sim/kv_transfer.h)
  // Disaggregated: the prefill pool's own parallelism; 0 / kSame: the decode pool's (the sizes above).
  int32_t prefill_tensor_parallel_size = 0;
  int32_t prefill_data_parallel_size = 0;
  PoolExpertParallel prefill_expert_parallel = PoolExpertParallel::kSame;
};

struct EngineSettings {
  Engine name = Engine::kVllm;
  EngineVersion version;                 // engine release: vLLM accounting, SGLang bench start
  VllmEngine vllm_engine = VllmEngine::kAuto;
  int64_t max_model_len = 0;             // 0: the model's max_position_embeddings
  double gpu_memory_utilization = 0.9;   // vLLM
  int32_t max_num_seqs = 0;              // 0: the engine's default
  int64_t max_num_batched_tokens = 0;    // 0: the engine's default
  bool enforce_eager = false;
  ChunkedPrefill enable_chunked_prefill = ChunkedPrefill::kAuto;  // vLLM's profiling pass
  double mem_fraction_static = 0;        // SGLang; 0: SGLang's default
  double free_gpu_memory_fraction = 0.9;  // TensorRT-LLM
  // The simulated scheduler.
  std::optional<sim::SchedulerKind> scheduler;  // nullopt: the engine's
  std::optional<bool> chunked_prefill;          // nullopt: on unless the scheduler reserves
  std::optional<bool> overlap_schedule;         // nullopt: the engine's (simulate.cpp)
  bool enable_mixed_chunk = false;              // SGLang --enable-mixed-chunk
  int64_t max_prefill_tokens = 16384;           // SGLang --max-prefill-tokens
  sim::CapacityPolicy capacity_scheduler_policy = sim::CapacityPolicy::kGuaranteedNoEvict;  // TensorRT-LLM
  sim::PreemptionMode preemption = sim::PreemptionMode::kRecompute;
  double swap_space_gib = 0;                    // host memory per GPU for swapped KV
  double watermark = 0;
  int32_t spec_draft_tokens = 0;
  double spec_acceptance = 0.7;
  double spec_draft_cost = 0.05;
  std::optional<bool> cuda_graphs;              // nullopt: on unless enforce_eager
  std::optional<double> request_overhead_ms;    // nullopt: the engine's fitted default
  std::optional<double> request_overhead_per_in_flight_ms;  // nullopt: the engine's fitted default
  std::optional<double> request_overhead_per_in_flight_prefill_share;  // nullopt: the engine's fitted default
  std::optional<double> request_overhead_spread_ms;         // nullopt: none (uniform ± around the mean)
  std::optional<double> step_overhead_ms;       // nullopt: the engine's fitted default
  std::optional<double> step_time_factor;       // nullopt: the engine's fitted default
  std::optional<double> prefill_time_factor;    // nullopt: the engine's fitted default (step_time_factor if given)
  bool disable_custom_all_reduce = false;       // every TP all-reduce through NCCL (the profile's class)
  std::optional<MoeRouting> moe_routing;        // nullopt: default_moe_routing(model) (core/fused_moe.h)
  std::string profile;  // step-time source: "" (auto), auto, published, datasheet, or a file
};

struct KvCacheSettings {
  std::optional<DType> dtype;    // nullopt: the activation dtype; kInt2 is KIVI-2
  int32_t quant_group_size = 64;
  bool quant_symmetric = false;
  int32_t kivi_residual_tokens = 128;
  Fp8Scales fp8_scales = Fp8Scales::kPerTensor;
  int32_t block_size = 16;       // tokens per block
  bool contiguous = false;
  int32_t h2o_budget_tokens = 0;
  int32_t streaming_sinks = 0;
  int32_t streaming_window_tokens = 0;
  int32_t low_rank = 0;
  int32_t cross_layer_share = 1;
  std::optional<DType> mamba_ssm_cache_dtype;  // nullopt ("auto"): the engine's rule (recurrent_state_dtype.h)
  std::optional<sim::KvPolicy> policy;   // simulated KV manager; nullopt: from the scheduler
  std::optional<bool> enable_prefix_caching;  // nullopt: the engine's default (simulate.cpp)
  double capacity_gib = 0;               // > 0: the KV pool per replica instead of the engine's
  std::string fit_lengths;               // length spec for `memory` ("" = none)
};

// Unset workload fields (nullopt, or "" for a length spec) take the preset's value
// (workload_presets.h); a field given explicitly always wins over the preset.
struct WorkloadSettings {
  WorkloadPreset preset = WorkloadPreset::kChat;
  std::string trace;             // trace file; "" = no trace
  double time_scale = 1;
  int64_t max_requests = 0;
  std::optional<double> rate;    // requests per second (open loop); given: open loop
  std::optional<sim::ArrivalKind> arrivals;
  double cv = 1;
  int64_t num_requests = 1000;
  std::string prompt_lengths;    // length spec; "" = the preset's
  std::string output_lengths;    // length spec; "" = the preset's
  std::optional<int64_t> users;  // > 0: closed-loop users; 0: open loop
  std::optional<double> think_time_s;
  std::optional<int64_t> turns;
  std::string followup_lengths;  // length spec; "" = the preset's
  std::optional<int64_t> shared_prefix_tokens;  // system prompt every conversation starts with
  int64_t requests_per_user = 0;
  double duration_s = 0;         // 0: until done (closed loop: the preset's 300 s)
  std::optional<sim::ClosedLoopClient> client;  // nullopt: bench with max_concurrency, else users
  int64_t max_concurrency = 0;
  std::optional<int64_t> num_prompts;          // bench client; nullopt: 1000
  std::optional<int64_t> random_input_len;     // bench client; nullopt: prompt_lengths
  std::optional<int64_t> random_output_len;    // bench client; nullopt: output_lengths
  std::optional<int64_t> warmup_requests;      // bench client; nullopt: the concurrency
  std::optional<int64_t> cooldown_requests;    // bench client; nullopt: the concurrency
  std::optional<sim::BenchStart> bench_start;  // bench client; nullopt: the engine's
  std::optional<double> stagger_jitter;        // bench client; nullopt: 1
  int64_t seed = 0;
  double sample_interval_s = 1;
};

struct SloSettings {
  double ttft_ms = 0;  // 0: no target
  double tpot_ms = 0;
  double e2e_ms = 0;
  double percentile = 90;
};

// Cost of the hardware; the deployment search ranks answers by it.
struct CostSettings {
  double usd_per_gpu_hour = 0;  // 0: the GPU preset's price (none for some presets)
};

struct Scenario {
  ModelSettings model;
  HardwareSettings hardware;
  EngineSettings engine;
  KvCacheSettings kv_cache;
  WorkloadSettings workload;
  SloSettings slo;
  CostSettings cost;
};

// The scenario with its presets loaded and its settings turned into core's types: what the
// memory answer is computed from.
struct ResolvedScenario {
  ModelConfig model;
  GpuSpec gpu;
  KvScheme scheme;
  Parallelism parallel;
  ServingConfig serving;
  std::optional<LengthDistribution> fit_lengths;
  double usd_per_gpu_hour = 0;  // 0: unknown
  std::string price_source;     // "given (--gpu-price)", the preset's source, or ""
};

// GpuSpec::usable_memory_source when --gpu-total-memory replaced the preset's total.
inline constexpr std::string_view kGpuTotalMemoryGiven = "given with --gpu-total-memory";

// Loads the model and GPU, checks every rule that spans fields. Throws ConfigError naming the
// flags, the values and the rule.
ResolvedScenario resolve(const Scenario& scenario);

}  // namespace kvplan::plan
