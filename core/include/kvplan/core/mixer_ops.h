// kvplan/core/mixer_ops.h — the operators of today's attention variants that have published tables
// of their own: MLA (prefill, absorbed decode, absorb BMMs), Gated DeltaNet and Mamba's causal conv1d.
//
//   StepOp op = mla_decode_op(MlaOpEngine::kSglang, dims, /*sequences=*/64, /*kv_tokens=*/64 * 4096, ...);
//   StepOp row = mla_decode_op(...)   // calibration/row_ops.cpp builds a table row's op with the same call
//
// One formula per operator, shared by the step's operator list (step_ops.cpp) and by the rows of the
// published tables (calibration/row_ops.cpp), so a profile fitted on the rows prices the step's ops
// with the same arithmetic. Which engine's table prices an MLA kernel is its grid variant
// ("sglang_bf16", "trtllm_fp8_e4m3", "vllm_pre_bf16"): the engines run different kernels.
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/core/dtype.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/step_ops.h"

namespace kvplan {

// Whose published MLA tables price an MLA kernel. vLLM has a bare table only for its absorb BMMs
// (its attention is published as a whole module, README §6c): its attention kernel is priced by
// SGLang's table (the same FA3 MLA kernel on Hopper, TRT-LLM-gen MLA on Blackwell), said in
// explanations.
enum class MlaOpEngine : uint8_t { kVllm, kSglang, kTrtllm };
MlaOpEngine mla_op_engine(Engine e);  // static -> vLLM
const char* mla_op_engine_label(MlaOpEngine e);  // "vLLM", "SGLang", "TensorRT-LLM"
// The engine whose attention-kernel table prices this engine's MLA attention.
MlaOpEngine mla_attention_table(MlaOpEngine e);

struct MlaDims {
  int64_t kv_lora_rank = 512;   // r
  int64_t rope_dim = 64;        // R
  int64_t nope_dim = 128;       // n
  int64_t v_dim = 128;          // v
};

// MLA prefill attention (the non-absorbed form every engine runs for prefill): K_nope and V of each
// attended token decompressed per head, qk dim n + R, v dim v.
//   FLOPs 2·pairs·heads·(n + R + v), bytes (new + kv_tokens)·heads·(n + R + v)·2
// Shape {sequences, new tokens per sequence, heads}; variant "<engine>_<kv dtype>".
StepOp mla_prefill_op(MlaOpEngine engine, const MlaDims& d, double sequences, double new_tokens, double pairs,
                      double kv_tokens, int64_t heads, DType kv_dtype);

// MLA prefill attention in the absorbed form: every head attends the new tokens' (r + R)-wide latent
// (one shared head, the K side r + R, the V side r), queries and outputs in the latent space. No
// engine runs it for a prompt without a cached prefix (SGLang's fa3 backend takes MHA then:
// deepseek_v2.py _handle_attention_backend), but aiconfigurator's SGLang Hopper table times this
// form (collector/sglang/collect_mla.py: head_dim 576, v_head_dim 512, one KV head on fa3), so its
// rows are read with these FLOPs and bytes and the fitted rate prices mla_prefill_op.
//   FLOPs 2·pairs·heads·(2r + R), bytes new·heads·(2r + R)·2 + kv_tokens·(r + R)·2
// Shape and variant as mla_prefill_op.
StepOp mla_absorbed_prefill_op(MlaOpEngine engine, const MlaDims& d, double sequences, double new_tokens,
                               double pairs, double kv_tokens, int64_t heads, DType kv_dtype);

// MLA absorbed decode over the latent cache: every head attends the same (r + R)-wide latent per
// token (the K side r + R, the V side r), queries and outputs in the latent space.
//   FLOPs 2·q·kv_tokens·heads·(2r + R), bytes query_tokens·heads·(2r + R)·2 + kv_bytes
// kv_bytes are the latent cache bytes read (r + R per token in the cache dtype), never per-head K/V.
// Critical path: the longest sequence over ceil(heads / 64) x kDecodeMaxSplits CTAs (FlashMLA).
// Shape {sequences, kv tokens per sequence, heads}; variant "<engine>_<kv dtype>".
StepOp mla_decode_op(MlaOpEngine engine, const MlaDims& d, double sequences, double kv_tokens, double kv_tokens_max,
                     double kv_bytes, double kv_bytes_per_token, int query_tokens_per_sequence, int64_t heads,
                     DType kv_dtype);

// MLA decode absorb BMMs, one batched GEMM over the heads: pre = q_nope[T, heads, n] x W_UK[heads, n, r],
// post = out[T, heads, r] x W_UV[heads, r, v].
//   FLOPs 2·T·heads·in·out, bytes heads·in·out·s(weights) + T·heads·(in + out)·2
// `fp8`: the engine's fp8 BMM (SGLang sgl_kernel bmm_fp8, TRT-LLM fp8 block-scaling) at the fp8 rate.
// Shape {tokens, heads}; variant "<engine>_<pre|post>_<bf16|fp8>".
StepOp mla_bmm_op(MlaOpEngine engine, const MlaDims& d, bool pre, double tokens, int64_t heads, bool fp8);

// Gated DeltaNet core of one layer on one GPU, as vLLM runs it: the causal conv1d over the packed
// q/k/v channels (2·hk·dk + hv·dv) and the chunked delta-rule scan (prefill) or the fused recurrent
// update (decode), with the recurrent state read and written once per sequence.
//   FLOPs tokens·hv·(6·dk·dv [+ 64·(dk + dv) prefill]) + 2·tokens·channels·d_conv
//   bytes 2·sequences·state_bytes + tokens·(2·hk·dk + 2·hv·dv)·2 + 2·tokens·channels·2
// Shape {sequences, tokens per sequence, hv}; variant "prefill" / "decode".
StepOp gated_deltanet_op(bool prefill, double sequences, double tokens, int64_t hk, int64_t dk, int64_t hv,
                         int64_t dv, int d_conv, double state_bytes_per_sequence);

// Kimi delta attention core of one layer on one GPU (Kimi-Linear; vLLM layers/kda.py with the fla
// Triton kernels chunk_kda / fused_recurrent_kda, which SGLang runs too): three causal conv1d calls
// over q, k (heads·dk each) and v (heads·dv), and the chunked KDA scan (prefill) or the fused
// recurrent update (decode). The delta rule of Gated DeltaNet with a per-channel decay of the state
// (one more dk·dv multiply per token and head).
//   FLOPs tokens·heads·(7·dk·dv [+ 64·(dk + dv) prefill]) + 2·tokens·channels·d_conv
//   bytes 2·sequences·state_bytes + tokens·heads·(3·dk + 2·dv)·2 + 2·tokens·channels·2
//   (q, k, the decay g, v in; o out), channels = heads·(2·dk + dv)
// Shape {sequences, tokens per sequence, heads}; variant "prefill" / "decode".
StepOp kimi_delta_op(bool prefill, double sequences, double tokens, int64_t heads, int64_t dk, int64_t dv, int d_conv,
                     double state_bytes_per_sequence);

// DeepSeek-V4's whole attention module of one layer on one GPU, as vLLM's DeepseekV4Attention runs it
// and the published module tables time it (README §7b): q LoRA (wq_a, q_norm, wq_b), the shared latent
// (wkv, kv_norm), RoPE, the compressor (CSA, HCA), the indexer and its top-k (CSA), the cache writes,
// sparse MLA over the 128-token window plus the compressed latents (CSA: the top index_topk; HCA: all),
// and the grouped output (wo_a, wo_b). `context` is the summed cached prefix of the prefill chunks, or
// the summed past of the decode sequences (the new token excluded). Weights in fp8 (`fp8_weights`, the
// released checkpoints' projections) or 16-bit; the compressors and weights_proj are bf16 either way.
//   FLOPs 2·tokens·(projection parameters) + 4·tokens·heads·head_dim·(window + compressed attended)
//         [+ CSA indexer: 2·tokens·index_heads·index_dim·keys / 4]
//   bytes weights + tokens·(hidden + heads·head_dim)·2·2 + the cache entries read (584 B each)
// Shape prefill {sequences, new tokens, cached tokens, heads} and decode {sequences, past tokens,
// heads} per sequence; variant "<flash|pro>_<csa|hca>_<prefill|decode>" (the published geometry
// nearest the model's hidden size). A sliding-window-only layer (ratio 0) is priced as HCA, as NVIDIA's
// aiconfigurator does.
StepOp dsv4_attention_op(bool prefill, int compress_ratio, const CompressedAttentionShape& a, int64_t hidden,
                         int64_t heads, double sequences, double tokens, double context, bool fp8_weights);

// DeepSeek-V4's manifold hyper-connections of one layer: `pre` mixes the hc_mult residual streams into
// each sublayer's input (an fp32 projection of [tokens, hc x hidden], Sinkhorn-normalised), `post`
// folds each sublayer's output back; one op covers both sites (before attention, before the MoE),
// as the published table times two calls (README §7f).
//   FLOPs 2 sites·2·tokens·(2 + hc)·hc·hc·hidden, bytes 2 sites·tokens·(hc + 1)·hidden·2 (+ the
//   projection's fp32 weights)
// Shape {tokens, hidden}; variant "pre" / "post".
StepOp mhc_op(bool pre, double tokens, int hc_mult, int64_t hidden);

// MiniMax sparse attention (MiniMax-M3's sparse layers), whole model.
struct MsaDims {
  int64_t hidden = 0;
  int64_t heads = 0;       // query heads
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t index_dim = 0;   // one index key per token (replicated on every GPU); index query heads = KV heads
  int64_t block = 0;       // sparse block, tokens
  int64_t topk_blocks = 0;
};

// A model's MSA geometry (ModelConfig::attention and ::msa).
MsaDims msa_dims(const ModelConfig& model);

// One sparse layer's whole attention module on one GPU, as vLLM's MiniMaxM3SparseAttention runs it and
// the published module table times it (README §7d): the fused q/k/v/index-q/index-k projection (fp8
// block weights as collected, else 16-bit), per-head norms, partial RoPE and the paged K/V and index-key
// inserts, the indexer (a dot product with every cached index key, max per block, top `topk_blocks`
// blocks per KV head), block-sparse GQA attention over the selected blocks and o_proj. `context` is
// the summed cached prefix of the prefill chunks, or the summed past of the decode sequences (the new
// token excluded). KV heads per GPU max(1, kv_heads x heads / d.heads).
//   FLOPs 2·tokens·(projection parameters) + 2·tokens·kv_heads·index_dim·seen
//         + 4·tokens·heads·head_dim·min(seen, topk_blocks·block)
//   bytes weights + tokens·(hidden + heads·head_dim)·2·2 + every cached index key (bf16) + the selected
//         K/V (at the KV dtype) + the cache inserts
// Shape prefill {sequences, new tokens, cached tokens, heads} and decode {sequences, past tokens, heads}
// per sequence; variant "<bf16|fp8>_<prefill|decode>" by the KV dtype.
StepOp msa_attention_op(bool prefill, const MsaDims& d, int64_t heads, double sequences, double tokens, double context,
                        bool fp8_kv, bool fp8_weights);

// Causal conv1d over `channels` (Mamba-2: d_inner + 2·n_groups·d_state) with kernel d_conv:
// prefill causal_conv1d_fn, decode causal_conv1d_update (reads and writes the (d_conv - 1)-token state).
//   FLOPs 2·tokens·channels·d_conv, bytes 2·tokens·channels·2 + 2·sequences·(d_conv - 1)·channels·2
// Shape {sequences, tokens per sequence, channels}; variant "prefill" / "decode".
StepOp conv1d_op(bool prefill, double sequences, double tokens, int64_t channels, int d_conv);

// DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): a lightning indexer scores every key a query
// sees, a top-k keeps `topk` of them, and MLA attention reads only those (DeepSeek-V3.2 tech report
// §2.1; vLLM deepseek_v2.py Indexer and the FLASHMLA_SPARSE backend; SGLang nsa_backend.py).
struct DsaDims {
  int64_t index_heads = 64;  // index_n_heads: the indexer runs all of them on every GPU (replicated)
  int64_t index_dim = 128;   // index_head_dim: fp8 keys with one fp32 scale per 128
  int64_t topk = 2048;       // index_topk
};

// Indexer logits. Every query token scores every key it sees with index_heads fp8 heads of
// index_dim, the heads' ReLU'd scores weighted and summed into one fp32 logit per (query, key).
//   FLOPs 2·pairs·index_heads·index_dim, bytes keys·(index_dim + 4) + query_tokens·index_heads·(index_dim + 4) + 4·pairs
// `keys`: key-cache tokens read (once per sequence); `pairs`: the (query, key) pairs scored.
// Prefill: DeepGEMM fp8_mqa_logits, the dsa_indexer class (SGLang's GLM-5 kernel table), shape
// {sequences, query tokens per sequence, keys per query token}. Decode: fp8_paged_mqa_logits, which
// has no published bare-kernel table: the attention_decode class prices it as the paged decode read
// it is (one fp8 key head, index_heads query heads), shape {sequences, keys per sequence,
// index_heads, 1}, fp8 grid.
StepOp dsa_indexer_op(bool prefill, const DsaDims& d, double sequences, double query_tokens, double pairs, double keys);

// Top-k over each query token's logits: the 4-byte logits read, topk int32 indices written.
//   FLOPs pairs, bytes 4·pairs + 4·query_tokens·topk
// Shape {sequences, query tokens per sequence, keys per query token}; variant "prefill" / "decode".
StepOp dsa_topk_op(bool prefill, const DsaDims& d, double sequences, double query_tokens, double pairs);

// Prefill sparse MLA attention over the selected latents, absorbed form (FlashMLA
// flash_mla_sparse_fwd: qk width r + R, v width r, queries and outputs in the latent space): each
// query token reads its own <= topk latents. Heads are padded to the kernel's 64-head tile.
//   FLOPs 2·sparse_pairs·padded_heads·(2r + R),
//   bytes sparse_pairs·latent_bytes_per_token + query_tokens·heads·(2r + R)·2
// Shape {sequences, query tokens per sequence, padded heads}; variant "prefill". Decode reads at most
// topk latents per sequence with FlashMLA's decode kernel: mla_decode_op over the selected latents.
StepOp dsa_prefill_attention_op(const MlaDims& m, double sequences, double query_tokens, double sparse_pairs,
                                double latent_bytes_per_token, int64_t heads);

// What an operator of this file (or vLLM's all-reduce) stands for, for explanations: which engine's
// table prices it and what work it covers, e.g. "absorbed decode over the latent cache; SGLang's
// kernel table (vLLM has none: SGLang's FA3 MLA kernel stands in)". Empty for other operators.
std::string op_detail(const StepOp& op, Engine engine);

}  // namespace kvplan
