// The operator list of one engine step (step_ops.h). Every expectation is hand-computed; the
// arithmetic is in the comment beside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>

#include "kvplan/core/error.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan {
namespace {

constexpr int64_t kNoCap = std::numeric_limits<int64_t>::max();

// The first op named `name` (optionally in layer type `type`).
const StepOp& op(const StepOps& ops, const std::string& name, int type = -2) {
  for (const StepOp& o : ops.ops) {
    if (name == o.name && (type == -2 || o.layer_type == type)) return o;
  }
  ADD_FAILURE() << "no op " << name;
  static StepOp none;
  return none;
}
bool has_op(const StepOps& ops, const std::string& name) {
  for (const StepOp& o : ops.ops) {
    if (name == o.name) return true;
  }
  return false;
}

struct Fixture {
  Fixture(const char* model_id, int tp = 1, KvScheme s = {})
      : model(resolve_model(model_id)), scheme(s), parallel{tp, 1},
        layout(build_kv_layout(model, scheme, parallel)), builder(layout) {}
  StepOps build(StepOpsOptions o = {}) { return build_step_ops(model, layout, parallel, builder.shape(), o); }
  ModelConfig model;
  KvScheme scheme;
  Parallelism parallel;
  KvLayout layout;
  StepShapeBuilder builder;
};

TEST(StepOpsPairs, CausalPairsClosedForm) {
  EXPECT_EQ(causal_pairs(0, 4, kNoCap), 10);     // 1+2+3+4 = 4·(0 + 5/2)
  EXPECT_EQ(causal_pairs(10, 4, kNoCap), 50);    // 11+12+13+14 = 4·(10 + 5/2)
  EXPECT_EQ(causal_pairs(10, 4, 12), 47);        // 11+12+12+12
  EXPECT_EQ(causal_pairs(10, 4, 5), 20);         // 4·5: every query sees the full window
  EXPECT_EQ(causal_pairs(0, 0, kNoCap), 0);
  // brute force over small cases
  for (int64_t ctx = 0; ctx < 20; ++ctx) {
    for (int64_t c = 0; c < 20; ++c) {
      for (int64_t cap : {int64_t{1}, int64_t{7}, int64_t{16}, kNoCap}) {
        int64_t sum = 0;
        for (int64_t p = ctx + 1; p <= ctx + c; ++p) sum += std::min(p, cap);
        ASSERT_EQ(causal_pairs(ctx, c, cap), sum) << ctx << " " << c << " " << cap;
      }
    }
  }
}

TEST(StepOpsLlama, QkvGemmFlopsAndBytes) {
  Fixture f("llama-3.1-8b");
  f.builder.add_prefill(0, 100, true);
  f.builder.add_decode(500);
  StepOps ops = f.build();
  // T = 100 + 1 = 101; N = 32·128 + 8·(128+128) = 6144; flops = 2·T·4096·6144
  const StepOp& qkv = op(ops, "qkv_proj");
  EXPECT_DOUBLE_EQ(qkv.flops, 2.0 * 101 * 4096 * 6144);
  // weights 4096·6144·2 B + activations in 101·4096·2 + out 101·6144·2
  EXPECT_DOUBLE_EQ(qkv.bytes, 4096.0 * 6144 * 2 + 101.0 * (4096 + 6144) * 2);
  EXPECT_EQ(qkv.repeat, 32);
  ASSERT_EQ(ops.types.size(), 1u);
  EXPECT_EQ(ops.types[0].count, 32);
  // o_proj: 2·T·(32·128)·4096
  EXPECT_DOUBLE_EQ(op(ops, "o_proj").flops, 2.0 * 101 * 4096 * 4096);
  // gated MLP, gate and up fused: 2·T·4096·(2·14336); down 2·T·14336·4096
  EXPECT_DOUBLE_EQ(op(ops, "gate_up_proj").flops, 2.0 * 101 * 4096 * 28672);
  EXPECT_DOUBLE_EQ(op(ops, "down_proj").flops, 2.0 * 101 * 14336 * 4096);
  // LM head over the 2 emitting rows: 2·2·4096·128256 (vocab already a multiple of 64)
  EXPECT_DOUBLE_EQ(op(ops, "lm_head").flops, 2.0 * 2 * 4096 * 128256);
  EXPECT_FALSE(has_op(ops, "attn_all_reduce"));  // tp = 1
}

TEST(StepOpsLlama, DecodeAttentionFromTheActualMix) {
  Fixture f("llama-3.1-8b");
  f.builder.add_decode(100);
  f.builder.add_decode(3000);
  StepOps ops = f.build();
  // held tokens attended: (100+1) + (3000+1) = 3102; KV bytes per token per layer 2·8·128·2 = 4096
  const StepOp& a = op(ops, "attention_decode");
  // Q read + O write: 2 seqs · 32 heads · (128+128) · 2 B = 32,768; KV: 3102 · 4096 = 12,705,792
  EXPECT_DOUBLE_EQ(a.bytes, 32768.0 + 3102.0 * 4096);
  // flops: 2 · 1 query · 3102 keys · 32 heads · (128 + 128) = 50,823,168
  EXPECT_DOUBLE_EQ(a.flops, 50823168.0);
  // the longest sequence: 3001 tokens · 4096 B; split over 8 KV heads · kDecodeMaxSplits CTAs
  EXPECT_DOUBLE_EQ(a.critical_bytes, 3001.0 * 4096);
  EXPECT_EQ(a.critical_ctas, 8 * kDecodeMaxSplits);
  EXPECT_FALSE(has_op(ops, "attention_prefill"));
  // KV write: read 2 tokens · 8·256 bf16 elements, write 2 · 4096 B
  EXPECT_DOUBLE_EQ(op(ops, "kv_write").bytes, 2.0 * 2048 * 2 + 2.0 * 4096);
}

TEST(StepOpsLlama, PrefillPairsAndCachedPrefix) {
  Fixture f("llama-3.1-8b");
  f.builder.add_prefill(1000, 512, true);  // 1000 cached prefix tokens, 512 new
  const GroupStepWork& w = f.builder.shape().groups[0];
  EXPECT_EQ(w.prefill_pairs, 512 * 1000 + 512 * 513 / 2);  // c·ctx + c(c+1)/2 = 643,328
  EXPECT_EQ(w.prefill_kv_tokens, 1512);
  StepOps ops = f.build();
  // 2 · pairs · 32 heads · 256
  EXPECT_DOUBLE_EQ(op(ops, "attention_prefill").flops, 2.0 * 643328 * 32 * 256);
  // Q+O: 512·32·256·2 B; KV read: 1512 · 4096 B
  EXPECT_DOUBLE_EQ(op(ops, "attention_prefill").bytes, 512.0 * 32 * 256 * 2 + 1512.0 * 4096);
}

TEST(StepOpsLlama, TensorParallelHalvesTheShardAndAddsAllReduces) {
  Fixture f("llama-3.1-8b", 2);
  f.builder.add_decode(100);
  f.builder.add_decode(200);
  StepOps ops = f.build();
  // N per GPU = 16·128 + 4·256 = 3072: half of 6144
  EXPECT_DOUBLE_EQ(op(ops, "qkv_proj").flops, 2.0 * 2 * 4096 * 3072);
  EXPECT_DOUBLE_EQ(op(ops, "gate_up_proj").flops, 2.0 * 2 * 4096 * 14336);
  // ring all-reduce: 2·(2−1)/2 · T·4096·2 B = 2·4096·2 · 1 = 16,384 for T = 2
  EXPECT_DOUBLE_EQ(op(ops, "attn_all_reduce").bytes, 16384.0);
  EXPECT_DOUBLE_EQ(op(ops, "mlp_all_reduce").bytes, 16384.0);
  EXPECT_EQ(op(ops, "mlp_all_reduce").stream, Stream::kComm);
  // KV per GPU halves: 4 heads · 256 · 2 B = 2048 per token; (101 + 201) · 2048
  EXPECT_DOUBLE_EQ(op(ops, "attention_decode").bytes, 2.0 * 16 * 256 * 2 + 302.0 * 2048);
  // LM head over the vocabulary shard: 128256 / 2 = 64128 columns; logits gather over the comm stream
  EXPECT_DOUBLE_EQ(op(ops, "lm_head").flops, 2.0 * 2 * 4096 * 64128);
  EXPECT_TRUE(has_op(ops, "logits_gather"));
}

TEST(StepOpsLlama, WeightFormatSetsWeightBytes) {
  Fixture f("llama-3.1-8b");
  f.builder.add_decode(10);
  StepOpsOptions o;
  o.weights = WeightFormat{DType::kBF16, quantization_from_flag("gptq", 128)};
  StepOps ops = f.build(o);
  // GPTQ [6144, 4096]: qweight 4096/8 · 6144 · 4 = 12,582,912; qzeros 32 groups · 768 · 4 = 98,304;
  //   scales 32 · 6144 · 2 = 393,216; g_idx 4096 · 4 = 16,384 -> 13,090,816; activations (4096 + 6144) · 2
  EXPECT_DOUBLE_EQ(op(ops, "qkv_proj").bytes, 13090816.0 + 10240.0 * 2);
  EXPECT_EQ(op(ops, "qkv_proj").dtype, DType::kBF16);  // W4A16: the caller's gemm_dtype stays bf16
  o.weights = WeightFormat{DType::kBF16, quantization_from_flag("fp8", 128)};
  o.gemm_dtype = DType::kFp8E4M3;
  ops = f.build(o);
  // one byte per weight plus one fp32 per-tensor scale
  EXPECT_DOUBLE_EQ(op(ops, "qkv_proj").bytes, 4096.0 * 6144 + 4 + 10240.0 * 2);
  EXPECT_EQ(op(ops, "qkv_proj").dtype, DType::kFp8E4M3);  // W8A8
  // the LM head and the router stay 16-bit
  EXPECT_EQ(op(ops, "lm_head").dtype, DType::kBF16);
}

TEST(StepOpsLlama, Fp8KvWriteUsesSchemeBytes) {
  KvScheme s;
  s.kv_dtype = DType::kFp8E4M3;
  Fixture f("llama-3.1-8b", 1, s);
  f.builder.add_decode(100);
  StepOps ops = f.build();
  // read 1 token · 2048 bf16 elements (4096 B), write 8·256·1 B = 2048 B
  EXPECT_DOUBLE_EQ(op(ops, "kv_write").bytes, 4096.0 + 2048.0);
  EXPECT_DOUBLE_EQ(op(ops, "attention_decode").bytes, 32.0 * 256 * 2 + 101.0 * 2048);
}

TEST(StepOpsMoe, ExpectedExpertsTouched) {
  EXPECT_DOUBLE_EQ(expected_experts_touched(8, 2, 1), 2.0);       // 8·(1 − 6/8)
  EXPECT_DOUBLE_EQ(expected_experts_touched(8, 2, 2), 3.5);       // 8·(1 − 0.5625)
  EXPECT_NEAR(expected_experts_touched(8, 2, 1000), 8.0, 1e-9);
  EXPECT_DOUBLE_EQ(expected_experts_touched(8, 2, 0), 0.0);
  EXPECT_NEAR(expected_experts_touched(256, 8, 1), 8.0, 1e-9);
}

TEST(StepOpsMoe, MixtralReadsOnlyTouchedExperts) {
  Fixture f("mixtral-8x7b");
  f.builder.add_decode(100);  // T = 1, top-2: 2 experts touched under any routing
  StepOps ops = f.build();
  // one expert's gate_up [2·14336, 4096] + down [4096, 14336] bf16 = 3·14336·4096·2 B; 2 touched;
  // the token in and out 2·4096·2; per pair (h + 2w + 2w + w + w + h)·2 = (8192 + 86016)·2
  const StepOp& moe = op(ops, "moe_gemm");
  EXPECT_DOUBLE_EQ(moe.bytes, 2.0 * 3 * 14336 * 4096 * 2 + 2.0 * 4096 * 2 + 2.0 * (8192 + 6 * 14336) * 2);
  EXPECT_DOUBLE_EQ(moe.flops, 2.0 * 2 * 4096 * (28672 + 14336));  // T·k pairs
  EXPECT_EQ(moe.op_class, OpClass::kMoeGemm);
  EXPECT_STREQ(moe.grid_variant, "bf16/power_law_1.2");  // Mixtral: the generic class's default
  f.builder.reset();
  for (int i = 0; i < 512; ++i) f.builder.add_decode(100);
  StepOpsOptions balanced;
  balanced.moe_routing = MoeRouting::kBalanced;
  ops = f.build(balanced);
  // T = 512 spread round-robin: all 8 experts, 1024 pairs
  EXPECT_DOUBLE_EQ(op(ops, "moe_gemm").bytes,
                   8.0 * 3 * 14336 * 4096 * 2 + 512.0 * 4096 * 2 * 2 + 1024.0 * (8192 + 6 * 14336) * 2);
  EXPECT_FALSE(has_op(ops, "gate_up_proj"));
}

TEST(StepOpsMoe, DeepSeekV3AtBatchOneReadsOnlyItsEightExperts) {
  Fixture f("deepseek-v3");
  f.builder.add_decode(100);
  StepOps ops = f.build();
  const StepOp& moe = op(ops, "moe_gemm");
  // 8 of 256 experts: each gate_up [4096, 7168] + down [7168, 2048] in bf16 (the Fixture's weights)
  // = 3·7168·2048·2 = 88,080,384 B; the token in/out 2·7168·2; 8 pairs of (2·7168 + 6·2048)·2 B
  EXPECT_DOUBLE_EQ(moe.bytes, 8.0 * 88080384 + 2.0 * 7168 * 2 + 8.0 * (2 * 7168 + 6 * 2048) * 2);
  EXPECT_DOUBLE_EQ(moe.shape.v[3], 8.0);  // experts touched
  EXPECT_STREQ(moe.grid_variant, "bf16/power_law_1.01");  // MLA model: DeepSeek's default
}

TEST(StepOpsMoe, ExpertParallelNeedsAnAllToAllOnlyWithDataParallelAttention) {
  // TP 4 x EP 4, one data-parallel rank: every GPU holds every token after the attention
  // all-reduce, runs its 2 local experts (of 8) and the MLP all-reduce combines them.
  Fixture f("mixtral-8x7b", 4);
  f.parallel.expert_parallel = true;
  f.builder.add_decode(100);
  StepOps ops = f.build();
  EXPECT_FALSE(has_op(ops, "moe_dispatch"));
  EXPECT_FALSE(has_op(ops, "moe_combine"));
  EXPECT_TRUE(has_op(ops, "mlp_all_reduce"));
  // one token, balanced: its 2 pairs land on 2 of the 4 ranks; the straggler computes 1 pair
  // through 1 local expert: 3·14336·4096·2 B, the token in/out, one pair's activations
  StepOpsOptions balanced;
  balanced.moe_routing = MoeRouting::kBalanced;
  ops = f.build(balanced);
  EXPECT_DOUBLE_EQ(op(ops, "moe_gemm").bytes, 3.0 * 14336 * 4096 * 2 + 2.0 * 4096 * 2 + (8192 + 6.0 * 14336) * 2);
  // DP 4 x EP 4 (data-parallel attention): ranks hold different tokens, so DeepEP dispatches
  // (fp8 + a 4-byte scale per 128) and combines (bf16) T x k x hidden values, 3/4 of them off-GPU
  f.parallel = Parallelism{.tensor_parallel = 1, .data_parallel = 4, .expert_parallel = true};
  f.layout = build_kv_layout(f.model, f.scheme, f.parallel);
  ops = f.build();
  ASSERT_TRUE(has_op(ops, "moe_dispatch"));
  ASSERT_TRUE(has_op(ops, "moe_combine"));
  EXPECT_DOUBLE_EQ(op(ops, "moe_dispatch").bytes, 1.0 * 2 * 4096 * (1 + 4.0 / 128) * 0.75);
  EXPECT_DOUBLE_EQ(op(ops, "moe_combine").bytes, 1.0 * 2 * 4096 * 2 * 0.75);
  EXPECT_STREQ(op(ops, "moe_dispatch").grid_variant, "deepep_ll_dispatch");  // a decode-only step
}

// Data parallel without expert parallelism (parallelism.h): each GPU runs its 1/(tp x dp) slice of
// every expert over the tokens of every rank, gathered before (hidden states and router logits)
// and reduce-scattered after, vLLM's all-gather / reduce-scatter all2all backend.
TEST(StepOpsMoe, DataParallelRanksRunTheirExpertSliceOverEveryRanksTokens) {
  Fixture dp("mixtral-8x7b");
  dp.parallel = Parallelism{.tensor_parallel = 1, .data_parallel = 2};
  dp.layout = build_kv_layout(dp.model, dp.scheme, dp.parallel);
  dp.builder.add_decode(100);  // this rank's one token
  Fixture tp("mixtral-8x7b", 2);
  tp.builder.add_decode(100);
  tp.builder.add_decode(100);  // both ranks' tokens on one TP 2 engine: the same expert work
  const StepOps a = dp.build();
  const StepOps b = tp.build();
  EXPECT_DOUBLE_EQ(op(a, "moe_gemm").flops, op(b, "moe_gemm").flops);
  EXPECT_DOUBLE_EQ(op(a, "moe_gemm").bytes, op(b, "moe_gemm").bytes);
  // 2 tokens x (4096 hidden + 8 router logits) x 2 B gathered, half of it from the other rank
  const StepOp& gather = op(a, "moe_dispatch_all_gather");
  EXPECT_STREQ(gather.grid_variant, "all_gather");
  EXPECT_EQ(gather.op_class, OpClass::kCollective);
  EXPECT_DOUBLE_EQ(gather.shape.v[0], 2.0 * (4096 + 8) * 2);
  EXPECT_DOUBLE_EQ(gather.shape.v[1], 2.0);
  EXPECT_DOUBLE_EQ(gather.bytes, 0.5 * 2.0 * (4096 + 8) * 2);
  const StepOp& scatter = op(a, "moe_combine_reduce_scatter");
  EXPECT_STREQ(scatter.grid_variant, "reduce_scatter");
  EXPECT_DOUBLE_EQ(scatter.shape.v[0], 2.0 * 4096 * 2);
  EXPECT_FALSE(has_op(a, "mlp_all_reduce"));  // tp 1: nothing to all-reduce within the rank
  EXPECT_FALSE(has_op(b, "moe_dispatch_all_gather"));
  EXPECT_FALSE(has_op(a, "moe_dispatch"));  // no DeepEP without expert parallelism
}

// MoE TP 2 x EP 2 at TP 4: one token's 2 pairs (balanced) land on the 2 groups, and the straggler
// GPU runs 1 pair through 1 local expert at half width: the TP 4 x EP 4 bytes at width 14336 / 2.
TEST(StepOpsMoe, ExpertParallelGroupsRunHalfWidthExperts) {
  Fixture f("mixtral-8x7b", 4);
  f.parallel.expert_parallel = true;
  f.parallel.expert_parallel_ranks = 2;
  f.builder.add_decode(100);
  StepOpsOptions balanced;
  balanced.moe_routing = MoeRouting::kBalanced;
  const StepOps ops = f.build(balanced);
  EXPECT_DOUBLE_EQ(op(ops, "moe_gemm").bytes, 3.0 * 7168 * 4096 * 2 + 2.0 * 4096 * 2 + (8192 + 6.0 * 7168) * 2);
  EXPECT_FALSE(has_op(ops, "moe_dispatch"));  // one DP rank: the MLP all-reduce combines
  EXPECT_TRUE(has_op(ops, "mlp_all_reduce"));
}

TEST(StepOpsMla, DeepSeekV3DecodeReadsTheLatent) {
  Fixture f("deepseek-v3");
  f.builder.add_decode(999);  // 1000 tokens attended
  StepOps ops = f.build();
  // (512 + 64) · 2 B = 1152 per token per layer, shared by all 128 heads
  EXPECT_DOUBLE_EQ(f.layout.groups()[0].bytes_per_token, 1152.0);
  const StepOp& a = op(ops, "attention_decode");
  // q/out in latent space: 1 · 128 · (2·512 + 64) · 2 = 278,528; KV 1000 · 1152
  EXPECT_DOUBLE_EQ(a.bytes, 278528.0 + 1000.0 * 1152);
  // flops: 2 · 1000 · 128 · (2·512 + 64)
  EXPECT_DOUBLE_EQ(a.flops, 2.0 * 1000 * 128 * 1088);
  EXPECT_TRUE(has_op(ops, "q_absorb"));
  EXPECT_TRUE(has_op(ops, "v_absorb"));
  EXPECT_FALSE(has_op(ops, "kv_b_proj"));  // decode never decompresses
  // 3 dense layers then 58 MoE layers: two layer types
  ASSERT_EQ(ops.types.size(), 2u);
  EXPECT_EQ(ops.types[0].count, 3);
  EXPECT_EQ(ops.types[1].count, 58);
}

TEST(StepOpsMla, PrefillDecompressesAttendedLatents) {
  Fixture f("deepseek-v3");
  f.builder.add_prefill(100, 28, true);  // 128 latents attended
  StepOps ops = f.build();
  // kv_b_proj: 2 · 128 tokens · 512 · 128 heads · (128 + 128)
  EXPECT_DOUBLE_EQ(op(ops, "kv_b_proj").flops, 2.0 * 128 * 512 * 128 * 256);
  EXPECT_FALSE(has_op(ops, "q_absorb"));
}

// Issue 23: an MLA decode step reads the latent cache (kv_lora_rank + qk_rope_head_dim per token per
// layer, shared by every head), not per-head K/V, and is the mla_decode class priced by the
// engine's MLA kernel table; the absorb BMMs are mla_bmm.
TEST(StepOpsMla, DecodeIsMlaDecodeOverTheLatentCacheNotPerHeadKv) {
  KvScheme fp8;
  fp8.kv_dtype = DType::kFp8E4M3;
  Fixture f("deepseek-v3", 8, fp8);
  for (int i = 0; i < 4; ++i) f.builder.add_decode(2047);  // 4 sequences attending 2048 tokens
  StepOpsOptions sglang;
  sglang.engine = Engine::kSglang;
  StepOps ops = f.build(sglang);
  const StepOp& a = op(ops, "attention_decode");
  EXPECT_EQ(a.op_class, OpClass::kMlaDecode);
  EXPECT_STREQ(a.grid_variant, "sglang_fp8");
  // 128 / 8 = 16 heads per GPU. Latent (512 + 64) x 1 B = 576 B per token per layer:
  // q / out in the latent space 4 x 16 x (2 x 512 + 64) x 2 B = 139,264 B; cache 4 x 2048 x 576
  EXPECT_DOUBLE_EQ(a.bytes, 139264.0 + 4.0 * 2048 * 576);
  // per-head K/V would be 4 x 2048 x 16 heads x (192 + 128) x 1 B = 41,943,040 B: 8.9x more
  EXPECT_LT(a.bytes, 4.0 * 2048 * 16 * 320 / 8);
  EXPECT_DOUBLE_EQ(a.flops, 2.0 * 4 * 2048 * 16 * 1088);
  EXPECT_EQ(a.shape.dims, 3);
  EXPECT_DOUBLE_EQ(a.shape.v[1], 2048.0);  // kv tokens per sequence
  // W_UK absorb: 2 x 4 tokens x 16 heads x 128 x 512; W_UV: 2 x 4 x 16 x 512 x 128
  const StepOp& pre = op(ops, "q_absorb");
  EXPECT_EQ(pre.op_class, OpClass::kMlaBmm);
  EXPECT_DOUBLE_EQ(pre.flops, 2.0 * 4 * 16 * 128 * 512);
  EXPECT_STREQ(pre.grid_variant, "sglang_pre_bf16");  // bf16 weights: bf16 BMM
  EXPECT_EQ(op(ops, "v_absorb").op_class, OpClass::kMlaBmm);
  // vLLM has no bare MLA kernel table: SGLang's kernel prices its attention, its own BMM table its BMMs
  StepOpsOptions vllm;
  ops = f.build(vllm);
  EXPECT_STREQ(op(ops, "attention_decode").grid_variant, "sglang_fp8");
  EXPECT_STREQ(op(ops, "q_absorb").grid_variant, "vllm_pre_bf16");
  StepOpsOptions trt;
  trt.engine = Engine::kTrtllm;
  ops = f.build(trt);
  EXPECT_STREQ(op(ops, "attention_decode").grid_variant, "trtllm_fp8");
}

TEST(StepOpsMla, PrefillIsTheMlaPrefillClass) {
  Fixture f("deepseek-v3");
  f.builder.add_prefill(0, 100, true);
  StepOps ops = f.build();
  const StepOp& a = op(ops, "attention_prefill");
  EXPECT_EQ(a.op_class, OpClass::kMlaPrefill);
  // 5050 causal pairs x 128 heads x (128 + 64 + 128) x 2
  EXPECT_DOUBLE_EQ(a.flops, 2.0 * 5050 * 128 * 320);
  EXPECT_DOUBLE_EQ(a.shape.v[1], 100.0);
}

// Gated DeltaNet: one gated_deltanet op per phase covers the conv1d and the delta rule (the
// published table times both kernels); no separate conv1d op in those layers.
TEST(StepOpsRecurrent, GatedDeltaNetIsOneOpPerPhase) {
  Fixture f("qwen3-next-80b-a3b");
  f.builder.add_decode(100);
  f.builder.add_decode(200);
  StepOps ops = f.build();
  const StepOp& g = op(ops, "gdn_decode");
  EXPECT_EQ(g.op_class, OpClass::kGatedDeltaNet);
  EXPECT_STREQ(g.grid_variant, "decode");
  EXPECT_DOUBLE_EQ(g.shape.v[0], 2.0);  // sequences
  EXPECT_DOUBLE_EQ(g.shape.v[1], 1.0);  // tokens per sequence
  EXPECT_DOUBLE_EQ(g.shape.v[2], static_cast<double>(f.model.linear.num_value_heads));
  EXPECT_FALSE(has_op(ops, "conv1d"));
  EXPECT_FALSE(has_op(ops, "delta_rule_decode"));
}

TEST(StepOpsRecurrent, Mamba2ConvIsTheConv1dClass) {
  Fixture f("mamba2-2.7b");
  f.builder.add_prefill(0, 64, true);
  f.builder.add_decode(10);
  StepOps ops = f.build();
  int convs = 0;
  for (const StepOp& o : ops.ops) {
    if (std::string(o.name) != "conv1d") continue;
    ++convs;
    EXPECT_EQ(o.op_class, OpClass::kConv1d);
  }
  EXPECT_EQ(convs, 2);  // the prefill chunk's conv and the decode token's state update
}

TEST(StepOpsSliding, Gemma2WindowCapsTheContext) {
  Fixture f("gemma-2-9b");
  f.builder.add_decode(9999);  // 10,000 tokens with the new one
  const KvLayout& l = f.layout;
  ASSERT_EQ(l.groups().size(), 2u);
  for (std::size_t g = 0; g < l.groups().size(); ++g) {
    const GroupStepWork& w = f.builder.shape().groups[g];
    if (l.groups()[g].kind == LayerKind::kSlidingAttention) {
      EXPECT_EQ(w.decode_tokens, 4096);  // window
    } else {
      EXPECT_EQ(w.decode_tokens, 10000);
    }
  }
  StepOps ops = f.build();
  ASSERT_EQ(ops.types.size(), 2u);  // alternating sliding / full layers: two types of 21
  EXPECT_EQ(ops.types[0].count + ops.types[1].count, 42);
  EXPECT_EQ(ops.layer_types.size(), 42u);
  for (const StepLayerType& t : ops.types) {  // each type's attention op lies in its own op range
    EXPECT_GE(t.attention_op, t.first_op);
    EXPECT_LT(t.attention_op, t.end_op);
    EXPECT_STREQ(ops.ops[static_cast<std::size_t>(t.attention_op)].name, "attention_decode");
  }
  // Gemma-2 has 4 norms per layer: 2 before attention, 2 before/after the MLP
  EXPECT_EQ(op(ops, "attn_norm").kernels, 2);
  EXPECT_EQ(op(ops, "mlp_norm").kernels, 2);
}

TEST(StepOpsRecurrent, StateTrafficIndependentOfContext) {
  Fixture f("mamba2-2.7b");
  f.builder.add_decode(100);
  StepOps a = f.build();
  f.builder.reset();
  f.builder.add_decode(100000);
  StepOps b = f.build();
  EXPECT_DOUBLE_EQ(op(a, "ssm_decode").bytes, op(b, "ssm_decode").bytes);
  // state read and written once: 2 · state bytes per layer + activations
  EXPECT_GT(op(a, "ssm_decode").bytes, 2.0 * static_cast<double>(f.layout.groups()[0].state_bytes_per_request));
  EXPECT_FALSE(has_op(a, "attention_decode"));
}

TEST(StepOpsRecurrent, HybridModelsBuild) {
  for (const char* id : {"jamba-v0.1", "qwen3-next-80b-a3b", "falcon-40b", "qwen2-7b", "qwen3.5-397b-a17b",
                         "qwen3.5-27b", "minimax-m2.5", "kimi-k2.5"}) {
    Fixture f(id);
    f.builder.add_prefill(0, 64, true);
    f.builder.add_decode(1000);
    StepOps ops = f.build();
    int layers = 0;
    for (const StepLayerType& t : ops.types) layers += t.count;
    EXPECT_EQ(layers, f.model.num_layers()) << id;
    for (const StepOp& o : ops.ops) {
      EXPECT_GE(o.flops, 0) << id << " " << o.name;
      EXPECT_GT(o.bytes, 0) << id << " " << o.name;
    }
  }
}

TEST(StepOpsCopies, SwapInSplitOverKvLayers) {
  Fixture f("llama-3.1-8b");
  f.builder.add_decode(100);
  f.builder.shape().swap_in_bytes = 32 * 1000;
  f.builder.shape().swap_out_bytes = 5000;
  StepOps ops = f.build();
  ASSERT_GE(ops.swap_in_op, 0);
  EXPECT_DOUBLE_EQ(ops.ops[static_cast<std::size_t>(ops.swap_in_op)].bytes, 1000.0);  // per layer
  EXPECT_EQ(ops.ops[static_cast<std::size_t>(ops.swap_in_op)].repeat, 32);
  EXPECT_EQ(ops.ops[static_cast<std::size_t>(ops.swap_in_op)].stream, Stream::kCopy);
  EXPECT_DOUBLE_EQ(ops.ops[static_cast<std::size_t>(ops.swap_out_op)].bytes, 5000.0);
  EXPECT_GE(ops.types[0].attention_op, ops.types[0].first_op);
}

TEST(StepOpsNames, DisplayNamesCarryTheGroup) {
  Fixture f("gemma-2-9b");
  f.builder.add_decode(10);
  StepOps ops = f.build();
  bool sliding = false;
  for (const StepOp& o : ops.ops) {
    if (ops.display_name(o, f.layout) == "attention_decode(sliding_attention(4096))") sliding = true;
  }
  EXPECT_TRUE(sliding);
  EXPECT_EQ(ops.display_name(op(ops, "qkv_proj"), f.layout), "qkv_proj");
}

// Every field of an operator and of a layer type, for exact comparison (the same arithmetic must
// give the same bits).
auto fields(const StepOp& o) {
  return std::tuple(std::string(o.name), o.op_class, o.stream, o.dtype, o.flops, o.bytes, o.critical_bytes,
                    o.critical_ctas, o.shape.v, o.shape.dims, o.grid_dtype, o.kernels, o.layer_type, o.group, o.repeat,
                    o.tp_all_reduce);
}
auto fields(const StepLayerType& t) {
  return std::tuple(t.first_op, t.end_op, t.attention_op, t.count, t.holds_kv, t.group);
}

void expect_same_ops(const StepOps& a, const StepOps& b, const std::string& what) {
  ASSERT_EQ(a.ops.size(), b.ops.size()) << what;
  for (std::size_t i = 0; i < a.ops.size(); ++i) EXPECT_EQ(fields(a.ops[i]), fields(b.ops[i])) << what << " op " << i;
  ASSERT_EQ(a.types.size(), b.types.size()) << what;
  for (std::size_t t = 0; t < a.types.size(); ++t) {
    EXPECT_EQ(fields(a.types[t]), fields(b.types[t])) << what << " type " << t;
  }
  EXPECT_EQ(a.layer_types, b.layer_types) << what;
  EXPECT_EQ(std::tuple(a.prologue_end, a.epilogue_begin, a.epilogue_end, a.swap_in_op, a.swap_out_op, a.num_kv_layers),
            std::tuple(b.prologue_end, b.epilogue_begin, b.epilogue_end, b.swap_in_op, b.swap_out_op, b.num_kv_layers))
      << what;
}

// One StepOpsBuilder serves many steps, writing into the same list each time: every list equals a
// fresh build_step_ops, whatever the previous step held (decode, prefill, copies, nothing).
TEST(StepOpsBuilder, ReusedBuilderAndListMatchFreshBuilds) {
  for (const char* id : {"llama-3.1-8b", "gemma-2-9b", "deepseek-v3", "jamba-v0.1"}) {
    Fixture f(id);
    StepOpsOptions o;
    o.force_head = true;
    const StepOpsBuilder builder(f.model, f.layout, f.parallel, o);
    StepOps out;
    for (int step = 0; step < 6; ++step) {
      f.builder.reset();
      if (step % 2 == 0) f.builder.add_decode(100 + 37 * step);
      if (step % 3 != 2) f.builder.add_prefill(50 * step, 1 + 200 * step, true);
      if (step == 4) f.builder.shape().swap_in_bytes = int64_t{1} << 20;
      if (step == 5) f.builder.shape().swap_out_bytes = 4096;
      builder.build(f.builder.shape(), out);
      expect_same_ops(out, f.build(o), std::string(id) + " step " + std::to_string(step));
    }
  }
}

}  // namespace
}  // namespace kvplan

namespace kvplan {
namespace {

// Issue 24 item 3: DeepSeek sparse attention. The indexer scores every key a query sees, the top-k
// keeps index_topk of them and the sparse MLA kernel reads only those, in the absorbed form.
TEST(StepOpsDsa, DecodeScoresEveryKeyAndAttendsOnlyTheTopK) {
  KvScheme fp8;
  fp8.kv_dtype = DType::kFp8E4M3;
  Fixture f("deepseek-v3.2", 8, fp8);
  f.builder.add_decode(999);   // 1,000 keys held: all selected
  f.builder.add_decode(4999);  // 5,000 held: 2,048 selected
  StepOps ops = f.build();
  // indexer: 64 heads x 128 fp8 on every GPU over 6,000 keys; keys 132 B (128 + one fp32 scale),
  // queries 2 x 64 x 132 B, logits 4 B per (query, key). The paged decode kernel has no bare table:
  // the attention_decode class prices it (64 query heads, one fp8 key head).
  const StepOp& ix = op(ops, "dsa_indexer");
  EXPECT_EQ(ix.op_class, OpClass::kAttentionDecode);
  EXPECT_EQ(ix.grid_dtype, DType::kFp8E4M3);
  EXPECT_DOUBLE_EQ(ix.shape.v[1], 3000.0);  // keys per sequence
  EXPECT_DOUBLE_EQ(ix.shape.v[2], 64.0);
  EXPECT_DOUBLE_EQ(ix.flops, 2.0 * 6000 * 64 * 128);
  EXPECT_DOUBLE_EQ(ix.bytes, 6000.0 * 132 + 2.0 * 64 * 132 + 4.0 * 6000);
  const StepOp& tk = op(ops, "dsa_topk");
  EXPECT_EQ(tk.op_class, OpClass::kDsaTopk);
  EXPECT_DOUBLE_EQ(tk.bytes, 4.0 * 6000 + 4.0 * 2 * 2048);
  // FlashMLA decode over the selected latents: min(1000, 2048) + min(5000, 2048) = 3,048; 128 / 8 =
  // 16 heads; width 2 x 512 + 64 = 1,088; fp8_ds_mla latent 656 B per token (the indexer key is not read)
  const StepOp& at = op(ops, "attention_decode_topk");
  EXPECT_EQ(at.op_class, OpClass::kMlaDecode);
  EXPECT_DOUBLE_EQ(at.flops, 2.0 * 3048 * 16 * 1088);
  EXPECT_DOUBLE_EQ(at.bytes, 3048.0 * 656 + 2.0 * 16 * 1088 * 2);
  EXPECT_DOUBLE_EQ(at.critical_bytes, 2048.0 * 656);  // the longest sequence reads topk latents
  EXPECT_FALSE(has_op(ops, "kv_b_proj"));
  EXPECT_TRUE(has_op(ops, "q_absorb"));
  EXPECT_TRUE(has_op(ops, "indexer_wq_b"));
}

TEST(StepOpsDsa, PrefillRunsAbsorbedOverTheSelectedLatents) {
  Fixture f("glm-5", 8);
  f.builder.add_prefill(3000, 1000, true);  // every query sees more than 2,048 keys
  StepOps ops = f.build();
  // indexer pairs: 1000 x (3000 + 1001 / 2) = 3,500,500, GLM-5's 32 indexer heads x 128
  const StepOp& ix = op(ops, "dsa_indexer");
  EXPECT_DOUBLE_EQ(ix.flops, 2.0 * 3500500 * 32 * 128);
  EXPECT_DOUBLE_EQ(ix.bytes, 4000.0 * 132 + 1000.0 * 32 * 132 + 4.0 * 3500500);
  // sparse pairs 1000 x 2048; 64 / 8 = 8 heads padded to the 64-head tile; bf16 latent (512 + 64) x 2 B
  const StepOp& at = op(ops, "attention_prefill");
  EXPECT_EQ(at.op_class, OpClass::kDsaAttention);
  EXPECT_DOUBLE_EQ(at.flops, 2.0 * 2048000 * 64 * 1088);
  EXPECT_DOUBLE_EQ(at.bytes, 2048000.0 * 1152 + 1000.0 * 8 * 1088 * 2);
  EXPECT_FALSE(has_op(ops, "kv_b_proj"));  // no decompression: absorbed
  const StepOp& pre = op(ops, "q_absorb");
  EXPECT_DOUBLE_EQ(pre.flops, 2.0 * 1000 * 8 * 192 * 512);  // q_nope 192 wide in GLM-5
}

TEST(StepOpsDsa, ShortContextsSelectEveryKey) {
  Fixture f("deepseek-v3.2", 8);
  f.builder.add_prefill(0, 100, true);  // 5,050 causal pairs, all under 2,048 keys
  EXPECT_EQ(f.builder.shape().groups[0].sparse_prefill_pairs, 5050);
  EXPECT_EQ(f.builder.shape().groups[0].prefill_pairs, 5050);
  f.builder.add_prefill(2000, 100, true);  // 48 queries see <= 2,048 keys, then 52 capped
  EXPECT_EQ(f.builder.shape().groups[0].sparse_prefill_pairs, 5050 + causal_pairs(2000, 100, 2048));
  EXPECT_EQ(causal_pairs(2000, 100, 2048), (2001 + 2048) * 48 / 2 + 52 * 2048);
}

}  // namespace
}  // namespace kvplan
