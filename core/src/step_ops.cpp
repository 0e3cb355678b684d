// The operator list of one engine step on one GPU. Every formula is per layer instance and per GPU
// (tensor-parallel shard); docs/cost-model.md lists them with their reasons.
#include "kvplan/core/step_ops.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/mixer_ops.h"

namespace kvplan {

namespace {

constexpr double kAct = 2.0;       // activation bytes: engines run bf16/fp16 activations
constexpr double kLogit = 4.0;     // fp32 logits
constexpr int kSsdChunk = 256;     // Mamba-2 SSD chunk length (mamba_chunk_size default)
constexpr int kDeltaChunk = 64;    // Gated DeltaNet chunked kernel (fla chunk size)
constexpr int kSamplingKernels = 5;  // temperature, softmax, top-k/top-p, sample, gather (assumed)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Bytes of one linear layer's weight matrix [rows, cols], stored quantized or in 16-bit, by the
// rule of weight_quant.h (the same bytes param_count.cpp counts).
double weight_bytes(int64_t rows, int64_t cols, const WeightFormat& f, bool quantized) {
  if (quantized) return static_cast<double>(quantized_linear_bytes(f.quant, rows, cols, f.dtype));
  return static_cast<double>(rows * cols) * (f.dtype == DType::kF32 ? 4.0 : 2.0);
}

struct LayerKey {
  LayerKind kind;
  int window;
  bool shared;
  MlpShape mlp;
  uint8_t quant_mask;
  int compress_ratio = 0;  // DeepSeek-V4: CSA, HCA and window-only layers cost differently
  bool msa_indexer = false;  // MiniMax-M3: sparse and dense attention layers cost differently
  bool operator==(const LayerKey& o) const {
    return kind == o.kind && window == o.window && shared == o.shared && mlp == o.mlp &&
           quant_mask == o.quant_mask && compress_ratio == o.compress_ratio && msa_indexer == o.msa_indexer;
  }
};

class Builder {
 public:
  Builder(const ModelConfig& m, const KvLayout& layout, const Parallelism& p, const StepShape& s,
          const StepOpsOptions& o, StepOps& out)
      : m_(m), layout_(layout), tp_(p.tensor_parallel), ep_(p.expert_parallel_size()), etp_(p.expert_tensor_parallel()),
        dp_(p.data_parallel), s_(s),
        o_(o), out_(out) {
    T_ = static_cast<double>(s.new_tokens());
    Tp_ = static_cast<double>(s.prefill_tokens);
    Td_ = static_cast<double>(s.decode_tokens());
    h_ = m.hidden_size;
  }

  StepOp& add(const char* name, OpClass c, double flops, double bytes, int kernels = 1,
              Stream stream = Stream::kCompute) {
    StepOp op;
    op.name = name;
    op.op_class = c;
    op.stream = stream;
    op.dtype = (c == OpClass::kGemm || c == OpClass::kMoeGemm) && quantized_now() ? o_.gemm_dtype : DType::kBF16;
    op.flops = flops;
    op.bytes = bytes;
    op.kernels = kernels;
    op.layer_type = layer_type_;
    op.group = group_;
    op.repeat = repeat_;
    out_.ops.push_back(op);
    return out_.ops.back();
  }

  // A GEMM of `tokens` rows through a linear layer with weight [n_out, k_in] (per GPU).
  void gemm(const char* name, double tokens, int64_t n_out, int64_t k_in, int kernels = 1,
            OpClass c = OpClass::kGemm) {
    if (tokens <= 0) return;
    const double n = static_cast<double>(n_out);
    const double k = static_cast<double>(k_in);
    StepOp& op = add(name, c, 2.0 * tokens * n * k,
                     weight_bytes(n_out, k_in, o_.weights, quantized_now()) + tokens * (n + k) * kAct, kernels);
    op.shape = OpShape{{tokens, n, k, 0}, 3};
    op.grid_dtype = op.dtype;
  }

  // An op built elsewhere (mixer_ops.h), placed in the current layer type.
  StepOp& push(StepOp op) {
    op.layer_type = layer_type_;
    op.group = group_;
    op.repeat = repeat_;
    out_.ops.push_back(op);
    return out_.ops.back();
  }

  // Whether the module class being emitted is stored quantized in the current layer type.
  bool quantized_now() const { return (layer_mask_ & module_) != 0; }
  void module(uint8_t m) { module_ = m; }

  void norms(const char* name, int count) {
    if (count <= 0 || T_ <= 0) return;
    const double h = h_;
    // read x and the residual, write both back, read the weight: per norm
    add(name, OpClass::kElementwise, count * 5.0 * T_ * h, count * (4.0 * T_ * h * kAct + h * kAct), count);
  }

  void all_reduce(const char* name) {
    if (tp_ <= 1 || T_ <= 0) return;
    // Ring all-reduce: each GPU sends (and receives) 2·(tp−1)/tp of the T·hidden bf16 activations.
    StepOp& op = add(name, OpClass::kCollective, 0, 2.0 * (tp_ - 1) / tp_ * T_ * h_ * kAct, 1, Stream::kComm);
    op.shape = OpShape{{T_ * h_ * kAct, static_cast<double>(tp_), 0, 0}, 2};  // payload bytes, ranks
    if (o_.engine == Engine::kVllm && o_.vllm_all_reduce_table) {
      op.grid_variant = "vllm_all_reduce";  // vLLM's measured all-reduce: its own choice of kernel by size
    } else {
      op.tp_all_reduce = true;
    }
  }

  // An NCCL all-gather or reduce-scatter over the data-parallel ranks of a `total_bytes` buffer
  // (nccl-tests' size: the gathered output, the full input), (dp-1)/dp of it sent by each rank; the
  // profile's collective grid of that name prices it (published NCCL tables).
  void dp_collective(const char* name, const char* variant, double total_bytes) {
    if (dp_ <= 1 || T_ <= 0) return;
    const double n = dp_;
    StepOp& op = add(name, OpClass::kCollective, 0, (n - 1) / n * total_bytes, 1, Stream::kComm);
    op.shape = OpShape{{total_bytes, n, 0, 0}, 2};
    op.grid_variant = variant;
  }

  const GroupStepWork* work() const {
    if (group_ < 0 || static_cast<size_t>(group_) >= s_.groups.size()) return nullptr;
    return &s_.groups[static_cast<size_t>(group_)];
  }
  const KvLayerGroup& group() const { return layout_.groups()[static_cast<size_t>(group_)]; }

  void kv_write(int64_t elements_per_token) {
    if (shared_ || T_ <= 0) return;
    const double bpt = group().bytes_per_token;
    const bool quantized = layout_.scheme().kv_dtype != DType::kBF16 && layout_.scheme().kv_dtype != DType::kF16;
    // read the new K/V (bf16) and write them in the cache format (exact scheme bytes incl. metadata)
    add("kv_write", OpClass::kKvWrite, quantized ? 4.0 * T_ * elements_per_token : 0.0,
        T_ * elements_per_token * kAct + T_ * bpt);
  }

  // (sequences, tokens per sequence) of the step's decode or prefill part in this group.
  std::pair<double, double> decode_shape(const GroupStepWork& w) const {
    const double seqs = static_cast<double>(std::max<int64_t>(1, s_.decode_sequences));
    return {seqs, static_cast<double>(w.decode_tokens) / seqs};
  }
  std::pair<double, double> prefill_shape() const {
    const double seqs = static_cast<double>(std::max<int64_t>(1, s_.prefill_sequences));
    return {seqs, Tp_ / seqs};
  }
  void attention_shape(StepOp& op, std::pair<double, double> seq, double hq, double hkv) const {
    op.shape = OpShape{{seq.first, seq.second, hq, hkv}, 4};
    op.grid_dtype = layout_.scheme().kv_dtype;
  }

  void attention_layer(const AttentionShape& a) {
    const int64_t hq = a.num_q_heads / tp_;
    const int64_t hkv = a.num_kv_heads >= tp_ ? ceil_div(a.num_kv_heads, tp_) : 1;
    const int64_t d = a.head_dim, dv = a.v_head_dim;
    module(kQuantAttention);
    gemm("qkv_proj", T_, hq * d * (a.output_gate ? 2 : 1) + hkv * (d + dv), h_);
    if (m_.rotary_dim > 0 || a.rotary_dim > 0 || a.qk_norm) {
      const double el = T_ * static_cast<double>((hq + hkv) * d);
      add("rope", OpClass::kElementwise, 3.0 * el, 2.0 * el * kAct, a.qk_norm ? 2 : 1);
    }
    kv_write(hkv * (d + dv));
    const GroupStepWork* w = work();
    const double bpt = group().bytes_per_token;
    if (Tp_ > 0 && w != nullptr) {
      mark_attention();
      StepOp& op = add("attention_prefill", OpClass::kAttentionPrefill,
                       2.0 * static_cast<double>(w->prefill_pairs) * hq * (d + dv),
                       Tp_ * hq * (d + dv) * kAct + static_cast<double>(w->prefill_kv_tokens) * bpt);
      attention_shape(op, prefill_shape(), static_cast<double>(hq), static_cast<double>(hkv));
    }
    if (Td_ > 0 && w != nullptr) {
      mark_attention();
      StepOp& op = add("attention_decode", OpClass::kAttentionDecode,
                       2.0 * s_.decode_query_tokens * static_cast<double>(w->decode_tokens) * hq * (d + dv),
                       Td_ * hq * (d + dv) * kAct + static_cast<double>(w->decode_kv_bytes));
      op.critical_bytes = static_cast<double>(w->decode_tokens_max) * bpt;
      op.critical_ctas = static_cast<int>(hkv) * kDecodeMaxSplits;
      attention_shape(op, decode_shape(*w), static_cast<double>(hq), static_cast<double>(hkv));
    }
    if (a.output_gate) add("output_gate", OpClass::kElementwise, T_ * hq * dv, 3.0 * T_ * hq * dv * kAct);
    gemm("o_proj", T_, h_, hq * dv);
  }

  void mla_layer() {
    const MlaShape& a = m_.mla;
    const int64_t heads = a.num_heads / tp_;
    const int64_t r = a.kv_lora_rank, R = a.qk_rope_head_dim, n = a.qk_nope_head_dim, v = a.v_head_dim;
    module(kQuantAttention);
    // Down projections are replicated on every rank (vLLM ReplicatedLinear, fused q_a + kv_a).
    if (a.q_lora_rank > 0) {
      gemm("qkv_a_proj", T_, a.q_lora_rank + r + R, h_);
      add("qkv_a_norm", OpClass::kElementwise, 5.0 * T_ * (a.q_lora_rank + r),
          2.0 * T_ * (a.q_lora_rank + r) * kAct, 2);
      gemm("q_b_proj", T_, heads * (n + R), a.q_lora_rank);
    } else {
      gemm("q_proj", T_, heads * (n + R), h_);
      gemm("kv_a_proj", T_, r + R, h_);
      add("kv_a_norm", OpClass::kElementwise, 5.0 * T_ * r, 2.0 * T_ * r * kAct);
    }
    add("rope", OpClass::kElementwise, 3.0 * T_ * (heads + 1) * R, 2.0 * T_ * (heads + 1) * R * kAct);
    const MlaOpEngine engine = mla_op_engine(o_.engine);
    const MlaDims dims{r, R, n, v};
    if (a.index_topk > 0) {
      dsa_attention(dims, engine, heads);
      return;
    }
    kv_write(r + R);
    const GroupStepWork* w = work();
    const double bpt = group().bytes_per_token;
    const DType kv_dtype = layout_.scheme().kv_dtype;
    if (Tp_ > 0 && w != nullptr) {
      // Prefill runs the non-absorbed form: decompress every attended latent (cached prefix and
      // new) with kv_b_proj into per-head K_nope and V, then attention with qk dim n + R and v dim
      // v (mla_prefill: the engine's MLA prefill kernel, which the published tables time alone).
      const double tok = static_cast<double>(w->prefill_kv_tokens);
      mark_attention();
      add("kv_b_proj", OpClass::kGemm, 2.0 * tok * r * heads * (n + v),
          weight_bytes(heads * (n + v), r, o_.weights, quantized_now()) + tok * bpt + tok * heads * (n + v) * kAct);
      push(mla_prefill_op(engine, dims, static_cast<double>(s_.prefill_sequences), Tp_,
                          static_cast<double>(w->prefill_pairs), tok, heads, kv_dtype));
    }
    if (Td_ > 0 && w != nullptr) {
      // Decode runs the absorbed form (DeepSeek-V2 §2.1.2, FlashMLA): q_nope is multiplied by
      // W_UK into the latent space (mla_bmm), attention reads only the latent (r + R per token,
      // shared by all heads; mla_decode), and the output is multiplied by W_UV (mla_bmm). The BMMs
      // run in fp8 where the engine has an fp8 BMM and the attention weights are fp8.
      const bool fp8_bmm = quantized_now() && is_fp8(o_.gemm_dtype);
      push(mla_bmm_op(engine, dims, true, Td_, heads, fp8_bmm));
      mark_attention();
      push(mla_decode_op(engine, dims, static_cast<double>(s_.decode_sequences), static_cast<double>(w->decode_tokens),
                         static_cast<double>(w->decode_tokens_max), static_cast<double>(w->decode_kv_bytes), bpt,
                         s_.decode_query_tokens, heads, kv_dtype));
      push(mla_bmm_op(engine, dims, false, Td_, heads, fp8_bmm));
    }
    if (a.output_gate) {
      // Kimi-K3 gated MLA: g_proj from the hidden state, its sigmoid times the attention output
      gemm("g_proj", T_, heads * v, h_);
      add("output_gate", OpClass::kElementwise, 3.0 * T_ * heads * v, 3.0 * T_ * heads * v * kAct);
    }
    gemm("o_proj", T_, h_, heads * v);
  }

  // DeepSeek sparse attention after the MLA projections (mixer_ops.h): the lightning indexer's
  // projections (replicated on every GPU), its key written with the latent, its logits over every
  // visible key and their top-k, then MLA attention over the selected latents only. The sparse
  // backends run the absorbed form for prefill too (vLLM FLASHMLA_SPARSE: q_nope x W_UK over every
  // token, attention in the latent space, W_UV after), so no kv_b_proj decompression.
  void dsa_attention(const MlaDims& dims, MlaOpEngine engine, int64_t heads) {
    const MlaShape& a = m_.mla;
    const DsaDims d{a.index_num_heads, a.index_head_dim, a.index_topk};
    const int64_t hd = d.index_heads * d.index_dim;
    gemm("indexer_wq_b", T_, hd, a.q_lora_rank);
    gemm("indexer_wk", T_, d.index_dim, h_);
    gemm("indexer_weights_proj", T_, d.index_heads, h_);
    // k LayerNorm, RoPE on the indexer q and k, their fp8 quantization
    const double el = T_ * static_cast<double>(hd + d.index_dim);
    add("indexer_norm_rope_quant", OpClass::kElementwise, 8.0 * el, 3.0 * el * kAct, 3);
    kv_write(dims.kv_lora_rank + dims.rope_dim + d.index_dim);
    const GroupStepWork* w = work();
    const bool fp8_bmm = quantized_now() && is_fp8(o_.gemm_dtype);
    const double latent_bytes = group().bytes_per_token - static_cast<double>(group().indexer_bytes_per_token);
    push(mla_bmm_op(engine, dims, true, T_, heads, fp8_bmm));
    if (Tp_ > 0 && w != nullptr) {
      const double seqs = static_cast<double>(s_.prefill_sequences);
      const double pairs = static_cast<double>(w->prefill_pairs);
      mark_attention();
      push(dsa_indexer_op(true, d, seqs, Tp_, pairs, static_cast<double>(w->prefill_kv_tokens)));
      push(dsa_topk_op(true, d, seqs, Tp_, pairs));
      push(dsa_prefill_attention_op(dims, seqs, Tp_, static_cast<double>(w->sparse_prefill_pairs), latent_bytes, heads));
    }
    if (Td_ > 0 && w != nullptr) {
      const double seqs = static_cast<double>(s_.decode_sequences);
      const double q = static_cast<double>(s_.decode_query_tokens);
      const double keys = static_cast<double>(w->decode_tokens);
      mark_attention();
      push(dsa_indexer_op(false, d, seqs, Td_, q * keys, keys));
      push(dsa_topk_op(false, d, seqs, Td_, q * keys));
      // FlashMLA's decode kernel over each sequence's selected latents (at most topk)
      const double selected = static_cast<double>(w->sparse_decode_tokens);
      StepOp att = mla_decode_op(engine, dims, seqs, selected,
                                 static_cast<double>(std::min(w->decode_tokens_max, d.topk)), selected * latent_bytes,
                                 latent_bytes, s_.decode_query_tokens, heads, layout_.scheme().kv_dtype);
      att.name = "attention_decode_topk";
      push(att);
    }
    push(mla_bmm_op(engine, dims, false, T_, heads, fp8_bmm));
    gemm("o_proj", T_, h_, heads * dims.v_dim);
  }

  // DeepSeek-V4 (mixer_ops.h): the hyper-connections mix the residual streams into both sublayers'
  // inputs and fold their outputs back (one op each, both sites), and the attention module runs as a
  // whole, once over the prefill chunks and once over the decode tokens, each with its cached tokens.
  void compressed_attention_layer(const LayerSpec& l) {
    const CompressedAttentionShape& a = m_.compressed;
    push(mhc_op(true, T_, a.hc_mult, h_));
    module(kQuantAttention);
    const GroupStepWork* w = work();
    const int64_t heads = a.num_heads / tp_;
    const bool fp8 = quantized_now() && is_fp8(o_.gemm_dtype);
    if (Tp_ > 0 && w != nullptr) {
      mark_attention();
      push(dsv4_attention_op(true, l.compress_ratio, a, h_, heads, static_cast<double>(s_.prefill_sequences), Tp_,
                             static_cast<double>(w->prefill_kv_tokens) - Tp_, fp8));
    }
    if (Td_ > 0 && w != nullptr) {
      mark_attention();
      push(dsv4_attention_op(false, l.compress_ratio, a, h_, heads, static_cast<double>(s_.decode_sequences), Td_,
                             static_cast<double>(w->decode_tokens) - Td_, fp8));
    }
    push(mhc_op(false, T_, a.hc_mult, h_));
  }

  // MiniMax-M3's sparse attention layer: the whole module as one op per phase (the published table's
  // unit: projections, norms, RoPE, K / V and index-key inserts, indexer, top-k blocks, sparse GQA,
  // o_proj; mixer_ops.h msa_attention_op).
  void msa_layer() {
    const AttentionShape& a = m_.attention;
    const MsaDims d = msa_dims(m_);
    module(kQuantAttention);
    const GroupStepWork* w = work();
    const int64_t heads = a.num_q_heads / tp_;
    const bool fp8_kv = is_fp8(layout_.scheme().kv_dtype);
    const bool fp8_weights = quantized_now() && is_fp8(o_.gemm_dtype);
    if (Tp_ > 0 && w != nullptr) {
      mark_attention();
      push(msa_attention_op(true, d, heads, static_cast<double>(s_.prefill_sequences), Tp_,
                            static_cast<double>(w->prefill_kv_tokens) - Tp_, fp8_kv, fp8_weights));
    }
    if (Td_ > 0 && w != nullptr) {
      mark_attention();
      push(msa_attention_op(false, d, heads, static_cast<double>(s_.decode_sequences), Td_,
                            static_cast<double>(w->decode_tokens) - Td_, fp8_kv, fp8_weights));
    }
  }

  // Recurrent state read and written once per sequence per step (prefill chunk or decode).
  double state_traffic(double sequences) const { return 2.0 * sequences * static_cast<double>(group().state_bytes_per_request); }

  // Causal conv1d over `channels` per GPU: the prefill chunks' conv and the decode tokens' state
  // update, as the engines run them (two kernels; mixer_ops.h).
  void conv1d(int64_t channels, int d_conv) {
    if (Tp_ > 0) push(conv1d_op(true, static_cast<double>(s_.prefill_sequences), Tp_, channels, d_conv));
    if (Td_ > 0) push(conv1d_op(false, static_cast<double>(s_.decode_sequences), Td_, channels, d_conv));
  }

  void mamba2_layer() {
    const MambaShape& a = m_.mamba;
    const int64_t di = a.d_inner / tp_;
    const int64_t g = a.groups_per_gpu(tp_);
    const int64_t heads = a.num_heads / tp_;
    const int64_t N = a.d_state, P = a.head_dim;
    const int64_t conv = di + 2 * g * N;
    module(kQuantRecurrent);
    gemm("in_proj", T_, 2 * di + 2 * g * N + heads, h_);
    conv1d(conv, a.d_conv);
    const double io = static_cast<double>(conv + heads + di) * kAct;  // x, B, C, dt in; y out
    mark_attention();
    if (Tp_ > 0) {
      // SSD: state passing ~6·H·P·N per token plus the intra-chunk quadratic part Q·H·(P+N).
      add("ssm_prefill", OpClass::kRecurrent,
          Tp_ * (6.0 * heads * P * N + static_cast<double>(kSsdChunk) * heads * (P + N)),
          state_traffic(static_cast<double>(s_.prefill_sequences)) + Tp_ * io, 3);
    }
    if (Td_ > 0) {
      // state update h = a·h + B·x (3·H·P·N) and readout y = C·h (2·H·P·N) per query token
      add("ssm_decode", OpClass::kRecurrent, Td_ * 5.0 * heads * P * N,
          state_traffic(static_cast<double>(s_.decode_sequences)) + Td_ * io);
    }
    add("gated_norm", OpClass::kElementwise, 5.0 * T_ * di, 3.0 * T_ * di * kAct);
    gemm("out_proj", T_, h_, di);
  }

  void mamba1_layer() {
    const MambaShape& a = m_.mamba;
    const int64_t di = a.d_inner / tp_;
    const int64_t N = a.d_state, R = a.dt_rank;
    module(kQuantRecurrent);
    gemm("in_proj", T_, 2 * di, h_);
    conv1d(di, a.d_conv);
    gemm("x_proj", T_, R + 2 * N, di);
    gemm("dt_proj", T_, di, R);
    const double io = static_cast<double>(4 * di + 2 * N) * kAct;  // x, dt, z in, y out; B, C
    mark_attention();
    if (Tp_ > 0) {
      // selective scan: discretize (exp, mul) and update and read out the d_inner × N state
      add("ssm_prefill", OpClass::kRecurrent, Tp_ * 9.0 * di * N,
          state_traffic(static_cast<double>(s_.prefill_sequences)) + Tp_ * io);
    }
    if (Td_ > 0) {
      add("ssm_decode", OpClass::kRecurrent, Td_ * 7.0 * di * N,
          state_traffic(static_cast<double>(s_.decode_sequences)) + Td_ * io);
    }
    gemm("out_proj", T_, h_, di);
  }

  void linear_attention_layer() {
    const LinearAttentionShape& a = m_.linear;
    const int64_t key_dim = a.num_key_heads / tp_ * a.key_head_dim;
    const int64_t vh = a.num_value_heads / tp_;
    const int64_t value_dim = vh * a.value_head_dim;
    const int64_t dk = a.key_head_dim, dv = a.value_head_dim;
    module(kQuantRecurrent);
    if (a.kind == LinearAttentionKind::kLightning) {
      gemm("qkv_proj", T_, 2 * key_dim + value_dim, h_);
      gemm("output_gate", T_, value_dim, h_);
    } else {
      if (a.kind == LinearAttentionKind::kKimiDelta) {
        // Kimi delta attention (vLLM layers/kda.py): q, k, v and beta from the hidden state, the
        // per-channel decay and the output gate through rank-head_dim pairs (f_a / g_a replicated).
        gemm("qkv_proj", T_, 2 * key_dim + value_dim, h_, 3);
        gemm("b_proj", T_, vh, h_);
        gemm("f_a_proj", T_, dk, h_);
        gemm("f_b_proj", T_, key_dim, dk);
        if (a.full_rank_gate) {
          gemm("g_proj", T_, value_dim, h_);  // Kimi-K3's full-rank output gate
        } else {
          gemm("g_a_proj", T_, dv, h_);
          gemm("g_b_proj", T_, value_dim, dv);
        }
      } else {
        gemm("in_proj", T_, 2 * key_dim + 2 * value_dim + 2 * vh, h_, 2);  // in_proj_qkvz + in_proj_ba
      }
      // Gated DeltaNet: the causal conv1d over q, k, v and the delta rule, one op per phase
      // (gated_deltanet, mixer_ops.h: the published table times the two kernels together); Kimi
      // delta attention likewise with its own class (kimi_delta).
      const int64_t hk = a.num_key_heads / tp_;
      const double state = static_cast<double>(group().state_bytes_per_request);
      mark_attention();
      if (a.kind == LinearAttentionKind::kKimiDelta) {
        if (Tp_ > 0) {
          push(kimi_delta_op(true, static_cast<double>(s_.prefill_sequences), Tp_, vh, dk, dv, a.conv_kernel, state));
        }
        if (Td_ > 0) {
          push(kimi_delta_op(false, static_cast<double>(s_.decode_sequences), Td_, vh, dk, dv, a.conv_kernel, state));
        }
      } else {
        if (Tp_ > 0) {
          push(gated_deltanet_op(true, static_cast<double>(s_.prefill_sequences), Tp_, hk, dk, vh, dv, a.conv_kernel,
                                 state));
        }
        if (Td_ > 0) {
          push(gated_deltanet_op(false, static_cast<double>(s_.decode_sequences), Td_, hk, dk, vh, dv, a.conv_kernel,
                                 state));
        }
      }
      add("gated_norm", OpClass::kElementwise, 5.0 * T_ * value_dim, 3.0 * T_ * value_dim * kAct);
      gemm("out_proj", T_, h_, value_dim);
      return;
    }
    const double io = static_cast<double>(2 * key_dim + 2 * value_dim) * kAct;
    mark_attention();
    if (Tp_ > 0) {
      // lightning attention: k^T S, decayed state update and q^T S (~6·dk·dv per token per value
      // head) plus the intra-chunk part C·(dk + dv)
      add("delta_rule_prefill", OpClass::kRecurrent,
          Tp_ * vh * (6.0 * dk * dv + static_cast<double>(kDeltaChunk) * (dk + dv)),
          state_traffic(static_cast<double>(s_.prefill_sequences)) + Tp_ * io, 2);
    }
    if (Td_ > 0) {
      add("delta_rule_decode", OpClass::kRecurrent, Td_ * vh * 6.0 * dk * dv,
          state_traffic(static_cast<double>(s_.decode_sequences)) + Td_ * io);
    }
    add("gated_norm", OpClass::kElementwise, 5.0 * T_ * value_dim, 3.0 * T_ * value_dim * kAct);
    gemm("out_proj", T_, h_, value_dim);
  }

  void mlp(const MlpShape& s) {
    switch (s.kind) {
      case MlpKind::kGated: {
        if (s.intermediate_size == 0) return;
        module(kQuantMlp);
        const int64_t i = s.intermediate_size / tp_;
        // gate and up are one fused GEMM (vLLM MergedColumnParallelLinear): FLOPs of both
        gemm("gate_up_proj", T_, 2 * i, h_);
        add("act_mul", OpClass::kElementwise, 4.0 * T_ * i, 3.0 * T_ * i * kAct);
        gemm("down_proj", T_, h_, i);
        return;
      }
      case MlpKind::kPlain: {
        module(kQuantMlp);
        const int64_t i = s.intermediate_size / tp_;
        gemm("up_proj", T_, i, h_);
        add("act", OpClass::kElementwise, 4.0 * T_ * i, 2.0 * T_ * i * kAct);
        gemm("down_proj", T_, h_, i);
        return;
      }
      case MlpKind::kMoe: {
        const int64_t E = s.num_experts, k = s.experts_per_token;
        // router weights stay 16-bit (param_count: not quantizable)
        module(0);
        add("router", OpClass::kGemm, 2.0 * T_ * h_ * E,
            static_cast<double>(E * h_) * kAct + T_ * h_ * kAct + T_ * E * kLogit)
            .shape = OpShape{{T_, static_cast<double>(E), static_cast<double>(h_), 0}, 3};
        // Latent MoE (Nemotron-3): the routed experts run in the latent width between two
        // projections every rank computes whole (vLLM ReplicatedLinear).
        // Kimi-K3's latent projections are 16-bit whatever the experts' format, and a
        // routed_expert_norm follows the down projection.
        const int64_t expert_hidden = s.expert_latent_size > 0 ? s.expert_latent_size : h_;
        const uint8_t latent_module = s.expert_latent_quantized ? kQuantExperts : 0;
        if (s.expert_latent_size > 0) {
          module(latent_module);
          gemm("fc1_latent_proj", T_, expert_hidden, h_);
        }
        if (s.expert_latent_norm) {
          add("latent_norm", OpClass::kElementwise, 5.0 * T_ * expert_hidden,
              2.0 * T_ * expert_hidden * kAct + expert_hidden * kAct);
        }
        module(kQuantExperts);
        // One fused MoE forward (fused_moe.h): top-k over the router logits, the grouped GEMMs over
        // the experts the straggler rank's tokens touch, activation and combine.
        FusedMoeShape f;
        f.hidden = expert_hidden;
        f.gated = s.gated_experts;
        f.experts = static_cast<int>(E);
        f.top_k = static_cast<int>(k);
        f.routing = o_.moe_routing.value_or(default_moe_routing(m_));
        f.compute = quantized_now() ? o_.gemm_dtype : DType::kBF16;
        // Experts in a format of their own (DeepSeek-V4's MXFP4 experts in an fp8 checkpoint): weight-only
        // fp4, so the GEMMs run at the 16-bit rate.
        const WeightFormat experts{o_.weights.dtype, expert_quantization(o_.weights.quant)};
        if (o_.weights.quant.expert_method != QuantMethod::kNone && quantized_now()) f.compute = DType::kBF16;
        if (!moe_format_of(experts, quantized_now(), f.format)) f.format = MoeFormat::kBf16;
        // Each GPU runs its experts' 1/etp slice (whole experts under expert parallelism over every
        // GPU, a group's slice with MoE TP x EP, all tp x dp GPUs' slice without EP; parallelism.h)
        // over the tokens of every data-parallel rank (assumed to carry this rank's batch).
        f.tokens = T_ * static_cast<double>(dp_);
        f.width = s.expert_width_per_gpu(etp_);
        if (ep_ > 1) {
          // Expert parallelism: E/ep experts per GPU.
          f.ep = ep_;
          // With one data-parallel rank every GPU of the TP group already holds every token (the
          // attention output is all-reduced), so each runs its local experts over all of them and
          // the MLP all-reduce that follows combines them: no all-to-all (vLLM's FusedMoE uses its
          // all-to-all kernels only when dp_size > 1 and EP is on; TensorRT-LLM with attention TP
          // and MoE EP likewise). With attention DP the ranks hold different tokens: dispatch and
          // combine each local token's hidden state to its k experts, (ep-1)/ep of it off-GPU.
          // DeepEP's low-latency kernels serve decode-only steps, its normal kernels prefill
          // (SGLang --deepep-mode auto; TensorRT-LLM's wide-EP likewise).
          if (dp_ > 1) {
            for (DeepEpPhase phase : {DeepEpPhase::kDispatch, DeepEpPhase::kCombine}) {
              StepOp a2a = deepep_op(phase, Tp_ <= 0, T_ / tp_, static_cast<int>(k), h_, ep_);
              a2a.layer_type = layer_type_;
              a2a.group = group_;
              a2a.repeat = repeat_;
              out_.ops.push_back(a2a);
            }
          }
        } else if (dp_ > 1) {
          // Data-parallel ranks share the experts: vLLM's all-gather / reduce-scatter all2all backend
          // gathers the hidden states and router logits over the dp ranks before the experts and
          // reduce-scatters the partial outputs after; the TP all-reduce follows as without DP.
          const double gathered = f.tokens * (static_cast<double>(expert_hidden) + static_cast<double>(E)) * kAct;
          dp_collective("moe_dispatch_all_gather", "all_gather", gathered);
          dp_collective("moe_combine_reduce_scatter", "reduce_scatter", f.tokens * static_cast<double>(h_) * kAct);
        }
        const int64_t up_width = s.gated_experts ? 2 * f.width : f.width;
        const double gate_up_bias = s.expert_bias ? up_width * kAct : 0.0;
        f.expert_weight_bytes = weight_bytes(up_width, expert_hidden, experts, quantized_now()) + gate_up_bias +
                                weight_bytes(expert_hidden, f.width, experts, quantized_now());
        StepOp op = fused_moe_op(f);
        op.layer_type = layer_type_;
        op.group = group_;
        op.repeat = repeat_;
        out_.ops.push_back(op);
        if (s.expert_latent_size > 0) {
          module(latent_module);
          gemm("fc2_latent_proj", T_, h_, expert_hidden);
        }
        if (s.shared_intermediate_size > 0) {
          module(kQuantShared);
          const int64_t si = s.shared_intermediate_size / tp_;
          if (s.gated_experts) {
            gemm("shared_gate_up", T_, 2 * si + (s.shared_expert_gate ? 1 : 0), h_);
            add("shared_act_mul", OpClass::kElementwise, 4.0 * T_ * si, 3.0 * T_ * si * kAct);
          } else {
            gemm("shared_up", T_, si, h_);
            add("shared_act", OpClass::kElementwise, 4.0 * T_ * si, 2.0 * T_ * si * kAct);
          }
          gemm("shared_down", T_, h_, si);
        }
        return;
      }
    }
  }

  // Kimi-K3 attention residuals at `sites` sites reading `sources` block representations in all
  // (attn_res_sources; a layer type's mean): per source and token an RMSNorm of the key, a dot with
  // the pseudo-query and the weighted sum (6 flops per element), reading each source once and
  // writing each site's mixed hidden state; the norm and query weights are 2 x hidden per site.
  // Replicated on every rank.
  void attention_residuals(int sites, double sources) {
    if (T_ <= 0) return;
    const double h = static_cast<double>(h_);
    add("attn_residuals", OpClass::kElementwise, 6.0 * T_ * sources * h,
        (sources + sites) * T_ * h * kAct + sites * 2.0 * h * kAct, sites);
  }

  void mark_attention() {
    StepLayerType& t = out_.types[static_cast<size_t>(layer_type_)];
    if (t.attention_op < 0) t.attention_op = static_cast<int>(out_.ops.size());
  }

  // attn_res_sources: the mean block representations the type's attention-residual sites read (0: none)
  void layer(const LayerSpec& l, bool shared, int group, int type_index, int count, uint8_t mask,
             double attn_res_sources) {
    layer_type_ = type_index;
    layer_mask_ = mask;
    group_ = group;
    shared_ = shared;
    repeat_ = count;
    const int attn_norms = m_.norms_per_layer - m_.norms_per_layer / 2;
    const int mlp_norms = m_.norms_per_layer / 2;
    if (attn_res_sources > 0) attention_residuals(2, attn_res_sources);
    norms("attn_norm", attn_norms);
    switch (l.kind) {
      case LayerKind::kFullAttention:
        if (l.msa_indexer) {
          msa_layer();
          break;
        }
        [[fallthrough]];
      case LayerKind::kSlidingAttention:
      case LayerKind::kChunkedAttention: attention_layer(layer_attention(m_, l)); break;
      case LayerKind::kMla: mla_layer(); break;
      case LayerKind::kMamba1: mamba1_layer(); break;
      case LayerKind::kMamba2: mamba2_layer(); break;
      case LayerKind::kLinearAttention: linear_attention_layer(); break;
      case LayerKind::kNoMixer: break;
      case LayerKind::kCompressedAttention: compressed_attention_layer(l); break;
    }
    const bool has_mixer = l.kind != LayerKind::kNoMixer;
    const bool has_mlp = l.mlp.kind == MlpKind::kMoe || l.mlp.intermediate_size > 0;
    if (has_mixer && has_mlp && !m_.parallel_block) all_reduce("attn_all_reduce");
    if (has_mlp) {
      norms("mlp_norm", m_.parallel_block ? 0 : mlp_norms);
      mlp(l.mlp);
    }
    all_reduce(has_mlp ? "mlp_all_reduce" : "attn_all_reduce");
    if (m_.per_layer_input_size > 0) {
      // Gemma-4 E2B/E4B: gate the layer's per-layer input, project it back to the hidden width and
      // add it (replicated linears: every rank does the whole of them, no all-reduce)
      module(kQuantMlp);
      gemm("per_layer_input_gate", T_, m_.per_layer_input_size, h_);
      add("per_layer_input_mul", OpClass::kElementwise, 2.0 * T_ * m_.per_layer_input_size,
          3.0 * T_ * m_.per_layer_input_size * kAct);
      gemm("per_layer_projection", T_, h_, m_.per_layer_input_size);
      norms("per_layer_norm", 1);
    }
    layer_type_ = -1;
    group_ = -1;
    repeat_ = 1;
    layer_mask_ = 0;
    module_ = 0;
  }

  double T_ = 0, Tp_ = 0, Td_ = 0;
  int64_t h_ = 0;
  int layer_type_ = -1;
  int group_ = -1;
  int repeat_ = 1;
  bool shared_ = false;
  uint8_t layer_mask_ = 0;  // kQuant* bits of the current layer type
  uint8_t module_ = 0;      // kQuant* bit of the module being emitted

 private:
  const ModelConfig& m_;
  const KvLayout& layout_;
  int tp_;
  int ep_;
  int etp_;  // GPUs each expert's width is split over (Parallelism::expert_tensor_parallel)
  int dp_;
  const StepShape& s_;
  const StepOpsOptions& o_;
  StepOps& out_;
};

// Kimi-K3's block attention residuals (Kimi K3 technical report §2.2, Eq. 8-10; vLLM
// KimiDecoderLayer, SGLang layers/attn_residual.py): the layers form blocks of attn_res_block_size
// whose sums are snapshotted, the embedding first; each site mixes the snapshots and the current
// partial sum by a softmax of its pseudo-query ([1, hidden] projection) against the RMSNorm'd
// sources. Layer L's site before the attention reads cdiv(L, B) + 1 sources, the one before the MLP
// one more when L opens a block (L % B == 0). Returns both sites' sources together. 93 layers in
// blocks of 12: 1 to 9 per site, 994 over the layers; the output site reads cdiv(93, 12) + 1 = 9.
double attn_res_sources(int layer, int block) {
  const int pre_attention = (layer + block - 1) / block + 1;
  return 2.0 * pre_attention + (layer % block == 0 ? 1 : 0);
}

int group_index(const KvLayout& layout, const LayerSpec& l) {
  const auto& groups = layout.groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const bool windowed = l.kind == LayerKind::kSlidingAttention || l.kind == LayerKind::kChunkedAttention;
    if (groups[g].kind == l.kind && (!windowed || groups[g].window_tokens == l.window_tokens)) {
      return static_cast<int>(g);
    }
  }
  return -1;
}

}  // namespace

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::kCompute: return "compute";
    case Stream::kComm: return "comm";
    case Stream::kCopy: return "copy";
  }
  return "compute";
}

StepOp deepep_op(DeepEpPhase phase, bool low_latency, double tokens, int top_k, int64_t hidden, int ep) {
  const bool dispatch = phase == DeepEpPhase::kDispatch;
  // dispatch: fp8 values + an fp32 scale per 128; combine: bf16
  const double per_value = dispatch ? 1.0 + 4.0 / 128 : kAct;
  const double payload = tokens * top_k * static_cast<double>(hidden) * per_value;
  StepOp op;
  op.name = dispatch ? "moe_dispatch" : "moe_combine";
  op.op_class = OpClass::kCollective;
  op.stream = Stream::kComm;
  op.bytes = payload * (ep - 1) / std::max(1, ep);
  op.shape = OpShape{{payload, static_cast<double>(ep), 0, 0}, 2};
  op.grid_variant = low_latency ? (dispatch ? "deepep_ll_dispatch" : "deepep_ll_combine")
                                : (dispatch ? "deepep_normal_dispatch" : "deepep_normal_combine");
  return op;
}

double expected_experts_touched(int experts, int top_k, int64_t tokens) {
  if (experts <= 0 || top_k <= 0 || tokens <= 0) return 0.0;
  if (top_k >= experts) return experts;
  const double miss = std::pow(1.0 - static_cast<double>(top_k) / experts, static_cast<double>(tokens));
  return experts * (1.0 - miss);
}

std::string StepOps::display_name(const StepOp& op, const KvLayout& layout) const {
  const bool per_kind = op.op_class == OpClass::kAttentionPrefill || op.op_class == OpClass::kAttentionDecode ||
                        op.op_class == OpClass::kRecurrent || op.op_class == OpClass::kKvWrite;
  if (!per_kind || op.group < 0 || static_cast<size_t>(op.group) >= layout.groups().size()) {
    return op.name;
  }
  return fmt::format("{}({})", op.name, layout.groups()[static_cast<size_t>(op.group)].name);
}

StepOps build_step_ops(const ModelConfig& model, const KvLayout& layout, const Parallelism& parallel,
                       const StepShape& shape, const StepOpsOptions& options) {
  StepOps out;
  StepOpsBuilder(model, layout, parallel, options).build(shape, out);
  return out;
}

StepOpsBuilder::StepOpsBuilder(const ModelConfig& model, const KvLayout& layout, const Parallelism& parallel,
                               StepOpsOptions options)
    : model_(&model), layout_(&layout), parallel_(parallel), options_(std::move(options)) {
  const auto [first, last] = pipeline_stage_layers(model.num_layers(), parallel.pipeline_parallel,
                                                   options_.pipeline_stage);
  // Layer types: consecutive or not, layers with the same key share one op list.
  std::vector<LayerKey> keys;
  int attention_index = 0;  // cross-layer sharing counts per-token layers over the whole model
  const int share = std::max(1, layout.scheme().cross_layer_share);
  for (int i = 0; i < model.num_layers(); ++i) {
    const LayerSpec& l = model.layers[static_cast<size_t>(i)];
    const bool shared = holds_kv_per_token(l.kind) && ((attention_index++ % share) != 0 || l.kv_shared);
    if (i < first || i >= last) continue;
    const bool windowed = l.kind == LayerKind::kSlidingAttention || l.kind == LayerKind::kChunkedAttention;
    const uint8_t mask = options_.quant_mask.empty() ? (options_.weights.quant.quantized() ? kQuantAll : uint8_t{0})
                                                     : options_.quant_mask[static_cast<size_t>(i)];
    LayerKey key{l.kind, windowed ? l.window_tokens : 0, shared, l.mlp, mask, l.compress_ratio, l.msa_indexer};
    auto it = std::find(keys.begin(), keys.end(), key);
    int type = static_cast<int>(it - keys.begin());
    if (it == keys.end()) {
      keys.push_back(key);
      StepLayerType t;
      t.holds_kv = holds_kv_per_token(l.kind);
      t.group = group_index(layout, l);
      if (l.kind == LayerKind::kCompressedAttention && t.group < 0) {
        throw ConfigError(fmt::format(
            "model '{}': pipeline stage {} holds only sliding-window DeepSeek-V4 layers, whose cached tokens kvplan "
            "reads from a compressed cache; choose fewer pipeline stages",
            model.id, options_.pipeline_stage));
      }
      types_.push_back(t);
      // The first layer of each type supplies the shapes (all layers of a type are identical by
      // construction).
      sources_.push_back(TypeSource{i, shared, mask});
    }
    if (model.attn_res_block_size > 0) {
      sources_[static_cast<size_t>(type)].attn_res_sources += attn_res_sources(i, model.attn_res_block_size);
    }
    types_[static_cast<size_t>(type)].count += 1;
    layer_types_.push_back(type);
    if (holds_kv_per_token(l.kind)) num_kv_layers_ += 1;
  }
}

void StepOpsBuilder::build(const StepShape& shape, StepOps& out) const {
  const ModelConfig& model = *model_;
  const Parallelism& parallel = parallel_;
  const StepOpsOptions& options = options_;
  // Copy-assignment keeps the vectors' storage: no allocation once `out` has held a step.
  out.ops.clear();
  out.types = types_;
  out.layer_types = layer_types_;
  out.prologue_end = out.epilogue_begin = out.epilogue_end = 0;
  out.swap_in_op = out.swap_out_op = -1;
  out.num_kv_layers = num_kv_layers_;
  Builder b(model, *layout_, parallel, shape, options, out);
  const int64_t h = model.hidden_size;
  const double T = b.T_;

  // Prologue: embedding gather (first stage).
  if (options.pipeline_stage == 0 && T > 0) {
    b.add("embedding", OpClass::kElementwise, 0, 2.0 * T * h * kAct);
    if (model.per_layer_input_size > 0) {
      // Gemma-4 E2B/E4B Per-Layer Embeddings: the per-layer rows of every token, and their
      // projection from the hidden state (column-parallel), normed and added
      const int64_t width = int64_t{model.num_layers()} * model.per_layer_input_size;
      b.add("per_layer_embedding", OpClass::kElementwise, 0, 2.0 * T * static_cast<double>(width) * kAct);
      b.gemm("per_layer_model_projection", T, width / parallel.tensor_parallel, h);
    }
  }
  out.prologue_end = static_cast<int>(out.ops.size());

  // One op list per layer type, in the order types first appear.
  for (size_t t = 0; t < out.types.size(); ++t) {
    StepLayerType& type = out.types[t];
    type.first_op = static_cast<int>(out.ops.size());
    const TypeSource& src = sources_[t];
    b.layer(model.layers[static_cast<size_t>(src.first_layer)], src.shared, type.group, static_cast<int>(t),
            type.count, src.quant_mask, src.attn_res_sources / type.count);
    out.types[t].end_op = static_cast<int>(out.ops.size());
  }

  // Epilogue: final norm, LM head over the emitting rows, logits gather, sampling (last stage).
  out.epilogue_begin = static_cast<int>(out.ops.size());
  const bool last_stage = options.pipeline_stage == parallel.pipeline_parallel - 1;
  if ((last_stage || options.force_head) && shape.emitting_sequences > 0) {
    const double rows = static_cast<double>(shape.emitting_sequences);
    const int64_t vocab_padded = ceil_div(model.vocab_size, 64) * 64;
    const int64_t v = ceil_div(vocab_padded, parallel.tensor_parallel);
    if (model.attn_res_block_size > 0) {
      b.attention_residuals(1, 1.0 + static_cast<double>(ceil_div(model.num_layers(), model.attn_res_block_size)));
    }
    b.add("final_norm", OpClass::kElementwise, 5.0 * T * h, 2.0 * T * h * kAct + h * kAct);
    // LM head weights stay 16-bit (param_count: not quantizable); fp32 logits out
    StepOp& head = b.add("lm_head", OpClass::kGemm, 2.0 * rows * h * v,
                         static_cast<double>(v * h) * kAct + rows * h * kAct + rows * v * kLogit);
    head.dtype = head.grid_dtype = DType::kBF16;
    head.shape = OpShape{{rows, static_cast<double>(v), static_cast<double>(h), 0}, 3};
    if (parallel.tensor_parallel > 1) {
      const double tp = parallel.tensor_parallel;
      b.add("logits_gather", OpClass::kCollective, 0, (tp - 1) / tp * rows * vocab_padded * kLogit, 1,
            Stream::kComm);
    }
    b.add("sampling", OpClass::kSampling, 5.0 * rows * model.vocab_size,
          3.0 * rows * model.vocab_size * kLogit, kSamplingKernels);
  }
  out.epilogue_end = static_cast<int>(out.ops.size());

  // Offload copies on the copy stream. Swap-in is split evenly over the stage's KV layers: each
  // layer's share must arrive before that layer's attention.
  if (shape.swap_in_bytes > 0) {
    b.repeat_ = std::max(1, out.num_kv_layers);
    out.swap_in_op = static_cast<int>(out.ops.size());
    b.add("swap_in", OpClass::kCopyH2D, 0, static_cast<double>(shape.swap_in_bytes) / b.repeat_, 1, Stream::kCopy);
    b.repeat_ = 1;
  }
  if (shape.swap_out_bytes > 0) {
    out.swap_out_op = static_cast<int>(out.ops.size());
    b.add("swap_out", OpClass::kCopyD2H, 0, static_cast<double>(shape.swap_out_bytes), 1, Stream::kCopy);
  }
}

}  // namespace kvplan
