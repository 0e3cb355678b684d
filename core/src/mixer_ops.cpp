// The operators of MLA, Gated DeltaNet and Mamba's conv1d (mixer_ops.h): one formula each, for the
// step's operator list and for the published tables' rows.
#include "kvplan/core/mixer_ops.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace kvplan {

namespace {

constexpr double kAct = 2.0;  // bf16 activations, as step_ops.cpp

StepOp make(const char* name, OpClass c, double flops, double bytes) {
  StepOp op;
  op.name = name;
  op.op_class = c;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

// Grid variants are static strings (StepOp::grid_variant): [engine][fp8 KV].
constexpr const char* kAttentionVariants[3][2] = {
    {"vllm_bf16", "vllm_fp8"}, {"sglang_bf16", "sglang_fp8"}, {"trtllm_bf16", "trtllm_fp8"}};
// [engine][post][fp8]
constexpr const char* kBmmVariants[3][2][2] = {
    {{"vllm_pre_bf16", "vllm_pre_fp8"}, {"vllm_post_bf16", "vllm_post_fp8"}},
    {{"sglang_pre_bf16", "sglang_pre_fp8"}, {"sglang_post_bf16", "sglang_post_fp8"}},
    {{"trtllm_pre_bf16", "trtllm_pre_fp8"}, {"trtllm_post_bf16", "trtllm_post_fp8"}}};

}  // namespace

MlaOpEngine mla_op_engine(Engine e) {
  switch (e) {
    case Engine::kSglang: return MlaOpEngine::kSglang;
    case Engine::kTrtllm: return MlaOpEngine::kTrtllm;
    case Engine::kVllm:
    case Engine::kStatic: break;
  }
  return MlaOpEngine::kVllm;
}

const char* mla_op_engine_label(MlaOpEngine e) {
  switch (e) {
    case MlaOpEngine::kSglang: return "SGLang";
    case MlaOpEngine::kTrtllm: return "TensorRT-LLM";
    case MlaOpEngine::kVllm: break;
  }
  return "vLLM";
}

MlaOpEngine mla_attention_table(MlaOpEngine e) { return e == MlaOpEngine::kVllm ? MlaOpEngine::kSglang : e; }

namespace {

// Either form of MLA prefill attention: its FLOPs and bytes, then the shape and grid variant both
// forms share (the fitted rate of one prices the other).
StepOp mla_prefill_attention(MlaOpEngine engine, double flops, double bytes, double sequences, double new_tokens,
                             int64_t heads, DType kv_dtype) {
  StepOp op = make("attention_prefill", OpClass::kMlaPrefill, flops, bytes);
  const double seqs = std::max(1.0, sequences);
  op.shape = OpShape{{seqs, new_tokens / seqs, static_cast<double>(heads), 0}, 3};
  op.grid_dtype = kv_dtype;
  op.grid_variant = kAttentionVariants[static_cast<int>(mla_attention_table(engine))][is_fp8(kv_dtype) ? 1 : 0];
  return op;
}

}  // namespace

StepOp mla_prefill_op(MlaOpEngine engine, const MlaDims& d, double sequences, double new_tokens, double pairs,
                      double kv_tokens, int64_t heads, DType kv_dtype) {
  const double width = static_cast<double>(heads * (d.nope_dim + d.rope_dim + d.v_dim));
  return mla_prefill_attention(engine, 2.0 * pairs * width, new_tokens * width * kAct + kv_tokens * width * kAct,
                               sequences, new_tokens, heads, kv_dtype);
}

StepOp mla_absorbed_prefill_op(MlaOpEngine engine, const MlaDims& d, double sequences, double new_tokens,
                               double pairs, double kv_tokens, int64_t heads, DType kv_dtype) {
  const double width = static_cast<double>(heads * (2 * d.kv_lora_rank + d.rope_dim));
  const double latent = static_cast<double>(d.kv_lora_rank + d.rope_dim);
  return mla_prefill_attention(engine, 2.0 * pairs * width, new_tokens * width * kAct + kv_tokens * latent * kAct,
                               sequences, new_tokens, heads, kv_dtype);
}

StepOp mla_decode_op(MlaOpEngine engine, const MlaDims& d, double sequences, double kv_tokens, double kv_tokens_max,
                     double kv_bytes, double kv_bytes_per_token, int query_tokens_per_sequence, int64_t heads,
                     DType kv_dtype) {
  const double width = static_cast<double>(heads * (2 * d.kv_lora_rank + d.rope_dim));
  const double seqs = std::max(1.0, sequences);
  StepOp op = make("attention_decode", OpClass::kMlaDecode, 2.0 * query_tokens_per_sequence * kv_tokens * width,
                   seqs * query_tokens_per_sequence * width * kAct + kv_bytes);
  op.critical_bytes = kv_tokens_max * kv_bytes_per_token;
  op.critical_ctas = static_cast<int>((heads + kMlaHeadsPerCta - 1) / kMlaHeadsPerCta) * kDecodeMaxSplits;
  op.shape = OpShape{{seqs, kv_tokens / seqs, static_cast<double>(heads), 0}, 3};
  op.grid_dtype = kv_dtype;
  op.grid_variant = kAttentionVariants[static_cast<int>(mla_attention_table(engine))][is_fp8(kv_dtype) ? 1 : 0];
  return op;
}

StepOp mla_bmm_op(MlaOpEngine engine, const MlaDims& d, bool pre, double tokens, int64_t heads, bool fp8) {
  // vLLM has no fp8 BMM path (README §6e): its BMMs stay bf16 whatever the weights.
  if (engine == MlaOpEngine::kVllm) fp8 = false;
  const double in = static_cast<double>(pre ? d.nope_dim : d.kv_lora_rank);
  const double out = static_cast<double>(pre ? d.kv_lora_rank : d.v_dim);
  const double h = static_cast<double>(heads);
  StepOp op = make(pre ? "q_absorb" : "v_absorb", OpClass::kMlaBmm, 2.0 * tokens * h * in * out,
                   h * in * out * (fp8 ? 1.0 : kAct) + tokens * h * (in + out) * kAct);
  op.dtype = fp8 ? DType::kFp8E4M3 : DType::kBF16;
  op.grid_dtype = op.dtype;
  op.shape = OpShape{{tokens, h, 0, 0}, 2};
  op.grid_variant = kBmmVariants[static_cast<int>(engine)][pre ? 0 : 1][fp8 ? 1 : 0];
  return op;
}

StepOp dsa_indexer_op(bool prefill, const DsaDims& d, double sequences, double query_tokens, double pairs,
                      double keys) {
  const double hd = static_cast<double>(d.index_heads * d.index_dim);
  const double key_bytes = static_cast<double>(d.index_dim + d.index_dim / 128 * 4);
  const double query_bytes = static_cast<double>(d.index_heads) * key_bytes;
  StepOp op = make("dsa_indexer", prefill ? OpClass::kDsaIndexer : OpClass::kAttentionDecode, 2.0 * pairs * hd,
                   keys * key_bytes + query_tokens * query_bytes + 4.0 * pairs);
  const double seqs = std::max(1.0, sequences);
  if (prefill) {
    op.dtype = DType::kFp8E4M3;
    op.grid_dtype = DType::kFp8E4M3;
    op.shape = OpShape{{seqs, query_tokens / seqs, pairs / std::max(1.0, query_tokens), 0}, 3};
    op.grid_variant = "prefill";
  } else {
    op.grid_dtype = DType::kFp8E4M3;  // the paged decode table's fp8-KV grid
    op.shape = OpShape{{seqs, keys / seqs, static_cast<double>(d.index_heads), 1}, 4};
  }
  return op;
}

StepOp dsa_topk_op(bool prefill, const DsaDims& d, double sequences, double query_tokens, double pairs) {
  StepOp op = make("dsa_topk", OpClass::kDsaTopk, pairs, 4.0 * pairs + 4.0 * query_tokens * static_cast<double>(d.topk));
  const double seqs = std::max(1.0, sequences);
  op.shape = OpShape{{seqs, query_tokens / seqs, pairs / std::max(1.0, query_tokens), 0}, 3};
  op.grid_variant = prefill ? "prefill" : "decode";
  return op;
}

StepOp dsa_prefill_attention_op(const MlaDims& m, double sequences, double query_tokens, double sparse_pairs,
                                double latent_bytes_per_token, int64_t heads) {
  const int64_t padded = (heads + kMlaHeadsPerCta - 1) / kMlaHeadsPerCta * kMlaHeadsPerCta;
  const double width = static_cast<double>(2 * m.kv_lora_rank + m.rope_dim);
  StepOp op = make("attention_prefill", OpClass::kDsaAttention, 2.0 * sparse_pairs * static_cast<double>(padded) * width,
                   sparse_pairs * latent_bytes_per_token + query_tokens * static_cast<double>(heads) * width * kAct);
  const double seqs = std::max(1.0, sequences);
  op.shape = OpShape{{seqs, query_tokens / seqs, static_cast<double>(padded), 0}, 3};
  op.grid_variant = "prefill";
  return op;
}

StepOp gated_deltanet_op(bool prefill, double sequences, double tokens, int64_t hk, int64_t dk, int64_t hv,
                         int64_t dv, int d_conv, double state_bytes_per_sequence) {
  constexpr double kChunk = 64;  // the chunked delta rule's chunk (fla / FlashInfer)
  const double channels = static_cast<double>(2 * hk * dk + hv * dv);
  const double per_head = 6.0 * static_cast<double>(dk * dv) + (prefill ? kChunk * static_cast<double>(dk + dv) : 0.0);
  const double io = static_cast<double>(2 * hk * dk + 2 * hv * dv) * kAct;  // q, k, v, gates in; o out
  StepOp op = make(prefill ? "gdn_prefill" : "gdn_decode", OpClass::kGatedDeltaNet,
                   tokens * static_cast<double>(hv) * per_head + 2.0 * tokens * channels * d_conv,
                   2.0 * sequences * state_bytes_per_sequence + tokens * io + 2.0 * tokens * channels * kAct);
  op.kernels = 2;
  const double seqs = std::max(1.0, sequences);
  op.shape = OpShape{{seqs, tokens / seqs, static_cast<double>(hv), 0}, 3};
  op.grid_variant = prefill ? "prefill" : "decode";
  return op;
}

StepOp kimi_delta_op(bool prefill, double sequences, double tokens, int64_t heads, int64_t dk, int64_t dv, int d_conv,
                     double state_bytes_per_sequence) {
  constexpr double kChunk = 64;  // chunk_kda's chunk
  const double h = static_cast<double>(heads);
  const double channels = h * static_cast<double>(2 * dk + dv);
  const double per_head = 7.0 * static_cast<double>(dk * dv) + (prefill ? kChunk * static_cast<double>(dk + dv) : 0.0);
  const double io = h * static_cast<double>(3 * dk + 2 * dv) * kAct;
  StepOp op = make(prefill ? "kda_prefill" : "kda_decode", OpClass::kKimiDelta,
                   tokens * h * per_head + 2.0 * tokens * channels * d_conv,
                   2.0 * sequences * state_bytes_per_sequence + tokens * io + 2.0 * tokens * channels * kAct);
  op.kernels = 2;
  const double seqs = std::max(1.0, sequences);
  op.shape = OpShape{{seqs, tokens / seqs, h, 0}, 3};
  op.grid_variant = prefill ? "prefill" : "decode";
  return op;
}

StepOp dsv4_attention_op(bool prefill, int compress_ratio, const CompressedAttentionShape& a, int64_t hidden,
                         int64_t heads, double sequences, double tokens, double context, bool fp8_weights) {
  const bool csa = compress_ratio == 4;
  const int r = compress_ratio == 4 ? 4 : 128;  // a ratio-0 layer is priced as HCA
  const double h = static_cast<double>(hidden), H = static_cast<double>(heads), hd = a.head_dim;
  const double qr = a.q_lora_rank;
  const double groups = H * a.o_groups / a.num_heads;
  const double coff = csa ? 2.0 : 1.0;
  // projections: fp8 (or 16-bit) wq_a, wq_b, wkv, wo_a, wo_b (+ the indexer's wq_b); bf16 compressors
  double quantized = qr * h + H * hd * qr + hd * h + H * hd * a.o_lora_rank + h * groups * a.o_lora_rank;
  double bf16 = 2.0 * coff * hd * h;
  if (csa) {
    quantized += static_cast<double>(a.index_num_heads) * a.index_head_dim * qr;
    bf16 += static_cast<double>(a.index_num_heads) * h + 4.0 * a.index_head_dim * h;
  }
  const double seqs = std::max(1.0, sequences);
  const double per_seq = tokens / seqs;
  const double past = context / seqs;
  const double seen = prefill ? past + per_seq / 2 : past + 1;  // keys a query sees, on average
  const double compressed = seen / r;
  const double attended = std::min(seen, static_cast<double>(a.window)) +
                          (csa ? std::min(compressed, static_cast<double>(a.index_topk)) : compressed);
  double flops = 2.0 * tokens * (quantized + bf16) + 4.0 * tokens * H * hd * attended;
  if (csa) flops += 2.0 * tokens * a.index_num_heads * a.index_head_dim * compressed;
  constexpr double kLatentBytes = 584, kIndexerBytes = 132;
  const double reads = sequences * ((prefill ? std::min(past + per_seq, static_cast<double>(a.window)) : a.window) +
                                    (past + per_seq) / r) * kLatentBytes +
                       (csa ? sequences * (past + per_seq) / 4 * kIndexerBytes : 0.0);
  const double bytes = quantized * (fp8_weights ? 1.0 : 2.0) + bf16 * 2.0 + tokens * (h + H * hd) * 2.0 * kAct + reads;
  StepOp op = make(prefill ? "attention_prefill" : "attention_decode", OpClass::kDsv4Attention, flops, bytes);
  op.kernels = csa ? 12 : 9;
  op.shape = prefill ? OpShape{{seqs, per_seq, std::max(past, 1.0), H}, 4} : OpShape{{seqs, std::max(past, 1.0), H, 0}, 3};
  // One grid per published geometry (V4-Flash, hidden 4,096; V4-Pro, 7,168): the two models' modules
  // share head counts but not their projections' ratio to the roofline. Another hidden size takes the
  // nearer one's.
  const bool pro = hidden > 5632;
  static constexpr const char* kVariants[2][2][2] = {
      {{"flash_hca_decode", "flash_hca_prefill"}, {"flash_csa_decode", "flash_csa_prefill"}},
      {{"pro_hca_decode", "pro_hca_prefill"}, {"pro_csa_decode", "pro_csa_prefill"}}};
  op.grid_variant = kVariants[pro ? 1 : 0][csa ? 1 : 0][prefill ? 1 : 0];
  return op;
}

StepOp mhc_op(bool pre, double tokens, int hc_mult, int64_t hidden) {
  constexpr double kSites = 2;
  const double hc = hc_mult, h = static_cast<double>(hidden);
  const double mix = (2.0 + hc) * hc;
  StepOp op = make(pre ? "mhc_pre" : "mhc_post", OpClass::kMhc,
                   kSites * 2.0 * tokens * (pre ? mix * hc * h : (hc + 1.0) * hc * h),
                   kSites * (tokens * (hc + 1.0) * h * kAct + (pre ? mix * hc * h * 4.0 : 0.0)));
  op.kernels = 2;
  op.shape = OpShape{{std::max(tokens, 1.0), h, 0, 0}, 2};
  op.grid_variant = pre ? "pre" : "post";
  return op;
}

MsaDims msa_dims(const ModelConfig& m) {
  MsaDims d;
  d.hidden = m.hidden_size;
  d.heads = m.attention.num_q_heads;
  d.kv_heads = m.attention.num_kv_heads;
  d.head_dim = m.attention.head_dim;
  d.index_dim = m.msa.index_head_dim;
  d.block = m.msa.block_size;
  d.topk_blocks = m.msa.topk_blocks;
  return d;
}

StepOp msa_attention_op(bool prefill, const MsaDims& d, int64_t heads, double sequences, double tokens, double context,
                        bool fp8_kv, bool fp8_weights) {
  const double H = static_cast<double>(heads), hd = static_cast<double>(d.head_dim), h = static_cast<double>(d.hidden);
  const double kvh = std::max(1.0, static_cast<double>(d.kv_heads) * H / static_cast<double>(std::max<int64_t>(1, d.heads)));
  const double idx = static_cast<double>(d.index_dim);
  // fused [q | k | v | index_q | index_k] and o_proj on this GPU
  const double params = h * (H * hd + 2.0 * kvh * hd + kvh * idx + idx) + H * hd * h;
  const double seqs = std::max(1.0, sequences);
  const double per_seq = tokens / seqs;
  const double past = context / seqs;
  const double seen = prefill ? past + per_seq / 2 : past + 1;  // keys a query sees, on average
  const double selected = static_cast<double>(d.topk_blocks * d.block);
  const double attended = std::min(seen, selected);
  const double flops = 2.0 * tokens * params + 2.0 * tokens * kvh * idx * seen + 4.0 * tokens * H * hd * attended;
  const double kv_bytes = fp8_kv ? 1.0 : 2.0;
  const double held = past + per_seq;  // each sequence's keys after the step
  const double reads = sequences * (held * idx * 2.0 + kvh * 2.0 * hd * kv_bytes * std::min(held, selected));
  const double writes = tokens * (kvh * 2.0 * hd * kv_bytes + idx * 2.0);
  const double bytes = params * (fp8_weights ? 1.0 : 2.0) + tokens * (h + H * hd) * 2.0 * kAct + reads + writes;
  StepOp op = make(prefill ? "attention_prefill" : "attention_decode", OpClass::kMsaAttention, flops, bytes);
  op.kernels = 6;
  op.shape = prefill ? OpShape{{seqs, per_seq, std::max(past, 1.0), H}, 4} : OpShape{{seqs, std::max(past, 1.0), H, 0}, 3};
  static constexpr const char* kVariants[2][2] = {{"bf16_decode", "bf16_prefill"}, {"fp8_decode", "fp8_prefill"}};
  op.grid_variant = kVariants[fp8_kv ? 1 : 0][prefill ? 1 : 0];
  return op;
}

StepOp conv1d_op(bool prefill, double sequences, double tokens, int64_t channels, int d_conv) {
  const double ch = static_cast<double>(channels);
  StepOp op = make("conv1d", OpClass::kConv1d, 2.0 * tokens * ch * d_conv,
                   2.0 * tokens * ch * kAct + 2.0 * sequences * (d_conv - 1) * ch * kAct);
  const double seqs = std::max(1.0, sequences);
  op.shape = OpShape{{seqs, tokens / seqs, ch, 0}, 3};
  op.grid_variant = prefill ? "prefill" : "decode";
  return op;
}

std::string op_detail(const StepOp& op, Engine engine) {
  const MlaOpEngine e = mla_op_engine(engine);
  const std::string variant = op.grid_variant != nullptr ? op.grid_variant : "";
  const bool fp8 = variant.find("fp8") != std::string::npos;
  switch (op.op_class) {
    case OpClass::kMlaPrefill:
    case OpClass::kMlaDecode: {
      const MlaOpEngine table = mla_attention_table(e);
      const bool topk = std::strcmp(op.name, "attention_decode_topk") == 0;
      const std::string what = op.op_class == OpClass::kMlaDecode
                                   ? fmt::format("absorbed decode over the {} ({} KV)",
                                                 topk ? "top-k latents the DSA indexer selected" : "latent cache",
                                                 fp8 ? "fp8" : "bf16")
                                   : std::string("prefill attention after kv_b_proj (per-head K/V)");
      if (op.op_class == OpClass::kMlaPrefill && table == MlaOpEngine::kSglang) {
        return fmt::format("{}; the FLOP rate of SGLang's MLA kernel table, whose Hopper rows time FA3 in the absorbed "
                           "form (576-wide QK, 512-wide V, one latent head) and are read as that form{}",
                           what, e == table ? "" : fmt::format(" ({} publishes its MLA attention only as a whole "
                                                               "module)", mla_op_engine_label(e)));
      }
      if (table == e) return fmt::format("{}; {}'s MLA kernel table", what, mla_op_engine_label(e));
      return fmt::format("{}; {}'s MLA kernel table ({} publishes its MLA attention only as a whole module: the same "
                         "FA3 / TRT-LLM-gen MLA kernel stands in)",
                         what, mla_op_engine_label(table), mla_op_engine_label(e));
    }
    case OpClass::kMlaBmm:
      return fmt::format("{} absorb BMM, {}, {}'s table", std::strncmp(op.name, "q_absorb", 8) == 0 ? "W_UK" : "W_UV",
                         fp8 ? "fp8" : "bf16", mla_op_engine_label(e));
    case OpClass::kGatedDeltaNet:
      return variant == "prefill" ? "causal conv1d + chunked gated delta rule (vLLM's kernels)"
                                  : "causal conv1d update + fused recurrent gated delta rule (vLLM's kernels)";
    case OpClass::kKimiDelta:
      return variant == "prefill" ? "q/k/v causal conv1d + chunk_kda (fla Triton kernels; SGLang's table)"
                                  : "causal conv1d update + fused recurrent KDA (fla Triton kernels; SGLang's table)";
    case OpClass::kDsv4Attention: {
      const bool csa = variant.find("csa") != std::string::npos;
      return fmt::format("DeepSeek-V4 {} attention module ({}): projections, compressor{}, cache writes and sparse MLA "
                         "over the window and the {}; vLLM 0.24's module table, V4-{} geometry",
                         csa ? "CSA" : "HCA", variant.find("prefill") != std::string::npos ? "prefill" : "decode",
                         csa ? ", indexer and top-k" : "", csa ? "top-k compressed latents" : "compressed latents",
                         variant.rfind("pro", 0) == 0 ? "Pro" : "Flash");
    }
    case OpClass::kMhc:
      return variant == "pre" ? "hyper-connection mixing into both sublayers' inputs (vLLM TileLang mhc_pre, two sites)"
                              : "hyper-connection folding of both sublayers' outputs (vLLM TileLang mhc_post, two sites)";
    case OpClass::kMsaAttention:
      return fmt::format("MiniMax sparse attention module ({}, {} KV): fused projections, norms, RoPE and cache inserts, "
                         "the indexer over every cached index key, top-k blocks, block-sparse attention and o_proj; vLLM "
                         "0.24's module table",
                         variant.find("prefill") != std::string::npos ? "prefill" : "decode",
                         variant.rfind("fp8", 0) == 0 ? "fp8" : "bf16");
    case OpClass::kConv1d:
      return variant == "prefill" ? "causal_conv1d_fn (TensorRT-LLM Mamba-2 table)"
                                  : "causal_conv1d_update (TensorRT-LLM Mamba-2 table)";
    case OpClass::kDsaIndexer: return "indexer fp8 MQA logits over every visible key (DeepGEMM fp8_mqa_logits)";
    case OpClass::kDsaTopk: return "top-k of each query's indexer logits (SGLang fast_topk_transform_fused)";
    case OpClass::kDsaAttention:
      return "sparse MLA over the top-k latents, absorbed form (FlashMLA flash_mla_sparse_fwd; SGLang's dense "
             "prefill of short prompts is not modelled)";
    case OpClass::kAttentionDecode:
      if (std::strcmp(op.name, "dsa_indexer") == 0) {
        return "indexer fp8 paged MQA logits (DeepGEMM fp8_paged_mqa_logits): no bare-kernel table is published; "
               "priced as a paged decode read by the attention_decode class (fp8 keys, one key head)";
      }
      return "";
    case OpClass::kCollective:
      if (variant == "vllm_all_reduce") return "vLLM tensor_model_parallel_all_reduce table (custom kernel / NCCL by size)";
      return "";
    default: return "";
  }
}

}  // namespace kvplan
