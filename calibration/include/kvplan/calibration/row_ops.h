// kvplan/calibration/row_ops.h — the step operator (StepOp) one calibration row stands for: FLOPs,
// bytes, shape for the correction grids, grid variant and split-KV critical path, computed with
// the formulas of core/src/step_ops.cpp for the same operator, so that a profile fitted from the
// rows prices the simulator's operators with the same arithmetic (tests/calibration/row_ops_test
// compares them with build_step_ops on real models).
//
//   StepOp op = decode_attention_op(/*batch=*/32, /*kv_len=*/4096, 32, 8, 128, DType::kBF16);
//   StepOp back = row_op(measurement);   // from op_class + params_json (published_import.h keys)
#pragma once

#include "kvplan/calibration/measurement.h"
#include "kvplan/core/dtype.h"
#include "kvplan/core/mixer_ops.h"
#include "kvplan/core/step_ops.h"

namespace kvplan::calibration {

// y[m, n] = x[m, k] · W[n, k]^T with bf16 activations; weights in bf16, or fp8 e4m3 per tensor
// (vLLM Fp8Config, dynamic activation scales: W8A8 at the fp8 rate). FLOPs 2·m·n·k, bytes
// W(n, k) + m·(n + k)·2. Shape {m, n, k}, variant = dtype.
StepOp gemm_op(double m, double n, double k, DType dtype);

// Decode attention of `batch` sequences, one query token each, attending `kv_len` tokens each
// (the context plus the token written this step), hq query / hkv KV heads of head_dim:
// FLOPs 2·batch·kv_len·hq·2d, bytes batch·hq·2d·2 (q in, out) + batch·kv_len·2·hkv·d·s(kv).
// Critical path: one sequence's KV over at most hkv · kDecodeMaxSplits CTAs. Variant = KV dtype.
StepOp decode_attention_op(double batch, double kv_len, int num_heads, int num_kv_heads, int head_dim, DType kv_dtype);

// Causal prefill attention of `batch` sequences of `new_tokens` tokens each, no cached prefix:
// pairs = new·(new+1)/2 per sequence, FLOPs 2·pairs·hq·2d, bytes T·hq·2d·2 + T·2·hkv·d·s(kv).
StepOp prefill_attention_op(double batch, double new_tokens, int num_heads, int num_kv_heads, int head_dim,
                            DType kv_dtype);

// Ring all-reduce of `payload_bytes` per GPU over `ranks` GPUs: bytes 2·(ranks−1)/ranks · payload on
// the comm stream. Shape {payload, ranks}.
// One vLLM FusedMoE forward of the published MoE table (README §6a): `tokens` entering the GPU,
// the model's full hidden / inter / experts / top-k, split by moe_tp (inter) or moe_ep (experts);
// gated (SwiGLU) experts stored in `format`, or with `gated` false up and down projections only
// (Nemotron-H's relu2 experts, which aiconfigurator's collector runs as relu2_no_mul).
StepOp fused_moe_row_op(double tokens, int64_t hidden, int64_t inter, int top_k, int experts, int moe_tp, int moe_ep,
                        MoeFormat format, MoeRouting routing, bool gated = true);
// Whether the published MoE table's rows of this expert shape (hidden as the experts see it: the
// latent width of a latent MoE) ran gated experts. The table has no activation column; aiconfigurator
// collects each shape from one model's config (collector/vllm/collect_moe.py), so a shipped preset
// whose experts have that shape says: false when its experts are not gated (Nemotron-H), else true.
bool published_moe_shape_gated(int64_t hidden, int64_t inter, int experts, int top_k);
// One NCCL collective over `ranks` GPUs of a `total_bytes` buffer (nccl-tests' size: the gathered
// output of all_gather, the full input of reduce_scatter): the bytes each rank sends, as the ring
// algorithms move them, 2(n-1)/n of the buffer for all_reduce and (n-1)/n for the others.
// all_reduce keeps the "bf16" grid variant of the existing all-reduce rows; the others have their own.
// kVllmAllReduce: vLLM's tensor_model_parallel_all_reduce (its custom kernel for small tensors,
// NCCL above), the bytes of a ring all-reduce, grid variant "vllm_all_reduce".
enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kVllmAllReduce };
StepOp collective_op(CollectiveKind kind, double total_bytes, int ranks);
StepOp all_reduce_op(double payload_bytes, int ranks);

// Gated DeltaNet rows (README §6f): `batch` sequences of `seq_len` tokens, heads per GPU, the
// kernels' fp32 recurrent state (hv·dk·dv·4 B) and bf16 conv state ((d_conv-1)·channels·2 B) per
// sequence; the op gated_deltanet_op (mixer_ops.h) builds.
StepOp gdn_row_op(bool prefill, int64_t batch, int64_t seq_len, int64_t hk, int64_t dk, int64_t hv, int64_t dv,
                  int64_t d_conv);
// Kimi delta attention rows (README §7e): `batch` sequences of `seq_len` tokens, `heads` per GPU,
// the fp32 recurrent state (heads·dk·dv·4 B) and the bf16 q/k/v conv windows
// ((d_conv-1)·heads·(2·dk + dv)·2 B) per sequence; the op kimi_delta_op (mixer_ops.h) builds.
StepOp kda_row_op(bool prefill, int64_t batch, int64_t seq_len, int64_t heads, int64_t dk, int64_t dv, int64_t d_conv);
// A DeepSeek-V4 attention module row (README §7b): CSA (ratio 4) or HCA, `isl` new tokens per
// sequence (1: decode) after `past` cached ones, `heads` on the timed GPU of the model with
// `native_heads` (64: V4-Flash's geometry, 128: V4-Pro's); fp8 block projections, as collected.
StepOp dsv4_row_op(bool csa, int64_t batch, int64_t isl, int64_t past, int64_t native_heads, int64_t heads);
// A MiniMax sparse attention module row (README §7d): `isl` new tokens per sequence (1: decode) after
// `past` cached ones, `heads` query heads on the timed GPU (KV heads max(1, heads / 16), as collected),
// bf16 or fp8 KV, fp8 block projections; MiniMax-M3's geometry.
StepOp msa_row_op(int64_t batch, int64_t isl, int64_t past, int64_t heads, bool fp8_kv);
// A DeepSeek-V4 hyper-connection row (README §7f): `pre` or post over `tokens`, both sites.
StepOp mhc_row_op(bool pre, int64_t tokens, int hc_mult, int64_t hidden);
// DeepSeek sparse-attention kernel rows (README §7c): `batch` requests of `isl` query tokens after
// `past` cached ones, as the step prices them: the indexer scores every visible key
// (dsa_indexer_op), the top-k reads their logits (dsa_topk_op), the sparse MLA prefill kernel reads
// at most d.topk latents per query (dsa_prefill_attention_op). `c` picks which of the three; the
// indexer and attention rows are context rows (isl > 1).
StepOp dsa_row_op(OpClass c, int64_t batch, int64_t isl, int64_t past, const DsaDims& d, const MlaDims& m,
                  int64_t heads, double latent_bytes_per_token);

// Mamba-2 causal conv1d rows (README §6g): conv1d_op over `channels`.
StepOp conv1d_row_op(bool prefill, int64_t batch, int64_t seq_len, int64_t channels, int64_t d_conv);

// Elementwise operators (no grid). step_ops' RMSNorm is the fused add + norm (read x and the
// residual, write both, read the weight): FLOPs 5·T·h, bytes 4·T·h·2 + h·2.
StepOp rms_norm_op(double tokens, double hidden);
// RoPE on q and k: el = T·(hq + hkv)·d, FLOPs 3·el, bytes 2·el·2.
StepOp rope_op(double tokens, int num_heads, int num_kv_heads, int head_dim);
// Gated activation (SiLU(gate) · up): FLOPs 4·T·i, bytes 3·T·i·2. Plain activation: bytes 2·T·i·2.
StepOp act_mul_op(double tokens, double intermediate);
StepOp act_op(double tokens, double intermediate);
// A residual add that is not fused into the norm (step_ops has none; Vidur times it separately):
// FLOPs T·h, bytes 3·T·h·2.
StepOp residual_add_op(double tokens, double hidden);

// The operator of a stored row: its class (Measurement::op_class), stream, compute dtype, FLOPs and
// bytes as stored; shape, variant and critical path when params_json has the keys the published
// importer writes (gemm: m, n, k, dtype; attention: batch, kv_len or isl, num_heads, num_kv_heads,
// head_dim, kv_dtype; collective: bytes, ranks). Rows without them (kvplan's own runner) get no
// shape, so no grid. Throws ConfigError for an unknown op_class.
StepOp row_op(const Measurement& m);

}  // namespace kvplan::calibration
