// Kimi-Linear (model_type kimi_linear, KimiLinearForCausalLM): Kimi delta attention (KDA) layers
// with a few MLA layers without positional encoding, and a DeepSeek-V3-style MoE.
//
// The layout is vLLM's kimi_linear.py and layers/kda.py:
//   - linear_attn_config.kda_layers / full_attn_layers (1-based) name each layer's mixer;
//   - KDA: q/k/v_proj, f_a_proj (replicated) + f_b_proj (per-channel decay), dt_bias, b_proj,
//     q/k/v_conv1d, A_log, g_a_proj (replicated) + g_b_proj (output gate), o_norm, o_proj;
//     state per request: three short-convolution windows and a heads x head_dim^2 recurrent state
//     that vLLM always keeps in fp32;
//   - MLA: q_proj (no q LoRA), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; no RoPE is
//     applied (mla_use_nope) but the rope dims are still projected and cached;
//   - MoE on layers >= first_k_dense_replace (every moe_layer_freq-th): sigmoid router with its
//     correction bias, SwiGLU experts, num_shared_experts x moe_intermediate_size shared width.
// Kimi-K3's language model (text_config of kimi_k3) adds attention residuals, latent experts,
// SiTU, gated MLA with a q LoRA and a full-rank KDA gate (parse_kimi_linear says where each is read).
#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"
#include "kvplan/core/limits.h"

namespace kvplan::internal {

using nlohmann::json;

namespace {

// A 1-based layer list of linear_attn_config, checked against the layer count.
std::vector<int> one_based_layers(const JsonFields& c, std::string_view key, int layers) {
  std::vector<int> out = int_list(c, key);
  for (int v : out) {
    if (v < 1 || v > layers) c.fail(key, std::to_string(v), fmt::format("must list layers 1..{} (1-based)", layers));
  }
  return out;
}

}  // namespace

ModelConfig parse_kimi_linear(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  // The released config has no max_position_embeddings; vLLM's context-length keys include
  // model_max_length (config/model.py _get_and_verify_max_len), which it has.
  if (m.max_position_embeddings == 0 && f.has("model_max_length")) {
    m.max_position_embeddings = f.positive_int64("model_max_length");
    if (m.max_position_embeddings > kMaxTokens) {
      f.fail("model_max_length", std::to_string(m.max_position_embeddings),
             fmt::format("is beyond any context kvplan plans for (at most {} tokens)", kMaxTokens));
    }
  }
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  // Kimi-K3's language model is this family with five additions, each read from its key (the
  // reference modeling_kimi_linear.py of moonshotai/Kimi-K3 and its checkpoint's tensors):
  //   - attention residuals (attn_res_block_size): two norms and two [1, hidden] projections per
  //     layer, one pair before the final norm;
  //   - latent experts (routed_expert_hidden_size, latent_moe_use_norm): routed_expert_down_proj
  //     [latent, hidden], routed_expert_norm [latent], routed_expert_up_proj [hidden, latent], 16-bit
  //     in the checkpoint although its MXFP4 ignore list does not name them;
  //   - SiTU (hidden_act situ, two betas): an elementwise gate like SiLU's, no parameters;
  //   - gated MLA (mla_use_output_gate) with a q LoRA (q_lora_rank);
  //   - a full-rank KDA output gate (linear_attn_config.use_full_rank_gate) and gate_lower_bound
  //     (a clamp of the decay, no parameters).
  m.attn_res_block_size = f.non_negative_int_or("attn_res_block_size", 0);
  const std::string act = f.string_or("hidden_act", "silu");
  if (act != "silu" && act != "situ") {
    f.fail("hidden_act", act, "must be silu (Kimi-Linear) or situ (Kimi-K3)");
  }
  if (act == "situ") {
    for (const char* key : {"activation_situ_beta", "activation_situ_linear_beta"}) {
      if (!f.has(key) || !f.raw(key).is_number() || f.raw(key).get<double>() <= 0) {
        f.fail(key, f.has(key) ? json_value_text(f.raw(key)) : "missing", "must be a positive number with hidden_act situ");
      }
    }
  }
  const bool gated_mla = f.bool_or("mla_use_output_gate", false);
  if (!f.bool_or("mla_use_nope", true)) {
    f.fail("mla_use_nope", "false", "must be true (vLLM KimiMLAAttention asserts it)");
  }

  MlaShape& a = m.mla;
  a.num_heads = f.positive_int("num_attention_heads");
  a.q_lora_rank = f.has("q_lora_rank") ? f.positive_int("q_lora_rank") : 0;
  a.output_gate = gated_mla;
  a.kv_lora_rank = f.positive_int("kv_lora_rank");
  a.qk_nope_head_dim = f.positive_int("qk_nope_head_dim");
  a.qk_rope_head_dim = f.positive_int("qk_rope_head_dim");
  a.v_head_dim = f.positive_int("v_head_dim");
  m.rotary_dim = 0;  // mla_use_nope: no rotary embedding is built

  if (!f.has("linear_attn_config") || !f.raw("linear_attn_config").is_object()) {
    f.fail("linear_attn_config", f.has("linear_attn_config") ? json_value_text(f.raw("linear_attn_config")) : "missing",
           "must be an object naming kda_layers and full_attn_layers");
  }
  JsonFields c(f.raw("linear_attn_config"), f.what() + " linear_attn_config");
  LinearAttentionShape& s = m.linear;
  s.kind = LinearAttentionKind::kKimiDelta;
  s.num_key_heads = s.num_value_heads = c.positive_int("num_heads");
  s.key_head_dim = s.value_head_dim = c.positive_int("head_dim");
  s.conv_kernel = c.positive_int("short_conv_kernel_size");
  s.full_rank_gate = c.bool_or("use_full_rank_gate", false);
  if (c.has("gate_lower_bound") && !c.raw("gate_lower_bound").is_number()) {
    c.fail("gate_lower_bound", json_value_text(c.raw("gate_lower_bound")), "must be a number");
  }
  if (s.full_rank_gate) {
    // The Kimi-K3 checkpoint (the only one with the full-rank gate) stores A_log as F32[head_dim]
    // (96 heads padded to 128, the tail zero), and its convolutions and o_norm in fp32.
    s.a_log_entries = std::max(s.num_value_heads, s.value_head_dim);
    s.fp32_conv_and_norm = true;
  }

  const int n = m.num_layers();
  const std::vector<int> kda = one_based_layers(c, "kda_layers", n);
  const std::vector<int> full = one_based_layers(c, "full_attn_layers", n);
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (int v : kda) ++seen[static_cast<size_t>(v - 1)];
  for (int v : full) ++seen[static_cast<size_t>(v - 1)];
  for (int i = 0; i < n; ++i) {
    if (seen[static_cast<size_t>(i)] != 1) {
      c.fail("kda_layers", fmt::format("layer {} listed {} times", i + 1, seen[static_cast<size_t>(i)]),
             "kda_layers and full_attn_layers must together list every layer exactly once");
    }
  }
  for (int v : kda) m.layers[static_cast<size_t>(v - 1)].kind = LayerKind::kLinearAttention;
  for (int v : full) m.layers[static_cast<size_t>(v - 1)].kind = LayerKind::kMla;

  const int experts = f.non_negative_int_or("num_experts", 0);
  const int first_dense = f.non_negative_int_or("first_k_dense_replace", 0);
  const int freq = f.positive_int_or("moe_layer_freq", 1);
  for (int i = 0; i < n; ++i) {
    LayerSpec& l = m.layers[static_cast<size_t>(i)];
    if (experts == 0 || i < first_dense || i % freq != 0) {
      l.mlp.kind = MlpKind::kGated;
      l.mlp.intermediate_size = f.positive_int("intermediate_size");
      continue;
    }
    const int top_k = f.positive_int("num_experts_per_token");
    if (top_k > experts) f.fail("num_experts_per_token", std::to_string(top_k), "must not exceed num_experts");
    set_moe(l.mlp, experts, top_k, f.positive_int("moe_intermediate_size"));
    l.mlp.router_bias = true;  // e_score_correction_bias, always allocated (vLLM KimiMoE)
    l.mlp.num_shared_experts = f.non_negative_int_or("num_shared_experts", 0);
    l.mlp.shared_intermediate_size = l.mlp.num_shared_experts * l.mlp.expert_intermediate_size;
    if (f.has("routed_expert_hidden_size")) {
      l.mlp.expert_latent_size = f.positive_int("routed_expert_hidden_size");
      l.mlp.expert_latent_norm = f.bool_or("latent_moe_use_norm", false);
      l.mlp.expert_latent_quantized = false;
      l.mlp.router_bias_fp32 = true;
      // vLLM's Kimi-K3 KimiMoE (models/kimi_k3/nvidia/model.py; config attribute, default 256)
      l.mlp.min_expert_width_per_gpu = f.positive_int_or("min_moe_intermediate_per_partition", 256);
      if (i == first_dense) {
        m.notes.push_back(fmt::format(
            "without expert parallelism vLLM's Kimi-K3 MoE pads each GPU's slice of an expert with zeros to at least "
            "{} columns (KimiMoE min_moe_intermediate_per_partition): beyond tensor parallel {} the {}-wide experts "
            "grow; the per-GPU weights and step costs include the padding",
            l.mlp.min_expert_width_per_gpu, l.mlp.expert_intermediate_size / l.mlp.min_expert_width_per_gpu,
            l.mlp.expert_intermediate_size));
      }
    } else if (f.has("latent_moe_use_norm")) {
      f.fail("latent_moe_use_norm", json_value_text(f.raw("latent_moe_use_norm")),
             "needs routed_expert_hidden_size (the latent width)");
    }
  }
  return m;
}

}  // namespace kvplan::internal
