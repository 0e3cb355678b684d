// SGLang's hybrid sliding-window KV pools (kvplan/core/sglang_swa.h).
#include "kvplan/core/sglang_swa.h"

#include <cmath>

#include <fmt/format.h>

namespace kvplan {

bool sglang_uses_hybrid_swa(const ModelConfig& m, bool sm100, const EngineVersion& v, std::string* why) {
  auto say = [&](std::string text) {
    if (why != nullptr) *why = std::move(text);
  };
  const std::string& t = m.model_type;
  if (t == "gemma4" || t == "gemma4_text") {
    say("Gemma-4 is on SGLang's hybrid-SWA allowlist (configs/model_config.py is_hybrid_swa_model)");
    return true;
  }
  if (t == "gpt_oss") {
    if (!v.at_least(0, 5, 9)) {
      say(fmt::format("SGLang {} forces disable_hybrid_swa_memory for gpt-oss (server_args.py); one pool", v.text()));
      return false;
    }
    if (sm100) {
      say("on compute capability 10.x SGLang's default attention backend for gpt-oss is trtllm_mha, which turns "
          "hybrid SWA memory off (server_args.py); one pool");
      return false;
    }
    say("gpt-oss is on SGLang's hybrid-SWA allowlist from about 0.5.9 (before, server_args.py forced it off)");
    return true;
  }
  if (t == "llama4" || t == "llama4_text") {
    if (!v.at_least(0, 5, 9)) {
      say(fmt::format("SGLang {}: Llama-4's split pool is assumed off (it needed --hybrid-kvcache-ratio in 2025 "
                      "releases; the allowlist is confirmed from 0.5.9); one pool",
                      v.text()));
      return false;
    }
    say("Llama-4 is on SGLang's hybrid-SWA allowlist, its chunked-attention layers in the sliding pool");
    return true;
  }
  say("not on SGLang's hybrid-SWA allowlist: every layer in one pool at full length");
  return false;
}

SglangSwaPools sglang_hybrid_swa_pools(const KvLayout& layout, int64_t kv_budget_bytes, double ratio) {
  SglangSwaPools out;
  for (const KvLayerGroup& g : layout.groups()) {
    if (!holds_kv_per_token(g.kind) || g.num_layers == 0) continue;
    const auto bytes = static_cast<int64_t>(std::ceil(g.bytes_per_token)) * g.num_layers;
    const bool windowed = g.kind == LayerKind::kSlidingAttention || g.kind == LayerKind::kChunkedAttention;
    (windowed ? out.swa_layer_bytes : out.full_layer_bytes) += bytes;
  }
  const double cell = static_cast<double>(out.full_layer_bytes) + ratio * static_cast<double>(out.swa_layer_bytes);
  out.cell_bytes = static_cast<int64_t>(cell);
  if (cell <= 0 || kv_budget_bytes <= 0) return out;
  // pool_configurator.py: int(available_bytes // cell_size) with a float cell, then the SWA pool
  // int(full * ratio), both floored to the page (1 token).
  out.full_tokens = static_cast<int64_t>(std::floor(static_cast<double>(kv_budget_bytes) / cell));
  out.swa_tokens = static_cast<int64_t>(std::floor(static_cast<double>(out.full_tokens) * ratio));
  return out;
}

}  // namespace kvplan
