// kvplan/core/fused_moe.h — the fused MoE operator of one GPU: routing, a grouped GEMM over the
// experts a step touches, activation and combine, as one vLLM FusedMoE forward runs them.
//
//   MoeRankLoad l = moe_rank_load(256, 8, 1, 1, MoeRouting::kPowerLaw101);  // l.experts_touched == 8
//   StepOp op = fused_moe_op(FusedMoeShape{...});                           // class moe_gemm
//
// Routing skew is a mechanism, not a factor: under a skewed routing the GPU that paces an
// expert-parallel layer is the one whose experts received the most tokens (the straggler), and its
// token-expert pairs, not the mean T·k/ep, set the GEMM work; the experts it touches set the weight
// bytes. The routings are the three NVIDIA AIConfigurator measured vLLM's FusedMoE under
// (data/measurements/README.md §6a): "balanced" (round-robin expert choice) and per-expert token
// counts drawn from a power law with exponent 1.01 or 1.2, the most-loaded EP rank being the one
// timed. moe_rank_load reproduces that workload's expected straggler load (docs/cost-model.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvplan/core/dtype.h"

namespace kvplan {

struct ModelConfig;
struct StepOp;
struct WeightFormat;

enum class MoeRouting { kBalanced, kPowerLaw101, kPowerLaw12 };
std::string_view moe_routing_name(MoeRouting r);   // "balanced", "power_law_1.01", "power_law_1.2"
std::string_view moe_routing_label(MoeRouting r);  // "balanced", "power-law 1.01", "power-law 1.2"
// Accepts both spellings above; throws ConfigError naming `what`.
MoeRouting parse_moe_routing(std::string_view text, std::string_view what);
// The published default per model, as AIConfigurator's model classes choose it: power-law 1.01 for
// DeepSeek-style models (MLA attention: deepseek.py, deepseek_v32.py) and hybrids, power-law 1.2
// for the generic MoE class (moe.py: Qwen3-MoE, gpt-oss, Mixtral, Llama-4).
MoeRouting default_moe_routing(const ModelConfig& model);

// The work of the straggler expert-parallel rank for `tokens` tokens that each pick `top_k` of
// `experts` experts, the experts split over `ep` ranks (ep = 1: one GPU holds every expert).
struct MoeRankLoad {
  double rows = 0;             // token-expert pairs computed on the straggler rank
  double mean_rows = 0;        // tokens · top_k / ep: what a perfectly even routing gives each rank
  double experts_touched = 0;  // experts of that rank with at least one token: their weights are read
  double straggler() const { return mean_rows > 0 ? rows / mean_rows : 1.0; }
};
MoeRankLoad moe_rank_load(int experts, int top_k, int64_t tokens, int ep, MoeRouting routing);

// The expert weight formats of the published MoE tables (README §6a `moe_dtype`), each its own
// kernel family: bf16 (Triton / TRT-LLM-gen), fp8 per tensor (CUTLASS), fp8 128x128 blocks
// (DeepSeek-V3, Qwen3-FP8), nvfp4 (W4A4 with fp8 scales per 16), mxfp4 weight-only (gpt-oss,
// Marlin / OAI Triton), int4 weight-only (Marlin; Kimi-K2.5, AWQ/GPTQ checkpoints) and mxfp4
// weights with mxfp8 activations (B200).
enum class MoeFormat { kBf16, kFp8, kFp8Block, kNvfp4, kMxfp4, kInt4, kW4a8Mxfp4 };
inline constexpr int kNumMoeFormats = 7;
std::string_view moe_format_name(MoeFormat f);   // "bf16", "fp8", "fp8_block", "nvfp4", "mxfp4", "int4", "w4a8_mxfp4"
std::string_view moe_format_label(MoeFormat f);  // "bf16", "fp8", "fp8 block", "nvfp4", "mxfp4", "int4", "mxfp4 x mxfp8"
// Parses a moe_format_name.
bool parse_moe_format_name(std::string_view text, MoeFormat& out);
// The table's moe_dtype spelling ("bfloat16", "w4a16_mxfp4", "int4_wo", "w4a8_mxfp4_mxfp8", ...).
bool parse_moe_table_dtype(std::string_view text, MoeFormat& out);
// Stored bytes per weight of the format, scales included (bf16 2; fp8 1; fp8 block 1 + 4/128²;
// nvfp4 0.5 + 1/16; mxfp4 0.5 + 1/32; int4 0.5 + 2/128 with bf16 scales per 128).
double moe_format_bytes_per_weight(MoeFormat f);
// The format of a model's experts stored as `weights` (quantized: the experts are in the
// checkpoint's quantized format). False for formats the tables do not cover (int8, bitsandbytes,
// 8-bit GPTQ): those are costed by the class curves without a shape grid.
bool moe_format_of(const WeightFormat& weights, bool quantized, MoeFormat& out);

// One GPU's fused MoE forward (vLLM FusedMoE given the router logits: top-k, permutation, gate/up
// grouped GEMM, activation, down grouped GEMM, weighted combine; not the router GEMM, the shared
// experts nor any communication).
struct FusedMoeShape {
  double tokens = 0;         // tokens entering this GPU's MoE layer (with attention DP + EP: the DP group's)
  int64_t hidden = 0;
  int64_t width = 0;         // one expert's intermediate width on this GPU (inter / moe_tp)
  int experts = 0;           // the model's routed experts
  int top_k = 0;
  int ep = 1;                // ranks the experts are spread over
  bool gated = true;         // gate and up projections (SwiGLU): 2·width outputs
  double expert_weight_bytes = 0;  // one expert's gate/up + down weights as stored, scales included
  DType compute = DType::kBF16;    // tensor-core type (fp8 for W8A8 formats, fp4 for nvfp4 on Blackwell)
  MoeFormat format = MoeFormat::kBf16;
  MoeRouting routing = MoeRouting::kPowerLaw12;
};
StepOp fused_moe_op(const FusedMoeShape& s);
// The load moe_rank_load gives the shape (what fused_moe_op used).
MoeRankLoad fused_moe_load(const FusedMoeShape& s);

// The grid variant of a MoE op: "<format>/<routing name>", e.g. "fp8_block/power_law_1.01" (static).
const char* moe_grid_variant(MoeFormat format, MoeRouting routing);

}  // namespace kvplan
