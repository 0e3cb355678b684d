// StepCostModel: aggregate a step's work, memoise by a quantized signature, cost each operator by
// roofline with the profile's efficiency curves, and take the critical path of the step DAG.
//
// Memo key and quantization. Counts (prefill tokens and chunks, decode sequences, query tokens,
// emitting rows) are exact. The large aggregates — per KV group the decode held-token sum and max,
// the decode KV bytes, the prefill causal pair count and prefill KV tokens, and the swap bytes —
// are rounded to 8 significant bits (values below 256 are exact), i.e. a relative error of at
// most 2^-9 ≈ 0.2% each. (11 bits were tried first: at light load, when every decode step moves
// the context sums by a few tokens, only 6% of steps hit the memo on the Azure conversation trace;
// with 8 bits most do, and 0.2% is far below the cost model's own uncertainty.) The step is then costed FROM THE ROUNDED VALUES, so step_ns is a pure
// function of the work (never of which step happened to fill the memo entry first). Every op's
// time is non-decreasing and at most linear in each aggregate, so the step time moves by at most
// ~0.2% against unrounded aggregates. The table holds at most 32Ki entries and then starts over
// (deterministically), so its memory does not grow with the length of a run.
#include "kvplan/sim/cost_model.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "internal/step_graph.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/op_time.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/step_ops.h"

namespace kvplan::sim {

namespace {

constexpr int kSignificantBits = 8;
constexpr std::size_t kMaxKeyGroups = 5;
constexpr std::size_t kKeyWords = 7 + 5 * kMaxKeyGroups;
constexpr std::size_t kMaxMemoEntries = std::size_t{1} << 15;  // then the table starts over

int64_t quantize(int64_t x) {
  if (x < (int64_t{1} << kSignificantBits)) return x;
  const int shift = std::bit_width(static_cast<uint64_t>(x)) - kSignificantBits;
  return ((x + (int64_t{1} << (shift - 1))) >> shift) << shift;
}

using Key = std::array<int64_t, kKeyWords>;

uint64_t hash_key(const Key& k) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int64_t w : k) {
    h ^= static_cast<uint64_t>(w) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
  }
  return h ^ (h >> 31);
}

// Open addressing, linear probing, power-of-two capacity; keys compared by value only.
class MemoTable {
 public:
  MemoTable() { rehash(1024); }

  const TimeNs* find(const Key& k, uint64_t h) const {
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.hash == h && s.key == k) return &s.value;
    }
  }
  void insert(const Key& k, uint64_t h, TimeNs v) {
    if (size_ >= kMaxMemoEntries) rehash(1024);
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) {
        s = Slot{k, h, v, true};
        ++size_;
        return;
      }
    }
  }

 private:
  struct Slot {
    Key key{};
    uint64_t hash = 0;
    TimeNs value = 0;
    bool used = false;
  };
  void rehash(std::size_t capacity) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
    if (old.size() >= kMaxMemoEntries * 2) return;  // starting over: drop everything
    for (const Slot& s : old) {
      if (s.used) insert(s.key, s.hash, s.value);
    }
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace

struct StepCostModel::Impl {
  Impl(const ModelConfig& m, const GpuSpec& g, const KvScheme& s, const Parallelism& p, const PerfProfile& pr,
       CostOptions o)
      : model(m), gpu(g), parallel(p), profile(pr), options(o), layout(build_kv_layout(m, s, p, 0)),
        builder(layout) {
    // Pipeline parallelism: the step is costed as stage 0 (n/pp layers, vLLM's split) plus the LM
    // head and sampling, i.e. the per-stage time that paces a full pipeline.
    ops_options.pipeline_stage = 0;
    ops_options.force_head = true;
    ops_options.weights = o.weights;
    ops_options.gemm_dtype = gemm_compute_dtype(o.weights.quant, g.peak_flops_fp8 > 0, g.peak_flops_int8 > 0,
                                                g.peak_flops(DType::kFp4E2M1) > g.peak_flops_fp8);
    ops_options.quant_mask = quantized_module_mask(m, o.weights);
    for (std::size_t g2 = 0; g2 < layout.groups().size(); ++g2) {
      if (holds_kv_per_token(layout.groups()[g2].kind)) key_groups.push_back(g2);
    }
    memo_enabled = options.memoise && key_groups.size() <= kMaxKeyGroups;
    op_ns.reserve(128);
  }

  ModelConfig model;
  GpuSpec gpu;
  Parallelism parallel;
  PerfProfile profile;
  CostOptions options;
  KvLayout layout;
  StepShapeBuilder builder;  // points at `layout`; Impl lives on the heap, so it never moves
  StepOpsOptions ops_options;
  std::vector<std::size_t> key_groups;
  bool memo_enabled = true;
  MemoTable memo;
  int64_t hits = 0;
  int64_t misses = 0;
  std::vector<double> op_ns;

  // Aggregates the work into builder.shape(), rounding the large aggregates (see top of file).
  const StepShape& aggregate(const StepWork& w) {
    builder.reset(std::max<int32_t>(1, w.decode_query_tokens));
    // vLLM v1 computes logits for the last scheduled token of every request, partial prefill
    // chunks included (and discards those): every chunk is a row of the LM head.
    for (const PrefillChunk& c : w.prefill) builder.add_prefill(c.context_tokens, c.new_tokens, true);
    for (int64_t ctx : w.decode_contexts) builder.add_decode(ctx);
    StepShape& s = builder.shape();
    for (std::size_t g : key_groups) {
      GroupStepWork& gw = s.groups[g];
      gw.decode_tokens = quantize(gw.decode_tokens);
      gw.decode_tokens_max = quantize(gw.decode_tokens_max);
      gw.decode_kv_bytes = quantize(gw.decode_kv_bytes);
      gw.prefill_pairs = quantize(gw.prefill_pairs);
      gw.prefill_kv_tokens = quantize(gw.prefill_kv_tokens);
    }
    s.swap_in_bytes = quantize(std::max<int64_t>(0, w.swap_in_bytes));
    s.swap_out_bytes = quantize(std::max<int64_t>(0, w.swap_out_bytes));
    return s;
  }

  Key key_of(const StepShape& s) const {
    Key k{};
    k[0] = s.prefill_tokens;
    k[1] = s.prefill_sequences;
    k[2] = s.decode_sequences;
    k[3] = s.decode_query_tokens;
    k[4] = s.emitting_sequences;
    k[5] = s.swap_in_bytes;
    k[6] = s.swap_out_bytes;
    std::size_t i = 7;
    for (std::size_t g : key_groups) {
      const GroupStepWork& gw = s.groups[g];
      k[i++] = gw.decode_tokens;
      k[i++] = gw.decode_tokens_max;
      k[i++] = gw.decode_kv_bytes;
      k[i++] = gw.prefill_pairs;
      k[i++] = gw.prefill_kv_tokens;
    }
    return k;
  }

  // One op instance's time and what set it: the roofline with the profile's curves, grid and
  // floor (core/op_time.h, shared with the calibration fitter), plus launch overhead outside CUDA
  // graphs. The parts are for --explain-step; total_ns is what the simulator uses.
  struct OpTimeParts {
    double compute_ns = 0;   // FLOPs at the dtype's peak x compute efficiency
    double memory_ns = 0;    // bytes at bandwidth x memory efficiency (incl. the longest sequence)
    double grid_factor = 1;  // measured correction by shape (1: none)
    double floor_ns = 0;     // kernels x the class floor
    double launch_ns = 0;    // kernels x launch overhead (0 inside a CUDA graph)
    double custom_ns = -1;   // >= 0: the engine's custom all-reduce, faster than the profile, set it
    double total_ns = 0;
  };

  // The engine's custom all-reduce time for this op, or a negative number when the profile's
  // collective class prices it (no custom kernel, not a TP all-reduce, or above its size cap).
  double custom_all_reduce_op_ns(const StepOp& op) const {
    if (!options.custom_all_reduce || !op.tp_all_reduce || op.shape.dims < 2) return -1;
    const double payload = op.shape.v[0];
    if (payload > options.custom_all_reduce->max_payload_bytes) return -1;
    return custom_all_reduce_ns(*options.custom_all_reduce, gpu, payload, static_cast<int>(op.shape.v[1]));
  }

  OpTimeParts op_time_parts(const StepOp& op, bool launch) const {
    const OpClassProfile& c = profile.at(op.op_class);
    OpTimeParts p;
    if (op.flops > 0) p.compute_ns = op.flops / (gpu.peak_flops(op.dtype) * c.compute.at(op.flops)) * 1e9;
    // The memory side with the split-KV critical path: the roofline minus its compute side.
    StepOp memory_only = op;
    memory_only.flops = 0;
    p.memory_ns = op_roofline_s(c, gpu, memory_only) * 1e9;
    p.grid_factor = op_grid_factor(c, op);
    p.floor_ns = op.kernels * c.floor_ns;
    p.launch_ns = launch ? op.kernels * c.launch_overhead_ns : 0.0;
    p.total_ns = op_kernel_ns(c, gpu, op) + p.launch_ns;
    if (const double custom = custom_all_reduce_op_ns(op); custom >= 0 && custom + p.launch_ns < p.total_ns) {
      p.custom_ns = custom;
      p.total_ns = custom + p.launch_ns;
    }
    return p;
  }

  double op_time_ns(const StepOp& op, bool launch) const { return op_time_parts(op, launch).total_ns; }

  // Launch overhead applies unless the step is decode-only and replayed as a CUDA graph; copies
  // are issued outside the graph and always pay it.
  bool launches(const StepShape& s, const StepOp& op) const {
    if (op.stream == Stream::kCopy) return true;
    return !(options.cuda_graphs && s.prefill_tokens == 0);
  }

  StepOps ops_for(const StepShape& s) const { return build_step_ops(model, layout, parallel, s, ops_options); }

  double cost(const StepShape& s, bool collapse, StepOps* keep = nullptr) {
    StepOps ops = ops_for(s);
    op_ns.resize(ops.ops.size());
    for (std::size_t i = 0; i < ops.ops.size(); ++i) op_ns[i] = op_time_ns(ops.ops[i], launches(s, ops.ops[i]));
    const double t = internal::step_critical_path_ns(ops, op_ns, collapse);
    if (keep != nullptr) *keep = std::move(ops);
    return t;
  }
};

StepCostModel::StepCostModel(const ModelConfig& model, const GpuSpec& gpu, const KvScheme& scheme,
                             const Parallelism& parallel, const PerfProfile& profile, CostOptions options)
    : impl_(std::make_unique<Impl>(model, gpu, scheme, parallel, profile, options)) {}
StepCostModel::~StepCostModel() = default;
StepCostModel::StepCostModel(StepCostModel&&) noexcept = default;
StepCostModel& StepCostModel::operator=(StepCostModel&&) noexcept = default;

TimeNs StepCostModel::step_ns(const StepWork& work) {
  Impl& m = *impl_;
  const StepShape& s = m.aggregate(work);
  if (s.new_tokens() == 0 && s.swap_in_bytes == 0 && s.swap_out_bytes == 0) return 0;
  if (!m.memo_enabled) {
    ++m.misses;
    return static_cast<TimeNs>(std::llround(m.cost(s, true)));
  }
  const Key k = m.key_of(s);
  const uint64_t h = hash_key(k);
  if (const TimeNs* hit = m.memo.find(k, h)) {
    ++m.hits;
    return *hit;
  }
  ++m.misses;
  const TimeNs t = static_cast<TimeNs>(std::llround(m.cost(s, true)));
  m.memo.insert(k, h, t);
  return t;
}

TimeNs StepCostModel::step_ns_uncollapsed(const StepWork& work) const {
  Impl& m = *impl_;
  const StepShape& s = m.aggregate(work);
  if (s.new_tokens() == 0 && s.swap_in_bytes == 0 && s.swap_out_bytes == 0) return 0;
  return static_cast<TimeNs>(std::llround(m.cost(s, false)));
}

StepBreakdown StepCostModel::explain(const StepWork& work) const {
  Impl& m = *impl_;
  StepBreakdown out;
  const StepShape& s = m.aggregate(work);
  if (s.new_tokens() == 0 && s.swap_in_bytes == 0 && s.swap_out_bytes == 0) return out;
  StepOps ops;
  out.total_ns = static_cast<TimeNs>(std::llround(m.cost(s, true, &ops)));
  // Sum each operator over the layers that run it, keyed by display name, in first-seen order
  // (prologue, then layer types in the order they first appear, epilogue, copies).
  std::map<std::string, std::size_t> index;
  std::vector<double> ns;
  for (std::size_t i = 0; i < ops.ops.size(); ++i) {
    const StepOp& op = ops.ops[i];
    std::string name = ops.display_name(op, m.layout);
    auto [it, inserted] = index.try_emplace(name, out.ops.size());
    if (inserted) {
      OpCost c;
      c.name = std::move(name);
      c.stream = std::string(stream_name(op.stream));
      c.op_class = std::string(op_class_name(op.op_class));
      c.source = m.profile.at(op.op_class).source;
      out.ops.push_back(std::move(c));
      ns.push_back(0);
    }
    OpCost& c = out.ops[it->second];
    c.flops += op.flops * op.repeat;
    c.bytes += op.bytes * op.repeat;
    c.instances += op.repeat;
    ns[it->second] += m.op_ns[i] * op.repeat;
    const Impl::OpTimeParts parts = m.op_time_parts(op, m.launches(s, op));
    const double roof = std::max(parts.compute_ns, parts.memory_ns) * parts.grid_factor;
    c.limit = parts.floor_ns >= roof ? "floor" : parts.compute_ns >= parts.memory_ns ? "compute" : "memory";
    c.grid_factor = parts.grid_factor;
    if (parts.custom_ns >= 0) {
      c.limit = "custom";
      c.grid_factor = 1;
      c.source = m.options.custom_all_reduce->label;
    }
    c.launch_ns += parts.launch_ns * op.repeat;
  }
  for (std::size_t i = 0; i < out.ops.size(); ++i) out.ops[i].time_ns = static_cast<TimeNs>(std::llround(ns[i]));
  return out;
}

std::vector<std::string> StepCostModel::sources() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kNumOpClasses; ++i) {
    const OpClassProfile& c = impl_->profile.at(static_cast<OpClass>(i));
    out.push_back(fmt::format("{}: {}{}{}", op_class_name(static_cast<OpClass>(i)), c.source,
                              c.note.empty() ? "" : " — ", c.note));
  }
  if (impl_->options.custom_all_reduce) {
    out.push_back(fmt::format("tensor-parallel all-reduce up to {:.0f} MiB: the faster of the collective class and the "
                              "engine's {}",
                              impl_->options.custom_all_reduce->max_payload_bytes / (1024.0 * 1024.0),
                              impl_->options.custom_all_reduce->source));
  }
  return out;
}

std::string StepCostModel::weights_note() const {
  const WeightFormat& w = impl_->ops_options.weights;
  if (!w.quant.quantized()) return fmt::format("weights in {}", dtype_name(w.dtype));
  const bool w8a8 = impl_->ops_options.gemm_dtype != DType::kBF16;
  return fmt::format("weights {}: GEMMs read the quantized bytes and run at the {} rate{}", w.describe(),
                     dtype_name(impl_->ops_options.gemm_dtype),
                     w8a8 ? " (W8A8)" : " (weight-only: dequantized to 16-bit in the kernel)");
}

int64_t StepCostModel::memo_hits() const { return impl_->hits; }
int64_t StepCostModel::memo_misses() const { return impl_->misses; }

}  // namespace kvplan::sim
