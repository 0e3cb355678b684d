// PerfProfile: efficiency curves per operator class, datasheet defaults, transfer, JSON.
#include "kvplan/core/json_input.h"
#include "kvplan/core/perf_profile.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/gpu_spec.h"

namespace kvplan {

namespace {

constexpr std::array<std::string_view, kNumOpClasses> kClassNames = {
    "gemm",       "moe_gemm",   "attention_prefill", "attention_decode", "recurrent", "kv_write",
    "elementwise", "collective", "copy_h2d",          "copy_d2h",         "sampling",  "mla_bmm",
    "mla_prefill", "mla_decode", "gated_deltanet",    "conv1d",           "dsa_indexer", "dsa_topk",
    "dsa_attention", "kimi_delta", "dsv4_attention", "mhc", "msa_attention"};

// A curve whose implied fixed latency (time at size -> 0, see EfficiencyCurve) is `fixed_s` on a
// roof of `roof` (FLOP/s or bytes/s): half_size = fixed_s · roof · e_max.
EfficiencyCurve curve(double e_max, double fixed_s, double roof) {
  return EfficiencyCurve{e_max, fixed_s * roof * e_max};
}

std::string number_text(double v) { return fmt::format("{}", v); }

}  // namespace

std::string_view op_class_name(OpClass c) { return kClassNames[static_cast<std::size_t>(c)]; }

std::array<double, 4> grid_coordinates(OpClass c, const OpShape& shape) {
  std::array<double, 4> x{};
  for (int i = 0; i < shape.dims && i < 4; ++i) x[static_cast<size_t>(i)] = std::log2(std::max(shape.v[static_cast<size_t>(i)], 1.0));
  if (c == OpClass::kCollective && shape.dims >= 2) x[1] = shape.v[1];  // ranks stay linear
  return x;
}

std::vector<std::string> grid_axes(OpClass c) {
  switch (c) {
    case OpClass::kGemm: return {"log2 m", "log2 n", "log2 k"};
    case OpClass::kMoeGemm: return {"log2 pairs per expert", "log2 expert width", "log2 hidden", "log2 experts touched"};
    case OpClass::kAttentionDecode: return {"log2 sequences", "log2 kv tokens", "log2 query heads", "log2 kv heads"};
    case OpClass::kAttentionPrefill: return {"log2 sequences", "log2 new tokens", "log2 query heads", "log2 kv heads"};
    case OpClass::kCollective: return {"log2 bytes", "ranks"};
    case OpClass::kMlaBmm: return {"log2 tokens", "log2 heads"};
    case OpClass::kMlaPrefill: return {"log2 sequences", "log2 new tokens", "log2 heads"};
    case OpClass::kMlaDecode: return {"log2 sequences", "log2 kv tokens", "log2 heads"};
    case OpClass::kGatedDeltaNet: return {"log2 sequences", "log2 tokens per sequence", "log2 value heads"};
    case OpClass::kKimiDelta: return {"log2 sequences", "log2 tokens per sequence", "log2 heads"};
    case OpClass::kDsv4Attention:
      return {"log2 sequences", "log2 new or past tokens per sequence", "log2 cached tokens per sequence (prefill) / heads",
              "log2 heads (prefill)"};
    case OpClass::kMhc: return {"log2 tokens", "log2 hidden"};
    case OpClass::kMsaAttention:
      return {"log2 sequences", "log2 new or past tokens per sequence", "log2 cached tokens per sequence (prefill) / heads",
              "log2 heads (prefill)"};
    case OpClass::kConv1d: return {"log2 sequences", "log2 tokens per sequence", "log2 channels"};
    case OpClass::kDsaIndexer:
    case OpClass::kDsaTopk: return {"log2 sequences", "log2 query tokens per sequence", "log2 keys per query"};
    case OpClass::kDsaAttention: return {"log2 sequences", "log2 query tokens per sequence", "log2 heads"};
    default: return {};
  }
}

std::string PerfProfile::source_kind() const {
  std::string kind;
  for (const OpClassProfile& c : classes_) {
    // "fitted to your runs (...)" (kvplan calibrate from-runs) is one kind of several words.
    constexpr std::string_view kFitted = "fitted to your runs";
    std::string k = c.source.rfind(kFitted, 0) == 0 ? std::string(kFitted)
                                                    : c.source.substr(0, c.source.find_first_of(" ("));
    if (k == "ideal" && c.source.find("not in file") != std::string::npos) continue;
    if (kind.empty()) kind = k;
    else if (kind != k) return "mixed";
  }
  return kind.empty() ? "ideal" : kind;
}

OpClass parse_op_class(std::string_view name, std::string_view what) {
  for (std::size_t i = 0; i < kNumOpClasses; ++i) {
    if (kClassNames[i] == name) return static_cast<OpClass>(i);
  }
  std::string known;
  for (std::string_view n : kClassNames) known += fmt::format("{}{}", known.empty() ? "" : ", ", n);
  throw ConfigError(fmt::format("{}: operator class '{}' is unknown (known: {})", what, name, known));
}

PerfProfile::PerfProfile() : gpu_id_("ideal") {
  for (OpClassProfile& c : classes_) {
    c.source = "ideal";
    c.note = "efficiency 1, no launch overhead (tests and what-if bounds)";
  }
}

PerfProfile PerfProfile::datasheet_default(const GpuSpec& gpu) {
  // Every number below is listed with its source or marked as an assumption in docs/cost-model.md
  // ("Datasheet profile"). Fixed latencies are expressed as curve half sizes on this GPU's roofs.
  PerfProfile p;
  p.gpu_id_ = gpu.id;
  const double flops = gpu.peak_flops_bf16;
  const double bw = gpu.memory_bandwidth_bytes_per_s;
  const double link = gpu.interconnect_bytes_per_s > 0 ? gpu.interconnect_bytes_per_s : gpu.pcie_bytes_per_s;
  const double pcie = gpu.pcie_bytes_per_s;
  constexpr double kUs = 1e-6;
  constexpr double kLaunchNs = 4000;  // per kernel launch (4-6 us measured, see docs)
  auto set = [&](OpClass c, EfficiencyCurve compute, EfficiencyCurve memory, double launch_ns,
                 std::string note) {
    OpClassProfile& k = p.at(c);
    k.compute = compute;
    k.memory = memory;
    k.launch_overhead_ns = launch_ns;
    k.source = "datasheet";
    k.note = std::move(note);
  };
  set(OpClass::kGemm, curve(0.75, 2 * kUs, flops), curve(0.85, 2 * kUs, bw), kLaunchNs,
      "cuBLAS bf16 GEMM ~75% of dense peak at large sizes (assumption); weight streaming ~85% of "
      "datasheet bandwidth (coalesced loads measured at 84% on H100); 2 us fixed latency (assumption)");
  set(OpClass::kMoeGemm, curve(0.6, 5 * kUs, flops), curve(0.7, 5 * kUs, bw), kLaunchNs,
      "fused-MoE grouped GEMM: 60% of peak, 70% of bandwidth, 5 us fixed (assumption)");
  set(OpClass::kAttentionPrefill, curve(0.55, 5 * kUs, flops), curve(0.8, 5 * kUs, bw), kLaunchNs,
      "FlashAttention-2 reaches 50-73% of peak FLOP/s (Dao 2023); 55% used; 5 us fixed (assumption)");
  set(OpClass::kAttentionDecode, curve(0.5, 5 * kUs, flops), curve(0.7, 5 * kUs, bw), kLaunchNs,
      "paged split-KV decode: 70% of datasheet bandwidth (assumption between the 42-57% seen for "
      "naive KV reads and ~85% for streaming loads on H100); 5 us fixed (assumption)");
  set(OpClass::kRecurrent, curve(0.3, 5 * kUs, flops), curve(0.6, 5 * kUs, bw), kLaunchNs,
      "Mamba scan / SSD, lightning attention: 30% of peak, 60% of bandwidth (assumption)");
  set(OpClass::kKvWrite, curve(0.5, 2 * kUs, flops), curve(0.6, 2 * kUs, bw), kLaunchNs,
      "scattered paged-cache writes: 60% of bandwidth, 2 us fixed (assumption)");
  set(OpClass::kElementwise, curve(0.5, 2 * kUs, flops), curve(0.75, 2 * kUs, bw), kLaunchNs,
      "norms, RoPE, activations: 75% of bandwidth, 2 us fixed (assumption)");
  set(OpClass::kCollective, curve(1.0, 0, flops), curve(0.41, 8 * kUs, link), kLaunchNs,
      "NCCL reaches ~370 GB/s effective NVLink bandwidth per direction on H100 of 450 GB/s line "
      "rate (nccl-tests #212) = 0.41 of the 900 GB/s bidirectional datasheet figure; 8 us fixed "
      "(assumption)");
  set(OpClass::kCopyH2D, curve(1.0, 0, flops), curve(0.8, 10 * kUs, pcie), kLaunchNs,
      "pinned cudaMemcpyAsync: 80% of one-direction PCIe bandwidth, 10 us fixed (assumption)");
  set(OpClass::kCopyD2H, curve(1.0, 0, flops), curve(0.8, 10 * kUs, pcie), kLaunchNs,
      "pinned cudaMemcpyAsync: 80% of one-direction PCIe bandwidth, 10 us fixed (assumption)");
  set(OpClass::kSampling, curve(0.5, 0, flops), curve(0.5, 10 * kUs, bw), kLaunchNs,
      "logits softmax/top-k/top-p: 50% of bandwidth, 10 us fixed (assumption)");
  // The classes split out of gemm / attention / recurrent / elementwise for their own published
  // tables start from the datasheet guess of the class they were priced by before.
  const auto same_guess_as = [&](OpClass c, OpClass from, std::string note) {
    const OpClassProfile& k = p.at(from);
    set(c, k.compute, k.memory, k.launch_overhead_ns, std::move(note));
  };
  same_guess_as(OpClass::kMlaBmm, OpClass::kGemm,
                "MLA absorb BMMs: the gemm class's guess (75% of peak, 85% of bandwidth, 2 us fixed; assumption)");
  same_guess_as(OpClass::kMlaPrefill, OpClass::kAttentionPrefill,
                "MLA prefill attention: the attention_prefill guess (55% of peak, 5 us fixed; assumption)");
  same_guess_as(OpClass::kMlaDecode, OpClass::kAttentionDecode,
                "MLA absorbed decode over the latent cache: the attention_decode guess (70% of bandwidth, 5 us fixed; "
                "assumption)");
  same_guess_as(OpClass::kGatedDeltaNet, OpClass::kRecurrent,
                "Gated DeltaNet conv1d + delta rule: the recurrent guess (30% of peak, 60% of bandwidth; assumption)");
  same_guess_as(OpClass::kKimiDelta, OpClass::kRecurrent,
                "Kimi delta attention conv1d + delta rule: the recurrent guess (30% of peak, 60% of bandwidth; "
                "assumption)");
  same_guess_as(OpClass::kConv1d, OpClass::kElementwise,
                "causal conv1d: the elementwise guess (75% of bandwidth, 2 us fixed; assumption)");
  same_guess_as(OpClass::kDsaIndexer, OpClass::kGemm,
                "DSA indexer logits (fp8 MQA): the gemm class's guess (75% of peak, 85% of bandwidth, 2 us fixed; "
                "assumption)");
  same_guess_as(OpClass::kDsaTopk, OpClass::kElementwise,
                "DSA top-k over the indexer logits: the elementwise guess (75% of bandwidth, 2 us fixed; assumption)");
  same_guess_as(OpClass::kDsaAttention, OpClass::kMlaPrefill,
                "sparse MLA attention over the top-k latents: the MLA prefill guess (55% of peak, 80% of bandwidth, "
                "5 us fixed; assumption)");
  same_guess_as(OpClass::kDsv4Attention, OpClass::kMlaPrefill,
                "DeepSeek-V4 attention module: the MLA prefill guess (55% of peak, 80% of bandwidth, 5 us fixed; "
                "assumption)");
  same_guess_as(OpClass::kMsaAttention, OpClass::kAttentionPrefill,
                "MiniMax sparse attention module: the attention_prefill guess (55% of peak, 80% of bandwidth, 5 us "
                "fixed; assumption)");
  same_guess_as(OpClass::kMhc, OpClass::kElementwise,
                "hyper-connection mixing: the elementwise guess (75% of bandwidth, 2 us fixed; assumption)");
  return p;
}

PerfProfile PerfProfile::transferred_to(const GpuSpec& gpu) const {
  PerfProfile p = *this;
  p.gpu_id_ = gpu.id;
  for (OpClassProfile& c : p.classes_) {
    // "measured" or "measured (h100-sxm run 3)": the efficiencies travel, the label says from where.
    if (c.source.rfind("measured", 0) == 0 || c.source.rfind("published", 0) == 0) {
      c.note = fmt::format("{} on {}; {}", c.source, gpu_id_, c.note);
      c.source = fmt::format("transferred (from {})", gpu_id_);
    }
    // Already "transferred (from X)": keeps naming the GPU the measurements come from.
  }
  return p;
}

nlohmann::json PerfProfile::to_json() const {
  nlohmann::json classes = nlohmann::json::object();
  for (std::size_t i = 0; i < kNumOpClasses; ++i) {
    const OpClassProfile& c = classes_[i];
    nlohmann::json j = {
        {"compute", {{"e_max", c.compute.e_max}, {"half_size", c.compute.half_size}}},
        {"memory", {{"e_max", c.memory.e_max}, {"half_size", c.memory.half_size}}},
        {"launch_overhead_ns", c.launch_overhead_ns},
        {"source", c.source},
        {"note", c.note}};
    if (c.floor_ns > 0) j["floor_ns"] = c.floor_ns;
    if (c.heldout_p90_rel_error > 0) j["heldout_p90_rel_error"] = c.heldout_p90_rel_error;
    if (!c.grids.empty()) {
      nlohmann::json grids = nlohmann::json::object();
      for (const auto& [variant, grid] : c.grids) grids[variant] = grid.to_json();
      j["grids"] = std::move(grids);
    }
    classes[std::string(kClassNames[i])] = std::move(j);
  }
  nlohmann::json out = {{"gpu", gpu_id_}, {"classes", classes}};
  if (band_.tpot_p90_rel_error > 0 || band_.ttft_p90_rel_error > 0) {
    out["band"] = {{"tpot_p90_rel_error", band_.tpot_p90_rel_error},
                   {"ttft_p90_rel_error", band_.ttft_p90_rel_error},
                   {"how", band_.how}};
  }
  return out;
}

namespace {

const nlohmann::json& field(const nlohmann::json& obj, std::string_view key, const std::string& where) {
  if (!obj.is_object()) {
    throw ConfigError(fmt::format("{}: must be a JSON object, got {}", where, json_brief(obj)));
  }
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) {
    throw ConfigError(fmt::format("{}: field '{}' is missing", where, key));
  }
  return *it;
}

double number(const nlohmann::json& obj, std::string_view key, const std::string& where) {
  const nlohmann::json& v = field(obj, key, where);
  if (!v.is_number()) {
    throw ConfigError(fmt::format("{}: {}={} must be a number", where, key, json_brief(v)));
  }
  double d = v.get<double>();
  if (!std::isfinite(d)) {
    throw ConfigError(fmt::format("{}: {}={} must be finite", where, key, number_text(d)));
  }
  return d;
}

EfficiencyCurve read_curve(const nlohmann::json& obj, std::string_view key, const std::string& where) {
  const std::string sub = fmt::format("{}.{}", where, key);
  const nlohmann::json& c = field(obj, key, where);
  EfficiencyCurve e;
  e.e_max = number(c, "e_max", sub);
  if (!(e.e_max > 0.0 && e.e_max <= 1.0)) {
    throw ConfigError(fmt::format("{}: e_max={} must be in (0, 1]", sub, number_text(e.e_max)));
  }
  e.half_size = number(c, "half_size", sub);
  if (e.half_size < 0.0) {
    throw ConfigError(fmt::format("{}: half_size={} must be >= 0", sub, number_text(e.half_size)));
  }
  return e;
}

}  // namespace

PerfProfile PerfProfile::from_json(const nlohmann::json& json, std::string_view what) {
  const std::string top = fmt::format("perf profile '{}'", what);
  PerfProfile p;
  const nlohmann::json& gpu = field(json, "gpu", top);
  if (!gpu.is_string()) throw ConfigError(fmt::format("{}: gpu={} must be a string", top, json_brief(gpu)));
  p.gpu_id_ = gpu.get<std::string>();
  for (OpClassProfile& c : p.classes_) c.source = "ideal (not in file)";
  const nlohmann::json& classes = field(json, "classes", top);
  if (!classes.is_object()) {
    throw ConfigError(fmt::format("{}: classes={} must be an object", top, json_brief(classes)));
  }
  for (auto it = classes.begin(); it != classes.end(); ++it) {
    OpClass oc = parse_op_class(it.key(), top);
    const std::string where = fmt::format("{}: classes.{}", top, it.key());
    OpClassProfile& c = p.at(oc);
    c.compute = read_curve(it.value(), "compute", where);
    c.memory = read_curve(it.value(), "memory", where);
    c.launch_overhead_ns = number(it.value(), "launch_overhead_ns", where);
    if (c.launch_overhead_ns < 0) {
      throw ConfigError(fmt::format("{}: launch_overhead_ns={} must be >= 0", where,
                                    number_text(c.launch_overhead_ns)));
    }
    const nlohmann::json& source = field(it.value(), "source", where);
    if (!source.is_string() || source.get<std::string>().empty()) {
      throw ConfigError(fmt::format("{}: source={} must be a non-empty string", where, json_brief(source)));
    }
    c.source = source.get<std::string>();
    if (auto n = it.value().find("note"); n != it.value().end() && n->is_string()) {
      c.note = n->get<std::string>();
    } else {
      c.note.clear();
    }
    if (it.value().contains("floor_ns")) {
      c.floor_ns = number(it.value(), "floor_ns", where);
      if (c.floor_ns < 0 || c.floor_ns > 1e9) {
        throw ConfigError(fmt::format("{}: floor_ns={} must be in [0, 1e9]", where, number_text(c.floor_ns)));
      }
    }
    if (it.value().contains("heldout_p90_rel_error")) {
      c.heldout_p90_rel_error = number(it.value(), "heldout_p90_rel_error", where);
    }
    if (it.value().contains("grids")) {
      const nlohmann::json& grids = it.value().at("grids");
      if (!grids.is_object()) throw ConfigError(fmt::format("{}: grids must be an object of variants", where));
      const std::vector<std::string> axes = grid_axes(oc);
      for (auto g = grids.begin(); g != grids.end(); ++g) {
        ShapeGrid grid = ShapeGrid::from_json(g.value(), fmt::format("{}.grids.{}", where, g.key()));
        if (grid.features != axes) {
          throw ConfigError(fmt::format("{}.grids.{}: features must be the class's axes ({} of them)", where, g.key(),
                                        axes.size()));
        }
        c.grids[g.key()] = std::move(grid);
      }
    }
  }
  if (json.contains("band")) {
    const nlohmann::json& b = json.at("band");
    const std::string where = top + ": band";
    p.band_.tpot_p90_rel_error = number(b, "tpot_p90_rel_error", where);
    p.band_.ttft_p90_rel_error = number(b, "ttft_p90_rel_error", where);
    if (b.contains("how") && b.at("how").is_string()) p.band_.how = b.at("how").get<std::string>();
  }
  return p;
}

}  // namespace kvplan
