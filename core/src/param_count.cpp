// Parameter counts and weight bytes. Both come from one enumeration of the model's tensors, so the
// exact count (tp = 1, no padding) and the per-GPU bytes cannot drift apart.
#include "kvplan/core/param_count.h"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>

#include "kvplan/core/kv_layout.h"

namespace kvplan {

namespace {

enum class Part { kEmbedding, kAttention, kRecurrent, kMlp, kExperts, kSharedExperts, kRouter, kNorm, kLmHead, kVision };

// Module classes that a quantization method may store in low precision.
enum class Module { kNone, kAttention, kMlp, kExperts, kSharedExperts, kRecurrent, kLmHead };

struct Tensor {
  Part part;
  int64_t rows;      // output features (per GPU)
  int64_t cols;      // input features (per GPU)
  Module module;     // kNone: never quantized (norms, biases, embeddings, routers, vision)
  int layer = -1;    // decoder layer index, -1 outside the layers
  const char* name = "";  // module name inside the layer, e.g. "self_attn.q_proj"
  int64_t copies = 1;     // identical tensors (e.g. one per routed expert on this GPU)
  bool has_bias = false;  // a linear layer whose bias is listed as its own tensor
  // Loaded by the engine but not in the checkpoint (Gemma-4's V shard that vLLM fills from
  // k_proj): in the per-GPU weight bytes, not in the parameter count or the checkpoint's bytes.
  bool engine_only = false;
  // Stored at this width whatever the format (DeepSeek-V4's fp32 hyper-connection, sink, compressor
  // position and router-bias tensors, its int64 tid2eid table); 0: the format's.
  int element_bytes = 0;
  // false: bytes in the checkpoint but not a parameter (DeepSeek-V4's token -> experts table).
  bool parameter = true;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// MiniMax-M3: the router's gate and score bias are fp32 in the checkpoint whatever the weight dtype
// (vLLM GateLinear in fp32; the recipe's "F32: 46.3M" = 57 x (128 x 6,144 + 128) + the patch embed).
bool fp32_router(const ModelConfig& m) { return m.model_type == "minimax_m3"; }

// Family-specific module prefixes, so ignore lists written against Hugging Face names match.
struct ModuleNames {
  const char* layers = "model.layers";
  const char* attention = "self_attn";
  const char* mlp = "mlp";
  const char* experts = "mlp.experts.0";
  const char* shared = "mlp.shared_experts";
};

ModuleNames names_for(const ModelConfig& m) {
  ModuleNames n;
  const std::string& t = m.model_type;
  if (t == "llama4" || t == "gemma3" || t == "mistral3" || t == "llava") n.layers = "language_model.model.layers";
  if (t == "mixtral" || t == "minimax" || t == "minimax_m1" || t == "minimax_text_01") {
    n.experts = "block_sparse_moe.experts.0";
    n.shared = "block_sparse_moe.shared_experts";
  }
  if (t == "minimax_m2" || t == "minimax_m3") {
    n.experts = "block_sparse_moe.experts.0";
    n.shared = "block_sparse_moe.shared_experts";
  }
  if (t == "qwen2_moe" || t == "qwen3_moe" || t == "qwen3_next" || t.rfind("qwen3_5", 0) == 0) n.shared = "mlp.shared_expert";
  if (t == "qwen3_5" || t == "qwen3_5_moe" || t == "qwen3_vl" || t == "qwen3_vl_moe") n.layers = "model.language_model.layers";
  if (t == "kimi_k25") n.layers = "language_model.model.layers";
  if (t == "kimi_k3") n.layers = "language_model.model.layers";
  if (t == "kimi_linear" || t == "kimi_k3") {
    n.experts = "block_sparse_moe.experts.0";
    n.shared = "block_sparse_moe.shared_experts";
  }
  if (t == "llama4" || t == "llama4_text") {
    n.mlp = "feed_forward";
    n.experts = "feed_forward.experts";
    n.shared = "feed_forward.shared_expert";
  }
  if (t == "gpt_oss") n.experts = "mlp.experts";
  if (t == "gemma4" || t == "gemma4_text") {
    // modeling_gemma4.py: the dense MLP stays `mlp` beside the routed `experts` (read here as the
    // shared expert)
    n.layers = t == "gemma4" ? "model.language_model.layers" : "model.layers";
    n.experts = "experts";
    n.shared = "mlp";
  }
  if (t == "deepseek_v4") {
    // inference/model.py names: layers.{i}.attn.wq_a, layers.{i}.ffn.experts.{e}.w1, ...
    n.layers = "layers";
    n.attention = "attn";
    n.mlp = "ffn";
    n.experts = "ffn.experts.0";
    n.shared = "ffn.shared_experts";
  }
  if (t == "nemotron_h") {
    // every block's one module is its `mixer` (vLLM nemotron_h.py maps backbone. -> model.)
    n.layers = "backbone.layers";
    n.attention = "mixer";
    n.mlp = "mixer";
    n.experts = "mixer.experts.0";
    n.shared = "mixer.shared_experts";
  }
  return n;
}

// Hands each tensor to `emit` as it is enumerated, rather than collecting a list: a memory answer
// enumerates the model twice (weights of this GPU, parameter count), and building and reading the
// lists was a fifth of its instructions.
template <class Emit>
class TensorList {
 public:
  TensorList(const ModelConfig& m, const Parallelism& p, bool pad_vocab, Emit& emit)
      : m_(m), tp_(p.tensor_parallel), ep_(p.expert_parallel_size()), etp_(p.expert_tensor_parallel()),
        pad_vocab_(pad_vocab),
        fused_experts_(m.model_type == "gpt_oss"), fp32_router_(fp32_router(m)), emit_(emit) {}

  void add(const Tensor& t) { emit_(t); }

  void linear(Part part, Module module, const char* name, int64_t rows, int64_t cols, bool bias, int64_t copies = 1) {
    add({part, rows, cols, module, layer_, name, copies, bias});
    if (bias) add({part, rows, 1, Module::kNone, layer_, name, copies});
  }
  void vec(Part part, int64_t n, int64_t copies = 1) { add({part, n, 1, Module::kNone, layer_, "", copies}); }
  void mat(Part part, int64_t rows, int64_t cols) { add({part, rows, cols, Module::kNone, layer_, "", 1}); }
  // A tensor stored at a fixed width (fp32: 4, int64: 8), never quantized.
  void fixed(Part part, int64_t rows, int64_t cols, int element_bytes, bool parameter = true) {
    Tensor t{part, rows, cols, Module::kNone, layer_, "", 1};
    t.element_bytes = element_bytes;
    t.parameter = parameter;
    add(t);
  }
  // A never-quantized tensor at element_bytes when that is set, else at the format's width.
  void stored(Part part, int64_t rows, int64_t cols, int element_bytes) {
    if (element_bytes > 0) {
      fixed(part, rows, cols, element_bytes);
    } else {
      mat(part, rows, cols);
    }
  }

  int64_t vocab_per_gpu() const {
    // vLLM's VocabParallelEmbedding pads the vocabulary to a multiple of 64, then splits it.
    int64_t v = m_.vocab_size;
    if (pad_vocab_) v = ceil_div(v, 64) * 64;
    return ceil_div(v, tp_);
  }

  void norm(int64_t width) {
    vec(Part::kNorm, width);
    if (m_.norm == NormKind::kLayerNorm) vec(Part::kNorm, width);  // bias
  }

  void attention(const AttentionShape& a) {
    const int64_t h = m_.hidden_size;
    const int64_t hq = a.num_q_heads / tp_;
    const int64_t hkv = a.num_kv_heads >= tp_ ? a.num_kv_heads / tp_ : 1;
    const Module mod = Module::kAttention;
    linear(Part::kAttention, mod, "self_attn.q_proj", hq * a.head_dim * (a.output_gate ? 2 : 1), h, a.qkv_bias);
    linear(Part::kAttention, mod, "self_attn.k_proj", hkv * a.head_dim, h, a.qkv_bias);
    if (a.k_eq_v) {
      // no v_proj in the checkpoint; vLLM's fused qkv_proj still holds a V shard, filled from k_proj
      add({Part::kAttention, hkv * a.v_head_dim, h, mod, layer_, "self_attn.v_proj", 1, false, true});
    } else {
      linear(Part::kAttention, mod, "self_attn.v_proj", hkv * a.v_head_dim, h, a.qkv_bias);
    }
    linear(Part::kAttention, mod, "self_attn.o_proj", h, hq * a.v_head_dim, false);
    if (a.o_bias) vec(Part::kAttention, h);
    if (a.qk_norm_full_width) {
      // MiniMax-M2: q_norm over all query heads, k_norm over all KV heads (sharded with them)
      vec(Part::kAttention, hq * a.head_dim);
      vec(Part::kAttention, hkv * a.head_dim);
    } else if (a.qk_norm) {
      vec(Part::kAttention, a.head_dim);
      vec(Part::kAttention, a.head_dim);
    }
    if (a.sinks) vec(Part::kAttention, hq);
  }

  void mla() {
    const MlaShape& a = m_.mla;
    const int64_t h = m_.hidden_size;
    const int64_t heads = a.num_heads / tp_;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const Module mod = Module::kAttention;
    if (a.q_lora_rank > 0) {
      linear(Part::kAttention, mod, "self_attn.q_a_proj", a.q_lora_rank, h, false);
      vec(Part::kAttention, a.q_lora_rank);
      linear(Part::kAttention, mod, "self_attn.q_b_proj", heads * qk, a.q_lora_rank, false);
    } else {
      linear(Part::kAttention, mod, "self_attn.q_proj", heads * qk, h, false);
    }
    linear(Part::kAttention, mod, "self_attn.kv_a_proj_with_mqa", a.kv_lora_rank + a.qk_rope_head_dim, h, false);
    vec(Part::kAttention, a.kv_lora_rank);
    linear(Part::kAttention, mod, "self_attn.kv_b_proj", heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank,
           false);
    linear(Part::kAttention, mod, "self_attn.o_proj", h, heads * a.v_head_dim, false);
    if (a.output_gate) linear(Part::kAttention, mod, "self_attn.g_proj", heads * a.v_head_dim, h, false);
    if (a.index_head_dim > 0) {
      // DSA lightning indexer (vLLM deepseek_v2.py Indexer), replicated on every rank: wq_b from the
      // q latent and wk from the hidden state (linear layers a checkpoint may quantize), k_norm a
      // LayerNorm (weight + bias), weights_proj the per-head weights (kept 16-bit, as vLLM builds it
      // without a quantization config).
      const int64_t hi = a.index_num_heads, di = a.index_head_dim;
      linear(Part::kAttention, mod, "self_attn.indexer.wq_b", hi * di, a.q_lora_rank, false);
      linear(Part::kAttention, mod, "self_attn.indexer.wk", di, h, false);
      vec(Part::kAttention, 2 * di);
      mat(Part::kAttention, hi, h);
    }
  }

  // DeepSeek-V4 attention (inference/model.py Attention, Compressor, Indexer), on one of tp GPUs:
  // wq_b, the sinks and wo_a's groups split by heads, wo_b by its input; the q and KV latents'
  // projections, the compressors and the indexer replicated (each computes one shared vector per
  // token). The checkpoint stores wq_a, wq_b, wkv, wo_a, wo_b and the indexer's wq_b in fp8; the
  // compressors' wkv/wgate and the indexer's weights_proj in bf16; sinks and `ape` in fp32.
  void compressed_attention(const LayerSpec& l) {
    const CompressedAttentionShape& a = m_.compressed;
    const int64_t h = m_.hidden_size, hd = a.head_dim, heads = a.num_heads / tp_;
    const Module mod = Module::kAttention;
    fixed(Part::kAttention, heads, 1, 4);  // attn_sink
    linear(Part::kAttention, mod, "attn.wq_a", a.q_lora_rank, h, false);
    vec(Part::kAttention, a.q_lora_rank);  // q_norm
    linear(Part::kAttention, mod, "attn.wq_b", heads * hd, a.q_lora_rank, false);
    linear(Part::kAttention, mod, "attn.wkv", hd, h, false);
    vec(Part::kAttention, hd);  // kv_norm
    linear(Part::kAttention, mod, "attn.wo_a", int64_t{a.o_groups / tp_} * a.o_lora_rank,
           int64_t{a.num_heads / a.o_groups} * hd, false);
    linear(Part::kAttention, mod, "attn.wo_b", h, int64_t{a.o_groups / tp_} * a.o_lora_rank, false);
    const int r = l.compress_ratio;
    if (r == 0) return;
    // Compressor: a position bias ape [r, coff hd] (fp32), wkv and wgate [coff hd, hidden], a norm
    // [hd]; coff = 2 for r = 4 (overlapping windows).
    auto compressor = [&](int64_t width, int coff) {
      fixed(Part::kAttention, r, coff * width, 4);
      mat(Part::kAttention, coff * width, h);
      mat(Part::kAttention, coff * width, h);
      vec(Part::kAttention, width);
    };
    compressor(hd, r == 4 ? 2 : 1);
    if (r != 4) return;
    linear(Part::kAttention, mod, "attn.indexer.wq_b", int64_t{a.index_num_heads} * a.index_head_dim, a.q_lora_rank,
           false);
    mat(Part::kAttention, a.index_num_heads, h);  // weights_proj
    compressor(a.index_head_dim, 2);
  }

  // MiniMax-M3's MSA indexer (vLLM minimax_m3 MinimaxM3QKVParallelLinearWithIndexer, fused into
  // qkv_proj): index_q_proj of one index head per KV head, sharded like them (a replicated one per
  // rank when there are fewer heads than ranks), index_k_proj one shared key replicated on every
  // rank, and a per-head norm on each.
  void msa_indexer() {
    const MsaShape& a = m_.msa;
    const int64_t heads = a.index_num_heads >= tp_ ? a.index_num_heads / tp_ : 1;
    const Module mod = Module::kAttention;
    linear(Part::kAttention, mod, "self_attn.index_q_proj", heads * a.index_head_dim, m_.hidden_size, false);
    linear(Part::kAttention, mod, "self_attn.index_k_proj", a.index_head_dim, m_.hidden_size, false);
    vec(Part::kAttention, a.index_head_dim);  // index_q_norm
    vec(Part::kAttention, a.index_head_dim);  // index_k_norm
  }

  // DeepSeek-V4's per-layer extras: the two hyper-connection sites' fp32 mixing (fn [(2+hc) hc,
  // hc hidden], base [(2+hc) hc], scale [3]), replicated, and the router's fp32 score bias, or on the
  // first num_hash_layers the int64 tid2eid table [vocab, top_k] instead.
  void compressed_attention_extras(int index, const LayerSpec& l) {
    const CompressedAttentionShape& a = m_.compressed;
    const int64_t mix = int64_t{2 + a.hc_mult} * a.hc_mult;
    for (int site = 0; site < 2; ++site) {
      fixed(Part::kNorm, mix, int64_t{a.hc_mult} * m_.hidden_size, 4);
      fixed(Part::kNorm, mix, 1, 4);
      fixed(Part::kNorm, 3, 1, 4);
    }
    if (index < a.num_hash_layers) {
      fixed(Part::kRouter, m_.vocab_size, l.mlp.experts_per_token, 8, false);
    } else {
      fixed(Part::kRouter, l.mlp.num_experts, 1, 4);
    }
  }

  void mamba1() {
    const MambaShape& a = m_.mamba;
    const int64_t h = m_.hidden_size;
    const int64_t di = a.d_inner / tp_;
    const Module mod = Module::kRecurrent;
    linear(Part::kRecurrent, mod, "mamba.in_proj", 2 * di, h, a.proj_bias);
    mat(Part::kRecurrent, di, a.d_conv);
    if (a.conv_bias) vec(Part::kRecurrent, di);
    linear(Part::kRecurrent, mod, "mamba.x_proj", a.dt_rank + 2 * a.d_state, di, false);
    linear(Part::kRecurrent, mod, "mamba.dt_proj", di, a.dt_rank, true);
    mat(Part::kRecurrent, di, a.d_state);  // A_log
    vec(Part::kRecurrent, di);             // D
    linear(Part::kRecurrent, mod, "mamba.out_proj", h, di, a.proj_bias);
    if (a.inner_layernorms) {
      vec(Part::kRecurrent, a.dt_rank);
      vec(Part::kRecurrent, a.d_state);
      vec(Part::kRecurrent, a.d_state);
    }
  }

  void mamba2() {
    const MambaShape& a = m_.mamba;
    const int64_t h = m_.hidden_size;
    const int64_t di = a.d_inner / tp_;
    const int64_t groups = a.groups_per_gpu(tp_);
    const int64_t heads = a.num_heads / tp_;
    const int64_t conv = di + 2 * groups * a.d_state;
    const Module mod = Module::kRecurrent;
    linear(Part::kRecurrent, mod, "mixer.in_proj", 2 * di + 2 * groups * a.d_state + heads, h, a.proj_bias);
    mat(Part::kRecurrent, conv, a.d_conv);
    if (a.conv_bias) vec(Part::kRecurrent, conv);
    vec(Part::kRecurrent, heads);  // dt_bias
    vec(Part::kRecurrent, heads);  // A_log
    vec(Part::kRecurrent, heads);  // D
    vec(Part::kRecurrent, di);     // gated RMSNorm
    linear(Part::kRecurrent, mod, "mixer.out_proj", h, di, a.proj_bias);
  }

  void linear_attention() {
    const LinearAttentionShape& a = m_.linear;
    const int64_t h = m_.hidden_size;
    const int64_t key_dim = a.num_key_heads / tp_ * a.key_head_dim;
    const int64_t value_heads = a.num_value_heads / tp_;
    const int64_t value_dim = value_heads * a.value_head_dim;
    const Module mod = Module::kRecurrent;
    if (a.kind == LinearAttentionKind::kLightning) {
      // MiniMax lightning attention: fused qkv, a sigmoid output gate, RMSNorm over the heads.
      linear(Part::kRecurrent, mod, "self_attn.qkv_proj", 2 * key_dim + value_dim, h, false);
      linear(Part::kRecurrent, mod, "self_attn.output_gate", value_dim, h, false);
      vec(Part::kRecurrent, value_dim);  // norm
      linear(Part::kRecurrent, mod, "self_attn.out_proj", h, value_dim, false);
      return;
    }
    if (a.kind == LinearAttentionKind::kKimiDelta) {
      // vLLM layers/kda.py KimiDeltaAttention: P = heads x head_dim; f_a and g_a are replicated.
      // dt_bias and A_log are fp32 in every KDA checkpoint (and vLLM's parameters); Kimi-K3 also
      // stores the convolutions and o_norm in fp32, A_log padded to head_dim, and a full-rank gate.
      const int64_t d = a.key_head_dim;
      const int small = a.fp32_conv_and_norm ? 4 : 0;  // 0: the format's width
      linear(Part::kRecurrent, mod, "self_attn.q_proj", key_dim, h, false);
      linear(Part::kRecurrent, mod, "self_attn.k_proj", key_dim, h, false);
      linear(Part::kRecurrent, mod, "self_attn.v_proj", value_dim, h, false);
      linear(Part::kRecurrent, mod, "self_attn.f_a_proj", d, h, false);
      linear(Part::kRecurrent, mod, "self_attn.f_b_proj", key_dim, d, false);
      fixed(Part::kRecurrent, key_dim, 1, 4);  // dt_bias
      linear(Part::kRecurrent, mod, "self_attn.b_proj", value_heads, h, false);
      stored(Part::kRecurrent, 2 * key_dim + value_dim, a.conv_kernel, small);  // q/k/v_conv1d
      fixed(Part::kRecurrent, a.a_log_entries > 0 ? a.a_log_entries : value_heads, 1, 4);  // A_log
      if (a.full_rank_gate) {
        linear(Part::kRecurrent, mod, "self_attn.g_proj", value_dim, h, false);
      } else {
        linear(Part::kRecurrent, mod, "self_attn.g_a_proj", d, h, false);
        linear(Part::kRecurrent, mod, "self_attn.g_b_proj", value_dim, d, false);
      }
      stored(Part::kRecurrent, a.value_head_dim, 1, small);  // o_norm
      linear(Part::kRecurrent, mod, "self_attn.o_proj", h, value_dim, false);
      return;
    }
    linear(Part::kRecurrent, mod, "linear_attn.in_proj_qkvz", 2 * key_dim + 2 * value_dim, h, false);
    linear(Part::kRecurrent, mod, "linear_attn.in_proj_ba", 2 * value_heads, h, false);
    mat(Part::kRecurrent, 2 * key_dim + value_dim, a.conv_kernel);  // depthwise conv1d
    vec(Part::kRecurrent, value_heads);                               // dt_bias
    vec(Part::kRecurrent, value_heads);                               // A_log
    vec(Part::kRecurrent, a.value_head_dim);                          // gated RMSNorm
    linear(Part::kRecurrent, mod, "linear_attn.out_proj", h, value_dim, false);
  }

  void mlp(const MlpShape& s, const ModuleNames& n) {
    const int64_t h = m_.hidden_size;
    (void)n;
    switch (s.kind) {
      case MlpKind::kGated:
        if (s.intermediate_size == 0) return;
        // gate and up are separate tensors in checkpoints (each with its own scales)
        linear(Part::kMlp, Module::kMlp, "mlp.gate_proj", s.intermediate_size / tp_, h, s.bias);
        linear(Part::kMlp, Module::kMlp, "mlp.up_proj", s.intermediate_size / tp_, h, s.bias);
        linear(Part::kMlp, Module::kMlp, "mlp.down_proj", h, s.intermediate_size / tp_, s.bias);
        return;
      case MlpKind::kPlain:
        linear(Part::kMlp, Module::kMlp, "mlp.up_proj", s.intermediate_size / tp_, h, s.bias);
        linear(Part::kMlp, Module::kMlp, "mlp.down_proj", h, s.intermediate_size / tp_, s.bias);
        return;
      case MlpKind::kMoe: {
        // Expert parallelism places whole experts (ceil(E / ep) on the fullest GPU), or with a
        // smaller EP size (MoE TP x EP) each group's experts split over its GPUs; otherwise every
        // GPU holds every expert's 1/(tp x dp) slice (parallelism.h: data-parallel ranks share the
        // experts).
        const int64_t copies = ep_ > 1 ? ceil_div(s.num_experts, ep_) : s.num_experts;
        const int64_t width = s.expert_width_per_gpu(etp_);  // whole (etp 1) under expert parallelism
        // Latent MoE (Nemotron-3): experts read and write the latent width; the two projections
        // are replicated on every rank (vLLM ReplicatedLinear).
        const int64_t eh = s.expert_latent_size > 0 ? s.expert_latent_size : h;
        if (s.expert_latent_size > 0 && s.expert_latent_quantized) {
          // always active: counted with the dense MLP part, quantized like the experts
          linear(Part::kMlp, Module::kExperts, "mixer.fc1_latent_proj", eh, h, false);
          linear(Part::kMlp, Module::kExperts, "mixer.fc2_latent_proj", h, eh, false);
        } else if (s.expert_latent_size > 0) {
          // Kimi-K3: routed_expert_down_proj, routed_expert_up_proj, 16-bit in the checkpoint
          mat(Part::kMlp, eh, h);
          mat(Part::kMlp, h, eh);
        }
        if (s.expert_latent_norm) vec(Part::kMlp, eh);  // routed_expert_norm
        if (fused_experts_ || s.fused_gate_up) {
          // gpt-oss stores gate and up fused per expert: gate_up_proj [E, 2I, H]
          linear(Part::kExperts, Module::kExperts, "experts.gate_up_proj", 2 * width, eh, s.expert_bias, copies);
        } else {
          if (s.gated_experts) linear(Part::kExperts, Module::kExperts, "experts.gate_proj", width, eh, false, copies);
          linear(Part::kExperts, Module::kExperts, "experts.up_proj", width, eh, false, copies);
        }
        linear(Part::kExperts, Module::kExperts, "experts.down_proj", eh, width, false, copies);
        if (s.expert_bias) vec(Part::kExperts, eh, copies);
        if (fp32_router_) {
          fixed(Part::kRouter, s.num_experts, h, 4);
          if (s.router_bias) fixed(Part::kRouter, s.num_experts, 1, 4);
        } else {
          mat(Part::kRouter, s.num_experts, h);
          if (s.router_bias) stored(Part::kRouter, s.num_experts, 1, s.router_bias_fp32 ? 4 : 0);
        }
        if (s.router_scales) {
          vec(Part::kRouter, h);              // router.scale
          vec(Part::kRouter, s.num_experts);  // router.per_expert_scale
        }
        if (s.shared_intermediate_size > 0) {
          const int64_t shared = s.shared_intermediate_size / tp_;
          if (s.gated_experts) linear(Part::kSharedExperts, Module::kSharedExperts, "shared.gate_proj", shared, h, false);
          linear(Part::kSharedExperts, Module::kSharedExperts, "shared.up_proj", shared, h, false);
          linear(Part::kSharedExperts, Module::kSharedExperts, "shared.down_proj", h, shared, false);
          if (s.shared_expert_gate) mat(Part::kSharedExperts, 1, h);
        }
        return;
      }
    }
  }

  void layer(int index, const LayerSpec& l, const ModuleNames& n) {
    layer_ = index;
    switch (l.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kSlidingAttention:
      case LayerKind::kChunkedAttention:
        attention(layer_attention(m_, l));
        if (l.msa_indexer) msa_indexer();
        break;
      case LayerKind::kMla: mla(); break;
      case LayerKind::kMamba1: mamba1(); break;
      case LayerKind::kMamba2: mamba2(); break;
      case LayerKind::kLinearAttention: linear_attention(); break;
      case LayerKind::kNoMixer: break;
      case LayerKind::kCompressedAttention: compressed_attention(l); break;
    }
    mlp(l.mlp, n);
    if (l.kind == LayerKind::kCompressedAttention) compressed_attention_extras(index, l);
    for (int i = 0; i < m_.norms_per_layer; ++i) norm(m_.hidden_size);
    if (m_.attn_res_block_size > 0) attention_residuals();
    if (m_.layer_scalar) vec(Part::kNorm, 1);
    if (m_.per_layer_input_size > 0) {
      // per_layer_input_gate [width, hidden] and per_layer_projection [hidden, width], replicated on
      // every rank (vLLM ReplicatedLinear), and post_per_layer_input_norm
      linear(Part::kMlp, Module::kMlp, "per_layer_input_gate", m_.per_layer_input_size, m_.hidden_size, false);
      linear(Part::kMlp, Module::kMlp, "per_layer_projection", m_.hidden_size, m_.per_layer_input_size, false);
      norm(m_.hidden_size);
    }
    layer_ = -1;
  }

  void embedding() {
    mat(Part::kEmbedding, vocab_per_gpu(), m_.hidden_size);
    if (m_.per_layer_input_size > 0) {
      // Gemma-4 E2B/E4B Per-Layer Embeddings (vLLM gemma4.py): embed_tokens_per_layer
      // [vocab, layers x width] (a VocabParallelEmbedding), per_layer_model_projection [layers x width,
      // hidden] (column-parallel) and per_layer_projection_norm [width]
      const int64_t width = int64_t{m_.num_layers()} * m_.per_layer_input_size;
      int64_t vocab = m_.per_layer_input_vocab;
      if (pad_vocab_) vocab = ceil_div(vocab, 64) * 64;
      mat(Part::kEmbedding, ceil_div(vocab, tp_), width);
      mat(Part::kEmbedding, width / tp_, m_.hidden_size);
      vec(Part::kNorm, m_.per_layer_input_size);
    }
  }
  // Kimi-K3 attention residuals: a norm [hidden] and a [1, hidden] projection per site, 16-bit and
  // replicated (two sites per layer: self_attention_res_*, mlp_res_*; one before the final norm).
  void attention_residuals(int sites = 2) {
    for (int i = 0; i < sites; ++i) {
      vec(Part::kNorm, m_.hidden_size);
      mat(Part::kNorm, 1, m_.hidden_size);
    }
  }

  void head(bool force_untied) {
    if (m_.attn_res_block_size > 0) attention_residuals(1);
    norm(m_.hidden_size);
    if (m_.compressed.hc_mult > 0) {
      // DeepSeek-V4: hc_head_fn [hc, hc hidden], hc_head_base [hc], hc_head_scale [1], fp32
      const int64_t hc = m_.compressed.hc_mult;
      fixed(Part::kNorm, hc, hc * m_.hidden_size, 4);
      fixed(Part::kNorm, hc, 1, 4);
      fixed(Part::kNorm, 1, 1, 4);
    }
    if (!m_.tie_word_embeddings || force_untied) {
      add({Part::kLmHead, vocab_per_gpu(), m_.hidden_size, Module::kLmHead, -1, "lm_head", 1});
    }
  }

  // The vision encoder and its projector, unsharded (the caller shards the total by TP).
  // Gemma-4 E2B/E4B audio conformer (transformers Gemma4AudioModel), unsharded like the vision
  // encoder: two stride-2 3x3 convolutions (no bias) each with a LayerNorm without bias, the input
  // projection; per layer two macaron FFNs (H -> 4H -> H with pre/post norms), attention (q, k, v,
  // post, relative_k_proj, per_dim_scale), the light conv (linear_start H -> 2H, depthwise conv,
  // linear_end, two norms) and three norms; output_proj with bias; then embed_audio's projection.
  void audio() {
    const VisionShape& a = m_.audio;
    if (a.kind != VisionKind::kGemma4Audio) return;
    const int64_t H = a.hidden_size, L = a.num_layers, c0 = a.subsample_channels[0], c1 = a.subsample_channels[1];
    auto lin = [&](int64_t rows, int64_t cols, int64_t copies = 1) {
      add({Part::kVision, rows, cols, Module::kNone, -1, "", copies});
    };
    lin(c0, 9);            // layer0 conv 1 -> c0
    lin(c0, 1);            // its LayerNorm weight
    lin(c1, c0 * 9);       // layer1 conv c0 -> c1
    lin(c1, 1);            // its LayerNorm weight
    lin(H, c0 / 4 * c1);   // input_proj_linear
    lin(4 * H, H, 2 * L);  // ffw_layer_1 of both FFNs
    lin(H, 4 * H, 2 * L);  // ffw_layer_2
    lin(H, 4, L);          // the FFNs' pre/post norms
    lin(H, H, 5 * L);      // q, k, v, post, relative_k_proj
    lin(a.head_dim, 1, L); // per_dim_scale
    lin(2 * H, H, L);      // linear_start
    lin(H, H, L);          // linear_end
    lin(H, a.conv_kernel, L);  // depthwise_conv1d
    lin(H, 5, L);          // lconv pre_layer_norm, conv_norm; norm_pre_attn, norm_post_attn, norm_out
    lin(a.output_dim, H);  // output_proj
    lin(a.output_dim, 1);  // its bias
    lin(a.out_hidden_size, a.output_dim);  // embed_audio.embedding_projection
  }

  void vision() {
    const VisionShape& v = m_.vision;
    const int64_t H = v.hidden_size, I = v.intermediate_size, L = v.num_layers;
    auto lin = [&](int64_t rows, int64_t cols, bool bias, int64_t copies = 1) {
      add({Part::kVision, rows, cols, Module::kNone, -1, "", copies});
      if (bias) add({Part::kVision, rows, 1, Module::kNone, -1, "", copies});
    };
    auto v1 = [&](int64_t n, int64_t copies = 1) { add({Part::kVision, n, 1, Module::kNone, -1, "", copies}); };
    switch (v.kind) {
      case VisionKind::kNone:
      case VisionKind::kGemma4Audio: return;  // the audio encoder: audio()
      case VisionKind::kQwen2Vl:
      case VisionKind::kQwen25Vl: {
        const bool v25 = v.kind == VisionKind::kQwen25Vl;
        // patch_embed: Conv3d(in_channels, H, (t, p, p)), no bias
        lin(H, static_cast<int64_t>(v.in_channels) * v.temporal_patch_size * v.patch_size * v.patch_size, false);
        const int64_t norm = v25 ? H : 2 * H;  // RMSNorm weight, or LayerNorm weight + bias
        v1(2 * norm, L);                       // norm1, norm2
        lin(3 * H, H, true, L);                // attn.qkv
        lin(H, H, true, L);                    // attn.proj
        if (v25) {
          lin(I, H, true, L);  // mlp.gate_proj
          lin(I, H, true, L);  // mlp.up_proj
          lin(H, I, true, L);  // mlp.down_proj
        } else {
          lin(I, H, true, L);  // mlp.fc1
          lin(H, I, true, L);  // mlp.fc2
        }
        // merger: ln_q, then Linear(H·m², H·m²) and Linear(H·m², out), both with bias
        const int64_t merged = H * v.spatial_merge_size * v.spatial_merge_size;
        v1(norm);
        lin(merged, merged, true);
        lin(v.out_hidden_size, merged, true);
        return;
      }
      case VisionKind::kSiglip: {
        const int64_t side = v.image_size / v.patch_size;
        lin(H, static_cast<int64_t>(v.in_channels) * v.patch_size * v.patch_size, true);  // patch_embedding
        add({Part::kVision, side * side, H, Module::kNone, -1, "", 1});      // position_embedding
        v1(2 * H, L);             // layer_norm1
        lin(H, H, true, 4 * L);   // q, k, v, out
        v1(2 * H, L);             // layer_norm2
        lin(I, H, true, L);       // fc1
        lin(H, I, true, L);       // fc2
        v1(2 * H);                // post_layernorm
        // Gemma-3 multimodal projector: mm_input_projection_weight [H, text] + mm_soft_emb_norm
        add({Part::kVision, H, v.out_hidden_size, Module::kNone, -1, "", 1});
        v1(H);
        return;
      }
      case VisionKind::kQwen3Vl: {
        // Qwen3-VL / Qwen3.5 ViT (transformers Qwen3VLVisionModel): patch_embed Conv3d with bias,
        // a learned pos_embed table, LayerNorm blocks with qkv/proj and linear_fc1/fc2 (all with
        // bias), a merger (LayerNorm over H, fc1 [H·m², H·m²], fc2 [out, H·m²]), and one
        // deepstack merger per deepstack_visual_indexes entry (its LayerNorm over H·m²).
        const int64_t merged = H * v.spatial_merge_size * v.spatial_merge_size;
        lin(H, static_cast<int64_t>(v.in_channels) * v.temporal_patch_size * v.patch_size * v.patch_size, true);
        add({Part::kVision, v.num_position_embeddings, H, Module::kNone, -1, "", 1});
        v1(4 * H, L);            // norm1, norm2 (weight + bias)
        lin(3 * H, H, true, L);  // attn.qkv
        lin(H, H, true, L);      // attn.proj
        lin(I, H, true, L);      // mlp.linear_fc1
        lin(H, I, true, L);      // mlp.linear_fc2
        v1(2 * H);               // merger.norm
        lin(merged, merged, true);
        lin(v.out_hidden_size, merged, true);
        for (int i = 0; i < v.deepstack_mergers; ++i) {
          v1(2 * merged);
          lin(merged, merged, true);
          lin(v.out_hidden_size, merged, true);
        }
        return;
      }
      case VisionKind::kMoonVit: {
        // Kimi-K2.5 MoonViT (vision_tower.*): patch_embed.proj Conv2d with bias, pos_emb.weight
        // [grid, grid, H] (the temporal table is fixed sin-cos, not stored), blocks with norm0/norm1
        // LayerNorms, wqkv and wo with bias, mlp.fc0/fc1 with bias, encoder.final_layernorm; then
        // mm_projector: pre_norm LayerNorm(H), proj.0 [H·m², H·m²] and proj.2 [text, H·m²], with bias.
        const int64_t merged = H * v.spatial_merge_size * v.spatial_merge_size;
        lin(H, static_cast<int64_t>(v.in_channels) * v.patch_size * v.patch_size, true);
        add({Part::kVision, static_cast<int64_t>(v.image_size) * v.image_size, H, Module::kNone, -1, "", 1});
        v1(4 * H, L);            // norm0, norm1 (weight + bias)
        lin(3 * H, H, true, L);  // wqkv
        lin(H, H, true, L);      // wo
        lin(I, H, true, L);      // mlp.fc0
        lin(H, I, true, L);      // mlp.fc1
        v1(2 * H);               // encoder.final_layernorm
        v1(2 * H);               // mm_projector.pre_norm
        lin(merged, merged, true);
        lin(v.out_hidden_size, merged, true);
        return;
      }
      case VisionKind::kMoonVit2: {
        // Kimi-K3 MoonViT-V2 (vision_tower.*, no biases anywhere): patch_embed.proj Conv2d,
        // pos_emb.weight [grid, grid, H], blocks with RMSNorm norm0/norm1, wqkv [3 it, H] and wo
        // [H, it] for the attention width it = qkv_hidden_size, mlp.fc0/fc1, final_layernorm; then
        // mm_projector (patchmergerv2): proj.0 [H·m², H·m²], proj.2 [text, H·m²], post_norm [text].
        const int64_t merged = H * v.spatial_merge_size * v.spatial_merge_size;
        const int64_t it = v.qkv_hidden_size;
        lin(H, static_cast<int64_t>(v.in_channels) * v.patch_size * v.patch_size, false);
        add({Part::kVision, static_cast<int64_t>(v.image_size) * v.image_size, H, Module::kNone, -1, "", 1});
        v1(2 * H, L);             // norm0, norm1
        lin(3 * it, H, false, L); // wqkv
        lin(H, it, false, L);     // wo
        lin(I, H, false, L);      // mlp.fc0
        lin(H, I, false, L);      // mlp.fc1
        v1(H);                    // encoder.final_layernorm
        lin(merged, merged, false);
        lin(v.out_hidden_size, merged, false);
        v1(v.out_hidden_size);    // mm_projector.post_norm
        return;
      }
      case VisionKind::kGemma4: {
        // transformers Gemma4VisionModel: patch_embedder.input_proj (no bias) and its
        // position_embedding_table [2, rows, H]; blocks of q/k/v/o (no bias), q_norm/k_norm per head
        // (v_norm has no weight), four RMSNorms and a GeGLU MLP; std_bias/std_scale buffers; then
        // embed_vision.embedding_projection [text, H] after a weightless norm.
        lin(H, static_cast<int64_t>(v.in_channels) * v.patch_size * v.patch_size, false);
        add({Part::kVision, 2 * static_cast<int64_t>(v.num_position_embeddings), H, Module::kNone, -1, "", 1});
        lin(H, H, false, 4 * L);  // q, k, v, o
        v1(2 * v.head_dim, L);    // q_norm, k_norm
        v1(4 * H, L);             // input / post_attention / pre_feedforward / post_feedforward norms
        lin(I, H, false, 2 * L);  // gate, up
        lin(H, I, false, L);      // down
        if (v.standardize) v1(2 * H);
        lin(v.out_hidden_size, H, false);
        return;
      }
      case VisionKind::kPixtral: {
        lin(H, static_cast<int64_t>(v.in_channels) * v.patch_size * v.patch_size, false);  // patch_conv
        v1(H);                   // ln_pre
        v1(H, L);                // attention_norm
        lin(H, H, false, 4 * L); // q, k, v, o
        v1(H, L);                // ffn_norm
        lin(I, H, false, 2 * L); // gate, up
        lin(H, I, false, L);     // down
        if (v.has_patch_merger) {
          v1(H);                                                                  // projector norm
          lin(H, H * v.spatial_merge_size * v.spatial_merge_size, false);         // patch_merger
        }
        lin(v.out_hidden_size, H, v.projector_bias);                 // linear_1
        lin(v.out_hidden_size, v.out_hidden_size, v.projector_bias); // linear_2
        return;
      }
      case VisionKind::kLlama4: {
        const int64_t patches = (v.image_size / v.patch_size) * (v.image_size / v.patch_size);
        lin(H, static_cast<int64_t>(v.in_channels) * v.patch_size * v.patch_size, false);  // unfold + linear
        v1(H);                                                                             // class_embedding
        add({Part::kVision, patches + 1, H, Module::kNone, -1, "", 1});      // positional_embedding_vlm
        v1(2 * H);  // layernorm_pre
        v1(2 * H);  // layernorm_post
        v1(2 * H, L);            // input_layernorm
        lin(H, H, true, 4 * L);  // q, k, v, o
        v1(2 * H, L);            // post_attention_layernorm
        lin(I, H, true, L);      // fc1
        lin(H, I, true, L);      // fc2
        // pixel-shuffle adapter: fc1 [projector_input, I], fc2 [projector_output, projector_output]
        lin(v.projector_input_dim, I, false);
        lin(v.projector_output_dim, v.projector_output_dim, false);
        lin(m_.hidden_size, v.out_hidden_size, v.projector_bias);  // multi_modal_projector.linear_1
        return;
      }
    }
  }

 private:
  const ModelConfig& m_;
  int tp_;
  int ep_;
  int etp_;  // GPUs each expert's width is split over (Parallelism::expert_tensor_parallel)
  bool pad_vocab_;
  bool fused_experts_;
  bool fp32_router_;  // fp32_router(): the router's tensors stored at 4 B
  Emit& emit_;
  int layer_ = -1;
};

// Calls emit(const Tensor&) for every tensor of the stage, always in the same order: embedding,
// layers, final norm and LM head, vision encoder.
template <class Emit>
void enumerate(const ModelConfig& m, const Parallelism& p, int stage, bool pad_vocab, Emit&& emit) {
  TensorList<std::remove_reference_t<Emit>> list(m, p, pad_vocab, emit);
  const ModuleNames names = names_for(m);
  auto [first, last] = pipeline_stage_layers(m.num_layers(), p.pipeline_parallel, stage);
  bool is_first = stage == 0;
  bool is_last = stage == p.pipeline_parallel - 1;
  if (is_first) list.embedding();
  for (int i = first; i < last; ++i) list.layer(i, m.layers[static_cast<size_t>(i)], names);
  // With pipeline stages the last stage holds its own LM head even when tied.
  if (is_last) list.head(p.pipeline_parallel > 1 && m.tie_word_embeddings);
  if (is_first) list.vision();
  if (is_first) list.audio();
}

// The Hugging Face style name of a tensor's module, for matching ignore lists.
std::string module_name(const ModelConfig& m, const ModuleNames& n, const Tensor& t) {
  if (t.module == Module::kLmHead) return "lm_head";
  std::string inner = t.name;
  // Route the generic names of MLP, expert and shared-expert tensors through the family's prefix.
  auto replace_prefix = [&](std::string_view from, std::string_view to) {
    if (inner.rfind(from, 0) == 0) inner = std::string(to) + inner.substr(from.size());
  };
  replace_prefix("self_attn.", std::string(n.attention) + ".");
  replace_prefix("mlp.", std::string(n.mlp) + ".");
  replace_prefix("experts.", std::string(n.experts) + ".");
  replace_prefix("shared.", std::string(n.shared) + ".");
  (void)m;
  return fmt::format("{}.{}.{}", n.layers, t.layer, inner);
}

struct Storage {
  int64_t bytes = 0;
  bool quantized = false;
};

// An unquantized tensor's bytes per element: fp32 or, for every other activation dtype, 16-bit.
int64_t plain_bytes_per_element(const WeightFormat& f) { return f.dtype == DType::kF32 ? 4 : 2; }

Storage tensor_storage(const ModelConfig& m, const ModuleNames& names, const Tensor& t, const WeightFormat& f) {
  const int64_t n = t.rows * t.cols;
  if (t.element_bytes > 0) return {n * t.element_bytes, false};
  const int64_t plain = n * plain_bytes_per_element(f);
  if (t.module == Module::kNone || !f.quant.quantized()) return {plain, false};
  if (t.module == Module::kLmHead && !f.quant.quantize_lm_head) return {plain, false};
  if (!f.quant.ignore.empty() && !is_quantized_module(f.quant, module_name(m, names, t))) return {plain, false};
  int64_t bytes = t.module == Module::kExperts && f.quant.expert_method != QuantMethod::kNone
                      ? quantized_linear_bytes(expert_quantization(f.quant), t.rows, t.cols, f.dtype)
                      : quantized_linear_bytes(f.quant, t.rows, t.cols, f.dtype);
  // AutoGPTQ-style exports write a (zero) fp16 bias for every quantized layer without one.
  if (f.quant.method == QuantMethod::kGptq && !t.has_bias) bytes += t.rows * 2;
  return {bytes, true};
}

const char* module_label(Module mod) {
  switch (mod) {
    case Module::kAttention: return "attention";
    case Module::kMlp: return "dense MLP";
    case Module::kExperts: return "routed experts";
    case Module::kSharedExperts: return "shared experts";
    case Module::kRecurrent: return "recurrent mixers";
    case Module::kLmHead: return "lm_head";
    case Module::kNone: return "";
  }
  return "";
}

}  // namespace

std::string WeightFormat::describe() const {
  if (!quant.quantized()) return std::string(dtype_name(dtype));
  return fmt::format("{} ({})", quant.description, quant.origin);
}

int64_t ParamCount::total() const {
  return embedding + attention + recurrent + mlp + experts + shared_experts + routers + norms + lm_head + vision;
}

int64_t ParamCount::active() const { return total() - experts + active_experts; }

ParamCount count_parameters(const ModelConfig& m) {
  ParamCount c;
  enumerate(m, Parallelism{}, 0, false, [&](const Tensor& t) {
    if (t.engine_only || !t.parameter) return;
    const int64_t n = t.rows * t.cols * t.copies;
    switch (t.part) {
      case Part::kEmbedding: c.embedding += n; break;
      case Part::kAttention: c.attention += n; break;
      case Part::kRecurrent: c.recurrent += n; break;
      case Part::kMlp: c.mlp += n; break;
      case Part::kExperts: c.experts += n; break;
      case Part::kSharedExperts: c.shared_experts += n; break;
      case Part::kRouter: c.routers += n; break;
      case Part::kNorm: c.norms += n; break;
      case Part::kLmHead: c.lm_head += n; break;
      case Part::kVision: c.vision += n; break;
    }
  });
  for (const LayerSpec& l : m.layers) {
    if (l.mlp.kind == MlpKind::kMoe) {
      const int64_t eh = l.mlp.expert_latent_size > 0 ? l.mlp.expert_latent_size : m.hidden_size;
      const int64_t per_expert = (l.mlp.gated_experts ? 3 : 2) * eh * l.mlp.expert_intermediate_size +
                                 (l.mlp.expert_bias ? 2 * l.mlp.expert_intermediate_size + eh : 0);
      c.active_experts += static_cast<int64_t>(l.mlp.experts_per_token) * per_expert;
    }
  }
  return c;
}

WeightBytes weight_bytes_breakdown(const ModelConfig& m, const WeightFormat& f, const Parallelism& p, int stage) {
  WeightBytes out;
  const ModuleNames names = names_for(m);
  bool kept[7] = {};
  bool seen_quantized = false;
  int64_t vision = 0;
  // Unquantized, every tensor is plain (tensor_storage's first rule) and no module is looked up.
  const bool quantized_format = f.quant.quantized();
  const int64_t width = plain_bytes_per_element(f);
  enumerate(m, p, stage, true, [&](const Tensor& t) {
    const Storage s = quantized_format || t.element_bytes > 0 ? tensor_storage(m, names, t, f)
                                                              : Storage{t.rows * t.cols * width, false};
    const int64_t bytes = s.bytes * t.copies;
    if (t.part == Part::kVision) {
      vision += bytes;
      return;
    }
    (s.quantized ? out.quantized : out.unquantized) += bytes;
    if (t.part == Part::kExperts) out.experts += bytes;
    if (s.quantized) seen_quantized = true;
    if (!s.quantized && t.module != Module::kNone) kept[static_cast<int>(t.module)] = true;
  });
  // The vision encoder is sharded like the text layers (vLLM's default mm_encoder_tp_mode).
  out.vision = ceil_div(vision, p.tensor_parallel);
  out.unquantized += out.vision;
  if (f.quant.quantized()) {
    for (Module mod : {Module::kAttention, Module::kMlp, Module::kExperts, Module::kSharedExperts, Module::kRecurrent,
                       Module::kLmHead}) {
      if (kept[static_cast<int>(mod)]) out.kept_16bit.emplace_back(module_label(mod));
    }
    if (!seen_quantized) out.kept_16bit.emplace_back("(no tensor of this model matched the quantized modules)");
  }
  return out;
}

int64_t weight_bytes_per_gpu(const ModelConfig& m, const WeightFormat& f, const Parallelism& p, int stage) {
  return weight_bytes_breakdown(m, f, p, stage).total();
}

std::vector<uint8_t> quantized_module_mask(const ModelConfig& m, const WeightFormat& f) {
  std::vector<uint8_t> mask(static_cast<size_t>(m.num_layers()), 0);
  if (!f.quant.quantized()) return mask;
  const ModuleNames names = names_for(m);
  enumerate(m, Parallelism{}, 0, false, [&](const Tensor& t) {
    if (t.layer < 0 || t.module == Module::kNone || t.module == Module::kLmHead) return;
    if (!tensor_storage(m, names, t, f).quantized) return;
    uint8_t bit = 0;
    switch (t.module) {
      case Module::kAttention: bit = kQuantAttention; break;
      case Module::kMlp: bit = kQuantMlp; break;
      case Module::kExperts: bit = kQuantExperts; break;
      case Module::kSharedExperts: bit = kQuantShared; break;
      case Module::kRecurrent: bit = kQuantRecurrent; break;
      case Module::kNone:
      case Module::kLmHead: break;
    }
    mask[static_cast<size_t>(t.layer)] |= bit;
  });
  return mask;
}

int64_t weight_bytes_total(const ModelConfig& m, const WeightFormat& f, const ParamCount& counted) {
  // A model with tensors of their own width (DeepSeek-V4's fp32 and int64 ones, MiniMax-M3's fp32
  // router, Kimi delta attention's fp32 A_log and dt_bias) is enumerated too.
  const bool kda = m.linear.kind == LinearAttentionKind::kKimiDelta && m.count_layers(LayerKind::kLinearAttention) > 0;
  if (f.quant.quantized() || m.compressed.hc_mult > 0 || fp32_router(m) || kda) return weight_bytes_total(m, f);
  return counted.total() * plain_bytes_per_element(f);
}

int64_t weight_bytes_total(const ModelConfig& m, const WeightFormat& f) {
  const ModuleNames names = names_for(m);
  int64_t total = 0;
  enumerate(m, Parallelism{}, 0, false,
            [&](const Tensor& t) { total += t.engine_only ? 0 : tensor_storage(m, names, t, f).bytes * t.copies; });
  return total;
}

}  // namespace kvplan
