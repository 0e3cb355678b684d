// MiniMax-M3 (model_type minimax_m3, MiniMaxM3ForCausalLM / MiniMaxM3SparseForCausalLM: the
// language model of MiniMaxAI/MiniMax-M3), read as vLLM 0.24's models/minimax_m3 builds it (nvidia/
// model.py, common/indexer.py) and as SGLang 0.5.16's MiniMaxSparseKVPool caches it:
//   - softmax GQA on every layer (q / k / v / o, a Gemma-style RMSNorm per head on q and k, partial
//     RoPE); a layer whose sparse_attention_freq entry is 1 is an MSA layer (MsaShape): it also has
//     index_q_proj (one index head per KV head) and index_k_proj (one shared key), each with a
//     per-head norm, and caches the index key per token beside K and V;
//   - a dense SwiGLU MLP of dense_intermediate_size where moe_layer_freq is 0, else a MoE of
//     num_local_experts experts of intermediate_size, top num_experts_per_tok, with
//     n_shared_experts shared experts of intermediate_size each (vLLM MiniMaxM3MoE) and an fp32
//     router with an fp32 score bias (param_count.cpp);
//   - untied embedding and head.
// The config's multi-token-prediction modules are not counted: the released checkpoint carries
// none (its 427,040,140,160 parameters are the language model and the vision tower exactly).
// Everything else the file could say that this reading would ignore (an index value branch, an
// attention output gate, another score type, a sliding window) is refused, naming the field.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/model_fields.h"

namespace kvplan::internal {

using nlohmann::json;

namespace {

// A per-layer 0 / 1 list of exactly `layers` entries (moe_layer_freq, sparse_attention_freq, ...).
std::vector<int> layer_flags(const JsonFields& f, std::string_view key, size_t layers) {
  if (!f.has(key) || !f.raw(key).is_array()) {
    f.fail(key, f.has(key) ? json_value_text(f.raw(key)) : "missing", "must be a list with one 0 or 1 per layer");
  }
  const std::vector<int> flags = int_list(f, key);
  if (flags.size() != layers) {
    f.fail(key, fmt::format("{} entries", flags.size()), fmt::format("must list num_hidden_layers={} layers", layers));
  }
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i] != 0 && flags[i] != 1) f.fail(fmt::format("{}[{}]", key, i), std::to_string(flags[i]), "must be 0 or 1");
  }
  return flags;
}

void read_sparse_attention(const JsonFields& f, ModelConfig& m) {
  if (!f.has("sparse_attention_config") || !f.raw("sparse_attention_config").is_object()) {
    f.fail("sparse_attention_config",
           f.has("sparse_attention_config") ? json_value_text(f.raw("sparse_attention_config")) : "missing",
           "must be an object (MiniMax-M3's sparse attention settings)");
  }
  const JsonFields c(f.raw("sparse_attention_config"), f.what() + " sparse_attention_config");
  if (!c.bool_or("use_sparse_attention", false)) {
    c.fail("use_sparse_attention", json_value_text(c.has("use_sparse_attention") ? c.raw("use_sparse_attention") : json()),
           "must be true: the engines' MiniMax-M3 models run its MSA layers sparse; a dense reading of them is not "
           "confirmed");
  }
  MsaShape& a = m.msa;
  a.index_head_dim = c.positive_int("sparse_index_dim");
  a.index_num_heads = c.positive_int("sparse_num_index_heads");
  a.topk_blocks = c.positive_int("sparse_topk_blocks");
  a.block_size = c.positive_int("sparse_block_size");
  a.init_blocks = c.non_negative_int_or("sparse_init_block", 0);
  a.local_blocks = c.non_negative_int_or("sparse_local_block", 0);
  if (a.index_num_heads != m.attention.num_kv_heads) {
    c.fail("sparse_num_index_heads", std::to_string(a.index_num_heads),
           fmt::format("must equal num_key_value_heads={}: vLLM fuses one index head per KV head into qkv_proj and "
                       "shards them alike",
                       m.attention.num_kv_heads));
  }
  const std::string score = c.string_or("sparse_score_type", "max");
  if (score != "max") {
    c.fail("sparse_score_type", score, "must be max (a block's score is its best token's; the only type the engines run)");
  }
  const std::vector<int> sparse = layer_flags(c, "sparse_attention_freq", m.layers.size());
  // sparse_disable_index_value 0 on an MSA layer adds an index value branch (index_v / index_o and an
  // index K + V cache, SGLang's index_kv_pool) whose shapes no released checkpoint shows.
  const std::vector<int> no_value = layer_flags(c, "sparse_disable_index_value", m.layers.size());
  for (size_t i = 0; i < sparse.size(); ++i) {
    if (sparse[i] == 1 && no_value[i] != 1) {
      c.fail(fmt::format("sparse_disable_index_value[{}]", i), std::to_string(no_value[i]),
             "must be 1 on an MSA layer: the index value branch is not enumerated by kvplan");
    }
    m.layers[i].msa_indexer = sparse[i] == 1;
  }
}

}  // namespace

ModelConfig parse_minimax_m3(const JsonFields& f, ModelConfig m) {
  read_common(f, m);
  read_attention(f, m, false);
  AttentionShape& att = m.attention;
  if (att.qkv_bias) f.fail("attention_bias", "true", "must be false (MiniMax-M3's projections have no biases)");
  if (f.has("rotary_dim")) {
    const int rotary = f.positive_int("rotary_dim");
    if (f.has("partial_rotary_factor") && rotary != m.rotary_dim) {
      f.fail("rotary_dim", std::to_string(rotary),
             fmt::format("must equal head_dim x partial_rotary_factor = {}", m.rotary_dim));
    }
    if (rotary > att.head_dim) f.fail("rotary_dim", std::to_string(rotary), fmt::format("must not exceed head_dim={}", att.head_dim));
    m.rotary_dim = rotary;
  }
  if (f.bool_or("use_qk_norm", false)) {
    const std::string norm = f.string_or("qk_norm_type", "per_head");
    if (norm != "per_head") {
      f.fail("qk_norm_type", norm, "must be per_head (MiniMax-M3's q / k norms are one head_dim wide)");
    }
    att.qk_norm = true;
  }
  if (f.bool_or("attention_output_gate", false)) {
    f.fail("attention_output_gate", "true", "must be false (no released MiniMax-M3 has the gate)");
  }
  if (f.has("sliding_window") && !f.raw("sliding_window").is_null()) {
    f.fail("sliding_window", json_value_text(f.raw("sliding_window")), "must be null: MiniMax-M3 has no windowed layers");
  }
  const std::string act = f.string_or("hidden_act", "swigluoai");
  if (act != "swigluoai") f.fail("hidden_act", act, "must be swigluoai (MiniMax-M3's clamped SwiGLU)");
  m.tie_word_embeddings = f.bool_or("tie_word_embeddings", false);

  const size_t layers = m.layers.size();
  const std::vector<int> moe = layer_flags(f, "moe_layer_freq", layers);
  if (f.has("first_k_dense_replace")) {
    // aiconfigurator's copy adds it; it must say what moe_layer_freq says
    const int k = f.non_negative_int_or("first_k_dense_replace", 0);
    const auto first_moe = std::find(moe.begin(), moe.end(), 1) - moe.begin();
    if (k != first_moe || std::find(moe.begin() + first_moe, moe.end(), 0) != moe.end()) {
      f.fail("first_k_dense_replace", std::to_string(k),
             fmt::format("must equal the dense layers moe_layer_freq leads with ({})", first_moe));
    }
  }
  const int experts = f.positive_int("num_local_experts");
  const int top_k = f.positive_int("num_experts_per_tok");
  if (top_k > experts) f.fail("num_experts_per_tok", std::to_string(top_k), "must not exceed num_local_experts");
  const int width = f.positive_int("intermediate_size");
  if (f.has("moe_intermediate_size") && f.positive_int("moe_intermediate_size") != width) {
    f.fail("moe_intermediate_size", std::to_string(f.positive_int("moe_intermediate_size")),
           fmt::format("must equal intermediate_size={} (vLLM sizes the experts from intermediate_size)", width));
  }
  const int shared = f.non_negative_int_or("n_shared_experts", 0);
  // vLLM's MiniMaxM3MoE builds the shared expert intermediate_size x n_shared_experts wide and does
  // not read shared_intermediate_size; a file where the two disagree is ambiguous.
  if (f.has("shared_intermediate_size") && f.non_negative_int_or("shared_intermediate_size", 0) != shared * width) {
    f.fail("shared_intermediate_size", std::to_string(f.non_negative_int_or("shared_intermediate_size", 0)),
           fmt::format("must equal intermediate_size x n_shared_experts = {} (what vLLM builds)", shared * width));
  }
  const std::string scoring = f.string_or("scoring_func", "sigmoid");
  if (scoring != "sigmoid") f.fail("scoring_func", scoring, "must be sigmoid (MiniMax-M3's router)");
  const bool router_bias = f.bool_or("use_routing_bias", false);
  const bool has_dense = std::find(moe.begin(), moe.end(), 0) != moe.end();
  const int dense_width = has_dense ? f.positive_int("dense_intermediate_size") : 0;
  for (size_t i = 0; i < layers; ++i) {
    LayerSpec& l = m.layers[i];
    l.kind = LayerKind::kFullAttention;
    if (moe[i] == 0) {
      l.mlp.kind = MlpKind::kGated;
      l.mlp.intermediate_size = dense_width;
      continue;
    }
    set_moe(l.mlp, experts, top_k, width);
    l.mlp.router_bias = router_bias;
    l.mlp.num_shared_experts = shared;
    l.mlp.shared_intermediate_size = shared * width;
  }
  read_sparse_attention(f, m);

  // Multi-token prediction: the config names num_mtp_modules (7 in MiniMaxAI's file, 1 in NVIDIA's
  // NVFP4 one) and num_nextn_predict_layers; the checkpoints carry no MTP weights, so none count.
  const int mtp_modules = f.non_negative_int_or("num_mtp_modules", 0);
  const int nextn = f.non_negative_int_or("num_nextn_predict_layers", 0);
  if (mtp_modules > 0 || nextn > 0) {
    m.notes.push_back(fmt::format(
        "model '{}': the config names {} multi-token-prediction module(s) (num_mtp_modules; "
        "num_nextn_predict_layers={}); the released checkpoint carries no MTP weights, so none are counted or cached",
        m.id, mtp_modules, nextn));
  }
  m.notes.push_back(fmt::format(
      "model '{}': MiniMax-M3's language model alone: the vision tower of the MiniMaxAI/MiniMax-M3 checkpoint "
      "(865,567,232 parameters, 1.73 GB in bf16) is not counted; vLLM loads it unless --language-model-only",
      m.id));
  m.notes.push_back(fmt::format(
      "model '{}': MiniMax-M3 sparse attention (MSA): {} of {} layers score every cached token's index key ({} wide, "
      "bf16, replicated on every GPU) and attend to the top {} blocks of {} tokens per KV head",
      m.id, std::count_if(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) { return l.msa_indexer; }), layers,
      m.msa.index_head_dim, m.msa.topk_blocks, m.msa.block_size));
  return m;
}

}  // namespace kvplan::internal
