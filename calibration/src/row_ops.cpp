// The StepOp of a calibration row, by the formulas of core/src/step_ops.cpp (row_ops.h).
#include "kvplan/calibration/row_ops.h"

#include <algorithm>
#include <array>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/calibration/fitter.h"
#include "kvplan/core/error.h"
#include "kvplan/core/mixer_ops.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan::calibration {

namespace {

constexpr double kAct = 2.0;  // bf16 activations, as step_ops.cpp

StepOp make(const char* name, OpClass c, double flops, double bytes, Stream stream = Stream::kCompute) {
  StepOp op;
  op.name = name;
  op.op_class = c;
  op.stream = stream;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

// Bytes of a [n, k] weight: 16-bit, or fp8 per tensor (vLLM's `--quantization fp8`: one fp32
// weight scale, dynamic activation scales), by the rule step_ops.cpp and param_count.cpp use.
double weight_bytes(double n, double k, DType dtype) {
  // nvfp4: 4-bit values and one fp8 scale per 16 (the global fp32 scale is negligible)
  if (dtype == DType::kFp4E2M1) return n * k * (0.5 + 1.0 / 16);
  if (!is_fp8(dtype)) return n * k * 2.0;
  static const QuantizationConfig fp8 = quantization_from_flag("fp8", 128);  // group size unused by fp8;
  return static_cast<double>(
      quantized_linear_bytes(fp8, static_cast<int64_t>(n), static_cast<int64_t>(k), DType::kBF16));
}

double kv_bytes_per_token(int num_kv_heads, int head_dim, DType kv_dtype) {
  return 2.0 * num_kv_heads * head_dim * (is_fp8(kv_dtype) ? 1.0 : 2.0);
}

// params_json field as a number, or -1 when absent or not a number.
double num(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : -1.0;
}

DType dtype_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return DType::kBF16;
  try {
    return parse_dtype(it->get<std::string>(), key);
  } catch (const ConfigError&) {
    return DType::kBF16;
  }
}

}  // namespace

StepOp gemm_op(double m, double n, double k, DType dtype) {
  StepOp op = make("gemm", OpClass::kGemm, 2.0 * m * n * k, weight_bytes(n, k, dtype) + m * (n + k) * kAct);
  op.dtype = dtype;
  op.grid_dtype = dtype;
  op.shape = OpShape{{m, n, k, 0}, 3};
  return op;
}

StepOp decode_attention_op(double batch, double kv_len, int num_heads, int num_kv_heads, int head_dim, DType kv_dtype) {
  const double d = head_dim;
  const double hq = num_heads;
  const double tokens = batch * kv_len;  // Σ over sequences of the held tokens they attend
  StepOp op = make("attention_decode", OpClass::kAttentionDecode, 2.0 * 1 * tokens * hq * (d + d),
                   batch * hq * (d + d) * kAct + tokens * kv_bytes_per_token(num_kv_heads, head_dim, kv_dtype));
  op.critical_bytes = kv_len * kv_bytes_per_token(num_kv_heads, head_dim, kv_dtype);
  op.critical_ctas = num_kv_heads * kDecodeMaxSplits;
  op.shape = OpShape{{batch, kv_len, hq, static_cast<double>(num_kv_heads)}, 4};
  op.grid_dtype = kv_dtype;
  return op;
}

StepOp prefill_attention_op(double batch, double new_tokens, int num_heads, int num_kv_heads, int head_dim,
                            DType kv_dtype) {
  const double d = head_dim;
  const double hq = num_heads;
  const double pairs = batch * static_cast<double>(causal_pairs(0, static_cast<int64_t>(new_tokens), INT64_MAX));
  const double tokens = batch * new_tokens;
  StepOp op = make("attention_prefill", OpClass::kAttentionPrefill, 2.0 * pairs * hq * (d + d),
                   tokens * hq * (d + d) * kAct + tokens * kv_bytes_per_token(num_kv_heads, head_dim, kv_dtype));
  op.shape = OpShape{{batch, new_tokens, hq, static_cast<double>(num_kv_heads)}, 4};
  op.grid_dtype = kv_dtype;
  return op;
}

bool published_moe_shape_gated(int64_t hidden, int64_t inter, int experts, int top_k) {
  static const std::vector<std::array<int64_t, 4>> non_gated = [] {
    std::vector<std::array<int64_t, 4>> out;
    for (const ModelConfig& m : model_presets()) {
      for (const LayerSpec& l : m.layers) {
        const MlpShape& s = l.mlp;
        if (s.kind != MlpKind::kMoe || s.gated_experts) continue;
        const int64_t h = s.expert_latent_size > 0 ? s.expert_latent_size : m.hidden_size;
        out.push_back({h, s.expert_intermediate_size, s.num_experts, s.experts_per_token});
      }
    }
    return out;
  }();
  const std::array<int64_t, 4> key{hidden, inter, experts, top_k};
  return std::find(non_gated.begin(), non_gated.end(), key) == non_gated.end();
}

StepOp fused_moe_row_op(double tokens, int64_t hidden, int64_t inter, int top_k, int experts, int moe_tp, int moe_ep,
                        MoeFormat format, MoeRouting routing, bool gated) {
  FusedMoeShape f;
  f.gated = gated;
  f.tokens = tokens;
  f.hidden = hidden;
  f.width = inter / std::max(1, moe_tp);
  f.experts = experts;
  f.top_k = top_k;
  f.ep = std::max(1, moe_ep);
  f.expert_weight_bytes =
      (gated ? 3.0 : 2.0) * static_cast<double>(hidden * f.width) * moe_format_bytes_per_weight(format);
  // The tensor-core rate the kernel runs at: W8A8 formats at fp8, W4A4 nvfp4 at fp4 (Blackwell;
  // the row's GPU decides whether that rate exists, see moe_row_compute), weight-only at bf16.
  switch (format) {
    case MoeFormat::kFp8:
    case MoeFormat::kFp8Block:
    case MoeFormat::kW4a8Mxfp4: f.compute = DType::kFp8E4M3; break;
    case MoeFormat::kNvfp4: f.compute = DType::kFp4E2M1; break;
    default: f.compute = DType::kBF16; break;
  }
  f.format = format;
  f.routing = routing;
  return fused_moe_op(f);
}

StepOp collective_op(CollectiveKind kind, double total_bytes, int ranks) {
  if (kind == CollectiveKind::kAllReduce) return all_reduce_op(total_bytes, ranks);
  if (kind == CollectiveKind::kVllmAllReduce) {
    StepOp op = all_reduce_op(total_bytes, ranks);
    op.grid_variant = "vllm_all_reduce";
    return op;
  }
  const double n = ranks;
  StepOp op = make("collective", OpClass::kCollective, 0, (n - 1) / n * total_bytes, Stream::kComm);
  op.shape = OpShape{{total_bytes, n, 0, 0}, 2};
  op.grid_variant = kind == CollectiveKind::kAllGather ? "all_gather"
                    : kind == CollectiveKind::kReduceScatter ? "reduce_scatter"
                                                             : "alltoall";
  return op;
}

StepOp all_reduce_op(double payload_bytes, int ranks) {
  const double tp = ranks;
  StepOp op = make("all_reduce", OpClass::kCollective, 0, 2.0 * (tp - 1) / tp * payload_bytes, Stream::kComm);
  op.shape = OpShape{{payload_bytes, tp, 0, 0}, 2};
  return op;
}

StepOp gdn_row_op(bool prefill, int64_t batch, int64_t seq_len, int64_t hk, int64_t dk, int64_t hv, int64_t dv,
                  int64_t d_conv) {
  const double channels = static_cast<double>(2 * hk * dk + hv * dv);
  const double state = static_cast<double>(hv * dk * dv) * 4.0 + static_cast<double>(d_conv - 1) * channels * kAct;
  return gated_deltanet_op(prefill, static_cast<double>(batch), static_cast<double>(batch * seq_len), hk, dk, hv, dv,
                           static_cast<int>(d_conv), state);
}

StepOp kda_row_op(bool prefill, int64_t batch, int64_t seq_len, int64_t heads, int64_t dk, int64_t dv, int64_t d_conv) {
  const double channels = static_cast<double>(heads * (2 * dk + dv));
  const double state = static_cast<double>(heads * dk * dv) * 4.0 + static_cast<double>(d_conv - 1) * channels * kAct;
  return kimi_delta_op(prefill, static_cast<double>(batch), static_cast<double>(batch * seq_len), heads, dk, dv,
                       static_cast<int>(d_conv), state);
}

StepOp dsv4_row_op(bool csa, int64_t batch, int64_t isl, int64_t past, int64_t native_heads, int64_t heads) {
  // The two geometries the tables were collected on (the aiconfigurator model configs, README 7b/7g):
  // head 512, rope 64, o_lora 1,024, window 128, indexer 64 x 128; Flash hidden 4,096, q_lora 1,024,
  // 8 output groups, top 512; Pro hidden 7,168, q_lora 1,536, 16 groups, top 1,024.
  const bool pro = native_heads == 128;
  CompressedAttentionShape a;
  a.num_heads = static_cast<int>(native_heads);
  a.head_dim = 512;
  a.rope_dim = 64;
  a.q_lora_rank = pro ? 1536 : 1024;
  a.o_groups = pro ? 16 : 8;
  a.o_lora_rank = 1024;
  a.window = 128;
  a.index_num_heads = 64;
  a.index_head_dim = 128;
  a.index_topk = pro ? 1024 : 512;
  const double b = static_cast<double>(batch);
  return dsv4_attention_op(isl > 1, csa ? 4 : 128, a, pro ? 7168 : 4096, heads, b, b * static_cast<double>(isl),
                           b * static_cast<double>(past), true);
}

StepOp msa_row_op(int64_t batch, int64_t isl, int64_t past, int64_t heads, bool fp8_kv) {
  // MiniMax-M3 (README 7d): hidden 6,144, 64 query and 4 KV heads of 128, one 128-wide index key,
  // blocks of 128 tokens, the top 16
  constexpr MsaDims kMiniMaxM3{.hidden = 6144, .heads = 64, .kv_heads = 4, .head_dim = 128, .index_dim = 128,
                               .block = 128, .topk_blocks = 16};
  const double b = static_cast<double>(batch);
  return msa_attention_op(isl > 1, kMiniMaxM3, heads, b, b * static_cast<double>(isl), b * static_cast<double>(past),
                          fp8_kv, true);
}

StepOp mhc_row_op(bool pre, int64_t tokens, int hc_mult, int64_t hidden) {
  return mhc_op(pre, static_cast<double>(tokens), hc_mult, hidden);
}

StepOp dsa_row_op(OpClass c, int64_t batch, int64_t isl, int64_t past, const DsaDims& d, const MlaDims& m,
                  int64_t heads, double latent_bytes_per_token) {
  const bool prefill = isl > 1;
  const double b = static_cast<double>(batch);
  const double queries = b * static_cast<double>(isl);
  const double pairs = b * static_cast<double>(causal_pairs(past, isl, INT64_MAX));
  switch (c) {
    case OpClass::kDsaIndexer:
      return dsa_indexer_op(prefill, d, b, queries, pairs, b * static_cast<double>(past + isl));
    case OpClass::kDsaTopk: return dsa_topk_op(prefill, d, b, queries, pairs);
    default: break;
  }
  const double sparse = b * static_cast<double>(causal_pairs(past, isl, d.topk));
  return dsa_prefill_attention_op(m, b, queries, sparse, latent_bytes_per_token, heads);
}

StepOp conv1d_row_op(bool prefill, int64_t batch, int64_t seq_len, int64_t channels, int64_t d_conv) {
  return conv1d_op(prefill, static_cast<double>(batch), static_cast<double>(batch * seq_len), channels,
                   static_cast<int>(d_conv));
}

StepOp rms_norm_op(double tokens, double hidden) {
  return make("rms_norm", OpClass::kElementwise, 5.0 * tokens * hidden, 4.0 * tokens * hidden * kAct + hidden * kAct);
}

StepOp rope_op(double tokens, int num_heads, int num_kv_heads, int head_dim) {
  const double el = tokens * static_cast<double>((num_heads + num_kv_heads) * head_dim);
  return make("rope", OpClass::kElementwise, 3.0 * el, 2.0 * el * kAct);
}

StepOp act_mul_op(double tokens, double intermediate) {
  return make("act_mul", OpClass::kElementwise, 4.0 * tokens * intermediate, 3.0 * tokens * intermediate * kAct);
}

StepOp act_op(double tokens, double intermediate) {
  return make("act", OpClass::kElementwise, 4.0 * tokens * intermediate, 2.0 * tokens * intermediate * kAct);
}

StepOp residual_add_op(double tokens, double hidden) {
  return make("residual_add", OpClass::kElementwise, tokens * hidden, 3.0 * tokens * hidden * kAct);
}

StepOp row_op(const Measurement& m) {
  const OpClass c = parse_op_class(m.op_class, "calibration row");
  const nlohmann::json j = nlohmann::json::parse(m.params_json, nullptr, /*allow_exceptions=*/false);
  StepOp op;
  bool shaped = false;
  if (j.is_object()) {
    const double heads = num(j, "num_heads"), kv_heads = num(j, "num_kv_heads"), head_dim = num(j, "head_dim");
    const bool attention_keys = heads > 0 && kv_heads > 0 && head_dim > 0 && num(j, "batch") > 0;
    MoeFormat moe_format{};
    if (c == OpClass::kMoeGemm && num(j, "experts") > 0 && j.contains("format") && j["format"].is_string() &&
        parse_moe_format_name(j["format"].get<std::string>(), moe_format)) {
      op = fused_moe_row_op(num(j, "tokens"), static_cast<int64_t>(num(j, "hidden")), static_cast<int64_t>(num(j, "inter")),
                            static_cast<int>(num(j, "top_k")), static_cast<int>(num(j, "experts")),
                            static_cast<int>(num(j, "moe_tp")), static_cast<int>(num(j, "moe_ep")), moe_format,
                            parse_moe_routing(j.value("routing", std::string("balanced")), "calibration row routing"),
                            j.value("gated", true));
      shaped = true;
    } else if ((c == OpClass::kGemm || c == OpClass::kMoeGemm) && num(j, "m") > 0 && num(j, "n") > 0 && num(j, "k") > 0) {
      op = gemm_op(num(j, "m"), num(j, "n"), num(j, "k"), row_compute_dtype(m));
      op.op_class = c;
      shaped = true;
    } else if (c == OpClass::kAttentionDecode && attention_keys && num(j, "kv_len") > 0) {
      op = decode_attention_op(num(j, "batch"), num(j, "kv_len"), static_cast<int>(heads), static_cast<int>(kv_heads),
                               static_cast<int>(head_dim), dtype_of(j, "kv_dtype"));
      shaped = true;
    } else if (c == OpClass::kAttentionPrefill && attention_keys && num(j, "isl") > 0) {
      op = prefill_attention_op(num(j, "batch"), num(j, "isl"), static_cast<int>(heads), static_cast<int>(kv_heads),
                                static_cast<int>(head_dim), dtype_of(j, "kv_dtype"));
      shaped = true;
    } else if (c == OpClass::kCollective && num(j, "tokens") > 0 && j.contains("deepep")) {
      op = deepep_op(j["deepep"].get<std::string>() == "dispatch" ? DeepEpPhase::kDispatch : DeepEpPhase::kCombine,
                     j.value("mode", std::string("ll")) == "ll", num(j, "tokens"), static_cast<int>(num(j, "top_k")),
                     static_cast<int64_t>(num(j, "hidden")), static_cast<int>(num(j, "ranks")));
      shaped = true;
    } else if ((c == OpClass::kMlaPrefill || c == OpClass::kMlaDecode) && j.contains("mla") && heads > 0 &&
               num(j, "batch") > 0) {
      const MlaOpEngine engine = j.value("engine", std::string()) == "trtllm" ? MlaOpEngine::kTrtllm
                                 : j.value("engine", std::string()) == "sglang" ? MlaOpEngine::kSglang
                                                                                 : MlaOpEngine::kVllm;
      const MlaDims dims;
      const DType kv = dtype_of(j, "kv_dtype");
      const double b = num(j, "batch");
      if (c == OpClass::kMlaPrefill && num(j, "isl") > 0) {
        const double isl = num(j, "isl");
        const double pairs = b * static_cast<double>(causal_pairs(0, static_cast<int64_t>(isl), INT64_MAX));
        op = j.value("form", std::string()) == "absorbed"
                 ? mla_absorbed_prefill_op(engine, dims, b, b * isl, pairs, b * isl, static_cast<int64_t>(heads), kv)
                 : mla_prefill_op(engine, dims, b, b * isl, pairs, b * isl, static_cast<int64_t>(heads), kv);
        shaped = true;
      } else if (c == OpClass::kMlaDecode && num(j, "kv_len") > 0) {
        const double kv_len = num(j, "kv_len");
        const double bpt = static_cast<double>(dims.kv_lora_rank + dims.rope_dim) * (is_fp8(kv) ? 1.0 : 2.0);
        op = mla_decode_op(engine, dims, b, b * kv_len, kv_len, b * kv_len * bpt, bpt, 1, static_cast<int64_t>(heads),
                           kv);
        shaped = true;
      }
    } else if (c == OpClass::kMlaBmm && j.contains("mla_bmm") && heads > 0 && num(j, "tokens") > 0) {
      const std::string e = j.value("engine", std::string());
      op = mla_bmm_op(e == "trtllm" ? MlaOpEngine::kTrtllm : e == "sglang" ? MlaOpEngine::kSglang : MlaOpEngine::kVllm,
                      MlaDims{}, j["mla_bmm"] == "pre", num(j, "tokens"), static_cast<int64_t>(heads),
                      j.value("dtype", std::string()) == "fp8");
      shaped = true;
    } else if (c == OpClass::kGatedDeltaNet && j.contains("gdn") && num(j, "batch") > 0) {
      auto i = [&](const char* k) { return static_cast<int64_t>(num(j, k)); };
      op = gdn_row_op(j["gdn"] == "prefill", i("batch"), i("seq_len"), i("hk"), i("dk"), i("hv"), i("dv"), i("d_conv"));
      shaped = true;
    } else if (c == OpClass::kKimiDelta && j.contains("kda") && num(j, "batch") > 0) {
      auto i = [&](const char* k) { return static_cast<int64_t>(num(j, k)); };
      op = kda_row_op(j["kda"] == "prefill", i("batch"), i("seq_len"), i("heads"), i("dk"), i("dv"), i("d_conv"));
      shaped = true;
    } else if (c == OpClass::kDsv4Attention && j.contains("dsv4") && num(j, "batch") > 0) {
      auto i = [&](const char* k) { return static_cast<int64_t>(num(j, k)); };
      op = dsv4_row_op(j["dsv4"] == "csa", i("batch"), i("isl"), i("past"), i("native_heads"), i("heads"));
      shaped = true;
    } else if (c == OpClass::kMsaAttention && j.contains("msa") && num(j, "batch") > 0) {
      auto i = [&](const char* k) { return static_cast<int64_t>(num(j, k)); };
      op = msa_row_op(i("batch"), i("isl"), i("past"), i("heads"), j["kv"] == "fp8");
      shaped = true;
    } else if (c == OpClass::kMhc && j.contains("mhc") && num(j, "tokens") > 0) {
      op = mhc_row_op(j["mhc"] == "pre", static_cast<int64_t>(num(j, "tokens")), static_cast<int>(num(j, "hc")),
                      static_cast<int64_t>(num(j, "hidden")));
      shaped = true;
    } else if ((c == OpClass::kDsaIndexer || c == OpClass::kDsaTopk || c == OpClass::kDsaAttention) &&
               j.contains("dsa") && num(j, "batch") > 0 && num(j, "isl") > 0) {
      auto i = [&](const char* k) { return static_cast<int64_t>(num(j, k)); };
      op = dsa_row_op(c, i("batch"), i("isl"), i("past"), DsaDims{i("index_heads"), i("index_dim"), i("topk")},
                      MlaDims{i("kv_lora_rank"), i("rope_dim"), 0, 0}, i("num_heads"), num(j, "latent_bytes"));
      shaped = true;
    } else if (c == OpClass::kConv1d && j.contains("conv1d") && num(j, "batch") > 0) {
      auto i = [&](const char* k) { return static_cast<int64_t>(num(j, k)); };
      op = conv1d_row_op(j["conv1d"] == "prefill", i("batch"), i("seq_len"), i("channels"), i("d_conv"));
      shaped = true;
    } else if (c == OpClass::kCollective && num(j, "bytes") > 0 && num(j, "ranks") >= 2 && j.contains("collective")) {
      const std::string k = j["collective"].get<std::string>();
      op = collective_op(k == "vllm_all_reduce"  ? CollectiveKind::kVllmAllReduce
                         : k == "all_gather"       ? CollectiveKind::kAllGather
                         : k == "reduce_scatter" ? CollectiveKind::kReduceScatter
                         : k == "alltoall"       ? CollectiveKind::kAllToAll
                                                 : CollectiveKind::kAllReduce,
                         num(j, "bytes"), static_cast<int>(num(j, "ranks")));
      shaped = true;
    } else if (c == OpClass::kCollective && num(j, "bytes") > 0 && num(j, "ranks") >= 2) {
      op = all_reduce_op(num(j, "bytes"), static_cast<int>(num(j, "ranks")));
      shaped = true;
    }
  }
  if (!shaped) {
    op.name = "row";
    op.op_class = c;
    op.dtype = row_compute_dtype(m);
    switch (c) {
      case OpClass::kCollective: op.stream = Stream::kComm; break;
      case OpClass::kCopyH2D:
      case OpClass::kCopyD2H: op.stream = Stream::kCopy; break;
      default: op.stream = Stream::kCompute; break;
    }
  }
  // The row's own FLOPs and bytes are what was timed; for published rows they equal the op's.
  op.flops = m.flops;
  op.bytes = m.bytes;
  return op;
}

}  // namespace kvplan::calibration
