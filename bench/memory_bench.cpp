// Time of one analytic answer: plan_memory for a model, GPU and scheme (presets already parsed), and
// the same through the plan/ layer: plan::answer_memory of a resolved scenario (what the CLI and the
// planner call after reading the presets once), and of a typed Scenario (presets read each time);
// and the answer's JSON document (`kvplan memory --json`) built from an answer.
//   ./build/bench/kvplan_bench_memory
#include <benchmark/benchmark.h>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/memory.h"

namespace {

void run(benchmark::State& state, const char* model_id, const char* gpu_id, int tp, kvplan::DType kv) {
  kvplan::ModelConfig model = kvplan::resolve_model(model_id);
  kvplan::GpuSpec gpu = kvplan::resolve_gpu(gpu_id);
  kvplan::KvScheme scheme;
  scheme.kv_dtype = kv;
  kvplan::Parallelism parallel{tp, 1};
  kvplan::ServingConfig config;
  for (auto _ : state) {
    kvplan::MemoryPlan plan = kvplan::plan_memory(model, gpu, scheme, parallel, config);
    benchmark::DoNotOptimize(plan.kv_cache_tokens);
  }
}

void BM_Llama31_8B_H100(benchmark::State& s) { run(s, "llama-3.1-8b", "h100-sxm", 1, kvplan::DType::kBF16); }
void BM_Llama31_70B_H100_TP4_Int4KV(benchmark::State& s) { run(s, "llama-3.1-70b", "h100-sxm", 4, kvplan::DType::kInt4); }
void BM_DeepSeekV3_H200_TP8(benchmark::State& s) { run(s, "deepseek-v3", "h200", 8, kvplan::DType::kBF16); }

void BM_PlanWithDistribution(benchmark::State& state) {
  kvplan::ModelConfig model = kvplan::resolve_model("llama-3.1-8b");
  kvplan::GpuSpec gpu = kvplan::resolve_gpu("h100-sxm");
  kvplan::KvScheme scheme;
  kvplan::ServingConfig config;
  kvplan::LengthDistribution lengths = kvplan::LengthDistribution::lognormal(6.9, 1.0);
  for (auto _ : state) {
    kvplan::MemoryPlan plan = kvplan::plan_memory(model, gpu, scheme, {}, config);
    kvplan::KvLayout layout = kvplan::build_kv_layout(model, scheme, {});
    kvplan::DistributionFit fit = kvplan::fit_distribution(plan, layout, lengths);
    benchmark::DoNotOptimize(fit.requests_at_mean);
  }
}

// The issue-27 scenario: Llama-3.1-8B on one H100 (the defaults), fp8 KV, 8,192-token requests.
kvplan::plan::Scenario fp8_8k() {
  kvplan::plan::Scenario s;
  s.kv_cache.dtype = kvplan::DType::kFp8E4M3;
  s.engine.max_model_len = 8192;
  return s;
}

void BM_Plan_AnswerMemory_Resolved(benchmark::State& state) {
  const kvplan::plan::Scenario s = fp8_8k();
  const kvplan::plan::ResolvedScenario r = kvplan::plan::resolve(s);
  for (auto _ : state) {
    kvplan::plan::MemoryAnswer a = kvplan::plan::answer_memory(r);
    benchmark::DoNotOptimize(a.plan.num_blocks);
  }
}

void BM_Plan_AnswerMemory_Scenario(benchmark::State& state) {
  const kvplan::plan::Scenario s = fp8_8k();
  for (auto _ : state) {
    kvplan::plan::MemoryAnswer a = kvplan::plan::answer_memory(s);
    benchmark::DoNotOptimize(a.plan.num_blocks);
  }
}

// The answer's JSON document (what `kvplan memory --json` and Python's memory_json() render), built
// from an answer made once.
void BM_Plan_MemoryJson(benchmark::State& state) {
  const kvplan::plan::Scenario s = fp8_8k();
  const kvplan::plan::MemoryAnswer a = kvplan::plan::answer_memory(s);
  for (auto _ : state) {
    nlohmann::json j = kvplan::plan::memory_json(a);
    benchmark::DoNotOptimize(j.size());
  }
}

}  // namespace

BENCHMARK(BM_Llama31_8B_H100);
BENCHMARK(BM_Llama31_70B_H100_TP4_Int4KV);
BENCHMARK(BM_DeepSeekV3_H200_TP8);
BENCHMARK(BM_PlanWithDistribution);
BENCHMARK(BM_Plan_AnswerMemory_Resolved);
BENCHMARK(BM_Plan_AnswerMemory_Scenario);
BENCHMARK(BM_Plan_MemoryJson);
BENCHMARK_MAIN();
