// Which settings the planner's form offers under a scenario (setting_relevance.h) and their human
// labels (setting_label.h): plain C++ over plan/settings.h, expectations read off core's engine
// memory rules and plan's simulation setup by hand.
#include <gtest/gtest.h>

#include <string>

#include "kvplan/plan/settings.h"
#include "setting_label.h"
#include "setting_relevance.h"

namespace kvplan::gui {
namespace {

bool applies(const char* flag, const plan::Scenario& s) { return setting_applies(plan::setting(flag), s); }
bool shown(const char* flag, const plan::Scenario& s) { return setting_shown(plan::setting(flag), s); }

TEST(SettingRelevance, EveryRuleAndBasicFlagNamesASetting) {
  for (std::string_view flag : flags_with_rules()) EXPECT_NE(plan::find_setting(flag), nullptr) << flag;
  for (std::string_view flag : basic_flags()) EXPECT_NE(plan::find_setting(flag), nullptr) << flag;
}

TEST(SettingRelevance, EveryMemoryKnobBelongsToItsEngine) {
  plan::Scenario s;  // vLLM
  EXPECT_TRUE(applies("gpu-memory-utilization", s));
  EXPECT_TRUE(applies("engine-version", s));
  EXPECT_TRUE(applies("vllm-engine", s));
  EXPECT_TRUE(applies("enable-chunked-prefill", s));
  EXPECT_FALSE(applies("mem-fraction-static", s));
  EXPECT_FALSE(applies("free-gpu-memory-fraction", s));

  s.engine.name = Engine::kSglang;
  EXPECT_TRUE(applies("mem-fraction-static", s));
  EXPECT_FALSE(applies("gpu-memory-utilization", s));
  EXPECT_FALSE(shown("gpu-memory-utilization", s));
  EXPECT_FALSE(applies("engine-version", s));  // read by SGLang's bench client only
  EXPECT_FALSE(applies("free-gpu-memory-fraction", s));
  // SGLang's scheduler chunks and batches tokens: the batch limit is read by the simulation.
  EXPECT_TRUE(applies("max-num-batched-tokens", s));
  // Its scheduler's own knobs (sim/src/policy_sglang.cpp), not TensorRT-LLM's.
  EXPECT_TRUE(applies("enable-mixed-chunk", s));
  EXPECT_TRUE(applies("max-prefill-tokens", s));
  EXPECT_FALSE(applies("capacity-scheduler-policy", s));

  s.engine.name = Engine::kTrtllm;
  EXPECT_TRUE(applies("free-gpu-memory-fraction", s));
  EXPECT_FALSE(applies("mem-fraction-static", s));
  EXPECT_FALSE(applies("gpu-memory-utilization", s));
  EXPECT_TRUE(applies("capacity-scheduler-policy", s));
  EXPECT_FALSE(applies("enable-mixed-chunk", s));

  // Static batching: no token budget in memory or in its scheduler, and no chunked prefill...
  s.engine.name = Engine::kStatic;
  EXPECT_FALSE(applies("max-num-batched-tokens", s));
  EXPECT_FALSE(applies("chunked-prefill", s));
  EXPECT_TRUE(applies("max-num-seqs", s));
  // ...unless another scheduler is simulated.
  s.engine.scheduler = sim::SchedulerKind::kVllm;
  EXPECT_TRUE(applies("max-num-batched-tokens", s));
  EXPECT_TRUE(applies("chunked-prefill", s));
}

TEST(SettingRelevance, AValueThatDiffersFromItsDefaultIsAlwaysShown) {
  plan::Scenario s;
  s.engine.name = Engine::kSglang;
  s.engine.gpu_memory_utilization = 0.8;  // left over from vLLM: still changes nothing, but is not hidden
  EXPECT_FALSE(applies("gpu-memory-utilization", s));
  EXPECT_TRUE(shown("gpu-memory-utilization", s));
  s.engine.gpu_memory_utilization = 0.9;
  EXPECT_FALSE(shown("gpu-memory-utilization", s));
}

TEST(SettingRelevance, EvictionSchemesOfferTheirOwnKnobs) {
  plan::Scenario s;
  // H2O has no separate switch: its budget is the switch (0 = off), so it is offered while
  // StreamingLLM is off, and StreamingLLM's window while H2O is off.
  EXPECT_TRUE(applies("h2o-budget", s));
  EXPECT_TRUE(applies("streaming-window", s));
  EXPECT_FALSE(applies("streaming-sinks", s));
  s.kv_cache.streaming_window_tokens = 4096;
  EXPECT_TRUE(applies("streaming-sinks", s));
  EXPECT_FALSE(applies("h2o-budget", s));
  EXPECT_FALSE(shown("h2o-budget", s));
  s.kv_cache.h2o_budget_tokens = 512;  // both on: an error, and both stay in view to fix it
  EXPECT_TRUE(shown("h2o-budget", s));
  EXPECT_TRUE(shown("streaming-window", s));
  s.kv_cache.streaming_window_tokens = 0;
  EXPECT_FALSE(applies("streaming-window", s));
  EXPECT_FALSE(applies("streaming-sinks", s));
}

TEST(SettingRelevance, QuantizedKvOffersItsScaleKnobs) {
  plan::Scenario s;  // auto: the activation dtype (bf16)
  for (const char* flag : {"kv-quant-group-size", "kv-quant-symmetric", "kivi-residual", "fp8-scales"}) {
    EXPECT_FALSE(applies(flag, s)) << flag;
  }
  s.kv_cache.dtype = DType::kInt4;
  EXPECT_TRUE(applies("kv-quant-group-size", s));
  EXPECT_TRUE(applies("kv-quant-symmetric", s));
  EXPECT_FALSE(applies("kivi-residual", s));
  s.kv_cache.dtype = DType::kInt2;  // KIVI-2: always asymmetric, with a 16-bit residual
  EXPECT_TRUE(applies("kivi-residual", s));
  EXPECT_TRUE(applies("kv-quant-group-size", s));
  EXPECT_FALSE(applies("kv-quant-symmetric", s));
  s.kv_cache.dtype = DType::kFp8E5M2;
  EXPECT_TRUE(applies("fp8-scales", s));
  EXPECT_FALSE(applies("kv-quant-group-size", s));
  // Weight groups only for group-quantized weights.
  EXPECT_FALSE(applies("weight-group-size", s));
  s.model.quantization = "awq";
  EXPECT_TRUE(applies("weight-group-size", s));
  s.model.quantization = "fp8";
  EXPECT_FALSE(applies("weight-group-size", s));
}

// The Mamba / linear-attention state dtype: only a model with such layers has that state. A model
// the form cannot look up without a file stays "may have one".
TEST(SettingRelevance, RecurrentStateDtypeOnlyForModelsWithState) {
  plan::Scenario s;  // llama-3.1-8b: attention only
  EXPECT_FALSE(applies("mamba-ssm-cache-dtype", s));
  s.model.id = "jamba-v0.1";  // Mamba-1 layers
  EXPECT_TRUE(applies("mamba-ssm-cache-dtype", s));
  s.model.id = "qwen3-next-80b-a3b";  // Gated DeltaNet (linear attention)
  EXPECT_TRUE(applies("mamba-ssm-cache-dtype", s));
  s.model.id = "deepseek-r1";  // MLA: a latent per token, no recurrent state
  EXPECT_FALSE(applies("mamba-ssm-cache-dtype", s));
  s.model.id = "/models/mine/config.json";
  EXPECT_TRUE(applies("mamba-ssm-cache-dtype", s));
}

TEST(SettingRelevance, WorkloadFieldsFollowTheWorkloadKind) {
  plan::Scenario s;  // chat: closed-loop users, one turn
  EXPECT_TRUE(applies("users", s));
  EXPECT_TRUE(applies("think-time", s));
  EXPECT_TRUE(applies("rate", s));  // the switch to open loop
  EXPECT_FALSE(applies("followup-lengths", s));
  EXPECT_FALSE(applies("arrivals", s));
  EXPECT_FALSE(applies("num-requests", s));
  EXPECT_FALSE(applies("time-scale", s));
  EXPECT_FALSE(applies("num-prompts", s));

  s.workload.preset = plan::WorkloadPreset::kAgent;  // 8 turns: follow-up prompts exist
  EXPECT_TRUE(applies("followup-lengths", s));

  s.workload.rate = 5;  // open loop with the preset's lengths
  EXPECT_TRUE(applies("arrivals", s));
  EXPECT_TRUE(applies("num-requests", s));
  EXPECT_FALSE(applies("think-time", s));
  EXPECT_FALSE(applies("cv", s));  // poisson
  s.workload.arrivals = sim::ArrivalKind::kGamma;
  EXPECT_TRUE(applies("cv", s));

  s = plan::Scenario{};
  s.workload.preset = plan::WorkloadPreset::kBatch;  // open loop by the preset
  EXPECT_TRUE(applies("arrivals", s));
  EXPECT_FALSE(applies("users", s) && applies("think-time", s));

  s = plan::Scenario{};
  s.workload.trace = "trace.csv";
  EXPECT_TRUE(applies("time-scale", s));
  EXPECT_TRUE(applies("max-requests", s));
  EXPECT_FALSE(applies("prompt-lengths", s));
  EXPECT_FALSE(applies("users", s));

  s = plan::Scenario{};
  s.workload.max_concurrency = 16;  // the bench client
  EXPECT_TRUE(applies("num-prompts", s));
  EXPECT_TRUE(applies("stagger-jitter", s));  // vLLM's bench starts staggered
  EXPECT_FALSE(applies("users", s));
  EXPECT_FALSE(applies("think-time", s));
  s.workload.bench_start = sim::BenchStart::kBurst;
  EXPECT_FALSE(applies("stagger-jitter", s));

  // SGLang's bench start follows its release: the version field shows, and an old release starts
  // every user at once (no jitter to spread).
  s.workload.bench_start.reset();
  s.engine.name = Engine::kSglang;
  EXPECT_TRUE(applies("engine-version", s));
  EXPECT_TRUE(applies("stagger-jitter", s));
  s.engine.version = parse_engine_version("0.5.1");
  EXPECT_FALSE(applies("stagger-jitter", s));
}

TEST(SettingRelevance, HardwareKnobsNeedWhatTheyConfigure) {
  plan::Scenario s;
  EXPECT_FALSE(applies("router", s));
  EXPECT_FALSE(applies("kv-link-gbps", s));
  EXPECT_FALSE(applies("disable-custom-all-reduce", s));
  EXPECT_FALSE(applies("expert-parallel-size", s));
  s.hardware.replicas = 2;
  EXPECT_TRUE(applies("router", s));
  s.hardware.tensor_parallel_size = 2;
  EXPECT_TRUE(applies("disable-custom-all-reduce", s));
  s.hardware.enable_expert_parallel = true;
  EXPECT_TRUE(applies("expert-parallel-size", s));
  s = plan::Scenario{};
  s.hardware.prefill_replicas = 1;
  s.hardware.decode_replicas = 1;
  EXPECT_TRUE(applies("kv-link-gbps", s));
  EXPECT_FALSE(applies("replicas", s));
}

TEST(SettingRelevance, TiersAndSectionTitles) {
  EXPECT_FALSE(is_advanced(plan::setting("model")));
  EXPECT_FALSE(is_advanced(plan::setting("gpu-memory-utilization")));
  EXPECT_FALSE(is_advanced(plan::setting("workload")));
  EXPECT_TRUE(is_advanced(plan::setting("watermark")));
  EXPECT_TRUE(is_advanced(plan::setting("step-time-factor")));
  EXPECT_EQ(section_title("model"), "Model");
  EXPECT_EQ(section_title("hardware"), "Hardware");
  EXPECT_EQ(section_title("engine"), "Engine");
  EXPECT_EQ(section_title("kv_cache"), "KV cache");
  EXPECT_EQ(section_title("workload"), "Workload");
  EXPECT_EQ(section_title("slo"), "SLO");
  EXPECT_EQ(section_title("cost"), "Cost");
  EXPECT_EQ(section_title("other"), "other");
}

TEST(SettingLabel, NamesReadAsWordsWithTheirUnit) {
  EXPECT_EQ(setting_label(plan::setting("gpu-memory-utilization")), "GPU memory utilization (fraction of GPU memory)");
  EXPECT_EQ(setting_label(plan::setting("slo-ttft-ms")), "SLO TTFT (ms)");
  EXPECT_EQ(setting_label(plan::setting("kv-capacity-gib")), "KV capacity (GiB per replica)");
  EXPECT_EQ(setting_label(plan::setting("block-size")), "Block size (tokens per block)");
  EXPECT_EQ(setting_label(plan::setting("users")), "Users");
  EXPECT_EQ(setting_label(plan::setting("seed")), "Seed");
  EXPECT_EQ(setting_label(plan::setting("kv-cache-dtype")), "KV cache dtype");
  EXPECT_EQ(setting_label(plan::setting("vllm-engine")), "vLLM engine");
  EXPECT_EQ(setting_label(plan::setting("think-time")), "Think time (s)");
  EXPECT_EQ(setting_label(plan::setting("max-requests")), "Max requests");  // "requests" is a word here, not a unit
  EXPECT_EQ(setting_label(plan::setting("kv-link-gbps")), "KV link (GB/s per GPU)");
}

}  // namespace
}  // namespace kvplan::gui
