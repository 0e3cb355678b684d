// Nemotron-H (model_type nemotron_h: Nemotron-H 8B/47B/56B, Nemotron-3 Nano / Super / Ultra).
//
// Every block is one RMSNorm and one mixer, never a mixer and an MLP: the
// hybrid_override_pattern (or, in newer configs, layers_block_type) names each block —
//   'M' / "mamba"      Mamba-2 (MambaMixer2; d_inner = mamba_num_heads x mamba_head_dim),
//   '*' / "attention"  GQA without positional encoding (no RoPE is applied),
//   '-' / "mlp"        a plain relu2 MLP (up_proj, down_proj),
//   'E' / "moe"        routed relu2 experts with no gate projection, sigmoid routing with a
//                      correction bias, a shared expert, and optionally a latent projection
//                      (moe_latent_size) the routed experts work in.
// The layout is vLLM's nemotron_h.py (NemotronH*DecoderLayer, NemotronHMoE) and matches the
// checkpoints' tensor counts (llama.cpp reports 31,577,940,288 for Nano, 120,668,707,840 for
// Super: data/models/SOURCES.md). MTP modules (num_nextn_predict_layers) are not loaded for plain
// serving and are not counted.
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"
#include "kvplan/core/limits.h"

namespace kvplan::internal {

using nlohmann::json;

namespace {

// The block letters, from hybrid_override_pattern or layers_block_type, as pattern characters.
std::string block_pattern(const JsonFields& f) {
  if (f.has("hybrid_override_pattern")) {
    const json& v = f.raw("hybrid_override_pattern");
    if (!v.is_string()) f.fail("hybrid_override_pattern", json_value_text(v), "must be a string of M, *, - and E");
    return v.get<std::string>();
  }
  if (!f.has("layers_block_type")) {
    f.fail("hybrid_override_pattern", "missing", "is required (or layers_block_type): it names every block's kind");
  }
  const json& v = f.raw("layers_block_type");
  if (!v.is_array()) f.fail("layers_block_type", json_value_text(v), "must be a list of mamba, attention, mlp and moe");
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string t = v[i].is_string() ? v[i].get<std::string>() : json_value_text(v[i]);
    if (t == "mamba") out += 'M';
    else if (t == "attention") out += '*';
    else if (t == "mlp") out += '-';
    else if (t == "moe") out += 'E';
    else f.fail(fmt::format("layers_block_type[{}]", i), t, "must be mamba, attention, mlp or moe");
  }
  return out;
}

// intermediate_size of the '-' blocks: one number, or a list with one entry (all) or one per block.
int dense_width(const JsonFields& f, int mlp_index, int mlp_blocks) {
  const json& v = f.raw("intermediate_size");
  if (!v.is_array()) return f.positive_int("intermediate_size");
  if (v.size() != 1 && static_cast<int>(v.size()) != mlp_blocks) {
    f.fail("intermediate_size", json_value_text(v), fmt::format("must list 1 or {} widths (one per MLP block)", mlp_blocks));
  }
  const json& w = v[v.size() == 1 ? 0 : static_cast<size_t>(mlp_index)];
  if (!w.is_number_integer() || w.get<int64_t>() <= 0) {
    f.fail("intermediate_size", json_value_text(v), "must list positive integers");
  }
  return w.get<int>();
}

}  // namespace

ModelConfig parse_nemotron_h(const JsonFields& f, ModelConfig m) {
  read_common(f, m, "");
  // Heterogeneous "puzzle" checkpoints give each block its own shape; kvplan reads one shape per kind.
  if (f.has("block_configs")) {
    f.fail("block_configs", "present", "is not understood: per-block shapes (NemotronHPuzzle) are not enumerated");
  }
  const std::string pattern = block_pattern(f);
  if (pattern.empty() || static_cast<int64_t>(pattern.size()) > kMaxLayers) {
    f.fail("hybrid_override_pattern", fmt::format("{} blocks", pattern.size()),
           fmt::format("must name between 1 and {} blocks", kMaxLayers));
  }
  if (f.has("num_hidden_layers") && f.positive_int("num_hidden_layers") != static_cast<int>(pattern.size())) {
    f.fail("num_hidden_layers", std::to_string(f.positive_int("num_hidden_layers")),
           fmt::format("must equal the {} blocks the layer pattern names", pattern.size()));
  }
  m.layers.assign(pattern.size(), LayerSpec{});
  m.norms_per_layer = 1;  // one pre-mixer RMSNorm per block (and norm_f)
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);
  if (f.bool_or("mlp_bias", false)) {
    f.fail("mlp_bias", "true", "must be false: no Nemotron-H checkpoint with MLP biases is known, so their layout is not enumerated");
  }
  const std::string act = f.string_or("mlp_hidden_act", "relu2");
  if (act != "relu2") f.fail("mlp_hidden_act", act, "must be relu2 (the only non-gated MLP activation kvplan enumerates for nemotron_h)");

  int mlp_blocks = 0;
  for (char c : pattern) mlp_blocks += c == '-' ? 1 : 0;
  const bool any_attention = pattern.find('*') != std::string::npos;
  const bool any_mamba = pattern.find('M') != std::string::npos;
  const bool any_moe = pattern.find('E') != std::string::npos;

  if (any_attention) {
    AttentionShape& a = m.attention;
    a.num_q_heads = f.positive_int("num_attention_heads");
    a.num_kv_heads = f.positive_int_or("num_key_value_heads", a.num_q_heads);
    require_divides(f, "num_key_value_heads", a.num_kv_heads, "num_attention_heads", a.num_q_heads);
    if (f.has("head_dim")) {
      a.head_dim = f.positive_int("head_dim");
    } else if (f.has("attention_head_dim")) {
      a.head_dim = f.positive_int("attention_head_dim");
    } else {
      require_divides(f, "num_attention_heads", a.num_q_heads, "hidden_size", m.hidden_size);
      a.head_dim = m.hidden_size / a.num_q_heads;
    }
    a.v_head_dim = a.head_dim;
    // vLLM builds q/k/v and o without biases whatever the config says; a checkpoint with them
    // would not load there.
    if (f.bool_or("attention_bias", false)) {
      f.fail("attention_bias", "true", "must be false: Nemotron-H attention has no biases (vLLM nemotron_h.py)");
    }
    if (f.has("sliding_window")) {
      f.fail("sliding_window", json_value_text(f.raw("sliding_window")),
             "must be null: windowed Nemotron-H attention is not enumerated");
    }
  }
  m.rotary_dim = 0;  // the attention blocks apply no positional encoding (rope_theta is unused)

  if (any_mamba) {
    MambaShape& s = m.mamba;
    s.num_heads = f.positive_int("mamba_num_heads");
    s.head_dim = f.positive_int("mamba_head_dim");
    s.d_inner = s.num_heads * s.head_dim;  // not expand x hidden_size (vLLM NemotronHMambaDecoderLayer)
    s.d_state = f.positive_int("ssm_state_size");
    s.d_conv = f.positive_int("conv_kernel");
    s.n_groups = f.positive_int_or("n_groups", 1);
    require_divides(f, "n_groups", s.n_groups, "mamba_num_heads", s.num_heads);
    s.conv_bias = f.bool_or("use_conv_bias", true);
    s.proj_bias = f.bool_or("use_bias", false);  // vLLM passes use_bias, not mamba_proj_bias
  }

  MlpShape moe;
  if (any_moe) {
    const int experts = f.positive_int("n_routed_experts");
    const int top_k = f.positive_int("num_experts_per_tok");
    if (top_k > experts) f.fail("num_experts_per_tok", std::to_string(top_k), "must not exceed n_routed_experts");
    set_moe(moe, experts, top_k, f.positive_int("moe_intermediate_size"));
    moe.gated_experts = false;
    moe.router_bias = true;  // e_score_correction_bias, always allocated (vLLM NemotronHMoE)
    moe.num_shared_experts = f.non_negative_int_or("n_shared_experts", 0);
    if (moe.num_shared_experts > 0) {
      moe.shared_intermediate_size = moe.num_shared_experts * f.positive_int("moe_shared_expert_intermediate_size");
    }
    moe.expert_latent_size = f.non_negative_int_or("moe_latent_size", 0);
    m.notes.push_back(fmt::format(
        "model '{}': its relu2 experts have no gate projection; the fused-MoE step cost counts their FLOPs and "
        "bytes as such, but its shape correction was fitted on gated (SwiGLU) experts' published timings",
        m.id));
  }

  int mlp_index = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    LayerSpec& l = m.layers[i];
    l.mlp = MlpShape{};  // a mixer block has no MLP (intermediate_size 0)
    switch (pattern[i]) {
      case 'M': l.kind = LayerKind::kMamba2; break;
      case '*': l.kind = LayerKind::kFullAttention; break;
      case '-':
        l.kind = LayerKind::kNoMixer;
        l.mlp.kind = MlpKind::kPlain;
        l.mlp.intermediate_size = dense_width(f, mlp_index++, mlp_blocks);
        break;
      case 'E':
        l.kind = LayerKind::kNoMixer;
        l.mlp = moe;
        break;
      default:
        f.fail(fmt::format("hybrid_override_pattern[{}]", i), std::string(1, pattern[i]),
               "must be M (Mamba-2), * (attention), - (MLP) or E (MoE)");
    }
  }
  read_mtp_layers(f, m);
  return m;
}

}  // namespace kvplan::internal
