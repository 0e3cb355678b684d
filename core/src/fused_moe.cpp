// The fused MoE operator and its routing load (fused_moe.h). The power-law workload follows the
// description of AIConfigurator's collector in data/measurements/README.md §6a (per-expert token
// counts from a power law on [1, 0.8·T] when T·k > E, else on [0.01, 2], scaled to T·k, rounded,
// the rounding remainder added to the most-loaded experts; the most-loaded EP rank is the one
// timed); the expectation over draws is computed here with a fixed-seed generator.
#include "kvplan/core/fused_moe.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/weight_quant.h"
#include "kvplan/core/step_ops.h"

namespace kvplan {

namespace {

constexpr double kAct = 2.0;  // bf16 activations, as step_ops.cpp
// Draws averaged for the power-law expectation: the straggler's load is a maximum over ranks of
// heavy-tailed sums, so a handful of draws leaves a few percent of noise; 16 keep it near 1%.
constexpr int kDraws = 16;

constexpr std::array<std::string_view, 3> kRoutingNames = {"balanced", "power_law_1.01", "power_law_1.2"};
constexpr std::array<std::string_view, 3> kRoutingLabels = {"balanced", "power-law 1.01", "power-law 1.2"};
constexpr std::array<std::string_view, kNumMoeFormats> kFormatNames = {"bf16",  "fp8",  "fp8_block", "nvfp4",
                                                                       "mxfp4", "int4", "w4a8_mxfp4"};
constexpr std::array<std::string_view, kNumMoeFormats> kFormatLabels = {"bf16",  "fp8",  "fp8 block",    "nvfp4",
                                                                        "mxfp4", "int4", "mxfp4 x mxfp8"};

double routing_alpha(MoeRouting r) { return r == MoeRouting::kPowerLaw101 ? 1.01 : 1.2; }

// Uniform in (0, 1) from (draw, expert): splitmix64 of a counter, so every draw is reproducible.
double uniform(uint64_t draw, uint64_t i) {
  uint64_t z = 0x5DEECE66Dull + draw * 0x9E3779B97F4A7C15ull + (i + 1) * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;
}

MoeRankLoad balanced_load(int experts, int top_k, int64_t tokens, int ep) {
  // Round-robin choice spreads T·k pairs evenly: the most-loaded rank gets ceil(T·k/ep) of them,
  // over as many of its E/ep experts as it has pairs.
  MoeRankLoad l;
  const double pairs = static_cast<double>(tokens) * top_k;
  l.mean_rows = pairs / ep;
  l.rows = std::ceil(l.mean_rows);
  l.experts_touched = std::min(static_cast<double>(experts) / ep, l.rows);
  return l;
}

MoeRankLoad power_law_load(int experts, int top_k, int64_t tokens, int ep, double alpha) {
  const int64_t pairs = tokens * top_k;
  const bool many = pairs > experts;
  const double xmin = many ? 1.0 : 0.01;
  const double xmax = many ? std::max(0.8 * static_cast<double>(tokens), 1.0 + 1e-9) : 2.0;
  const double lo = std::pow(xmin, 1 - alpha), hi = std::pow(xmax, 1 - alpha);
  const int per_rank = std::max(1, experts / ep);
  std::vector<double> w(static_cast<size_t>(experts));
  std::vector<int64_t> count(static_cast<size_t>(experts));
  std::vector<int> order(static_cast<size_t>(experts));
  double rows = 0, touched = 0;
  for (int d = 0; d < kDraws; ++d) {
    double sum = 0;
    for (int i = 0; i < experts; ++i) {
      w[static_cast<size_t>(i)] = std::pow((hi - lo) * uniform(static_cast<uint64_t>(d), static_cast<uint64_t>(i)) + lo,
                                           1 / (1 - alpha));
      sum += w[static_cast<size_t>(i)];
    }
    int64_t total = 0;
    for (int i = 0; i < experts; ++i) {
      count[static_cast<size_t>(i)] = std::llround(w[static_cast<size_t>(i)] / sum * static_cast<double>(pairs));
      total += count[static_cast<size_t>(i)];
    }
    // The rounding remainder goes to (or comes from) the experts in order of their load.
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return count[static_cast<size_t>(a)] > count[static_cast<size_t>(b)]; });
    for (int64_t i = 0; total < pairs; ++i, ++total) ++count[static_cast<size_t>(order[static_cast<size_t>(i % experts)])];
    for (int64_t i = 0; total > pairs; ++i) {
      int64_t& c = count[static_cast<size_t>(order[static_cast<size_t>(experts - 1 - i % experts)])];
      if (c > 0) {
        --c;
        --total;
      }
    }
    // A token picks an expert once: no expert serves more than T tokens. The surplus of a drawn
    // count goes down the load order to the next experts with room (the router's next choice).
    int64_t surplus = 0;
    for (int idx : order) {
      int64_t& c = count[static_cast<size_t>(idx)];
      if (c > tokens) {
        surplus += c - tokens;
        c = tokens;
      } else if (surplus > 0) {
        const int64_t add = std::min(tokens - c, surplus);
        c += add;
        surplus -= add;
      }
    }
    double best = -1, best_touched = 0;
    for (int r = 0; r + per_rank <= experts; r += per_rank) {
      double s = 0, t = 0;
      for (int i = r; i < r + per_rank; ++i) {
        const int64_t c = count[static_cast<size_t>(i)];
        s += static_cast<double>(c);
        t += c > 0 ? 1 : 0;
      }
      if (s > best) {
        best = s;
        best_touched = t;
      }
    }
    rows += best;
    touched += best_touched;
  }
  MoeRankLoad l;
  l.rows = rows / kDraws;
  l.experts_touched = touched / kDraws;
  l.mean_rows = static_cast<double>(pairs) / ep;
  return l;
}

}  // namespace

std::string_view moe_routing_name(MoeRouting r) { return kRoutingNames[static_cast<size_t>(r)]; }
std::string_view moe_routing_label(MoeRouting r) { return kRoutingLabels[static_cast<size_t>(r)]; }

MoeRouting parse_moe_routing(std::string_view text, std::string_view what) {
  for (size_t i = 0; i < kRoutingNames.size(); ++i) {
    if (text == kRoutingNames[i] || text == kRoutingLabels[i]) return static_cast<MoeRouting>(i);
  }
  if (text == "power-law-1.01") return MoeRouting::kPowerLaw101;
  if (text == "power-law-1.2") return MoeRouting::kPowerLaw12;
  throw ConfigError(fmt::format("{}: MoE routing '{}' is unknown (known: balanced, power-law-1.01, power-law-1.2)",
                                what, text));
}

MoeRouting default_moe_routing(const ModelConfig& model) {
  // DeepSeek-V4 too (aiconfigurator sdk/models/deepseek_v4.py: power_law_alpha 1.01)
  // MiniMax-M3 too (sdk/models/minimax_m3.py: power_law 1.01)
  const bool deepseek_style = model.count_layers(LayerKind::kMla) > 0 ||
                              model.count_layers(LayerKind::kCompressedAttention) > 0 || model.msa.index_head_dim > 0;
  const bool hybrid = model.count_layers(LayerKind::kLinearAttention) + model.count_layers(LayerKind::kMamba2) > 0;
  return deepseek_style || hybrid ? MoeRouting::kPowerLaw101 : MoeRouting::kPowerLaw12;
}

std::string_view moe_format_name(MoeFormat f) { return kFormatNames[static_cast<size_t>(f)]; }
std::string_view moe_format_label(MoeFormat f) { return kFormatLabels[static_cast<size_t>(f)]; }

bool parse_moe_format_name(std::string_view text, MoeFormat& out) {
  for (size_t i = 0; i < kFormatNames.size(); ++i) {
    if (text == kFormatNames[i]) {
      out = static_cast<MoeFormat>(i);
      return true;
    }
  }
  return false;
}

bool parse_moe_table_dtype(std::string_view text, MoeFormat& out) {
  static const std::pair<std::string_view, MoeFormat> kTable[] = {
      {"bfloat16", MoeFormat::kBf16},   {"fp8", MoeFormat::kFp8},           {"fp8_block", MoeFormat::kFp8Block},
      {"nvfp4", MoeFormat::kNvfp4},     {"w4a16_mxfp4", MoeFormat::kMxfp4}, {"int4_wo", MoeFormat::kInt4},
      {"w4a8_mxfp4_mxfp8", MoeFormat::kW4a8Mxfp4}};
  for (const auto& [name, f] : kTable) {
    if (text == name) {
      out = f;
      return true;
    }
  }
  return false;
}

double moe_format_bytes_per_weight(MoeFormat f) {
  switch (f) {
    case MoeFormat::kBf16: return 2.0;
    case MoeFormat::kFp8: return 1.0;
    case MoeFormat::kFp8Block: return 1.0 + 4.0 / (128.0 * 128.0);
    case MoeFormat::kNvfp4: return 0.5 + 1.0 / 16;
    case MoeFormat::kMxfp4:
    case MoeFormat::kW4a8Mxfp4: return 0.5 + 1.0 / 32;
    case MoeFormat::kInt4: return 0.5 + 2.0 / 128;
  }
  return 2.0;
}

bool moe_format_of(const WeightFormat& weights, bool quantized, MoeFormat& out) {
  if (!quantized || !weights.quant.quantized()) {
    out = MoeFormat::kBf16;
    return true;
  }
  switch (weights.quant.expert_method != QuantMethod::kNone ? weights.quant.expert_method : weights.quant.method) {
    case QuantMethod::kFp8:
    case QuantMethod::kFp8Channel: out = MoeFormat::kFp8; return true;
    case QuantMethod::kFp8Block: out = MoeFormat::kFp8Block; return true;
    case QuantMethod::kNvfp4: out = MoeFormat::kNvfp4; return true;
    case QuantMethod::kMxfp4: out = MoeFormat::kMxfp4; return true;
    case QuantMethod::kAwq:
    case QuantMethod::kGptq:
    case QuantMethod::kPackedInt:
      if (weights.quant.bits == 4 && !weights.quant.activations_quantized) {
        out = MoeFormat::kInt4;
        return true;
      }
      return false;
    default: return false;
  }
}

const char* moe_grid_variant(MoeFormat format, MoeRouting routing) {
  static const std::array<std::array<std::string, 3>, kNumMoeFormats> names = [] {
    std::array<std::array<std::string, 3>, kNumMoeFormats> out;
    for (size_t f = 0; f < out.size(); ++f) {
      for (size_t r = 0; r < 3; ++r) out[f][r] = fmt::format("{}/{}", kFormatNames[f], kRoutingNames[r]);
    }
    return out;
  }();
  return names[static_cast<size_t>(format)][static_cast<size_t>(routing)].c_str();
}

MoeRankLoad moe_rank_load(int experts, int top_k, int64_t tokens, int ep, MoeRouting routing) {
  if (experts <= 0 || top_k <= 0 || tokens <= 0 || ep <= 0) return {};
  ep = std::min(ep, experts);
  if (routing == MoeRouting::kBalanced) return balanced_load(experts, top_k, tokens, ep);
  // The expectation is a pure function of its arguments; steps of one deployment ask for a few
  // thousand token counts, so results are kept (bounded) instead of redrawn on every memo miss.
  struct Key {
    int experts, top_k, ep, routing;
    int64_t tokens;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.tokens * 1000003 + k.experts * 8191 + k.top_k * 131 + k.ep * 7 + k.routing);
    }
  };
  static std::mutex mutex;
  static std::unordered_map<Key, MoeRankLoad, KeyHash> cache;
  const Key key{experts, top_k, ep, static_cast<int>(routing), tokens};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const MoeRankLoad l = power_law_load(experts, top_k, tokens, ep, routing_alpha(routing));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() > (size_t{1} << 16)) cache.clear();
  cache.emplace(key, l);
  return l;
}

MoeRankLoad fused_moe_load(const FusedMoeShape& s) {
  return moe_rank_load(s.experts, s.top_k, static_cast<int64_t>(std::llround(s.tokens)), s.ep, s.routing);
}

StepOp fused_moe_op(const FusedMoeShape& s) {
  const MoeRankLoad l = fused_moe_load(s);
  const double h = static_cast<double>(s.hidden), w = static_cast<double>(s.width);
  const double up = s.gated ? 2.0 * w : w;
  StepOp op;
  op.name = "moe_gemm";
  op.op_class = OpClass::kMoeGemm;
  op.dtype = s.compute;
  // gate/up [rows, h] x [h, up] and down [rows, w] x [w, h] over the straggler's pairs
  op.flops = 2.0 * l.rows * h * (up + w);
  // the touched experts' weights; the tokens in and out; per pair the permuted copy in, the
  // gate/up output, the activation in/out and the down output before the weighted combine
  op.bytes = l.experts_touched * s.expert_weight_bytes + 2.0 * s.tokens * h * kAct +
             l.rows * (h + up + up + w + w + h) * kAct;
  op.kernels = 4;  // top-k/align, gate/up, activation, down + combine
  const double touched = std::max(1.0, l.experts_touched);
  op.shape = OpShape{{std::max(1.0, l.rows / touched), w, h, touched}, 4};
  op.grid_dtype = s.compute;
  op.grid_variant = moe_grid_variant(s.format, s.routing);
  op.moe_experts = s.experts;
  op.moe_top_k = s.top_k;
  op.moe_straggler = l.straggler();
  op.moe_routing = static_cast<uint8_t>(s.routing);
  op.moe_format = static_cast<uint8_t>(s.format);
  return op;
}

}  // namespace kvplan
