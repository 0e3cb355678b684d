// kvplan/core/perf_profile.h — how close to the datasheet roofline each class of operator runs.
//
//   PerfProfile p = PerfProfile::datasheet_default(resolve_gpu("h100-sxm"));
//   double e = p.at(OpClass::kGemm).compute.at(2.0 * 4096 * 4096 * 4096);   // ~0.75 at this size
//
// The step cost model (DESIGN §4) costs an operator as
//   time = max(flops / (peak_flops · e_c(flops)), bytes / (bandwidth · e_m(bytes))) + launch overhead
// where e_c and e_m are EfficiencyCurves of the operator's own size. A profile holds one compute
// curve, one memory curve, a launch overhead and a source label per OpClass. Profiles come from
// calibration ("measured"), from timings published by others ("published (<source>, <engine
// version>, <GPU>)", published_profiles.h), from another GPU's measurements ("transferred (from
// <gpu>)") or from datasheet defaults ("datasheet"); every output says which (docs/cost-model.md).
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "kvplan/core/shape_grid.h"

#include <nlohmann/json_fwd.hpp>

namespace kvplan {

struct GpuSpec;

// Operator classes: one efficiency curve pair per class. Keep kNumOpClasses in step.
enum class OpClass {
  kGemm,              // dense GEMMs: projections, dense MLP, LM head, router
  kMoeGemm,           // grouped expert GEMMs (fused MoE)
  kAttentionPrefill,  // softmax attention over prefill chunks (FlashAttention-style)
  kAttentionDecode,   // softmax / MLA-latent attention for decode queries (split-KV)
  kRecurrent,         // Mamba selective scan / SSD, lightning attention (Gated DeltaNet: its own class)
  kKvWrite,           // writing (and quantizing) new K/V into the cache
  kElementwise,       // norms, RoPE, activations, residual adds, embedding gather
  kCollective,        // tensor-parallel all-reduce / all-gather over the GPU interconnect
  kCopyH2D,           // host -> device copies (swap-in of offloaded KV) over PCIe
  kCopyD2H,           // device -> host copies (swap-out)
  kSampling,          // logits processing, softmax, top-k/top-p sampling
  // Classes of today's attention variants (mixer_ops.h), each with its own published tables:
  kMlaBmm,            // MLA decode absorb BMMs: q_nope x W_UK into the latent, latent out x W_UV
  kMlaPrefill,        // MLA attention kernel over prefill chunks (qk dim nope + rope, per-head K/V)
  kMlaDecode,         // MLA absorbed decode attention over the latent cache (kv_lora_rank + rope)
  kGatedDeltaNet,     // Gated DeltaNet core: causal conv1d + chunked scan (prefill) or recurrent update (decode)
  kConv1d,            // Mamba causal conv1d over the x/B/C channels (prefill: conv; decode: state update)
  // DeepSeek sparse attention (DeepSeek-V3.2, GLM-5):
  // (decode runs the paged kernels: attention_decode prices the indexer, mla_decode the attention)
  kDsaIndexer,        // prefill lightning-indexer logits: fp8 MQA scores of every visible key (DeepGEMM)
  kDsaTopk,           // top-k selection over each query's indexer logits (prefill and decode)
  kDsaAttention,      // prefill sparse MLA attention over the selected latents (FlashMLA sparse)
  kKimiDelta,         // Kimi delta attention core: q/k/v causal conv1d + chunked KDA (prefill) or recurrent update (decode)
  // DeepSeek-V4:
  kDsv4Attention,     // one layer's whole attention module (projections, compressor, indexer, sparse MLA), as vLLM runs it
  kMhc,               // manifold hyper-connections: a layer's mixing before (pre) or after (post) its two sublayers
  // MiniMax-M3:
  kMsaAttention,      // one sparse layer's whole attention module (projections, indexer, top-k blocks, sparse GQA)
};
inline constexpr std::size_t kNumOpClasses = 23;
std::string_view op_class_name(OpClass c);  // "gemm", "moe_gemm", "attention_prefill", ...
// Parses a name written by op_class_name; throws ConfigError naming `what`.
OpClass parse_op_class(std::string_view name, std::string_view what);

// Efficiency as a function of problem size s (FLOPs for compute curves, bytes for memory curves):
//   e(s) = e_max · s / (s + half_size)
// It saturates at e_max for large problems and is e_max/2 at s = half_size. Why this form: the
// time it implies, s / (peak · e(s)) = s / (peak · e_max) + half_size / (peak · e_max), is a
// straight line in s — a per-kernel fixed latency plus a throughput term — so the calibration
// fitter gets both parameters from measured (size, time) rows by ordinary linear least squares:
// slope a = 1/(peak·e_max), intercept b = half_size/(peak·e_max) => e_max = 1/(a·peak), half_size = b/a.
// half_size = 0 means a flat curve (e = e_max at every size).
struct EfficiencyCurve {
  double e_max = 1.0;      // (0, 1]
  double half_size = 0.0;  // >= 0, in FLOPs or bytes

  double at(double size) const {
    if (half_size <= 0.0) return e_max;
    if (size <= 0.0) return e_max;  // an empty operator takes no time anyway
    return e_max * size / (size + half_size);
  }
};

// The shape of one operator instance, for the correction grids (per GPU):
//   gemm:              {m, n, k}  rows (tokens), output features, input features
//   moe_gemm:          {straggler pairs per touched expert, expert width per GPU, hidden, experts touched}
//   attention_decode:  {sequences, kv tokens per sequence, query heads, kv heads}
//   attention_prefill: {sequences, new tokens per sequence, query heads, kv heads}
//   collective:        {bytes, ranks}
//   mla_bmm:           {tokens, heads per GPU}
//   mla_prefill:       {sequences, new tokens per sequence, heads per GPU}
//   mla_decode:        {sequences, kv tokens per sequence, heads per GPU}
//   gated_deltanet:    {sequences, tokens per sequence, value heads per GPU}
//   kimi_delta:        {sequences, tokens per sequence, heads per GPU}
//   dsv4_attention:    prefill {sequences, new tokens per sequence, cached tokens per sequence, heads per GPU};
//                      decode {sequences, past tokens per sequence, heads per GPU}
//   mhc:               {tokens, hidden}
//   msa_attention:     as dsv4_attention
//   conv1d:            {sequences, tokens per sequence, channels per GPU}
// Other classes have no grid (dims 0).
struct OpShape {
  std::array<double, 4> v{};
  int dims = 0;

  bool operator==(const OpShape&) const = default;
};
// The grid coordinates of a shape: log2 of every count (ranks stay linear). Size dims.
std::array<double, 4> grid_coordinates(OpClass c, const OpShape& shape);
// The axis names a class's grids use, e.g. {"log2 m", "log2 n", "log2 k"}.
std::vector<std::string> grid_axes(OpClass c);

struct OpClassProfile {
  EfficiencyCurve compute;         // size: the operator's FLOPs
  EfficiencyCurve memory;          // size: the operator's bytes
  double launch_overhead_ns = 0;   // per kernel launch, removed by CUDA-graph replay
  // Shortest time one kernel of the class takes, CUDA graph or not (a kernel's own start, tail
  // and synchronisation). 0: none beyond the curves' fixed latency.
  double floor_ns = 0;
  // Measured corrections to the roofline time by shape, one per variant: the GEMM compute dtype
  // ("bf16", "fp8_e4m3"), the KV-cache dtype for attention, "bf16" for collectives.
  std::map<std::string, ShapeGrid, std::less<>> grids;
  // Held-out validation of this class (the fitter's 70/30 split): p90 of |predicted/measured - 1|.
  double heldout_p90_rel_error = 0;
  std::string source = "datasheet";  // "measured", "published (...)", "transferred (from <gpu>)", "datasheet"
  std::string note;                  // where the numbers come from
};

// How far whole-model answers from this profile have been off in validation against real serving
// runs (bench/validate_serving): the band every latency answer carries.
struct ProfileBand {
  double tpot_p90_rel_error = 0;  // 0: not validated
  double ttft_p90_rel_error = 0;
  std::string how;                // e.g. "bench/validate_serving, 412 vLLM/SGLang/TRT-LLM runs on H100"
};

class PerfProfile {
 public:
  // Ideal roofline: every efficiency 1, flat curves, no launch overhead; source "ideal".
  PerfProfile();

  // Datasheet defaults for `gpu`: public measurements expressed as fractions of datasheet peaks,
  // each class with a note (numbers and sources in docs/cost-model.md).
  static PerfProfile datasheet_default(const GpuSpec& gpu);
  // The same efficiencies applied to another GPU's datasheet roofline (peak and bandwidth scale
  // with the GPU; e_max, half sizes and overheads are kept). "measured" and "transferred" classes
  // become "transferred (from <this gpu id>)"; "datasheet" classes stay "datasheet".
  PerfProfile transferred_to(const GpuSpec& gpu) const;

  const OpClassProfile& at(OpClass c) const { return classes_[static_cast<std::size_t>(c)]; }
  OpClassProfile& at(OpClass c) { return classes_[static_cast<std::size_t>(c)]; }
  const std::string& gpu_id() const { return gpu_id_; }
  void set_gpu_id(std::string id) { gpu_id_ = std::move(id); }
  const ProfileBand& band() const { return band_; }
  void set_band(ProfileBand band) { band_ = std::move(band); }
  // "published", "measured", "transferred", "datasheet", "fitted to your runs", "ideal" or "mixed":
  // the word answers carry.
  std::string source_kind() const;

  // {"gpu": "h100-sxm", "classes": {"gemm": {"compute": {"e_max": .., "half_size": ..},
  //  "memory": {..}, "launch_overhead_ns": .., "source": "..", "note": ".."}, ...}}
  nlohmann::json to_json() const;
  // Strict: unknown class names, e_max outside (0, 1], negative half_size or overhead, missing
  // fields throw ConfigError naming `what`, the field, the value and the rule. Classes absent
  // from the file keep the ideal defaults with source "ideal (not in file)".
  static PerfProfile from_json(const nlohmann::json& json, std::string_view what);

 private:
  std::array<OpClassProfile, kNumOpClasses> classes_;
  std::string gpu_id_;
  ProfileBand band_;
};

}  // namespace kvplan
