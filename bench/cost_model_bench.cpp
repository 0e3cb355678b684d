// Step cost model speed: StepCostModel::step_ns calls per second for realistic batches.
//   ./build/bench/kvplan_bench_cost
// Hit: the same batch again (memo hit, aggregation only). Miss: memo off (every call aggregates,
// builds the operator list, costs it and takes the DAG's critical path). Engine: a decode batch
// whose contexts grow by one token per step with occasional prefill chunks and swaps, the way the
// simulator calls it; the hit rate is reported as a counter.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/cost_model.h"

namespace {

using kvplan::sim::PrefillChunk;
using kvplan::sim::StepCostModel;
using kvplan::sim::StepWork;

StepCostModel make(const char* model_id, int tp, bool memoise) {
  kvplan::ModelConfig model = kvplan::resolve_model(model_id);
  kvplan::GpuSpec gpu = kvplan::resolve_gpu("h100-sxm");
  kvplan::Parallelism parallel;
  parallel.tensor_parallel = tp;
  kvplan::sim::CostOptions options;
  options.memoise = memoise;
  return StepCostModel(model, gpu, kvplan::KvScheme{}, parallel,
                       kvplan::PerfProfile::datasheet_default(gpu), options);
}

std::vector<int64_t> contexts(int batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> len(7.0, 1.0);  // median ~1100 tokens
  std::vector<int64_t> out(static_cast<size_t>(batch));
  for (int64_t& c : out) c = static_cast<int64_t>(len(rng));
  return out;
}

void BM_Hit(benchmark::State& state, const char* model_id) {
  StepCostModel m = make(model_id, 1, true);
  std::vector<int64_t> ctx = contexts(static_cast<int>(state.range(0)), 1);
  PrefillChunk chunk{.context_tokens = 0, .new_tokens = 512};
  StepWork w;
  w.prefill = std::span(&chunk, 1);
  w.decode_contexts = ctx;
  for (auto _ : state) benchmark::DoNotOptimize(m.step_ns(w));
  state.SetItemsProcessed(state.iterations());
}

void BM_Miss(benchmark::State& state, const char* model_id) {
  StepCostModel m = make(model_id, 1, false);
  std::vector<int64_t> ctx = contexts(static_cast<int>(state.range(0)), 2);
  PrefillChunk chunk{.context_tokens = 0, .new_tokens = 512};
  StepWork w;
  w.prefill = std::span(&chunk, 1);
  w.decode_contexts = ctx;
  for (auto _ : state) benchmark::DoNotOptimize(m.step_ns(w));
  state.SetItemsProcessed(state.iterations());
}

void BM_MissWithSwap(benchmark::State& state, const char* model_id) {
  StepCostModel m = make(model_id, 1, false);
  std::vector<int64_t> ctx = contexts(static_cast<int>(state.range(0)), 3);
  StepWork w;
  w.decode_contexts = ctx;
  w.swap_in_bytes = 256 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(m.step_ns(w));
  state.SetItemsProcessed(state.iterations());
}

// An engine-like call sequence: every step all contexts grow by one; every 8th step a 512-token
// prefill chunk joins; every 50th a finished request is replaced by a new one.
void BM_EngineSequence(benchmark::State& state, const char* model_id) {
  StepCostModel m = make(model_id, 1, true);
  std::vector<int64_t> ctx = contexts(static_cast<int>(state.range(0)), 4);
  std::mt19937_64 rng(5);
  PrefillChunk chunk{.context_tokens = 0, .new_tokens = 512};
  int64_t step = 0;
  for (auto _ : state) {
    for (int64_t& c : ctx) ++c;
    if (step % 50 == 0) ctx[rng() % ctx.size()] = 1 + static_cast<int64_t>(rng() % 2000);
    StepWork w;
    w.decode_contexts = ctx;
    if (step % 8 == 0) w.prefill = std::span(&chunk, 1);
    benchmark::DoNotOptimize(m.step_ns(w));
    ++step;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["hit_rate"] =
      static_cast<double>(m.memo_hits()) / static_cast<double>(m.memo_hits() + m.memo_misses());
}

BENCHMARK_CAPTURE(BM_Hit, llama8b, "llama-3.1-8b")->Arg(8)->Arg(64)->Arg(256);
BENCHMARK_CAPTURE(BM_Miss, llama8b, "llama-3.1-8b")->Arg(8)->Arg(64)->Arg(256);
BENCHMARK_CAPTURE(BM_Miss, gemma2_9b, "gemma-2-9b")->Arg(64);
BENCHMARK_CAPTURE(BM_Miss, deepseek_v3, "deepseek-v3")->Arg(64);
BENCHMARK_CAPTURE(BM_MissWithSwap, llama8b, "llama-3.1-8b")->Arg(64);
BENCHMARK_CAPTURE(BM_EngineSequence, llama8b, "llama-3.1-8b")->Arg(64)->Arg(256);
BENCHMARK_CAPTURE(BM_EngineSequence, gemma2_9b, "gemma-2-9b")->Arg(64);

}  // namespace

BENCHMARK_MAIN();
