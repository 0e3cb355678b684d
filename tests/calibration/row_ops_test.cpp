// row_ops.h: the operator of a published row has the FLOPs, bytes, shape, variant and critical
// path that build_step_ops gives the same operator in a real model's step — the profile fitted
// from the rows then prices the simulator's operators through the same numbers.
#include "kvplan/calibration/row_ops.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/fused_moe.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/step_ops.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan::calibration {
namespace {

const StepOp& find(const StepOps& ops, const std::string& name) {
  for (const StepOp& o : ops.ops) {
    if (name == o.name) return o;
  }
  ADD_FAILURE() << "no op " << name;
  static StepOp none;
  return none;
}

void expect_same(const StepOp& row, const StepOp& step) {
  EXPECT_EQ(row.op_class, step.op_class);
  EXPECT_EQ(row.stream, step.stream);
  EXPECT_EQ(row.dtype, step.dtype);
  EXPECT_DOUBLE_EQ(row.flops, step.flops);
  EXPECT_DOUBLE_EQ(row.bytes, step.bytes);
  EXPECT_DOUBLE_EQ(row.critical_bytes, step.critical_bytes);
  EXPECT_EQ(row.critical_ctas, step.critical_ctas);
  EXPECT_EQ(row.shape.dims, step.shape.dims);
  for (int i = 0; i < step.shape.dims; ++i) EXPECT_DOUBLE_EQ(row.shape.v[static_cast<size_t>(i)], step.shape.v[static_cast<size_t>(i)]);
  EXPECT_EQ(row.grid_dtype, step.grid_dtype);
}

KvScheme scheme_of(DType kv) {
  KvScheme s;
  s.kv_dtype = kv;
  return s;
}

struct Step {
  Step(int tp, DType kv)
      : model(resolve_model("llama-3.1-8b")), scheme(scheme_of(kv)), parallel{tp, 1},
        layout(build_kv_layout(model, scheme, parallel)) {}
  StepOps build(const StepShapeBuilder& b, StepOpsOptions o = {}) const {
    return build_step_ops(model, layout, parallel, b.shape(), o);
  }
  ModelConfig model;
  KvScheme scheme;
  Parallelism parallel;
  KvLayout layout;
};

// Llama-3.1-8B: hidden 4096, 32 query / 8 KV heads of 128, intermediate 14336.
TEST(RowOps, DecodeAttentionAndGemmsEqualTheStepsOps) {
  for (DType kv : {DType::kBF16, DType::kFp8E4M3}) {
    Step s(1, kv);
    StepShapeBuilder b(s.layout);
    for (int i = 0; i < 16; ++i) b.add_decode(4095);  // kv_len = context + the token written = 4096
    const StepOps ops = s.build(b);
    expect_same(decode_attention_op(16, 4096, 32, 8, 128, kv), find(ops, "attention_decode"));
    expect_same(gemm_op(16, 32 * 128 + 2 * 8 * 128, 4096, DType::kBF16), find(ops, "qkv_proj"));
    expect_same(gemm_op(16, 2 * 14336, 4096, DType::kBF16), find(ops, "gate_up_proj"));
    // hand-computed: KV read 16 · 4096 · 2·8·128 · s bytes + q/out 16 · 32 · 256 · 2
    const double s_kv = kv == DType::kBF16 ? 2 : 1;
    EXPECT_DOUBLE_EQ(decode_attention_op(16, 4096, 32, 8, 128, kv).bytes,
                     16.0 * 4096 * 2 * 8 * 128 * s_kv + 16.0 * 32 * 256 * 2);
  }
}

// aiconfigurator collects each MoE shape from one model's config, Nemotron-H's relu2 experts without
// a gate (collector/vllm/collect_moe.py: relu2_no_mul); the row of that shape is the step's own
// two-matrix experts op, and every other shape stays gated.
TEST(RowOps, NemotronExpertRowsAreNotGated) {
  EXPECT_FALSE(published_moe_shape_gated(2688, 1856, 128, 6));   // Nemotron-3-Nano
  EXPECT_FALSE(published_moe_shape_gated(1024, 2688, 512, 22));  // Nemotron-3-Super, latent width
  EXPECT_TRUE(published_moe_shape_gated(7168, 2048, 256, 8));    // DeepSeek-V3
  EXPECT_TRUE(published_moe_shape_gated(3584, 3072, 896, 16));   // Kimi-K3, latent width
  const ModelConfig m = resolve_model("nemotron-3-nano-30b-a3b");
  const KvLayout layout = build_kv_layout(m, KvScheme{}, Parallelism{});
  StepShapeBuilder b(layout);
  for (int i = 0; i < 64; ++i) b.add_decode(1000);
  const StepOps ops = build_step_ops(m, layout, Parallelism{}, b.shape(), {});
  const StepOp row = fused_moe_row_op(64, 2688, 1856, 6, 128, 1, 1, MoeFormat::kBf16, default_moe_routing(m),
                                      published_moe_shape_gated(2688, 1856, 128, 6));
  expect_same(row, find(ops, "moe_gemm"));
  const StepOp gated = fused_moe_row_op(64, 2688, 1856, 6, 128, 1, 1, MoeFormat::kBf16, default_moe_routing(m));
  EXPECT_DOUBLE_EQ(row.flops, gated.flops * 2 / 3);  // up + down against gate + up + down
}

TEST(RowOps, Fp8GemmReadsOneByteWeightsAndRunsAtTheFp8Rate) {
  Step s(1, DType::kBF16);
  StepShapeBuilder b(s.layout);
  for (int i = 0; i < 8; ++i) b.add_decode(100);
  StepOpsOptions o;
  o.weights = WeightFormat::of(DType::kBF16, quantization_from_flag("fp8", 128));
  o.gemm_dtype = DType::kFp8E4M3;
  const StepOps ops = s.build(b, o);
  expect_same(gemm_op(8, 4096, 4096, DType::kFp8E4M3), find(ops, "o_proj"));
  // n·k one-byte weights + one fp32 scale + bf16 activations m·(n+k)·2
  EXPECT_DOUBLE_EQ(gemm_op(8, 4096, 4096, DType::kFp8E4M3).bytes, 4096.0 * 4096 + 4 + 8.0 * 8192 * 2);
}

TEST(RowOps, PrefillAttentionAndAllReduceEqualTheStepsOps) {
  Step s(2, DType::kBF16);  // TP 2: 16 query / 4 KV heads per GPU
  StepShapeBuilder b(s.layout);
  for (int i = 0; i < 3; ++i) b.add_prefill(0, 1024, true);
  const StepOps ops = s.build(b);
  expect_same(prefill_attention_op(3, 1024, 16, 4, 128, DType::kBF16), find(ops, "attention_prefill"));
  // payload = 3072 tokens · 4096 · 2 bytes per GPU over 2 ranks
  expect_same(all_reduce_op(3072.0 * 4096 * 2, 2), find(ops, "attn_all_reduce"));
  // causal pairs 1024·1025/2 per sequence
  EXPECT_DOUBLE_EQ(prefill_attention_op(3, 1024, 16, 4, 128, DType::kBF16).flops, 2.0 * 3 * 524800 * 16 * 256);
}

TEST(RowOps, ElementwiseOpsEqualTheStepsOps) {
  Step s(1, DType::kBF16);
  StepShapeBuilder b(s.layout);
  for (int i = 0; i < 5; ++i) b.add_decode(10);
  const StepOps ops = s.build(b);
  const StepOp norm = find(ops, "attn_norm");
  EXPECT_DOUBLE_EQ(rms_norm_op(5, 4096).bytes, norm.bytes);
  EXPECT_DOUBLE_EQ(rms_norm_op(5, 4096).flops, norm.flops);
  EXPECT_DOUBLE_EQ(rope_op(5, 32, 8, 128).bytes, find(ops, "rope").bytes);
  EXPECT_DOUBLE_EQ(act_mul_op(5, 14336).bytes, find(ops, "act_mul").bytes);
  EXPECT_DOUBLE_EQ(act_mul_op(5, 14336).flops, find(ops, "act_mul").flops);
}

TEST(RowOps, RowOpRebuildsShapeFromParams) {
  Measurement m;
  m.op_class = "attention_decode";
  m.params_json = R"({"batch":4,"head_dim":128,"kv_dtype":"fp8_e4m3","kv_len":512,"num_heads":32,"num_kv_heads":8})";
  const StepOp ref = decode_attention_op(4, 512, 32, 8, 128, DType::kFp8E4M3);
  m.flops = ref.flops;
  m.bytes = ref.bytes;
  expect_same(row_op(m), ref);
  // kvplan's own runner rows carry other keys: no shape, so no grid; dtype from "dtype"
  Measurement runner;
  runner.op_class = "gemm";
  runner.params_json = R"({"M":16,"N":4096,"K":4096,"dtype":"fp8"})";
  EXPECT_EQ(row_op(runner).shape.dims, 0);
  EXPECT_EQ(row_op(runner).dtype, DType::kFp8E4M3);
  runner.op_class = "collective";
  EXPECT_EQ(row_op(runner).stream, Stream::kComm);
  runner.op_class = "warp_drive";
  EXPECT_THROW(row_op(runner), ConfigError);
}

}  // namespace
}  // namespace kvplan::calibration
