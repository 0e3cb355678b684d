#include "setting_relevance.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <iterator>
#include <utility>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/workload_presets.h"
#include "kvplan/sim/bench_client.h"

namespace kvplan::gui {

namespace {

using plan::Scenario;

// The scheduler the simulation runs: the one given, else the engine's (plan/src/simulate.cpp).
sim::SchedulerKind scheduler_of(const Scenario& s) {
  if (s.engine.scheduler) return *s.engine.scheduler;
  switch (s.engine.name) {
    case Engine::kStatic: return sim::SchedulerKind::kStatic;
    case Engine::kSglang: return sim::SchedulerKind::kSglang;
    case Engine::kTrtllm: return sim::SchedulerKind::kTrtllm;
    default: return sim::SchedulerKind::kVllm;
  }
}

// Static and Orca reserve a request's whole KV up front and never chunk a prefill.
bool scheduler_reserves(const Scenario& s) {
  const sim::SchedulerKind k = scheduler_of(s);
  return k == sim::SchedulerKind::kStatic || k == sim::SchedulerKind::kOrca;
}

bool kv_dtype_is(const Scenario& s, std::initializer_list<DType> types) {
  // Unset ("auto") is the activation dtype: bf16, fp16 or fp32, never a quantized one.
  return s.kv_cache.dtype && std::find(types.begin(), types.end(), *s.kv_cache.dtype) != types.end();
}

// Which workload generator the simulation builds (plan/src/simulate.cpp: bench client first, then
// a trace, then the preset's or the given loop). kConflict: --users > 0 and --rate both given, an
// error the user is fixing: the fields of both loops stay in view.
enum class WorkloadKind { kClosedLoop, kOpenLoop, kTrace, kBench, kConflict };

WorkloadKind workload_kind(const Scenario& s) {
  const plan::WorkloadSettings& w = s.workload;
  const sim::ClosedLoopClient client =
      w.client.value_or(w.max_concurrency > 0 ? sim::ClosedLoopClient::kBench : sim::ClosedLoopClient::kUsers);
  if (client == sim::ClosedLoopClient::kBench) return WorkloadKind::kBench;
  if (!w.trace.empty()) return WorkloadKind::kTrace;
  try {
    return plan::effective_workload(w).closed_loop ? WorkloadKind::kClosedLoop : WorkloadKind::kOpenLoop;
  } catch (const ConfigError&) {
    return WorkloadKind::kConflict;
  }
}

bool closed_loop(const Scenario& s) {
  const WorkloadKind k = workload_kind(s);
  return k == WorkloadKind::kClosedLoop || k == WorkloadKind::kConflict;
}
bool open_loop(const Scenario& s) {
  const WorkloadKind k = workload_kind(s);
  return k == WorkloadKind::kOpenLoop || k == WorkloadKind::kConflict;
}
bool bench_client(const Scenario& s) { return workload_kind(s) == WorkloadKind::kBench; }
bool no_trace(const Scenario& s) { return workload_kind(s) != WorkloadKind::kTrace; }

// Whether the model keeps a recurrent state (Mamba, linear attention) beside its KV. Known only for
// a preset without reading a file; a config.json or Hugging Face id counts as "may have one".
bool may_keep_recurrent_state(const Scenario& s) {
  for (const ModelConfig& m : model_presets()) {
    if (m.id != s.model.id) continue;
    for (LayerKind k : {LayerKind::kMamba1, LayerKind::kMamba2, LayerKind::kLinearAttention}) {
      if (m.count_layers(k) > 0) return true;
    }
    return false;
  }
  return true;
}

struct Rule {
  std::string_view flag;
  bool (*applies)(const Scenario&);
};

// Each rule says when the answer reads the setting; the reason is beside it. Where a setting is the
// switch that turns a feature on (h2o-budget, streaming-window, trace, rate, users, max-concurrency,
// spec-draft-tokens), it has no rule, or only the conflict rule: hiding it would leave no way in.
const std::array kRules = {
    // Only group-quantized methods take a group size (core quantization_from_flag); "auto" reads
    // the checkpoint's own quantization_config.
    Rule{"weight-group-size",
         [](const Scenario& s) {
           const std::string& q = s.model.quantization;
           return q == "int4" || q == "gptq" || q == "awq" || q == "w4a16";
         }},
    // The size of the expert-parallel group matters only once expert parallelism is on.
    Rule{"expert-parallel-size", [](const Scenario& s) { return s.hardware.enable_expert_parallel; }},
    // A disaggregated deployment is prefill + decode replicas; --replicas is then unused.
    Rule{"replicas", [](const Scenario& s) { return s.hardware.prefill_replicas == 0; }},
    // One replica has nothing to route between.
    Rule{"router",
         [](const Scenario& s) { return s.hardware.replicas > 1 || s.hardware.prefill_replicas > 0; }},
    // The KV link carries prefill -> decode transfers, which exist only when disaggregated.
    Rule{"kv-link-gbps",
         [](const Scenario& s) { return s.hardware.prefill_replicas > 0 || s.hardware.decode_replicas > 0; }},
    // The prefill pool's own parallelism exists only when disaggregated.
    Rule{"prefill-tensor-parallel-size", [](const Scenario& s) { return s.hardware.prefill_replicas > 0; }},
    Rule{"prefill-data-parallel-size", [](const Scenario& s) { return s.hardware.prefill_replicas > 0; }},
    Rule{"prefill-expert-parallel", [](const Scenario& s) { return s.hardware.prefill_replicas > 0; }},
    // vLLM's own knobs: its memory budget (total x utilization), the release and engine generation
    // whose accounting is reproduced, and the profiling pass's chunked prefill (core
    // engine_memory.cpp, vllm_profile.cpp). SGLang, TensorRT-LLM and static batching never read them.
    Rule{"gpu-memory-utilization", [](const Scenario& s) { return s.engine.name == Engine::kVllm; }},
    // SGLang's release picks the bench client's start (sim::default_bench_start).
    Rule{"engine-version",
         [](const Scenario& s) {
           return s.engine.name == Engine::kVllm || (s.engine.name == Engine::kSglang && bench_client(s));
         }},
    Rule{"vllm-engine", [](const Scenario& s) { return s.engine.name == Engine::kVllm; }},
    Rule{"enable-chunked-prefill", [](const Scenario& s) { return s.engine.name == Engine::kVllm; }},
    // SGLang's pool is mem_fraction_static of the memory free at start; TensorRT-LLM's is
    // free_gpu_memory_fraction of the memory free after loading.
    Rule{"mem-fraction-static", [](const Scenario& s) { return s.engine.name == Engine::kSglang; }},
    Rule{"free-gpu-memory-fraction", [](const Scenario& s) { return s.engine.name == Engine::kTrtllm; }},
    // Read only by the scheduler of their engine (sim/src/policy_sglang.cpp, policy_trtllm.cpp).
    Rule{"enable-mixed-chunk", [](const Scenario& s) { return scheduler_of(s) == sim::SchedulerKind::kSglang; }},
    Rule{"max-prefill-tokens", [](const Scenario& s) { return scheduler_of(s) == sim::SchedulerKind::kSglang; }},
    Rule{"capacity-scheduler-policy",
         [](const Scenario& s) { return scheduler_of(s) == sim::SchedulerKind::kTrtllm; }},
    // Read by vLLM's profiling pass and TensorRT-LLM's activation estimate, and by every simulated
    // scheduler but static (which batches whole prompts).
    Rule{"max-num-batched-tokens",
         [](const Scenario& s) {
           const bool memory_reads = s.engine.name == Engine::kVllm || s.engine.name == Engine::kTrtllm;
           return memory_reads || scheduler_of(s) != sim::SchedulerKind::kStatic;
         }},
    // Schedulers that reserve (static, orca) refuse chunked prefill (sim/src/simulation.cpp).
    Rule{"chunked-prefill", [](const Scenario& s) { return !scheduler_reserves(s); }},
    // Acceptance and draft cost describe the draft tokens; without them there is nothing to accept.
    Rule{"spec-acceptance", [](const Scenario& s) { return s.engine.spec_draft_tokens > 0; }},
    Rule{"spec-draft-cost", [](const Scenario& s) { return s.engine.spec_draft_tokens > 0; }},
    // With one tensor-parallel GPU there is no all-reduce.
    Rule{"disable-custom-all-reduce", [](const Scenario& s) { return s.hardware.tensor_parallel_size > 1; }},
    // Quantized KV only (core kv_layout.cpp): the group size for int8/int4/KIVI scales, symmetry for
    // int8/int4 (KIVI is always asymmetric), the 16-bit residual for KIVI, scales for fp8.
    Rule{"kv-quant-group-size",
         [](const Scenario& s) { return kv_dtype_is(s, {DType::kInt8, DType::kInt4, DType::kInt2}); }},
    Rule{"kv-quant-symmetric", [](const Scenario& s) { return kv_dtype_is(s, {DType::kInt8, DType::kInt4}); }},
    Rule{"kivi-residual", [](const Scenario& s) { return kv_dtype_is(s, {DType::kInt2}); }},
    Rule{"fp8-scales", [](const Scenario& s) { return kv_dtype_is(s, {DType::kFp8E4M3, DType::kFp8E5M2}); }},
    // The state dtype of Mamba and linear-attention layers: a model of attention layers only has none.
    Rule{"mamba-ssm-cache-dtype", may_keep_recurrent_state},
    // H2O and StreamingLLM exclude each other (plan resolve): each switch is offered while the other
    // is off. The sinks belong to StreamingLLM.
    Rule{"h2o-budget", [](const Scenario& s) { return s.kv_cache.streaming_window_tokens == 0; }},
    Rule{"streaming-window", [](const Scenario& s) { return s.kv_cache.h2o_budget_tokens == 0; }},
    Rule{"streaming-sinks", [](const Scenario& s) { return s.kv_cache.streaming_window_tokens > 0; }},
    // Trace replay: its time scale and request cap; a trace brings its own lengths and arrivals.
    Rule{"time-scale", [](const Scenario& s) { return workload_kind(s) == WorkloadKind::kTrace; }},
    Rule{"max-requests", [](const Scenario& s) { return workload_kind(s) == WorkloadKind::kTrace; }},
    Rule{"prompt-lengths", no_trace},
    Rule{"output-lengths", no_trace},
    // The bench client has its own concurrency and no trace; --users and --rate choose between the
    // loops (both given is an error shown at the field, so both stay in view then).
    Rule{"users", [](const Scenario& s) { return no_trace(s) && !bench_client(s); }},
    Rule{"rate", [](const Scenario& s) { return no_trace(s) && !bench_client(s); }},
    Rule{"max-concurrency", no_trace},
    // Open loop: how requests arrive and how many; cv shapes gamma arrivals only.
    Rule{"arrivals", open_loop},
    Rule{"num-requests", open_loop},
    Rule{"cv",
         [](const Scenario& s) {
           if (!open_loop(s)) return false;
           try {
             return plan::effective_workload(s.workload).arrivals == sim::ArrivalKind::kGamma;
           } catch (const ConfigError&) {
             return s.workload.arrivals == sim::ArrivalKind::kGamma;
           }
         }},
    // Closed loop: users think between requests, hold conversations of several turns, share a
    // system prompt and may stop after some requests.
    Rule{"think-time", closed_loop},
    Rule{"turns", closed_loop},
    Rule{"shared-prefix", closed_loop},
    Rule{"requests-per-user", closed_loop},
    // Follow-up prompts exist only from the second turn on.
    Rule{"followup-lengths",
         [](const Scenario& s) {
           if (!closed_loop(s)) return false;
           try {
             return plan::effective_workload(s.workload).turns > 1;
           } catch (const ConfigError&) {
             return true;
           }
         }},
    // `vllm bench serve` fields: the simulation refuses them without the bench client.
    Rule{"num-prompts", bench_client},
    Rule{"random-input-len", bench_client},
    Rule{"random-output-len", bench_client},
    Rule{"warmup-requests", bench_client},
    Rule{"cooldown-requests", bench_client},
    Rule{"bench-start", bench_client},
    // The jitter spreads staggered starts; a burst starts every user at once.
    Rule{"stagger-jitter",
         [](const Scenario& s) {
           return bench_client(s) &&
                  s.workload.bench_start.value_or(sim::default_bench_start(s.engine.name, s.engine.version)) ==
                      sim::BenchStart::kStaggered;
         }},
};

// Basic: what a capacity question names (model, GPUs, the engine's memory knob, context length, KV
// format and eviction, the workload's shape, the SLO and the price), plus the sub-settings of a basic
// switch (they appear when it is turned on, so they must not hide in Advanced). Everything else
// fine-tunes the engine model or the simulation.
constexpr std::string_view kBasic[] = {
    "model", "dtype", "quantization", "weight-group-size",
    "gpu", "tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size", "replicas",
    "engine", "engine-version", "max-model-len", "gpu-memory-utilization", "mem-fraction-static",
    "free-gpu-memory-fraction", "max-num-seqs", "max-num-batched-tokens",
    "kv-cache-dtype", "kv-quant-group-size", "kivi-residual", "block-size", "enable-prefix-caching",
    "h2o-budget", "streaming-window", "streaming-sinks",
    "workload", "users", "think-time", "rate", "prompt-lengths", "output-lengths", "duration",
    "slo-ttft-ms", "slo-tpot-ms", "slo-e2e-ms", "slo-percentile",
    "gpu-price"};

const Rule* rule_for(std::string_view flag) {
  for (const Rule& r : kRules) {
    if (r.flag == flag) return &r;
  }
  return nullptr;
}

}  // namespace

bool setting_applies(const plan::Setting& setting, const Scenario& scenario) {
  const Rule* r = rule_for(setting.flag);
  return r == nullptr || r->applies(scenario);
}

bool setting_shown(const plan::Setting& setting, const Scenario& scenario) {
  return !setting.is_default(scenario) || setting_applies(setting, scenario);
}

bool is_advanced(const plan::Setting& setting) {
  return std::find(std::begin(kBasic), std::end(kBasic), setting.flag) == std::end(kBasic);
}

std::string section_title(std::string_view section) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kTitles = {{
      {"model", "Model"},
      {"hardware", "Hardware"},
      {"engine", "Engine"},
      {"kv_cache", "KV cache"},
      {"workload", "Workload"},
      {"slo", "SLO"},
      {"cost", "Cost"},
  }};
  for (const auto& [name, title] : kTitles) {
    if (name == section) return std::string(title);
  }
  return std::string(section);
}

std::vector<std::string_view> flags_with_rules() {
  std::vector<std::string_view> out;
  for (const Rule& r : kRules) out.push_back(r.flag);
  return out;
}

std::vector<std::string_view> basic_flags() { return {std::begin(kBasic), std::end(kBasic)}; }

}  // namespace kvplan::gui
