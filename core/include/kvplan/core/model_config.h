// kvplan/core/model_config.h — a model's shapes, read from a Hugging Face config.json.
//
//   ModelConfig m = parse_model_config(nlohmann::json::parse(text), "llama-3.1-8b");
//   for (const LayerSpec& layer : m.layers) { ... layer.kind, layer.window_tokens ... }
//
// Every layer carries its attention kind (full, sliding window, chunked local, MLA latent, linear
// attention, Mamba) and its MLP kind (gated, plain, MoE), because KV state, weights and cost are
// per layer. Multimodal checkpoints (Qwen2-VL, Gemma-3, Llama-4, Mistral-3, Pixtral) carry their
// vision encoder's shape so its weights are counted. `quantization_config` is read into
// `quantization` (weight_quant.h).
// Parsing is strict: a missing or inconsistent field throws ConfigError naming model, field,
// value and rule. An unknown model_type is refused with the list of supported ones, unless
// ModelParseOptions::allow_unknown_architecture is set: then it is read as a generic dense decoder
// and `generic_architecture` and `warnings` say so (every output repeats the warning).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvplan/core/dtype.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan {

enum class LayerKind {
  kFullAttention,     // softmax attention over all tokens (MHA/GQA/MQA)
  kSlidingAttention,  // softmax attention over the last window_tokens tokens
  kChunkedAttention,  // local attention within aligned chunks of window_tokens tokens (Llama-4)
  kMla,               // DeepSeek multi-head latent attention: one latent per token
  kLinearAttention,   // recurrent state (Gated DeltaNet in Qwen3-Next)
  kMamba1,            // selective SSM (Jamba)
  kMamba2,            // SSD (Mamba-2)
  kNoMixer,           // no token mixer: the layer is its MLP alone (Nemotron-H '-' and 'E' blocks)
  // DeepSeek-V4 attention (CompressedAttentionShape): a sliding window of latents plus, when the
  // layer's compress_ratio r > 0, one compressed latent per r tokens (and, for r = 4, the indexer's
  // compressed keys). Its caches are several KV layer groups (kv_layout.h).
  kCompressedAttention,
};
inline constexpr int kNumLayerKinds = static_cast<int>(LayerKind::kCompressedAttention) + 1;
std::string_view layer_kind_name(LayerKind kind);
bool holds_kv_per_token(LayerKind kind);  // true for attention kinds, false for recurrent state and kNoMixer

// Softmax attention shapes (full and sliding layers).
struct AttentionShape {
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;    // query/key head dim
  int v_head_dim = 0;  // value head dim (equals head_dim except in a few models)
  bool qkv_bias = false;
  bool o_bias = false;       // output projection bias (Llama-family attention_bias, gpt-oss)
  bool sinks = false;        // gpt-oss: one learned sink logit per query head
  bool output_gate = false;  // Qwen3-Next: q_proj also emits a sigmoid gate per head
  bool qk_norm = false;      // per-head RMSNorm on q and k
  // MiniMax-M2 (qk_norm_type "per_layer"): one RMSNorm over all query heads' width and one over
  // all KV heads' width, instead of a per-head norm of head_dim.
  bool qk_norm_full_width = false;
  // Gemma-4 attention_k_eq_v (its full-attention layers): the checkpoint has no v_proj, the value
  // is the key projection. Engines still cache V beside K (vLLM fills qkv_proj's V shard from
  // k_proj), so the KV bytes are unchanged; the parameter count has no v_proj.
  bool k_eq_v = false;
  // Gemma-4: q_norm/k_norm (per head) and a weightless RMSNorm on v.
  bool v_norm = false;
  // RoPE width of a layer that has its own shape (LayerSpec::attention); 0 in ModelConfig::attention,
  // whose width is ModelConfig::rotary_dim. Engines keep one cos/sin cache per distinct width.
  int rotary_dim = 0;

  bool operator==(const AttentionShape&) const = default;
};

// DeepSeek-V2/V3 multi-head latent attention.
struct MlaShape {
  int num_heads = 0;
  int q_lora_rank = 0;  // 0: plain q_proj
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): a lightning indexer scores every cached
  // token with index_num_heads heads of index_head_dim and attention reads the top index_topk.
  // 0: dense MLA. The indexer caches one fp8 key of index_head_dim per token per layer.
  int index_num_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;
  // Kimi-K3 mla_use_output_gate: g_proj [num_heads x v_head_dim, hidden] (column-parallel), whose
  // sigmoid multiplies the attention output before o_proj.
  bool output_gate = false;
};

// MiniMax-M3 sparse attention (MSA; vLLM models/minimax_m3 MiniMaxM3SparseAttention, SGLang
// MiniMaxSparseKVPool). A layer with LayerSpec::msa_indexer is softmax GQA (ModelConfig::attention)
// whose query reads only topk_blocks blocks of block_size tokens per KV head: index_q_proj
// (index_num_heads x index_head_dim, sharded like the KV heads) scores every cached index key,
// max-pooled per block; the local_blocks newest and init_blocks first blocks are always read.
// index_k_proj writes ONE key of index_head_dim per token, replicated on every tensor-parallel
// rank and cached beside K and V in the model dtype (bf16) whatever the KV dtype. M3 disables the
// index value branch (sparse_disable_index_value), so no index V is cached.
struct MsaShape {
  int index_num_heads = 0;
  int index_head_dim = 0;  // 0: no MSA layers
  int topk_blocks = 0;
  int block_size = 0;      // tokens per scored block; the engines' KV page must equal it
  int init_blocks = 0;
  int local_blocks = 0;
};

// DeepSeek-V4 attention (deepseek_v4; the official inference/model.py Attention, Compressor and
// Indexer): queries from a q LoRA (wq_a, q_norm, wq_b to num_heads x head_dim), one shared K = V
// head of head_dim (wkv, kv_norm; the last rope_dim dims rotated), one sink logit per head, and a
// grouped low-rank output (wo_a: o_groups blocks of num_heads / o_groups heads to o_lora_rank each,
// then wo_b). Every layer caches the last `window` latents; a layer with compress_ratio r > 0 also
// caches one latent per r tokens, pooled by a gated compressor (wkv, wgate, a position bias `ape`,
// a norm; twice as wide, overlapping windows, when r = 4). r = 4 layers (CSA) carry a lightning
// indexer (wq_b from the q latent, weights_proj, its own compressor of index_head_dim) that picks
// index_topk compressed latents; r = 128 layers (HCA) attend to all of theirs.
struct CompressedAttentionShape {
  int num_heads = 0;
  int head_dim = 0;  // the latent: queries, the shared K = V head and every cached entry
  int rope_dim = 0;
  int q_lora_rank = 0;
  int o_groups = 0;
  int o_lora_rank = 0;
  int window = 0;  // sliding_window: latents every layer keeps uncompressed
  int index_num_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;
  // Manifold hyper-connections (mHC): the residual is hc_mult streams of hidden_size, mixed before
  // and after attention and the MoE by fp32 projections [(2 + hc) hc, hc hidden].
  int hc_mult = 0;
  int num_hash_layers = 0;  // the first layers route tokens by a fixed token -> experts table (tid2eid)
  int ratio_entries = 0;    // len(compress_ratios) in the config: the layers', then the MTP blocks' if listed

  bool operator==(const CompressedAttentionShape&) const = default;
};

// Linear attention: Gated DeltaNet (Qwen3-Next), MiniMax lightning attention or Kimi delta attention.
enum class LinearAttentionKind {
  kGatedDeltaNet,  // in_proj_qkvz + in_proj_ba, short convolution, gated RMSNorm, out_proj
  kLightning,      // MiniMax: qkv_proj, output_gate, RMSNorm, out_proj; no convolution
  kKimiDelta,      // Kimi delta attention (Kimi-Linear): q/k/v_proj, per-channel decay (f_a/f_b), beta,
                   // q/k/v short convolutions, low-rank output gate (g_a/g_b), gated RMSNorm, o_proj
};

struct LinearAttentionShape {
  LinearAttentionKind kind = LinearAttentionKind::kGatedDeltaNet;
  int num_key_heads = 0;
  int num_value_heads = 0;
  int key_head_dim = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;  // 0: no short convolution (lightning attention)
  // Kimi-K3 KDA (linear_attn_config.use_full_rank_gate): one output gate g_proj [value heads x
  // value_head_dim, hidden] instead of the rank-head_dim pair g_a_proj / g_b_proj.
  bool full_rank_gate = false;
  // Kimi delta attention's A_log entries per layer as the checkpoint stores them; 0: one per value
  // head. Kimi-K3 pads it to head_dim (F32[128] for 96 heads).
  int a_log_entries = 0;
  // Kimi-K3's checkpoint also keeps the q/k/v short convolutions and o_norm in fp32 (Kimi-Linear's
  // only A_log and dt_bias, which every KDA checkpoint stores in fp32).
  bool fp32_conv_and_norm = false;
};

// Mamba-1 (Jamba) and Mamba-2 mixers.
struct MambaShape {
  int d_inner = 0;   // expand * hidden_size
  int d_state = 0;
  int d_conv = 0;
  int n_groups = 1;  // Mamba-2 B/C groups
  int num_heads = 0; // Mamba-2 heads (d_inner / head_dim)
  int head_dim = 0;  // Mamba-2
  int dt_rank = 0;   // Mamba-1
  bool conv_bias = true;
  bool proj_bias = false;
  bool inner_layernorms = false;  // Jamba: RMSNorm on dt, B and C
  // Mamba-2 B/C groups on one of tp GPUs: vLLM replicates groups so that every rank holds whole
  // ones (mamba_utils.py extra_groups_for_head_shards): n_groups / tp when tp divides n_groups,
  // else one.
  int groups_per_gpu(int tp) const { return n_groups % tp == 0 ? n_groups / tp : 1; }
};

enum class MlpKind { kGated, kPlain, kMoe };

struct MlpShape {
  MlpKind kind = MlpKind::kGated;
  int intermediate_size = 0;        // dense MLP width
  int num_experts = 0;              // routed experts
  int experts_per_token = 0;
  int expert_intermediate_size = 0;
  int num_shared_experts = 0;
  int shared_intermediate_size = 0;  // total width of the shared expert(s)
  bool shared_expert_gate = false;   // Qwen-MoE: sigmoid gate on the shared expert
  bool router_bias = false;          // DeepSeek-V3: e_score_correction_bias; gpt-oss router bias
  bool expert_bias = false;          // gpt-oss: biases on every expert projection
  bool bias = false;                 // dense MLP linear biases
  // false: routed and shared experts have up and down projections only, no gate (Nemotron-H's
  // relu2 experts, vLLM is_non_gated_moe).
  bool gated_experts = true;
  // Nemotron-3 latent MoE (moe_latent_size): the routed experts work in this width;
  // fc1_latent_proj / fc2_latent_proj project to and from it, replicated on every rank. 0: none.
  int expert_latent_size = 0;
  // Kimi-K3 latent MoE (routed_expert_hidden_size): a routed_expert_norm [latent] after the down
  // projection (latent_moe_use_norm), and the two projections stored 16-bit whatever the experts'
  // format (its checkpoint); Nemotron-3's are quantized like the experts.
  bool expert_latent_norm = false;
  bool expert_latent_quantized = true;
  bool router_bias_fp32 = false;  // e_score_correction_bias stored in fp32 (Kimi-K3's checkpoint)
  // Without expert parallelism each GPU's slice of an expert is padded with zeros to at least this
  // width (vLLM models/kimi_k3 KimiMoE min_moe_intermediate_per_partition, 256); 0: no padding.
  int min_expert_width_per_gpu = 0;
  int expert_width_per_gpu(int tp) const {
    const int w = expert_intermediate_size / tp;
    return tp > 1 && w < min_expert_width_per_gpu ? min_expert_width_per_gpu : w;
  }
  // Gemma-4's router: besides proj [E, hidden], a scale vector [hidden] and per_expert_scale [E].
  bool router_scales = false;
  // Gemma-4: experts stored fused per layer (experts.gate_up_proj [E, 2I, H], experts.down_proj).
  bool fused_gate_up = false;

  bool operator==(const MlpShape&) const = default;
};

struct LayerSpec {
  LayerKind kind = LayerKind::kFullAttention;
  int window_tokens = 0;  // sliding layers: the window; chunked layers: the chunk
  MlpShape mlp;
  // The layer's own softmax-attention shape where it differs from ModelConfig::attention (Gemma-4's
  // full-attention layers: wider heads, fewer KV heads). Layers of one kind and window share one
  // shape (build_kv_layout checks). Read it through layer_attention().
  std::optional<AttentionShape> attention;
  // Reads the KV of an earlier layer and stores none (Gemma-4 num_kv_shared_layers; vLLM
  // kv_sharing_target_layer_name). Its k/v weights are still in the checkpoint and loaded.
  bool kv_shared = false;
  // DeepSeek-V4 (kCompressedAttention): tokens per compressed latent, 0 for a sliding-window-only
  // layer (config compress_ratios).
  int compress_ratio = 0;
  // MiniMax-M3 (a kFullAttention layer): this layer carries the MSA indexer and caches its index
  // keys (ModelConfig::msa; config sparse_attention_config.sparse_attention_freq).
  bool msa_indexer = false;
};

// A vision encoder whose weights a multimodal checkpoint carries (engines load it on every rank).
enum class VisionKind {
  kNone,
  kQwen2Vl,    // Qwen2-VL ViT: LayerNorm, plain GELU MLP, patch merger
  kQwen25Vl,   // Qwen2.5-VL ViT: RMSNorm, gated MLP, patch merger
  kSiglip,     // Gemma-3: SigLIP encoder + mm_input_projection
  kPixtral,    // Pixtral encoder (Mistral-3, Pixtral-12B) + patch merger / projector
  kLlama4,     // Llama-4 ViT + pixel-shuffle adapter + projector
  kQwen3Vl,    // Qwen3-VL / Qwen3.5 ViT: LayerNorm, plain GELU MLP, learned position table, merger
  kMoonVit,    // Kimi-K2.5 MoonViT: LayerNorm, plain GELU MLP, learned 2D position grid, patch merger
  kMoonVit2,   // Kimi-K3 MoonViT-V2: RMSNorm, no biases, a wider qkv (qkv_hidden_size), patchmergerv2 projector
  kGemma4,     // Gemma-4 ViT: RMSNorm sandwich blocks, q/k norms, GeGLU MLP, x/y position tables, projector
  kGemma4Audio,  // Gemma-4 audio conformer (E2B/E4B): conv subsampling, macaron FFNs, light conv, projector
};
std::string_view vision_kind_name(VisionKind kind);

struct VisionShape {
  VisionKind kind = VisionKind::kNone;
  int hidden_size = 0;        // encoder width
  int intermediate_size = 0;  // encoder MLP width
  int num_layers = 0;
  int num_heads = 0;
  int patch_size = 0;
  int temporal_patch_size = 1;  // Qwen-VL: frames per patch
  int in_channels = 3;
  int image_size = 0;           // SigLIP / Llama-4: position table side
  int spatial_merge_size = 1;   // Qwen-VL / Pixtral merger: patches merged per side
  int out_hidden_size = 0;      // width handed to the language model
  int projector_input_dim = 0;  // Llama-4 adapter
  int projector_output_dim = 0;
  double pixel_shuffle_ratio = 0;
  bool projector_bias = false;  // Mistral-3 / LLaVA projector biases
  bool has_patch_merger = false;  // Mistral-3 has one, Pixtral-12B (LLaVA) does not
  int num_position_embeddings = 0;  // Qwen3-VL: learned position table rows
  int deepstack_mergers = 0;        // Qwen3-VL: extra mergers (deepstack_visual_indexes entries)
  int head_dim = 0;                 // Gemma-4: per-head q/k norm width
  int qkv_hidden_size = 0;          // Kimi-K3 MoonViT-V2: the attention width (wqkv [3 x it, H], wo [H, it])
  bool standardize = false;         // Gemma-4: std_bias and std_scale buffers [hidden]
  // Gemma-4 audio: subsampling conv channels, light-conv kernel, encoder output width (output_proj_dims)
  int subsample_channels[2] = {0, 0};
  int conv_kernel = 0;
  int output_dim = 0;
};

enum class NormKind { kRmsNorm, kLayerNorm };

// config.json `rope_scaling` as written: engines derive their default context length from it
// (vLLM multiplies max_position_embeddings by `factor` for most types).
struct RopeScaling {
  std::string type;  // "rope_type" (or legacy "type"): linear, dynamic, yarn, llama3, longrope, mrope...; "" if absent
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;  // yarn / llama3 / longrope; 0 if absent
};

struct ModelConfig {
  std::string id;          // preset id or file stem
  std::string name;        // display name
  std::string model_type;  // Hugging Face model_type
  std::string source;      // where the config comes from
  std::vector<std::string> hf_repos;  // Hugging Face repo ids with these shapes ("_kvplan_hf_repos")
  int hidden_size = 0;
  int vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  NormKind norm = NormKind::kRmsNorm;
  int norms_per_layer = 2;     // pre-attention + pre-MLP (Gemma-2 has 4)
  bool parallel_block = false; // Falcon: attention and MLP read the same input
  bool layer_scalar = false;   // Gemma-4: one stored residual multiplier per layer (a [1] buffer)
  int rotary_dim = 0;          // width of the RoPE cos/sin cache rows (0: no RoPE)
  RopeScaling rope_scaling;
  DType dtype = DType::kBF16;  // torch_dtype of the checkpoint
  // The recurrent state dtype the checkpoint asks for (config `mamba_ssm_dtype`, text_config's
  // first); whether an engine reads it is the engine's rule (recurrent_state_dtype.h).
  std::optional<DType> declared_state_dtype;
  std::string declared_state_dtype_field;  // the config key it was read from, e.g. "mamba_ssm_dtype"
  AttentionShape attention;
  MlaShape mla;
  MsaShape msa;  // MiniMax-M3's sparse attention indexer (layers with LayerSpec::msa_indexer)
  CompressedAttentionShape compressed;
  LinearAttentionShape linear;
  MambaShape mamba;
  VisionShape vision;
  VisionShape audio;  // an audio encoder a multimodal checkpoint carries (Gemma-4 E2B/E4B); kind kNone if none
  // Gemma-4 E2B/E4B Per-Layer Embeddings: hidden_size_per_layer_input (0: none) and its vocabulary.
  int per_layer_input_size = 0;
  int per_layer_input_vocab = 0;
  // Kimi-K3 attention residuals (attn_res_block_size; 0: none): before the attention and before the
  // MLP each layer mixes the residual stream with earlier block outputs through a norm and a [1,
  // hidden] projection (self_attention_res_norm/_proj, mlp_res_norm/_proj), and once more before the
  // final norm (output_attn_res_norm/_proj). Replicated; they hold no cache.
  int attn_res_block_size = 0;
  std::vector<LayerSpec> layers;
  QuantizationConfig quantization;  // from quantization_config; method kNone when absent
  int num_mtp_layers = 0;           // multi-token-prediction layers in the checkpoint (not loaded)
  bool generic_architecture = false;  // unknown model_type read as a dense decoder (opted in)
  std::optional<int64_t> published_params;  // exact count from the preset's source, if known
  std::string published_params_source;
  std::vector<std::string> warnings;  // reasons an answer may be wrong (every output repeats them)
  std::vector<std::string> notes;     // assumptions worth reading (e.g. MTP layers not loaded)

  int num_layers() const { return static_cast<int>(layers.size()); }
  int count_layers(LayerKind kind) const;
  bool has_moe() const;
};

// The softmax-attention shape of one layer: its own (LayerSpec::attention) or the model's.
inline const AttentionShape& layer_attention(const ModelConfig& m, const LayerSpec& l) {
  return l.attention ? *l.attention : m.attention;
}
// The first layer shape of its own, nullptr if every layer uses ModelConfig::attention. A model has
// at most one (build_kv_layout keeps one shape per layer kind and window; only Gemma-4's
// full-attention layers have one).
inline const AttentionShape* own_attention_shape(const ModelConfig& m) {
  for (const LayerSpec& l : m.layers) {
    if (l.attention) return &*l.attention;
  }
  return nullptr;
}

struct ModelParseOptions {
  // Read an unknown model_type as a generic dense Llama-like decoder (with a warning) instead of
  // refusing it. --allow-unknown-architecture.
  bool allow_unknown_architecture = false;
};

// The model_type values kvplan understands, sorted (for error messages and `kvplan models`).
const std::vector<std::string>& supported_model_types();

// Parses a Hugging Face config.json object. `id` names the model in error messages.
ModelConfig parse_model_config(const nlohmann::json& config, std::string_view id,
                               const ModelParseOptions& options = {});
// Reads and parses a config.json file; errors name the file.
ModelConfig load_model_config_file(const std::string& path, const ModelParseOptions& options = {});

}  // namespace kvplan
