// plan/src/settings.cpp — the settings table (settings.h): one row per Scenario field. Flags keep
// vLLM's names where vLLM has the setting; ranges and rules are the ones each field has always had
// on the command line.
#include "kvplan/plan/settings.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "internal/setting_codec.h"
#include "kvplan/core/error.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan::plan {

namespace {

using internal::boolean;
using internal::choice;
using internal::Doc;
using internal::integer;
using internal::Named;
using internal::number;
using internal::Range;
using internal::text;

constexpr Command kSim = Command::kSimulate;
constexpr double kInt64Max = static_cast<double>(std::numeric_limits<int64_t>::max());
constexpr double kInt32Max = static_cast<double>(std::numeric_limits<int32_t>::max());
// Large enough for any accelerator, small enough that GiB -> bytes stays far inside int64.
constexpr double kMaxGiB = 1048576;

// Dtype spellings beyond the canonical names (Hugging Face's "bfloat16", "torch.float16", ...).
std::function<std::optional<DType>(std::string_view)> dtype_spellings(std::vector<DType> allowed) {
  return [allowed](std::string_view text) -> std::optional<DType> {
    try {
      const DType t = parse_dtype(text, "dtype");
      if (std::find(allowed.begin(), allowed.end(), t) != allowed.end()) return t;
    } catch (const ConfigError&) {
    }
    return std::nullopt;
  };
}

const std::vector<Named<DType>> kFloatDtypes = {
    {"bf16", DType::kBF16}, {"fp16", DType::kF16}, {"fp32", DType::kF32}};
const std::vector<Named<DType>> kKvDtypes = {
    {"bf16", DType::kBF16}, {"fp16", DType::kF16},  {"fp32", DType::kF32},  {"fp8", DType::kFp8E4M3},
    {"fp8_e5m2", DType::kFp8E5M2}, {"int8", DType::kInt8}, {"int4", DType::kInt4}, {"kivi2", DType::kInt2},
    {"kivi", DType::kInt2},        {"fp8_e4m3", DType::kFp8E4M3}, {"int2", DType::kInt2}};

// "--engine-version=x must look like MAJOR.MINOR, e.g. 0.10"
void store_engine_version(EngineVersion& v, std::string_view text, std::string_view label) {
  try {
    v = parse_engine_version(text);
  } catch (const ConfigError&) {
    internal::fail(label, text, "must look like MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 0.10 or 0.7.1");
  }
}
std::string show_engine_version(const EngineVersion& v) { return v.text(); }

// A length distribution spec; with `traces`, also trace:FILE[:prompt|output|total] (read when the
// simulation is set up).
std::function<void(std::string&, std::string_view, std::string_view)> length_spec(bool traces) {
  return [traces](std::string& field, std::string_view text, std::string_view label) {
    if (!text.empty() && !(traces && text.rfind("trace:", 0) == 0)) (void)parse_length_distribution(text, label);
    field = std::string(text);
  };
}

std::vector<Named<WorkloadPreset>> workload_preset_names() {
  std::vector<Named<WorkloadPreset>> out;
  for (const WorkloadPresetInfo& p : workload_presets()) out.push_back({p.name, p.preset});
  return out;
}
std::vector<std::string> workload_preset_choices() {
  std::vector<std::string> out;
  for (const WorkloadPresetInfo& p : workload_presets()) out.emplace_back(p.name);
  return out;
}

const std::vector<std::string> kQuantChoices = quantization_flag_choices();
std::vector<Named<std::string>> quant_names() {
  std::vector<Named<std::string>> out;
  for (const std::string& q : kQuantChoices) out.push_back({q, q});
  return out;
}

std::vector<Setting> build_settings() {
  std::vector<Setting> t;
  // ---- model ----
  t.push_back(text<&Scenario::model, &ModelSettings::id>(
      {"model", "model", "id", "preset id, Hugging Face repo id or config.json path",
       "Model: a preset (kvplan models), a Hugging Face repo id of one, or a config.json file"}));
  t.push_back(boolean<&Scenario::model, &ModelSettings::allow_unknown_architecture>(
      {"allow-unknown-architecture", "model", "allow_unknown_architecture", "boolean",
       "Answer for a model_type kvplan does not know, read as a generic decoder (every output warns)"}));
  t.push_back(choice<&Scenario::model, &ModelSettings::dtype>(
      {"dtype", "model", "dtype", "name", "Weight and activation dtype (vLLM --dtype)",
       "auto means the checkpoint's (fp32 checkpoints run in bf16)"},
      kFloatDtypes, {"bf16", "fp16", "fp32"}, "auto",
      "must be auto, bf16, fp16 or fp32 (use --quantization for fp8/int4 weights)",
      dtype_spellings({DType::kBF16, DType::kF16, DType::kF32})));
  t.push_back(choice<&Scenario::model, &ModelSettings::quantization>(
      {"quantization", "model", "quantization", "name", "Weight quantization method (vLLM --quantization)",
       "auto means the checkpoint's quantization_config, if any"},
      quant_names(), kQuantChoices));
  t.push_back(integer<&Scenario::model, &ModelSettings::weight_group_size>(
      {"weight-group-size", "model", "weight_group_size", "elements",
       "Elements per scale of group-quantized weights (int4, gptq, awq, w4a16)"},
      {.min = 1}));

  // ---- hardware ----
  t.push_back(text<&Scenario::hardware, &HardwareSettings::gpu>(
      {"gpu", "hardware", "gpu", "preset id, alias, device name or GPU JSON file",
       "GPU: a preset (kvplan gpus), one of its aliases or device names, or a GPU JSON file"}));
  t.push_back(number<&Scenario::hardware, &HardwareSettings::gpu_total_memory_gib>(
      {"gpu-total-memory", "hardware", "gpu_total_memory_gib", "GiB",
       "Total memory the driver reports for one GPU, replacing the preset's figure",
       "unset means the preset's usable total"},
      {.min = 0, .max = kMaxGiB, .exclusive_min = true, .rule = "must be a positive number of GiB (at most 1048576)"}));
  t.push_back(number<&Scenario::hardware, &HardwareSettings::gpu_memory_in_use_gib>(
      {"gpu-memory-in-use", "hardware", "gpu_memory_in_use_gib", "GiB",
       "Memory other processes already hold on each GPU when the engine starts"},
      {.min = 0, .max = kMaxGiB, .rule = "must be a non-negative number of GiB (at most 1048576)"}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::tensor_parallel_size>(
      {"tensor-parallel-size", "hardware", "tensor_parallel_size", "GPUs",
       "Tensor-parallel GPUs per pipeline stage (vLLM -tp)", "", Command::kMemory, "t"},
      {.min = 1}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::pipeline_parallel_size>(
      {"pipeline-parallel-size", "hardware", "pipeline_parallel_size", "stages",
       "Pipeline-parallel stages; the layers are split between them (vLLM -pp)", "", Command::kMemory, "p"},
      {.min = 1}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::data_parallel_size>(
      {"data-parallel-size", "hardware", "data_parallel_size", "engine ranks",
       "Data-parallel engine ranks, each with its own KV cache (vLLM -dp)"},
      {.min = 1}));
  t.push_back(boolean<&Scenario::hardware, &HardwareSettings::enable_expert_parallel>(
      {"enable-expert-parallel", "hardware", "enable_expert_parallel", "boolean",
       "Spread MoE experts over the tensor x data parallel GPUs instead of splitting each one"}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::expert_parallel_size>(
      {"expert-parallel-size", "hardware", "expert_parallel_size", "GPUs",
       "Expert-parallel groups (> 1 implies --enable-expert-parallel; tensor x data parallel, or with TensorRT-LLM and "
       "SGLang a divisor of it: each expert then split over tensor x data parallel / this GPUs)",
       "0 means tensor x data parallel when expert parallelism is enabled"},
      {.min = 0}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::replicas>(
      {"replicas", "hardware", "replicas", "engine replicas", "Simulated engine replicas behind the router", "",
       kSim},
      {.min = 1, .max = 4096}));
  t.push_back(choice<&Scenario::hardware, &HardwareSettings::router>(
      {"router", "hardware", "router", "name", "How requests are routed to replicas", "", kSim},
      std::vector<Named<sim::RouterKind>>{{"round-robin", sim::RouterKind::kRoundRobin},
                                          {"least-outstanding", sim::RouterKind::kLeastOutstanding},
                                          {"prefix-aware", sim::RouterKind::kPrefixAware}},
      {"round-robin", "least-outstanding", "prefix-aware"}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::prefill_replicas>(
      {"prefill-replicas", "hardware", "prefill_replicas", "engine replicas",
       "Prefill replicas of a prefill/decode-disaggregated deployment (with --decode-replicas)",
       "0 means no disaggregation", kSim},
      {.min = 0, .max = 4096}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::decode_replicas>(
      {"decode-replicas", "hardware", "decode_replicas", "engine replicas",
       "Decode replicas of a prefill/decode-disaggregated deployment (with --prefill-replicas)",
       "0 means no disaggregation", kSim},
      {.min = 0, .max = 4096}));
  t.push_back(number<&Scenario::hardware, &HardwareSettings::kv_link_gbps>(
      {"kv-link-gbps", "hardware", "kv_link_gbps", "GB/s per GPU",
       "Link bandwidth for prefill -> decode KV transfers",
       "0 means NVLink when both pools fit one scale-up domain, else RDMA at 50 GB/s per GPU (ConnectX-7)", kSim},
      {.min = 0, .max = 1e6}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::prefill_tensor_parallel_size>(
      {"prefill-tensor-parallel-size", "hardware", "prefill_tensor_parallel_size", "GPUs",
       "Tensor-parallel GPUs of each prefill engine of a disaggregated deployment",
       "0 means the decode pool's --tensor-parallel-size", kSim},
      {.min = 0, .max = 4096}));
  t.push_back(integer<&Scenario::hardware, &HardwareSettings::prefill_data_parallel_size>(
      {"prefill-data-parallel-size", "hardware", "prefill_data_parallel_size", "engine ranks",
       "Attention data-parallel ranks of the prefill pool's engines (each rank is one prefill replica)",
       "0 means the decode pool's --data-parallel-size", kSim},
      {.min = 0, .max = 4096}));
  t.push_back(choice<&Scenario::hardware, &HardwareSettings::prefill_expert_parallel>(
      {"prefill-expert-parallel", "hardware", "prefill_expert_parallel", "name",
       "Whether the prefill pool spreads MoE experts over its tensor x data parallel GPUs",
       "same means as the decode pool (--enable-expert-parallel)", kSim},
      std::vector<Named<PoolExpertParallel>>{{"same", PoolExpertParallel::kSame},
                                             {"true", PoolExpertParallel::kOn},
                                             {"false", PoolExpertParallel::kOff}},
      {"same", "true", "false"}));

  // ---- engine ----
  t.push_back(choice<&Scenario::engine, &EngineSettings::name>(
      {"engine", "engine", "name", "name", "Serving engine whose memory accounting (and scheduler) is modelled"},
      std::vector<Named<Engine>>{{"vllm", Engine::kVllm},
                                 {"sglang", Engine::kSglang},
                                 {"trtllm", Engine::kTrtllm},
                                 {"static", Engine::kStatic},
                                 {"tensorrt-llm", Engine::kTrtllm},
                                 {"hf", Engine::kStatic}},
      {"vllm", "sglang", "trtllm", "static"}));
  t.push_back(text<&Scenario::engine, &EngineSettings::version>(
      {"engine-version", "engine", "version", "version",
       "Engine release reproduced: vLLM memory accounting, SGLang bench start (e.g. 0.6.4, 0.10, 0.5.9)"},
      store_engine_version, show_engine_version));
  t.push_back(choice<&Scenario::engine, &EngineSettings::vllm_engine>(
      {"vllm-engine", "engine", "vllm_engine", "name", "vLLM engine generation (VLLM_USE_V1)",
       "auto means V1 from 0.8 on, V0 before"},
      std::vector<Named<VllmEngine>>{{"auto", VllmEngine::kAuto},
                                     {"v0", VllmEngine::kV0},
                                     {"v1", VllmEngine::kV1},
                                     {"V0", VllmEngine::kV0},
                                     {"V1", VllmEngine::kV1}},
      {"auto", "v0", "v1"}));
  t.push_back(integer<&Scenario::engine, &EngineSettings::max_model_len>(
      {"max-model-len", "engine", "max_model_len", "tokens", "Longest request, prompt + output (vLLM --max-model-len)",
       "0 means the engine's default: the model's max_position_embeddings"},
      {.min = 0}));
  t.push_back(number<&Scenario::engine, &EngineSettings::gpu_memory_utilization>(
      {"gpu-memory-utilization", "engine", "gpu_memory_utilization", "fraction of GPU memory",
       "Share of each GPU's memory vLLM may use"},
      {.min = 0, .max = 1, .exclusive_min = true}));
  t.push_back(integer<&Scenario::engine, &EngineSettings::max_num_seqs>(
      {"max-num-seqs", "engine", "max_num_seqs", "requests", "Most requests in one batch (vLLM --max-num-seqs)",
       "0 means the engine's default"},
      {.min = 0}));
  t.push_back(integer<&Scenario::engine, &EngineSettings::max_num_batched_tokens>(
      {"max-num-batched-tokens", "engine", "max_num_batched_tokens", "tokens",
       "Most tokens in one engine step (vLLM --max-num-batched-tokens)", "0 means the engine's default"},
      {.min = 0}));
  t.push_back(boolean<&Scenario::engine, &EngineSettings::enforce_eager>(
      {"enforce-eager", "engine", "enforce_eager", "boolean", "No CUDA graphs (vLLM --enforce-eager)"}));
  t.push_back(choice<&Scenario::engine, &EngineSettings::enable_chunked_prefill>(
      {"enable-chunked-prefill", "engine", "enable_chunked_prefill", "name",
       "vLLM chunked prefill, which sets the size of its memory-profiling pass",
       "auto means the version's default"},
      std::vector<Named<ChunkedPrefill>>{{"auto", ChunkedPrefill::kAuto},
                                         {"true", ChunkedPrefill::kOn},
                                         {"false", ChunkedPrefill::kOff},
                                         {"on", ChunkedPrefill::kOn},
                                         {"off", ChunkedPrefill::kOff}},
      {"auto", "true", "false"}));
  t.push_back(number<&Scenario::engine, &EngineSettings::mem_fraction_static>(
      {"mem-fraction-static", "engine", "mem_fraction_static", "fraction of GPU memory",
       "Share of GPU memory SGLang gives to weights and KV cache (SGLang --mem-fraction-static)",
       "0 means the engine's default for the GPU and TP"},
      {.min = 0, .max = 1}));
  t.push_back(number<&Scenario::engine, &EngineSettings::free_gpu_memory_fraction>(
      {"free-gpu-memory-fraction", "engine", "free_gpu_memory_fraction", "fraction of free memory",
       "Share of the memory free after loading that TensorRT-LLM gives to the KV cache"},
      {.min = 0, .max = 1, .exclusive_min = true}));
  t.push_back(choice<&Scenario::engine, &EngineSettings::scheduler>(
      {"scheduler", "engine", "scheduler", "name", "Simulated scheduler",
       "unset means the engine's (vllm, sglang, trtllm, static)", kSim},
      std::vector<Named<sim::SchedulerKind>>{{"static", sim::SchedulerKind::kStatic},
                                             {"orca", sim::SchedulerKind::kOrca},
                                             {"vllm", sim::SchedulerKind::kVllm},
                                             {"sglang", sim::SchedulerKind::kSglang},
                                             {"trtllm", sim::SchedulerKind::kTrtllm}},
      {"static", "orca", "vllm", "sglang", "trtllm"}));
  t.push_back(boolean<&Scenario::engine, &EngineSettings::chunked_prefill>(
      {"chunked-prefill", "engine", "chunked_prefill", "boolean", "Simulated scheduler splits long prefills",
       "unset means on, except for schedulers that reserve (static, orca)", kSim}));
  t.push_back(boolean<&Scenario::engine, &EngineSettings::overlap_schedule>(
      {"overlap-schedule", "engine", "overlap_schedule", "boolean",
       "The engine forms step n+1 while step n runs (SGLang's and TensorRT-LLM's overlap scheduler, vLLM "
       "--async-scheduling)",
       "unset means the engine's: on for sglang (since 0.4) and trtllm (PyTorch backend), for vllm from 0.14", kSim}));
  t.push_back(boolean<&Scenario::engine, &EngineSettings::enable_mixed_chunk>(
      {"enable-mixed-chunk", "engine", "enable_mixed_chunk", "boolean",
       "SGLang: running decodes join prefill steps (SGLang --enable-mixed-chunk; off by default: SGLang runs "
       "prefill and decode batches apart)",
       "", kSim}));
  t.push_back(integer<&Scenario::engine, &EngineSettings::max_prefill_tokens>(
      {"max-prefill-tokens", "engine", "max_prefill_tokens", "tokens",
       "SGLang: most prompt tokens in one prefill step, besides the chunk size (SGLang --max-prefill-tokens, default "
       "16384 in server_args.py)",
       "", kSim},
      {.min = 1}));
  t.push_back(choice<&Scenario::engine, &EngineSettings::capacity_scheduler_policy>(
      {"capacity-scheduler-policy", "engine", "capacity_scheduler_policy", "name",
       "TensorRT-LLM: start a request only when the KV to finish it is free (guaranteed_no_evict, the default), or "
       "while its next step fits, pausing the last started when memory runs out (max_utilization)",
       "", kSim},
      std::vector<Named<sim::CapacityPolicy>>{{"guaranteed_no_evict", sim::CapacityPolicy::kGuaranteedNoEvict},
                                              {"max_utilization", sim::CapacityPolicy::kMaxUtilization}},
      {"guaranteed_no_evict", "max_utilization"}));
  t.push_back(choice<&Scenario::engine, &EngineSettings::preemption>(
      {"preemption", "engine", "preemption", "name", "What a preempted request loses: recompute its KV, or swap it",
       "", kSim},
      std::vector<Named<sim::PreemptionMode>>{{"recompute", sim::PreemptionMode::kRecompute},
                                              {"swap", sim::PreemptionMode::kSwap}},
      {"recompute", "swap"}));
  t.push_back(number<&Scenario::engine, &EngineSettings::swap_space_gib>(
      {"swap-space", "engine", "swap_space_gib", "GiB per GPU", "Host memory for swapped-out KV (vLLM --swap-space)",
       "", kSim},
      {.min = 0, .max = 1 << 20}));
  t.push_back(number<&Scenario::engine, &EngineSettings::watermark>(
      {"watermark", "engine", "watermark", "fraction of KV blocks",
       "KV blocks kept free when admitting new requests", "", kSim},
      {.min = 0, .max = 0.5}));
  t.push_back(integer<&Scenario::engine, &EngineSettings::spec_draft_tokens>(
      {"spec-draft-tokens", "engine", "spec_draft_tokens", "tokens per step",
       "Speculative decoding: draft tokens proposed per step", "0 means no speculative decoding", kSim},
      {.min = 0, .max = 16}));
  t.push_back(number<&Scenario::engine, &EngineSettings::spec_acceptance>(
      {"spec-acceptance", "engine", "spec_acceptance", "probability",
       "Speculative decoding: chance that each draft token is accepted", "", kSim},
      {.min = 0, .max = 1}));
  t.push_back(number<&Scenario::engine, &EngineSettings::spec_draft_cost>(
      {"spec-draft-cost", "engine", "spec_draft_cost", "ratio to one target step",
       "Speculative decoding: cost of one draft step", "", kSim},
      {.min = 0, .max = 1}));
  t.push_back(boolean<&Scenario::engine, &EngineSettings::cuda_graphs>(
      {"cuda-graphs", "engine", "cuda_graphs", "boolean", "Decode steps replay CUDA graphs (no launch overhead)",
       "unset means on unless --enforce-eager", kSim}));
  t.push_back(number<&Scenario::engine, &EngineSettings::request_overhead_ms>(
      {"request-overhead-ms", "engine", "request_overhead_ms", "ms per request",
       "Time outside the forward pass added to each request's TTFT and E2E",
       "unset means the engine's fitted default", kSim},
      {.min = 0, .max = 1e6}));
  t.push_back(number<&Scenario::engine, &EngineSettings::request_overhead_per_in_flight_ms>(
      {"request-overhead-per-in-flight-ms", "engine", "request_overhead_per_in_flight_ms",
       "ms per request per other request in flight",
       "Time added to each request's TTFT and E2E for every other request in flight when it arrives",
       "unset means the engine's fitted default", kSim},
      {.min = 0, .max = 1e6}));
  t.push_back(number<&Scenario::engine, &EngineSettings::request_overhead_per_in_flight_prefill_share>(
      {"request-overhead-per-in-flight-prefill-share", "engine", "request_overhead_per_in_flight_prefill_share",
       "share of the request's prompt prefill time per other request in flight",
       "Time added to each request's TTFT and E2E for every other request in flight when it arrives, as a share of "
       "the cost model's time for its prompt prefilled alone",
       "unset means the engine's fitted default", kSim},
      {.min = 0, .max = 100}));
  t.push_back(number<&Scenario::engine, &EngineSettings::request_overhead_spread_ms>(
      {"request-overhead-spread-ms", "engine", "request_overhead_spread_ms", "ms",
       "Per-request overhead drawn uniformly within ± this around its mean (seeded)", "unset means none", kSim},
      {.min = 0, .max = 1e6}));
  t.push_back(number<&Scenario::engine, &EngineSettings::step_overhead_ms>(
      {"step-overhead-ms", "engine", "step_overhead_ms", "ms per step",
       "Time outside the forward pass added to each engine step (scheduler, sampling)",
       "unset means the engine's fitted default", kSim},
      {.min = 0, .max = 1e6}));
  t.push_back(number<&Scenario::engine, &EngineSettings::step_time_factor>(
      {"step-time-factor", "engine", "step_time_factor", "ratio",
       "The engine's step time per cost-model step time (the decode part when --prefill-time-factor is given too)",
       "unset means the engine's fitted default", kSim},
      {.min = 0.05, .max = 20}));
  t.push_back(number<&Scenario::engine, &EngineSettings::prefill_time_factor>(
      {"prefill-time-factor", "engine", "prefill_time_factor", "ratio",
       "The engine's time per cost-model time for the prefill part of a step (the step minus its decodes alone)",
       "unset means the engine's fitted default, or --step-time-factor when that is given", kSim},
      {.min = 0.05, .max = 20}));
  t.push_back(boolean<&Scenario::engine, &EngineSettings::disable_custom_all_reduce>(
      {"disable-custom-all-reduce", "engine", "disable_custom_all_reduce", "boolean",
       "Every tensor-parallel all-reduce through NCCL (the profile's collective class), not the engine's custom "
       "all-reduce",
       "", kSim}));
  t.push_back(choice<&Scenario::engine, &EngineSettings::moe_routing>(
      {"moe-routing", "engine", "moe_routing", "name",
       "Expert routing the fused-MoE step cost assumes: the straggler rank's tokens under it set the expert GEMMs",
       "unset means the published default: power-law-1.01 for DeepSeek-style (MLA) and hybrid models, "
       "power-law-1.2 for other MoE models (AIConfigurator's choice)",
       kSim},
      std::vector<Named<MoeRouting>>{{"balanced", MoeRouting::kBalanced},
                                     {"power-law-1.01", MoeRouting::kPowerLaw101},
                                     {"power-law-1.2", MoeRouting::kPowerLaw12}},
      {"balanced", "power-law-1.01", "power-law-1.2"}));
  t.push_back(text<&Scenario::engine, &EngineSettings::profile>(
      {"profile", "engine", "profile", "auto, published, datasheet or a file path",
       "Step-time source: auto, published, datasheet, a PerfProfile .json or a calibration .sqlite",
       "unset means auto: the GPU's published profile, else the nearest transferred, else the datasheet",
       kSim}));

  // ---- kv_cache ----
  t.push_back(choice<&Scenario::kv_cache, &KvCacheSettings::dtype>(
      {"kv-cache-dtype", "kv_cache", "dtype", "name", "KV cache element type (vLLM --kv-cache-dtype); kivi2 is KIVI 2-bit",
       "auto means the activation dtype"},
      kKvDtypes, {"bf16", "fp16", "fp32", "fp8", "fp8_e5m2", "int8", "int4", "kivi2"}, "auto", nullptr,
      dtype_spellings({DType::kBF16, DType::kF16, DType::kF32, DType::kFp8E4M3, DType::kFp8E5M2, DType::kInt8,
                       DType::kInt4, DType::kInt2})));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::quant_group_size>(
      {"kv-quant-group-size", "kv_cache", "quant_group_size", "elements",
       "int8/int4/KIVI KV: elements per scale along the head dimension"},
      {.min = 1}));
  t.push_back(boolean<&Scenario::kv_cache, &KvCacheSettings::quant_symmetric>(
      {"kv-quant-symmetric", "kv_cache", "quant_symmetric", "boolean",
       "int8/int4 KV: symmetric quantization (no zero point per group)"}));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::kivi_residual_tokens>(
      {"kivi-residual", "kv_cache", "kivi_residual_tokens", "tokens",
       "KIVI: most recent tokens kept in 16 bits"},
      {.min = 0}));
  t.push_back(choice<&Scenario::kv_cache, &KvCacheSettings::fp8_scales>(
      {"fp8-scales", "kv_cache", "fp8_scales", "name", "fp8 KV: one scale per tensor or per head"},
      std::vector<Named<Fp8Scales>>{{"per-tensor", Fp8Scales::kPerTensor}, {"per-head", Fp8Scales::kPerHead}},
      {"per-tensor", "per-head"}));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::block_size>(
      {"block-size", "kv_cache", "block_size", "tokens per block", "Tokens per KV block (vLLM --block-size)"},
      {.min = 1}));
  t.push_back(boolean<&Scenario::kv_cache, &KvCacheSettings::contiguous>(
      {"contiguous", "kv_cache", "contiguous", "boolean",
       "Contiguous KV per request instead of paged blocks (needs a reservation --kv-policy to simulate)"}));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::h2o_budget_tokens>(
      {"h2o-budget", "kv_cache", "h2o_budget_tokens", "tokens",
       "H2O eviction: tokens kept per sequence (quality not modelled)", "0 means no H2O eviction"},
      {.min = 0}));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::streaming_sinks>(
      {"streaming-sinks", "kv_cache", "streaming_sinks", "tokens",
       "StreamingLLM: attention-sink tokens kept besides the window"},
      {.min = 0}));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::streaming_window_tokens>(
      {"streaming-window", "kv_cache", "streaming_window_tokens", "tokens",
       "StreamingLLM eviction: recent tokens kept (quality not modelled)", "0 means no StreamingLLM eviction"},
      {.min = 0}));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::low_rank>(
      {"low-rank", "kv_cache", "low_rank", "rank",
       "Low-rank KV projection: rank r per KV head (2 x heads x r elements per token and layer)",
       "0 means full-rank K and V"},
      {.min = 0}));
  t.push_back(integer<&Scenario::kv_cache, &KvCacheSettings::cross_layer_share>(
      {"cross-layer-share", "kv_cache", "cross_layer_share", "layers",
       "Cross-layer KV sharing: this many consecutive layers share one KV", "1 means no sharing"},
      {.min = 1}));
  t.push_back(choice<&Scenario::kv_cache, &KvCacheSettings::mamba_ssm_cache_dtype>(
      {"mamba-ssm-cache-dtype", "kv_cache", "mamba_ssm_cache_dtype", "name",
       "State dtype of Mamba / linear-attention layers (vLLM --mamba-ssm-cache-dtype)",
       "auto means the engine's rule for the model: vLLM the model dtype (Qwen3.5: its config's "
       "mamba_ssm_dtype), SGLang the config's mamba_ssm_dtype else fp32, TensorRT-LLM the config's else the "
       "model dtype"},
      kKvDtypes, {"fp32", "bf16", "fp16"}, "auto", nullptr,
      dtype_spellings({DType::kBF16, DType::kF16, DType::kF32, DType::kFp8E4M3, DType::kFp8E5M2, DType::kInt8,
                       DType::kInt4, DType::kInt2})));
  t.push_back(choice<&Scenario::kv_cache, &KvCacheSettings::policy>(
      {"kv-policy", "kv_cache", "policy", "name", "Simulated KV manager: paged blocks or a reservation per request",
       "unset means paged, or max-length for schedulers that reserve (static, orca)", kSim},
      std::vector<Named<sim::KvPolicy>>{{"max-length", sim::KvPolicy::kReserveMaxLength},
                                        {"pow2", sim::KvPolicy::kReservePowerOfTwo},
                                        {"oracle", sim::KvPolicy::kReserveOracle},
                                        {"paged", sim::KvPolicy::kPaged}},
      {"max-length", "pow2", "oracle", "paged"}));
  t.push_back(boolean<&Scenario::kv_cache, &KvCacheSettings::enable_prefix_caching>(
      {"enable-prefix-caching", "kv_cache", "enable_prefix_caching", "boolean",
       "Share the KV blocks of common prompt prefixes (vLLM --enable-prefix-caching)",
       "unset means the engine's default: on for vLLM V1, SGLang and TensorRT-LLM, off for vLLM V0 and static, "
       "and off for a reserving --kv-policy", kSim}));
  t.push_back(number<&Scenario::kv_cache, &KvCacheSettings::capacity_gib>(
      {"kv-capacity-gib", "kv_cache", "capacity_gib", "GiB per replica",
       "What-if KV pool size instead of the engine's budget", "0 means the engine's budget", kSim},
      {.min = 0, .max = 1e9}));
  t.push_back(text<&Scenario::kv_cache, &KvCacheSettings::fit_lengths>(
      {"lengths", "kv_cache", "fit_lengths", "length spec (tokens)",
       "Request lengths to fit (memory): fixed:N, uniform:A,B, normal:MEAN,SD or lognormal:MU,SIGMA",
       "unset means only requests of max-model-len are counted"},
      length_spec(false)));

  // ---- workload ----
  t.push_back(choice<&Scenario::workload, &WorkloadSettings::preset>(
      {"workload", "workload", "preset", "name",
       "Workload preset: fills every workload setting not given here (docs/simulator.md: each preset and its sources)",
       "chat: Azure 2023 conversation lengths, closed-loop users thinking 10 s", kSim},
      workload_preset_names(), workload_preset_choices()));
  t.push_back(text<&Scenario::workload, &WorkloadSettings::trace>(
      {"trace", "workload", "trace", "path",
       "Replay a trace file (Azure LLM CSV, Mooncake JSONL, or kvplan CSV/JSONL)", "unset means no trace", kSim}));
  t.push_back(number<&Scenario::workload, &WorkloadSettings::time_scale>(
      {"time-scale", "workload", "time_scale", "ratio", "Trace: multiply every arrival time by this", "", kSim},
      {.min = 1e-6, .max = 1e6}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::max_requests>(
      {"max-requests", "workload", "max_requests", "requests", "Trace: replay at most this many requests",
       "0 means every request", kSim},
      {.min = 0, .max = kInt64Max}));
  t.push_back(number<&Scenario::workload, &WorkloadSettings::rate>(
      {"rate", "workload", "rate", "requests/s", "Open loop: mean arrival rate (given: open loop with the preset's lengths)",
       "unset means the preset's: closed-loop users, or (batch) all requests at once; 1 with --users 0", kSim},
      {.min = 1e-9, .max = 1e9}));
  t.push_back(choice<&Scenario::workload, &WorkloadSettings::arrivals>(
      {"arrivals", "workload", "arrivals", "name", "Open loop: arrival process (gamma is bursty with --cv > 1)",
       "unset means the preset's: constant for batch, poisson otherwise", kSim},
      std::vector<Named<sim::ArrivalKind>>{{"poisson", sim::ArrivalKind::kPoisson},
                                           {"gamma", sim::ArrivalKind::kGamma},
                                           {"constant", sim::ArrivalKind::kConstant}},
      {"poisson", "gamma", "constant"}));
  t.push_back(number<&Scenario::workload, &WorkloadSettings::cv>(
      {"cv", "workload", "cv", "ratio", "Gamma arrivals: coefficient of variation of the gaps", "", kSim},
      {.min = 1e-3, .max = 100}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::num_requests>(
      {"num-requests", "workload", "num_requests", "requests", "Open loop: requests sent", "", kSim},
      {.min = 1, .max = 100'000'000}));
  t.push_back(text<&Scenario::workload, &WorkloadSettings::prompt_lengths>(
      {"prompt-lengths", "workload", "prompt_lengths", "length spec (tokens)",
       "Prompt lengths: fixed:N, uniform:A,B, normal:MEAN,SD, lognormal:MU,SIGMA or trace:FILE[:prompt|output|total] "
       "({traces} in FILE: the shipped traces folder)",
       "unset means the preset's", kSim},
      length_spec(true)));
  t.push_back(text<&Scenario::workload, &WorkloadSettings::output_lengths>(
      {"output-lengths", "workload", "output_lengths", "length spec (tokens)",
       "Output lengths: a length spec as for --prompt-lengths", "unset means the preset's", kSim},
      length_spec(true)));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::users>(
      {"users", "workload", "users", "users", "Closed loop: users, each waiting for its answer before thinking",
       "unset means the preset's (8 users; batch: open loop); 0 means an open-loop workload", kSim},
      {.min = 0, .max = 1'000'000}));
  t.push_back(number<&Scenario::workload, &WorkloadSettings::think_time_s>(
      {"think-time", "workload", "think_time_s", "s", "Closed loop: mean think time between a user's requests",
       "unset means the preset's", kSim},
      {.min = 0, .max = 1e6}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::turns>(
      {"turns", "workload", "turns", "requests per conversation",
       "Closed loop: turns of a conversation (its context grows; prefixes are reused)", "unset means the preset's",
       kSim},
      {.min = 1, .max = 1000}));
  t.push_back(text<&Scenario::workload, &WorkloadSettings::followup_lengths>(
      {"followup-lengths", "workload", "followup_lengths", "length spec (tokens)",
       "Closed loop: new prompt tokens of each later turn", "unset means the preset's", kSim},
      length_spec(true)));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::shared_prefix_tokens>(
      {"shared-prefix", "workload", "shared_prefix_tokens", "tokens",
       "Closed loop: a system prompt every conversation of every user starts with (a prefix cache can share it)",
       "unset means the preset's (agent: 2048, others: 0)", kSim},
      {.min = 0, .max = 10'000'000}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::requests_per_user>(
      {"requests-per-user", "workload", "requests_per_user", "requests",
       "Closed loop: each user stops after this many requests", "0 means no limit (the duration ends the run)",
       kSim},
      {.min = 0, .max = kInt32Max}));
  t.push_back(number<&Scenario::workload, &WorkloadSettings::duration_s>(
      {"duration", "workload", "duration_s", "simulated s", "Simulated time the run lasts",
       "0 means until every request ends (closed loop without --requests-per-user: 300 s)", kSim},
      {.min = 0, .max = 1e7}));
  t.push_back(choice<&Scenario::workload, &WorkloadSettings::client>(
      {"client", "workload", "client", "name", "Closed-loop client: chat users, or a benchmark client",
       "unset means bench with --max-concurrency, users otherwise", kSim},
      std::vector<Named<sim::ClosedLoopClient>>{{"users", sim::ClosedLoopClient::kUsers},
                                                {"bench", sim::ClosedLoopClient::kBench}},
      {"users", "bench"}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::max_concurrency>(
      {"max-concurrency", "workload", "max_concurrency", "requests in flight",
       "Bench client: users with one request in flight each (vllm bench serve --max-concurrency)",
       "0 means no bench client", kSim},
      {.min = 0, .max = 1'000'000}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::num_prompts>(
      {"num-prompts", "workload", "num_prompts", "requests", "Bench client: requests in total (vllm bench serve)",
       "unset means 1000", kSim},
      {.min = 1, .max = 100'000'000}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::random_input_len>(
      {"random-input-len", "workload", "random_input_len", "tokens", "Bench client: fixed prompt length",
       "unset means --prompt-lengths", kSim},
      {.min = 1, .max = 100'000'000}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::random_output_len>(
      {"random-output-len", "workload", "random_output_len", "tokens", "Bench client: fixed output length",
       "unset means --output-lengths", kSim},
      {.min = 1, .max = 100'000'000}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::warmup_requests>(
      {"warmup-requests", "workload", "warmup_requests", "requests",
       "Bench client: first finished requests left out of the statistics", "unset means the concurrency", kSim},
      {.min = 0, .max = 100'000'000}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::cooldown_requests>(
      {"cooldown-requests", "workload", "cooldown_requests", "requests",
       "Bench client: last finished requests left out of the statistics", "unset means the concurrency", kSim},
      {.min = 0, .max = 100'000'000}));
  t.push_back(choice<&Scenario::workload, &WorkloadSettings::bench_start>(
      {"bench-start", "workload", "bench_start", "name", "Bench client: users start staggered or all at once",
       "unset means the engine's", kSim},
      std::vector<Named<sim::BenchStart>>{{"staggered", sim::BenchStart::kStaggered},
                                          {"burst", sim::BenchStart::kBurst}},
      {"staggered", "burst"}));
  t.push_back(number<&Scenario::workload, &WorkloadSettings::stagger_jitter>(
      {"stagger-jitter", "workload", "stagger_jitter", "fraction of a slot",
       "Bench client: 0 starts users evenly spaced, 1 one uniform start per slot", "unset means 1", kSim},
      {.min = 0, .max = 1}));
  t.push_back(integer<&Scenario::workload, &WorkloadSettings::seed>(
      {"seed", "workload", "seed", "integer", "Seed of every random choice (same seed, same output bytes)", "",
       kSim},
      {.min = 0, .max = kInt64Max}));
  t.push_back(number<&Scenario::workload, &WorkloadSettings::sample_interval_s>(
      {"sample-interval", "workload", "sample_interval_s", "simulated s", "Time-series sampling interval", "",
       kSim},
      {.min = 1e-3, .max = 1e6}));

  // ---- slo ----
  t.push_back(number<&Scenario::slo, &SloSettings::ttft_ms>(
      {"slo-ttft-ms", "slo", "ttft_ms", "ms", "Target time to first token at --slo-percentile", "0 means no target",
       kSim},
      {.min = 0, .max = 1e9}));
  t.push_back(number<&Scenario::slo, &SloSettings::tpot_ms>(
      {"slo-tpot-ms", "slo", "tpot_ms", "ms", "Target time per output token at --slo-percentile",
       "0 means no target", kSim},
      {.min = 0, .max = 1e9}));
  t.push_back(number<&Scenario::slo, &SloSettings::e2e_ms>(
      {"slo-e2e-ms", "slo", "e2e_ms", "ms", "Target end-to-end latency at --slo-percentile", "0 means no target",
       kSim},
      {.min = 0, .max = 1e9}));
  t.push_back(number<&Scenario::slo, &SloSettings::percentile>(
      {"slo-percentile", "slo", "percentile", "percentile", "Percentile of each latency the targets apply to", "",
       kSim},
      {.min = 1, .max = 100}));

  // ---- cost ----
  t.push_back(number<&Scenario::cost, &CostSettings::usd_per_gpu_hour>(
      {"gpu-price", "cost", "usd_per_gpu_hour", "USD per GPU-hour", "Price of one GPU for an hour",
       "0 means the GPU preset's price (kvplan gpus)"},
      {.min = 0, .max = 1e6}));
  return t;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kInteger: return "integer";
    case ValueType::kNumber: return "number";
    case ValueType::kBoolean: return "boolean";
    case ValueType::kText:
    case ValueType::kChoice: return "string";
  }
  return "string";
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = build_settings();
  return table;
}

const std::vector<std::string>& setting_sections() {
  static const std::vector<std::string> sections = {"model", "hardware", "engine", "kv_cache",
                                                    "workload", "slo", "cost"};
  return sections;
}

const Setting* find_setting(std::string_view name) {
  if (name.rfind("--", 0) == 0) name.remove_prefix(2);
  for (const Setting& s : settings()) {
    if (s.flag == name || s.file_key() == name) return &s;
  }
  return nullptr;
}

const Setting& setting(std::string_view name) {
  if (const Setting* s = find_setting(name)) return *s;
  // The closest names by shared prefix, to help with typos.
  std::string key = lower(name);
  if (key.rfind("--", 0) == 0) key = key.substr(2);
  std::vector<std::string> close;
  for (const Setting& s : settings()) {
    if (!key.empty() && (s.flag.rfind(key.substr(0, std::min<size_t>(key.size(), 4)), 0) == 0)) close.push_back(s.flag);
  }
  throw ConfigError(fmt::format("unknown setting '{}'{}", name,
                                close.empty() ? std::string(" (kvplan memory --help lists them)")
                                              : fmt::format(" (did you mean {}?)", fmt::join(close, ", "))));
}

SettingAxis parse_setting_axis(std::string_view text, Command command, std::string_view command_name) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    throw ConfigError(fmt::format("--compare={} must look like KEY=V1,V2,... e.g. kv-cache-dtype=auto,fp8,int4", text));
  }
  const std::string_view key = text.substr(0, eq);
  const Setting* row = find_setting(key);
  if (row == nullptr || (command == Command::kMemory && row->command != Command::kMemory)) {
    throw ConfigError(fmt::format("--compare={}=...: '{}' is not a setting of `kvplan {}` (kvplan {} --help lists them)",
                                  key, key, command_name, command_name));
  }
  SettingAxis axis;
  axis.setting = row->flag;
  const std::string_view rest = text.substr(eq + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t comma = rest.find(',', start);
    axis.values.emplace_back(rest.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  // Each value by the setting's own rule now, before any answer is computed with it.
  Scenario probe;
  for (const std::string& v : axis.values) row->set_text(probe, v, "--compare " + row->flag);
  return axis;
}

void set_values(Scenario& s, const SettingValues& values) {
  for (const auto& [name, value] : values) setting(name).set(s, value);
}

Scenario with_values(Scenario s, const SettingValues& values) {
  set_values(s, values);
  return s;
}

SettingValues non_default_values(const Scenario& s) {
  SettingValues out;
  for (const Setting& row : settings()) {
    std::string v = row.text(s);
    if (v != row.default_text) out[row.flag] = std::move(v);
  }
  return out;
}

}  // namespace kvplan::plan
