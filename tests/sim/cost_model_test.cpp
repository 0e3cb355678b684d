// Step cost model (cost_model.h): hand-computed roofline times with an ideal profile (efficiency 1,
// no launch overhead) on Llama-3.1-8B / H100 SXM, memo behaviour, CUDA graphs, copy overlap, TP.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kvplan/core/custom_all_reduce.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/published_profiles.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/weight_quant.h"
#include "kvplan/sim/cost_model.h"

namespace kvplan::sim {
namespace {

struct Bench {
  explicit Bench(const char* model_id, int tp = 1, const char* gpu_id = "h100-sxm")
      : model(resolve_model(model_id)), gpu(resolve_gpu(gpu_id)) {
    parallel.tensor_parallel = tp;
  }
  StepCostModel make(CostOptions o = CostOptions()) const { return StepCostModel(model, gpu, scheme, parallel, profile, o); }
  ModelConfig model;
  GpuSpec gpu;
  KvScheme scheme;
  Parallelism parallel;
  PerfProfile profile;  // ideal
};

StepWork work(std::span<const int64_t> decode, std::span<const PrefillChunk> prefill = {},
              int64_t swap_in = 0, int64_t swap_out = 0) {
  StepWork w;
  w.decode_contexts = decode;
  w.prefill = prefill;
  w.swap_in_bytes = swap_in;
  w.swap_out_bytes = swap_out;
  return w;
}
StepWork prefill_work(const PrefillChunk& chunk) { return work({}, std::span(&chunk, 1)); }
CostOptions options(bool cuda_graphs, bool memoise) {
  CostOptions o;
  o.cuda_graphs = cuda_graphs;
  o.memoise = memoise;
  return o;
}

TimeNs decode_ns(StepCostModel& m, std::vector<int64_t> contexts, int64_t swap_in = 0) {
  return m.step_ns(work(contexts, {}, swap_in));
}

TEST(CostModelRoofline, Batch1DecodeIsWeightBandwidthBound) {
  Bench s("llama-3.1-8b");
  StepCostModel m = s.make();
  // Every weight except the embedding table (only 1 row is gathered) is streamed once:
  // 8,030,261,248 params · 2 B − 128256·4096·2 B embedding = 15,009,849,344 B; / 3.35e12 B/s.
  const double weights = static_cast<double>(weight_bytes_per_gpu(s.model, WeightFormat{}, s.parallel)) -
                         128256.0 * 4096 * 2;
  EXPECT_DOUBLE_EQ(weights, 15009849344.0);
  const double expect_ns = weights / 3.35e12 * 1e9;  // 4,480,552 ns
  const TimeNs t = decode_ns(m, {100});
  // activations, KV and logits add < 0.5%
  EXPECT_GE(static_cast<double>(t), expect_ns);
  EXPECT_LE(static_cast<double>(t), expect_ns * 1.005);
}

TEST(CostModelRoofline, HandComputedQkvPrefill) {
  Bench s("llama-3.1-8b");
  StepCostModel m = s.make();
  PrefillChunk chunk{.context_tokens = 0, .new_tokens = 4096};
  StepBreakdown b = m.explain(prefill_work(chunk));
  // compute-bound: 2 · 4096 · 4096 · 6144 = 206,158,430,208 FLOPs / 989.4e12 = 208,367.2 ns per layer
  const double per_layer = 2.0 * 4096 * 4096 * 6144 / 989.4e12 * 1e9;
  bool found = false;
  double sum = 0;
  for (const OpCost& op : b.ops) {
    sum += static_cast<double>(op.time_ns);
    if (op.name == "qkv_proj") {
      found = true;
      EXPECT_NEAR(static_cast<double>(op.time_ns), 32 * per_layer, 1.0);
      EXPECT_DOUBLE_EQ(op.flops, 32 * 2.0 * 4096 * 4096 * 6144);
      EXPECT_EQ(op.stream, "compute");
      EXPECT_EQ(op.source, "ideal");
    }
  }
  EXPECT_TRUE(found);
  // no copies: the critical path is the whole chain
  EXPECT_NEAR(static_cast<double>(b.total_ns), sum, static_cast<double>(b.ops.size()));
  EXPECT_EQ(b.total_ns, m.step_ns(prefill_work(chunk)));
}

CostOptions with_weights(QuantizationConfig q) {
  CostOptions o;
  o.weights = WeightFormat{DType::kBF16, std::move(q)};
  return o;
}

// Regression (issue 11): the step cost used to ignore the weight format, so Llama-3.1-70B on
// 4xH100 had the same batch-1 TPOT for bf16, fp8 and int4.
TEST(CostModelWeights, Fp8WeightsLowerLlama70bBatch1Tpot) {
  Bench s("llama-3.1-70b", 4);
  StepCostModel bf16 = s.make();
  StepCostModel fp8 = s.make(with_weights(quantization_from_flag("fp8", 128)));
  StepCostModel int4 = s.make(with_weights(quantization_from_flag("gptq", 128)));
  const double t16 = static_cast<double>(decode_ns(bf16, {1000}));
  const double t8 = static_cast<double>(decode_ns(fp8, {1000}));
  const double t4 = static_cast<double>(decode_ns(int4, {1000}));
  // Batch 1 streams every weight but the embedding once: the time scales with the bytes read.
  const WeightFormat f8{DType::kBF16, quantization_from_flag("fp8", 128)};
  const double embed = 128256.0 / 4 * 8192 * 2;  // vocabulary shard of the embedding, gathered not streamed
  const double ratio = (static_cast<double>(weight_bytes_per_gpu(s.model, f8, s.parallel)) - embed) /
                       (static_cast<double>(weight_bytes_per_gpu(s.model, WeightFormat{}, s.parallel)) - embed);
  EXPECT_LT(ratio, 0.53);  // linear layers at 1 B, the LM head kept in bf16
  EXPECT_LT(t8, 0.6 * t16);
  EXPECT_NEAR(t8 / t16, ratio, 0.01);
  EXPECT_LT(t4, t8);  // 4-bit weights read fewer bytes still
}

TEST(CostModelWeights, W8a8RunsAtTheFp8RateOnlyWhereTheGpuHasIt) {
  const PrefillChunk chunk{.context_tokens = 0, .new_tokens = 4096};
  auto qkv_ns = [&](const char* gpu, const QuantizationConfig& q) {
    Bench s("llama-3.1-8b", 1, gpu);
    StepCostModel m = s.make(with_weights(q));
    for (const OpCost& op : m.explain(prefill_work(chunk)).ops) {
      if (op.name == "qkv_proj") return static_cast<double>(op.time_ns);
    }
    return -1.0;
  };
  const QuantizationConfig none = quantization_from_flag("none", 128);
  const QuantizationConfig fp8 = quantization_from_flag("fp8", 128);
  // 2 · 4096 · 4096 · 6144 FLOPs per layer: compute-bound at 4096 tokens
  EXPECT_NEAR(qkv_ns("h100-sxm", fp8), qkv_ns("h100-sxm", none) * 989.4 / 1978.9, 32.0);  // fp8 tensor cores
  EXPECT_NEAR(qkv_ns("a100-80gb", fp8), qkv_ns("a100-80gb", none), 1.0);  // no fp8 tensor cores: W8A16
  // weight-only int4 (GPTQ) dequantizes to bf16: same compute-bound time as bf16 on H100
  EXPECT_NEAR(qkv_ns("h100-sxm", quantization_from_flag("gptq", 128)), qkv_ns("h100-sxm", none), 1.0);
}

TEST(CostModelShapes, GridCorrectsTheRooflineOfOneVariant) {
  Bench s("llama-3.1-8b");
  const PrefillChunk chunk{.context_tokens = 0, .new_tokens = 4096};
  auto qkv = [&](const PerfProfile& p) {
    StepCostModel m(s.model, s.gpu, s.scheme, s.parallel, p, CostOptions{});
    for (const OpCost& op : m.explain(prefill_work(chunk)).ops) {
      if (op.name == "qkv_proj") return static_cast<double>(op.time_ns);
    }
    return -1.0;
  };
  const double plain = qkv(s.profile);
  PerfProfile slow = s.profile;
  ShapeGrid g;
  g.features = grid_axes(OpClass::kGemm);
  g.knots = {{0.0}, {0.0}, {0.0}};  // one knot: the same correction everywhere
  g.log_ratio = {std::log(2.0)};
  slow.at(OpClass::kGemm).grids["bf16"] = g;
  EXPECT_NEAR(qkv(slow), 2 * plain, 64.0);  // 32 layers, rounding to ns per layer
  // a grid for another variant does not apply to bf16 GEMMs
  PerfProfile other = s.profile;
  other.at(OpClass::kGemm).grids["fp8_e4m3"] = g;
  EXPECT_NEAR(qkv(other), plain, 1.0);
}

// Issue 12: a decode step of one token is not free of fixed costs: every kernel takes at least the
// class's floor, CUDA graph or not.
TEST(CostModelShapes, PerKernelFloorAppearsInAOneTokenStep) {
  Bench s("llama-3.1-8b");
  PerfProfile p = s.profile;  // ideal: no launch overhead, no fixed latency
  StepCostModel ideal(s.model, s.gpu, s.scheme, s.parallel, p, CostOptions{});
  const double before = static_cast<double>(decode_ns(ideal, {16}));
  p.at(OpClass::kElementwise).floor_ns = 3000;
  p.at(OpClass::kAttentionDecode).floor_ns = 13000;
  StepCostModel floored(s.model, s.gpu, s.scheme, s.parallel, p, CostOptions{});
  const StepBreakdown b = floored.explain(work(std::vector<int64_t>{16}));
  for (const OpCost& op : b.ops) {
    if (op.name.rfind("attention_decode", 0) == 0) {
      EXPECT_GE(op.time_ns, 32 * 13000) << op.name;  // 32 layers
    }
    if (op.name == "rope") {
      EXPECT_GE(op.time_ns, 32 * 3000) << op.name;
    }
  }
  // per layer: attn_norm, rope, mlp_norm, act_mul at >= 3 us and attention at 13 us: >= 25 us of floors
  EXPECT_GE(static_cast<double>(b.total_ns) - before, 32 * 25000 * 0.9);
}

TEST(CostModelRoofline, LongContextDecodeGrowsWithTheSumOfContexts) {
  Bench s("llama-3.1-8b");
  StepCostModel m = s.make(options(true, false));
  // 64 sequences of X, 2X, 3X tokens: attention bytes grow by 64·X·32 layers·4096 B per step
  const int64_t x = 8192;
  auto batch = [&](int64_t ctx) { return std::vector<int64_t>(64, ctx); };
  const double t1 = static_cast<double>(decode_ns(m, batch(x)));
  const double t2 = static_cast<double>(decode_ns(m, batch(2 * x)));
  const double t3 = static_cast<double>(decode_ns(m, batch(3 * x)));
  const double slope = 64.0 * x * 32 * 4096 / 3.35e12 * 1e9;  // 2,564,047 ns
  EXPECT_NEAR(t2 - t1, slope, slope * 1e-3);
  EXPECT_NEAR(t3 - t2, slope, slope * 1e-3);
  // same sum, different split, no imbalance limit on H100 (8 heads · 32 splits > 132 SMs)
  EXPECT_EQ(decode_ns(m, {1000, 99000}), decode_ns(m, {50000, 50000}));
}

TEST(CostModelMix, SlidingWindowMakesTheMixMatter) {
  Bench s("gemma-2-9b");
  StepCostModel m = s.make();
  // same mean 4050: sliding layers hold 101 + 4096 vs 4051 + 4051 tokens
  const TimeNs skewed = decode_ns(m, {100, 8000});
  const TimeNs even = decode_ns(m, {4050, 4050});
  EXPECT_LT(skewed, even);
}

TEST(CostModelMix, SplitImbalanceMakesTheMixMatter) {
  Bench s("llama-3.1-8b");
  s.gpu.num_sms = 4096;  // a wide GPU: one sequence's 8 heads · 32 splits use 1/16 of it
  StepCostModel m = s.make();
  const TimeNs skewed = decode_ns(m, {100, 200000});
  const TimeNs even = decode_ns(m, {100050, 100050});
  EXPECT_GT(skewed, even);
  // with the H100's 132 SMs the longest sequence can fill the GPU: only the sum matters
  Bench h("llama-3.1-8b");
  StepCostModel mh = h.make();
  EXPECT_EQ(decode_ns(mh, {100, 200000}), decode_ns(mh, {100050, 100050}));
}

TEST(CostModelMemo, HitsReturnIdenticalValues) {
  Bench s("llama-3.1-8b");
  StepCostModel m = s.make();
  const TimeNs a = decode_ns(m, {1000, 37, 4096});
  EXPECT_EQ(m.memo_misses(), 1);
  EXPECT_EQ(m.memo_hits(), 0);
  EXPECT_EQ(decode_ns(m, {1000, 37, 4096}), a);
  EXPECT_EQ(m.memo_hits(), 1);
  // order does not matter; sum and max equal
  EXPECT_EQ(decode_ns(m, {4096, 1000, 37}), a);
  EXPECT_EQ(m.memo_hits(), 2);
  // a different large aggregate within the 2^-11 rounding: same signature, same value
  const TimeNs big = decode_ns(m, {100000, 5});
  EXPECT_EQ(decode_ns(m, {100001, 4}), big);
  EXPECT_EQ(m.memo_hits(), 3);
  EXPECT_EQ(m.memo_misses(), 2);
  // memo off gives the same numbers (the step is costed from the rounded aggregates either way)
  StepCostModel off = s.make(options(true, false));
  EXPECT_EQ(decode_ns(off, {100001, 4}), big);
  EXPECT_EQ(off.memo_hits(), 0);
  // a new count (one more sequence) is a miss
  decode_ns(m, {1000, 37, 4096, 1});
  EXPECT_EQ(m.memo_misses(), 3);
}

TEST(CostModelGraphs, CudaGraphsRemoveExactlyTheLaunchOverhead) {
  Bench s("llama-3.1-8b");
  for (std::size_t i = 0; i < kNumOpClasses; ++i) s.profile.at(static_cast<OpClass>(i)).launch_overhead_ns = 1000;
  StepCostModel graphs = s.make(options(true, true));
  StepCostModel eager = s.make(options(false, true));
  const std::vector<int64_t> ctx = {512, 2048, 77};
  // kernels in the step, from core's operator list
  KvLayout layout = build_kv_layout(s.model, s.scheme, s.parallel);
  StepShapeBuilder b(layout);
  for (int64_t c : ctx) b.add_decode(c);
  StepOpsOptions oo;
  oo.force_head = true;
  StepOps ops = build_step_ops(s.model, layout, s.parallel, b.shape(), oo);
  int64_t kernels = 0;
  for (const StepOp& op : ops.ops) kernels += static_cast<int64_t>(op.kernels) * op.repeat;
  EXPECT_GT(kernels, 32 * 8);
  EXPECT_NEAR(static_cast<double>(decode_ns(eager, ctx) - decode_ns(graphs, ctx)), kernels * 1000.0, 1.0);
  // prefill steps are not replayed: no difference
  PrefillChunk chunk{.context_tokens = 0, .new_tokens = 100};
  StepWork w = work(ctx, std::span(&chunk, 1));
  EXPECT_EQ(graphs.step_ns(w), eager.step_ns(w));
}

TEST(CostModelCopies, SwapInOverlapsComputeUntilItDominates) {
  Bench s("llama-3.1-8b");
  StepCostModel m = s.make();
  const std::vector<int64_t> ctx = {100};
  const double compute = static_cast<double>(decode_ns(m, ctx));  // ~4.48 ms
  // small: 32 MiB over 64 GB/s = 524 us, spread over 32 layers and prefetched
  const int64_t small = 32 << 20;
  const double small_copy = static_cast<double>(small) / 64e9 * 1e9;
  const double t_small = static_cast<double>(decode_ns(m, ctx, small));
  EXPECT_LT(t_small, compute + small_copy);
  EXPECT_GE(t_small, compute);
  // large: 1 GiB = 16.8 ms > compute: the copy chain is the critical path
  const int64_t large = int64_t{1} << 30;
  const double large_copy = static_cast<double>(large) / 64e9 * 1e9;
  const double t_large = static_cast<double>(decode_ns(m, ctx, large));
  EXPECT_GE(t_large, large_copy - 1);
  EXPECT_LT(t_large, large_copy + compute);
  // swap-out runs beside everything; a small one does not change the step
  EXPECT_EQ(m.step_ns(work(ctx, {}, 0, 1 << 20)), static_cast<TimeNs>(compute));
}

// The memo holds at most 2^15 entries and then starts over. Steps costed before, across and after
// the restart keep their values (those of the unmemoised model), and only entries inserted since
// the restart hit.
TEST(CostModelMemo, StartingOverKeepsValues) {
  Bench s("llama-3.1-8b");
  StepCostModel m = s.make();
  StepCostModel off = s.make(options(true, false));
  // 33,000 distinct prefill lengths: 33,000 misses (the prefill token count is exact in the key).
  std::vector<TimeNs> first;
  for (int64_t n = 1; n <= 33000; ++n) {
    const PrefillChunk c{.context_tokens = 0, .new_tokens = n};
    first.push_back(m.step_ns(prefill_work(c)));
  }
  EXPECT_EQ(m.memo_misses(), 33000);
  EXPECT_EQ(m.memo_hits(), 0);
  // The 32,769th miss started the table over: it holds lengths 32,769 to 33,000.
  for (int64_t n : {1, 2, 1000, 32768, 32769, 33000}) {
    const PrefillChunk c{.context_tokens = 0, .new_tokens = n};
    EXPECT_EQ(m.step_ns(prefill_work(c)), first[static_cast<std::size_t>(n - 1)]) << n;
    EXPECT_EQ(off.step_ns(prefill_work(c)), first[static_cast<std::size_t>(n - 1)]) << n;
  }
  EXPECT_EQ(m.memo_hits(), 2);  // 32,769 and 33,000
  EXPECT_EQ(m.memo_misses(), 33004);
}

TEST(CostModelDag, CollapsedDagEqualsFullDag) {
  std::mt19937_64 rng(7);
  for (const char* id : {"llama-3.1-8b", "gemma-2-9b", "deepseek-v3", "jamba-v0.1", "qwen3-next-80b-a3b"}) {
    Bench s(id, 1, "h200");
    s.profile = PerfProfile::datasheet_default(s.gpu);
    StepCostModel m = s.make(options(false, false));
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<int64_t> ctx(1 + rng() % 40);
      for (int64_t& c : ctx) c = static_cast<int64_t>(rng() % 30000);
      PrefillChunk chunk{.context_tokens = static_cast<int64_t>(rng() % 4000),
                         .new_tokens = static_cast<int64_t>(rng() % 2048)};
      StepWork w = work(ctx);
      if (trial % 2 == 1) w.prefill = std::span(&chunk, 1);
      if (trial % 3 != 0) w.swap_in_bytes = static_cast<int64_t>(rng() % (int64_t{4} << 30));
      if (trial % 4 == 0) w.swap_out_bytes = static_cast<int64_t>(rng() % (int64_t{1} << 30));
      const TimeNs collapsed = m.step_ns(w);
      const TimeNs full = m.step_ns_uncollapsed(w);
      EXPECT_LE(std::llabs(collapsed - full), 1) << id << " trial " << trial;
    }
  }
}

TEST(CostModelTp, TensorParallelAddsCollectiveTime) {
  Bench s1("llama-3.1-70b", 4);
  StepCostModel m = s1.make();
  PrefillChunk chunk{.context_tokens = 0, .new_tokens = 2048};
  StepBreakdown b = m.explain(prefill_work(chunk));
  double comm = 0;
  for (const OpCost& op : b.ops) {
    if (op.stream == "comm" && op.name != "logits_gather") comm += static_cast<double>(op.time_ns);
  }
  // 2 all-reduces per layer · 80 layers · 2·3/4 · 2048·8192·2 B / 900e9 B/s = 8,947,849 ns (ideal)
  const double expect = 160.0 * 1.5 * 2048 * 8192 * 2 / 900e9 * 1e9;
  EXPECT_NEAR(comm, expect, 2.0);
  // TP=1 has no comm ops
  Bench s0("llama-3.1-8b", 1);
  StepCostModel m0 = s0.make();
  for (const OpCost& op : m0.explain(prefill_work(chunk)).ops) EXPECT_NE(op.stream, "comm");
}

TEST(CostModelTp, EngineCustomAllReduceTakesSmallAllReducesWhenFaster) {
  Bench s("llama-3.1-70b", 4);
  s.profile = PerfProfile::datasheet_default(s.gpu);  // NCCL: 8 us fixed latency, 41% of NVLink
  CostOptions with;
  with.custom_all_reduce = engine_custom_all_reduce(Engine::kVllm, s.gpu);
  ASSERT_TRUE(with.custom_all_reduce.has_value());
  StepCostModel nccl = s.make();
  StepCostModel custom = s.make(with);
  auto comm_ns = [](const StepBreakdown& b) {
    double t = 0;
    for (const OpCost& op : b.ops) {
      if (op.stream == "comm" && op.name != "logits_gather") t += static_cast<double>(op.time_ns);
    }
    return t;
  };
  // Decode of 2 sequences: 2 x 8192 x 2 B = 32 KiB per rank, below the 8 MiB cap. One call:
  // fixed + 3 peers x 32768 B / (0.439 x 900 GB/s); 160 calls (2 per layer, 80 layers).
  const std::vector<int64_t> two = {1000, 1000};
  const StepBreakdown b = custom.explain(work(two));
  const double one = with.custom_all_reduce->fixed_ns + 3.0 * 32768 / (with.custom_all_reduce->link_efficiency * 900e9) * 1e9;
  EXPECT_NEAR(comm_ns(b), 160 * one, 2.0);
  EXPECT_LT(comm_ns(b), comm_ns(nccl.explain(work(two))));
  for (const OpCost& op : b.ops) {
    if (op.name == "attn_all_reduce") {
      EXPECT_EQ(op.limit, "custom");
      EXPECT_NE(op.source.find("custom all-reduce"), std::string::npos) << op.source;
    }
  }
  // A 2,048-token prefill moves 32 MiB per all-reduce: above the cap, NCCL (the profile) prices it.
  PrefillChunk chunk{.context_tokens = 0, .new_tokens = 2048};
  EXPECT_EQ(comm_ns(custom.explain(prefill_work(chunk))), comm_ns(nccl.explain(prefill_work(chunk))));
  // With an ideal profile NCCL is faster than the custom kernel's fixed latency: the faster one counts.
  Bench ideal("llama-3.1-70b", 4);
  StepCostModel ideal_custom = ideal.make(with);
  StepCostModel ideal_nccl = ideal.make();
  EXPECT_EQ(ideal_custom.step_ns(work(two)), ideal_nccl.step_ns(work(two)));
  // The sources name it.
  const std::vector<std::string> src = custom.sources();
  EXPECT_NE(src.back().find("tensor-parallel all-reduce up to 8 MiB"), std::string::npos) << src.back();
}

TEST(CostModelDeterminism, SameWorkSameTimeInAnyOrder) {
  Bench s("gemma-2-9b");
  s.profile = PerfProfile::datasheet_default(s.gpu);
  std::mt19937_64 rng(11);
  std::vector<std::vector<int64_t>> batches;
  for (int i = 0; i < 50; ++i) {
    std::vector<int64_t> ctx(1 + rng() % 64);
    for (int64_t& c : ctx) c = static_cast<int64_t>(rng() % 20000);
    batches.push_back(ctx);
  }
  StepCostModel a = s.make();
  StepCostModel b = s.make();
  std::vector<TimeNs> forward;
  for (const auto& ctx : batches) forward.push_back(decode_ns(a, ctx));
  for (std::size_t i = batches.size(); i-- > 0;) EXPECT_EQ(decode_ns(b, batches[i]), forward[i]);
  for (std::size_t i = 0; i < batches.size(); ++i) EXPECT_EQ(decode_ns(a, batches[i]), forward[i]);
  EXPECT_EQ(a.memo_hits(), static_cast<int64_t>(batches.size()));
}

TEST(CostModelSources, ListsEveryClass) {
  Bench s("llama-3.1-8b");
  s.profile = PerfProfile::datasheet_default(s.gpu);
  StepCostModel m = s.make();
  std::vector<std::string> src = m.sources();
  ASSERT_EQ(src.size(), kNumOpClasses);
  EXPECT_EQ(src[0].rfind("gemm: datasheet", 0), 0u);
  EXPECT_EQ(m.step_ns(StepWork{}), 0);
}

}  // namespace
}  // namespace kvplan::sim

namespace kvplan::sim {
namespace {

TEST(CostModelMoe, ExplainNamesTheRoutingFormatAndStraggler) {
  Bench s("deepseek-v3", 1, "h200");
  CostOptions o;
  const StepBreakdown b = s.make(o).explain(work(std::vector<int64_t>{100}));
  bool seen = false;
  for (const OpCost& op : b.ops) {
    if (op.op_class != "moe_gemm") continue;
    seen = true;
    // one token: its 8 experts of 256, so the straggler is the mean; DeepSeek's default routing
    EXPECT_EQ(op.detail, "bf16, power-law 1.01, 8 of 256 experts per token, straggler 1.0x mean");
  }
  EXPECT_TRUE(seen);
  o.moe_routing = MoeRouting::kBalanced;
  for (const OpCost& op : s.make(o).explain(work(std::vector<int64_t>{100})).ops) {
    if (op.op_class == "moe_gemm") {
      EXPECT_EQ(op.detail.find("bf16, balanced, 8 of 256"), 0u) << op.detail;
    }
  }
}

// Issue 23: the MLA operators of a step are the published MLA classes of the GPU's profile, each
// naming whose table prices it; vLLM's all-reduce is its own published variant.
TEST(CostModelMla, ExplainNamesTheMlaClassesAndTheirTables) {
  Bench s("deepseek-v3", 8, "h200");
  s.profile = *published_profile("h200");
  CostOptions o;
  o.engine = Engine::kSglang;
  const StepBreakdown b = s.make(o).explain(work(std::vector<int64_t>{1000, 2000}));
  bool decode = false, bmm = false;
  for (const OpCost& op : b.ops) {
    if (op.op_class == "mla_decode") {
      decode = true;
      EXPECT_EQ(op.source.rfind("published (aiconfigurator, ", 0), 0u) << op.source;
      EXPECT_NE(op.source.find("NVIDIA H200"), std::string::npos) << op.source;
      EXPECT_EQ(op.detail, "absorbed decode over the latent cache (bf16 KV); SGLang's MLA kernel table");
    }
    if (op.op_class == "mla_bmm") bmm = true;
  }
  EXPECT_TRUE(decode);
  EXPECT_TRUE(bmm);
  o.engine = Engine::kVllm;
  o.custom_all_reduce = engine_custom_all_reduce(Engine::kVllm, s.gpu);  // what the front ends set
  bool vllm_ar = false;
  for (const OpCost& op : s.make(o).explain(work(std::vector<int64_t>{1000, 2000})).ops) {
    if (op.op_class == "mla_decode") {
      EXPECT_NE(op.detail.find("SGLang's MLA kernel table (vLLM publishes its MLA attention only as a whole module"),
                std::string::npos)
          << op.detail;
    }
    if (op.name == "mlp_all_reduce") {
      vllm_ar = true;
      EXPECT_EQ(op.detail, "vLLM tensor_model_parallel_all_reduce table (custom kernel / NCCL by size)");
      EXPECT_NE(op.limit, "custom");  // not the custom_all_reduce.h model
    }
  }
  EXPECT_TRUE(vllm_ar);
}

}  // namespace
}  // namespace kvplan::sim
