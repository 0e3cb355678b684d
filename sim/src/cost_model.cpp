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
#include "kvplan/core/mixer_ops.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/op_time.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/step_ops.h"

namespace kvplan::sim {

namespace {

constexpr int kSignificantBits = 8;
constexpr std::size_t kMaxKeyGroups = 5;
// Per group: the five dense aggregates, and the two sparse ones in a DSA layout (GroupStepWork).
constexpr std::size_t kKeyWords = 7 + 7 * kMaxKeyGroups;
constexpr std::size_t kMaxMemoEntries = std::size_t{1} << 15;  // then the table starts over

int64_t quantize(int64_t x) {
  if (x < (int64_t{1} << kSignificantBits)) return x;
  const int shift = std::bit_width(static_cast<uint64_t>(x)) - kSignificantBits;
  return ((x + (int64_t{1} << (shift - 1))) >> shift) << shift;
}

using Key = std::array<int64_t, kKeyWords>;

// Hashes the key's first `words` words (the rest are always zero for a given model).
uint64_t hash_key(const Key& k, std::size_t words) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i < words; ++i) {
    h ^= static_cast<uint64_t>(k[i]) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
  }
  return h ^ (h >> 31);
}

// Open addressing, linear probing, power-of-two capacity; keys compared by value only. Only the
// set of keys held decides what a lookup returns, never the capacity or the hash, so the layout
// is free. Slots live in one flat array of `3 + key_words` words each (used, hash, value, key):
// a model's key is 12 words when it has one KV group, and a probe then touches one ~120-byte slot
// instead of a 280-byte one, in a table of at most 64Ki slots. Starting over clears the slots but
// keeps their storage, so a long run grows the table once instead of once per start.
class MemoTable {
 public:
  explicit MemoTable(std::size_t key_words) : key_words_(key_words), stride_(3 + key_words) { grow(1024); }

  const TimeNs* find(const Key& k, uint64_t h) const {
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const int64_t* s = slot(i);
      if (s[0] == 0) return nullptr;
      if (static_cast<uint64_t>(s[1]) == h && std::equal(k.begin(), k.begin() + key_words_, s + 3)) return s + 2;
    }
  }
  void insert(const Key& k, uint64_t h, TimeNs v) {
    if (size_ >= kMaxMemoEntries) {  // start over: drop everything
      std::fill(words_.begin(), words_.end(), 0);
      size_ = 0;
    }
    if ((size_ + 1) * 2 > capacity()) grow(capacity() * 2);
    put(k.data(), h, v);
  }

 private:
  std::size_t capacity() const { return mask_ + 1; }
  int64_t* slot(std::size_t i) { return words_.data() + i * stride_; }
  const int64_t* slot(std::size_t i) const { return words_.data() + i * stride_; }

  void put(const int64_t* key, uint64_t h, TimeNs v) {
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      int64_t* s = slot(i);
      if (s[0] == 0) {
        s[0] = 1;
        s[1] = static_cast<int64_t>(h);
        s[2] = v;
        std::copy(key, key + key_words_, s + 3);
        ++size_;
        return;
      }
    }
  }
  void grow(std::size_t capacity) {
    std::vector<int64_t> old(capacity * stride_, 0);
    old.swap(words_);
    const std::size_t old_capacity = old.size() / stride_;
    mask_ = capacity - 1;
    size_ = 0;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      const int64_t* s = old.data() + i * stride_;
      if (s[0] != 0) put(s + 3, static_cast<uint64_t>(s[1]), s[2]);
    }
  }

  std::size_t key_words_;
  std::size_t stride_;
  std::vector<int64_t> words_;  // [capacity][stride_]
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

StepOpsOptions step_ops_options(const ModelConfig& m, const GpuSpec& g, const CostOptions& o, const PerfProfile& p) {
  StepOpsOptions ops;
  // Pipeline parallelism: the step is costed as stage 0 (n/pp layers, vLLM's split) plus the LM
  // head and sampling, i.e. the per-stage time that paces a full pipeline.
  ops.pipeline_stage = 0;
  ops.force_head = true;
  ops.weights = o.weights;
  ops.gemm_dtype = gemm_compute_dtype(o.weights.quant, g.peak_flops_fp8 > 0, g.peak_flops_int8 > 0,
                                      g.peak_flops(DType::kFp4E2M1) > g.peak_flops_fp8);
  ops.quant_mask = quantized_module_mask(m, o.weights);
  ops.moe_routing = o.moe_routing;
  ops.engine = o.engine;
  ops.vllm_all_reduce_table = p.at(OpClass::kCollective).grids.count("vllm_all_reduce") > 0;
  return ops;
}

// The layout's groups that hold KV per token: their aggregates go into the memo key.
std::vector<std::size_t> per_token_groups(const KvLayout& layout) {
  std::vector<std::size_t> out;
  for (std::size_t g = 0; g < layout.groups().size(); ++g) {
    if (holds_kv_per_token(layout.groups()[g].kind)) out.push_back(g);
  }
  return out;
}

// Key words per per-token group: 7 when the layout has a DeepSeek sparse-attention group.
std::size_t words_per_group(const KvLayout& layout) {
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.sparse_topk > 0) return 7;
  }
  return 5;
}

}  // namespace

struct StepCostModel::Impl {
  Impl(const ModelConfig& m, const GpuSpec& g, const KvScheme& s, const Parallelism& p, const PerfProfile& pr,
       CostOptions o)
      : model(m), gpu(g), parallel(p), profile(pr), options(o), layout(build_kv_layout(m, s, p, 0)),
        builder(layout), ops_options(step_ops_options(m, g, o, pr)), ops_builder(model, layout, parallel, ops_options),
        key_groups(per_token_groups(layout)), group_words(words_per_group(layout)),
        memo(7 + group_words * std::min(key_groups.size(), kMaxKeyGroups)) {
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
  StepOpsBuilder ops_builder;  // points at `model` and `layout`, like `builder`
  std::vector<std::size_t> key_groups;
  std::size_t group_words = 5;  // key words per group (words_per_group)
  bool memo_enabled = true;
  MemoTable memo;
  int64_t hits = 0;
  int64_t misses = 0;
  // The last costed step's operators and their times; held here so that every memo miss reuses
  // their storage instead of allocating it.
  StepOps ops;
  std::vector<double> op_ns;
  // The step costed before that one, double-buffered with `ops` / `op_ns`: an op equal to the one
  // at the same index there (same class, dtype, FLOPs, bytes, shape, ...; StepOp::operator==),
  // with the same launch rule, has the same time, so the roofline and the shape grid are not
  // evaluated again. On decode steps most GEMMs, norms and collectives repeat from one memo miss
  // to the next (the batch is the same; only the attention aggregates moved). Exact: the time is a
  // pure function of the op and the launch rule.
  StepOps prev_ops;
  std::vector<double> prev_op_ns;
  bool prev_graphed = false;  // the previous costed step replayed as a CUDA graph (launches())

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
      gw.sparse_decode_tokens = quantize(gw.sparse_decode_tokens);
      gw.sparse_prefill_pairs = quantize(gw.sparse_prefill_pairs);
    }
    s.swap_in_bytes = quantize(std::max<int64_t>(0, w.swap_in_bytes));
    s.swap_out_bytes = quantize(std::max<int64_t>(0, w.swap_out_bytes));
    return s;
  }

  std::size_t key_words() const { return 7 + group_words * key_groups.size(); }

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
      if (group_words == 7) {
        k[i++] = gw.sparse_decode_tokens;
        k[i++] = gw.sparse_prefill_pairs;
      }
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

  // What the simulator uses: the kernel time plus launch overhead, or the custom all-reduce when it
  // is faster (then *custom_ns is set to it). Kept apart from op_time_parts, whose explain-only
  // parts would evaluate the roofline and the shape grid a second time on every memo miss.
  double op_total_ns(const OpClassProfile& c, const StepOp& op, double launch_ns, double* custom_ns = nullptr) const {
    const double total = op_kernel_ns(c, gpu, op) + launch_ns;
    if (const double custom = custom_all_reduce_op_ns(op); custom >= 0 && custom + launch_ns < total) {
      if (custom_ns != nullptr) *custom_ns = custom;
      return custom + launch_ns;
    }
    return total;
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
    p.total_ns = op_total_ns(c, op, p.launch_ns, &p.custom_ns);
    return p;
  }

  double op_time_ns(const StepOp& op, bool launch) const {
    const OpClassProfile& c = profile.at(op.op_class);
    return op_total_ns(c, op, launch ? op.kernels * c.launch_overhead_ns : 0.0);
  }

  // Launch overhead applies unless the op replays in a CUDA graph: every op of a decode-only step;
  // in a step with prefill tokens, under piecewise graphs, every op but attention (vLLM splits its
  // compiled graph at the attention op and runs attention eagerly). Copies are issued outside the
  // graph and always pay it.
  bool launches(const StepShape& s, const StepOp& op) const {
    if (op.stream == Stream::kCopy) return true;
    if (graphed(s)) return false;
    if (options.cuda_graphs && options.mixed_step_graphs == MixedStepGraphs::kPiecewise) {
      return op.op_class == OpClass::kAttentionPrefill || op.op_class == OpClass::kAttentionDecode;
    }
    return true;
  }

  bool graphed(const StepShape& s) const { return options.cuda_graphs && s.prefill_tokens == 0; }

  // Costs the step; leaves its operators in `ops` and their times in `op_ns` (for explain()).
  double cost(const StepShape& s, bool collapse) {
    std::swap(ops, prev_ops);
    std::swap(op_ns, prev_op_ns);
    ops_builder.build(s, ops);
    op_ns.resize(ops.ops.size());
    const bool same_launch_rule = graphed(s) == prev_graphed;
    for (std::size_t i = 0; i < ops.ops.size(); ++i) {
      const StepOp& op = ops.ops[i];
      if (same_launch_rule && i < prev_ops.ops.size() && op == prev_ops.ops[i]) {
        op_ns[i] = prev_op_ns[i];
      } else {
        op_ns[i] = op_time_ns(op, launches(s, op));
      }
    }
    prev_graphed = graphed(s);
    return internal::step_critical_path_ns(ops, op_ns, collapse);
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
  const uint64_t h = hash_key(k, m.key_words());
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
  out.total_ns = static_cast<TimeNs>(std::llround(m.cost(s, true)));
  const StepOps& ops = m.ops;
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
      if (op.op_class == OpClass::kMoeGemm && op.moe_experts > 0) {
        c.detail = fmt::format("{}, {}, {} of {} experts per token, straggler {:.1f}x mean",
                               moe_format_label(static_cast<MoeFormat>(op.moe_format)),
                               moe_routing_label(static_cast<MoeRouting>(op.moe_routing)), op.moe_top_k,
                               op.moe_experts, op.moe_straggler);
      } else {
        c.detail = op_detail(op, m.options.engine);
      }
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
  const bool vllm_table = impl_->ops_options.engine == Engine::kVllm && impl_->ops_options.vllm_all_reduce_table;
  if (vllm_table) {
    out.push_back("tensor-parallel all-reduce: vLLM's own (collective variant vllm_all_reduce: its custom kernel or "
                  "NCCL by size, as published)");
  } else if (impl_->options.custom_all_reduce) {
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
