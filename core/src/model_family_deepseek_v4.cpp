// DeepSeek-V4 (model_type deepseek_v4, DeepseekV4ForCausalLM: V4-Flash, V4-Pro), read as the
// official inference/model.py builds it (deepseek-ai/DeepSeek-V4-Flash@60d8d707 inference/model.py;
// the tensor list checked against the checkpoints' safetensors headers and index total_size,
// docs/models.md):
//   - attention (CompressedAttentionShape): q LoRA, one shared K = V head of head_dim, a sink per
//     head, a grouped low-rank output; every layer keeps a sliding window, a layer whose
//     compress_ratios entry r is 4 (CSA) or 128 (HCA) also a compressed latent per r tokens, and
//     r = 4 layers a lightning indexer;
//   - manifold hyper-connections (hc_mult residual streams, fp32 mixing projections per layer);
//   - every layer MoE: a router (a fixed token -> experts table, tid2eid, on the first
//     num_hash_layers; a score bias after them), n_routed_experts SwiGLU experts and one shared
//     expert of moe_intermediate_size;
//   - untied embedding and head; the MTP block is not counted (read_mtp_layers).
// Anything the file says that this reading would ignore (attention_bias, a KV head count other than
// one, other compression ratios) is refused, naming the field.
#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"

namespace kvplan::internal {

using nlohmann::json;

ModelConfig parse_deepseek_v4(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  CompressedAttentionShape& a = m.compressed;
  a.num_heads = f.positive_int("num_attention_heads");
  a.head_dim = f.positive_int("head_dim");
  a.rope_dim = f.positive_int("qk_rope_head_dim");
  a.q_lora_rank = f.positive_int("q_lora_rank");
  a.o_groups = f.positive_int("o_groups");
  a.o_lora_rank = f.positive_int("o_lora_rank");
  a.window = f.positive_int("sliding_window");
  a.index_num_heads = f.positive_int("index_n_heads");
  a.index_head_dim = f.positive_int("index_head_dim");
  a.index_topk = f.positive_int("index_topk");
  a.hc_mult = f.positive_int("hc_mult");
  a.num_hash_layers = f.non_negative_int_or("num_hash_layers", 0);
  m.rotary_dim = a.rope_dim;

  if (const int kv = f.positive_int_or("num_key_value_heads", 1); kv != 1) {
    f.fail("num_key_value_heads", std::to_string(kv), "must be 1 (DeepSeek-V4 has one shared K = V head)");
  }
  if (f.bool_or("attention_bias", false)) f.fail("attention_bias", "true", "must be false (DeepSeek-V4 has no biases)");
  if (a.rope_dim > a.head_dim) {
    f.fail("qk_rope_head_dim", std::to_string(a.rope_dim), fmt::format("must not exceed head_dim={}", a.head_dim));
  }
  require_divides(f, "o_groups", a.o_groups, "num_attention_heads", a.num_heads);
  if (a.index_head_dim % 128 != 0) {
    f.fail("index_head_dim", std::to_string(a.index_head_dim),
           "must be a multiple of 128 (the indexer's fp8 keys carry one scale per 128)");
  }
  const std::string act = f.string_or("hidden_act", "silu");
  if (act != "silu") f.fail("hidden_act", act, "must be silu (DeepSeek-V4's experts are SwiGLU)");
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  if (m.tie_word_embeddings) f.fail("tie_word_embeddings", "true", "must be false (DeepSeek-V4 has its own head)");
  read_mtp_layers(f, m);

  // compress_ratios: one entry per layer, then one per MTP block (ratio 0: no compressor).
  if (!f.has("compress_ratios") || !f.raw("compress_ratios").is_array()) {
    f.fail("compress_ratios", f.has("compress_ratios") ? json_value_text(f.raw("compress_ratios")) : "missing",
           "must be a list of each layer's compression ratio");
  }
  const std::vector<int> ratios = int_list(f, "compress_ratios");
  const size_t layers = m.layers.size();
  if (ratios.size() != layers && ratios.size() != layers + static_cast<size_t>(m.num_mtp_layers)) {
    f.fail("compress_ratios", fmt::format("{} entries", ratios.size()),
           fmt::format("must have num_hidden_layers={} entries (or {} with the MTP blocks')", layers,
                       layers + static_cast<size_t>(m.num_mtp_layers)));
  }
  a.ratio_entries = static_cast<int>(ratios.size());
  for (size_t i = 0; i < ratios.size(); ++i) {
    if (ratios[i] != 0 && ratios[i] != 4 && ratios[i] != 128) {
      f.fail(fmt::format("compress_ratios[{}]", i), std::to_string(ratios[i]),
             "must be 0 (sliding window only), 4 (CSA, with the indexer) or 128 (HCA): the ratios DeepSeek-V4 "
             "ships; the compressor's overlap rule for another ratio is not known to kvplan");
    }
  }

  const int routed = f.positive_int("n_routed_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  if (top_k > routed) {
    f.fail("num_experts_per_tok", std::to_string(top_k), fmt::format("must not exceed n_routed_experts={}", routed));
  }
  const int width = f.positive_int("moe_intermediate_size");
  const int shared = f.non_negative_int_or("n_shared_experts", 0);
  if (a.num_hash_layers > static_cast<int>(layers)) {
    f.fail("num_hash_layers", std::to_string(a.num_hash_layers),
           fmt::format("must not exceed num_hidden_layers={}", layers));
  }
  for (size_t i = 0; i < layers; ++i) {
    LayerSpec& l = m.layers[i];
    l.kind = LayerKind::kCompressedAttention;
    l.window_tokens = a.window;
    l.compress_ratio = ratios[i];
    set_moe(l.mlp, routed, top_k, width);
    l.mlp.num_shared_experts = shared;
    l.mlp.shared_intermediate_size = shared * width;
    // the score bias (fp32) or, on hash layers, the tid2eid table: param_count emits them itself
    l.mlp.router_bias = false;
  }
  if (f.has("expert_dtype")) {
    const std::string e = f.string("expert_dtype");
    if (e != "fp4") {
      f.fail("expert_dtype", e, "must be fp4 (MXFP4 experts, the released checkpoints) or absent");
    }
    if (!f.has("quantization_config")) {
      f.fail("expert_dtype", e, "needs the fp8 quantization_config it is written beside (the released checkpoints)");
    }
  }
  m.notes.push_back(fmt::format(
      "model '{}': DeepSeek-V4 attention: every layer keeps its last {} latents ({} wide); {} layers also one "
      "compressed latent per 4 tokens with the indexer's compressed keys (CSA, top {}), {} one per 128 tokens (HCA)",
      m.id, a.window, a.head_dim, std::count(ratios.begin(), ratios.begin() + static_cast<long>(layers), 4),
      a.index_topk, std::count(ratios.begin(), ratios.begin() + static_cast<long>(layers), 128)));
  return m;
}

void read_deepseek_v4_quantization(const JsonFields& f, ModelConfig& m) {
  QuantizationConfig& q = m.quantization;
  const JsonFields c(f.raw("quantization_config"), f.what() + " quantization_config");
  // The released checkpoints' config (fp8 block 128 x 128, ue8m0 scales); anything more (a
  // ModelOpt mixed-precision export, another scale format) would change bytes this reading ignores.
  for (const auto& [key, value] : f.raw("quantization_config").items()) {
    if (key != "quant_method" && key != "fmt" && key != "activation_scheme" && key != "scale_fmt" &&
        key != "weight_block_size") {
      c.fail(key, json_value_text(value),
             "is not understood for DeepSeek-V4 (kvplan reads the released fp8 block checkpoints: quant_method, fmt, "
             "activation_scheme, scale_fmt, weight_block_size)");
    }
  }
  if (q.method != QuantMethod::kFp8Block || q.block_n != 128 || q.block_k != 128) {
    c.fail("weight_block_size", c.has("weight_block_size") ? json_value_text(c.raw("weight_block_size")) : "missing",
           "must be [128, 128] (DeepSeek-V4's fp8 block checkpoints)");
  }
  const std::string scale = c.string_or("scale_fmt", "");
  if (scale != "ue8m0") c.fail("scale_fmt", scale, "must be ue8m0 (the checkpoints store one e8m0 byte per block)");
  q.scale_bytes = 1;  // `.scale` tensors of F8_E8M0, one byte per 128 x 128 block
  q.description += ", e8m0 block scales";
  if (f.has("expert_dtype")) {
    q.expert_method = QuantMethod::kMxfp4;
    q.description += "; routed experts MXFP4 (expert_dtype fp4)";
  }
}

}  // namespace kvplan::internal
