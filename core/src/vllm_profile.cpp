// vLLM's profiling rules by release (vllm_profile.h). Every constant says where it comes from.
#include "kvplan/core/vllm_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

// CUDA context plus library handles (same estimate as the TensorRT-LLM and static terms).
constexpr int64_t kCudaContextBytes = 512 * kMiB;

// vLLM's own KV-free memory outside PyTorch: what its profiler counts, by release.
//  - <= 0.2.4: peak = torch.cuda.max_memory_allocated() after the profile run (worker.py), so
//    nothing outside the allocator counts.
//  - 0.2.5 - 0.3.x: peak = total - free after the profile run (PR #2031, "Fix peak memory
//    profiling", in 0.2.5): the CUDA context counts too. PR #2031's own Llama-2-7B TP1 A100 pair
//    (7449 -> 7351 blocks = 0.77 GiB) is this context plus the 0.3 GiB below.
//  - 0.4 - 0.8 (V0) and V1 < 0.9: peak = free at init - free after profiling (worker.py
//    determine_num_available_blocks, v0.6.1; memory_profiling from 0.6.5): cuBLAS workspaces,
//    NCCL, allocator slack. ~0.29-0.35 GiB in logs 01-03.
//  - V1 >= 0.9: baseline taken after the CUDA context exists: ~0.09 GiB (logs 77-82 at TP1-TP2).
//  - 0.19: 0.25 GiB at TP1, 2.1 GiB at TP>1 (NCCL symmetric memory and the all-reduce fusion
//    workspace), read off logs 16-76 (in-sample).
// ROCm builds (MI300X) hold more: see kRocmNonTorch* below.
int64_t nvidia_non_torch_bytes(const EngineVersion& v, bool v1, int tp, std::string& how) {
  if (v.at_least(0, 19)) {
    how = "estimate read off public vLLM 0.19 start-up logs (data/vllm_logs 16-76, in-sample): 0.25 GiB at TP1, "
          "2.1 GiB at TP>1 (NCCL symmetric memory, all-reduce fusion workspace)";
    return tp > 1 ? 2150 * kMiB : 256 * kMiB;
  }
  if (v1 && v.at_least(0, 9)) {
    how = "estimate: vLLM >= 0.9 counts from a baseline taken after the CUDA context (logs 77-82)";
    return 96 * kMiB;
  }
  if (!v.at_least(0, 2, 5)) {
    how = "0: vLLM <= 0.2.4 profiles torch.cuda.max_memory_allocated(), which sees nothing outside PyTorch";
    return 0;
  }
  if (!v.at_least(0, 4)) {
    how = "vLLM 0.2.5-0.3 profiles total - free (PR #2031), so the CUDA context (512 MiB estimate) counts, plus "
          "the 320 MiB of cuBLAS/NCCL/allocator slack seen in later V0 logs";
    return kCudaContextBytes + 320 * kMiB;
  }
  how = "estimate from public V0 start-up logs (01-03: 0.29-0.35 GiB): cuBLAS workspaces, NCCL, allocator slack";
  return 320 * kMiB;
}

// ROCm (MI300X, vLLM 0.6.3 V0): memory outside PyTorch's allocator is GiB-scale. Read off one
// MI300X node (in-sample): log 85, TP1 with hipBLASLt (the default GEMM library), implies 1.9 GiB;
// its note records a rerun with TORCH_BLAS_PREFER_HIPBLASLT=0 that got 220 more 8-MiB blocks, so
// ~1.7 GiB of that is hipBLASLt and ~0.2 GiB the rest. Log 86, TP8 with rocBLAS, implies 5.2 GiB
// (RCCL buffers for 8 peers; custom all-reduce is disabled on AMD, config.py). Log 87 (TP8, same
// node and settings as 86) is the out-of-sample check.
constexpr int64_t kRocmNonTorchTp1Bytes = 1946 * kMiB;  // 1.9 GiB
constexpr int64_t kRocmNonTorchTpBytes = 5325 * kMiB;   // 5.2 GiB

// V1's dummy sampler run over max_num_seqs rows peaks at ~14.7 bytes per (row x vocabulary)
// element: read off vLLM 0.19 logs 22-24 (Gemma-2 2B/9B/27B, vocabulary 256,000, where the sampler
// dominates the printed activation peak: 3.62-3.66 GiB for 1,024 rows), in-sample.
constexpr int64_t kV1SamplerBytesPerLogitX10 = 147;

// V0's profile samples with top_k = vocab - 1 and top_p = 0.99 (model_runner.py profile_run), so
// the sampler takes the sort path of _apply_top_k_top_p (sampler.py): bf16 logits (2 B), their
// fp32 copy (4), sorted values (4) and int64 indices (8), the top-k mask (1), sorted probabilities
// (4), their cumulative sum (4), the top-p mask (1) and the scattered result (4) are live together.
constexpr int64_t kV0SamplerBytesPerLogit = 32;

}  // namespace

int64_t mlp_intermediate_elems(const MlpShape& mlp, int64_t tp) {
  switch (mlp.kind) {
    case MlpKind::kGated: return 3 * mlp.intermediate_size / tp;
    case MlpKind::kPlain: return 2 * mlp.intermediate_size / tp;
    case MlpKind::kMoe: {
      const int64_t per_width = mlp.gated_experts ? 3 : 2;  // [up (+ gate), activation]
      // Kimi-K3 under vLLM pads each GPU's expert slice (MlpShape::min_expert_width_per_gpu)
      const int64_t routed = mlp.min_expert_width_per_gpu > 0
                                 ? mlp.experts_per_token * per_width * mlp.expert_width_per_gpu(static_cast<int>(tp))
                                 : mlp.experts_per_token * per_width * mlp.expert_intermediate_size / tp;
      return routed + per_width * mlp.shared_intermediate_size / tp;
    }
  }
  return 0;
}

int64_t compressed_attention_intermediate_elems(const CompressedAttentionShape& a, int64_t tp) {
  return 2 * a.num_heads / tp * a.head_dim + a.o_groups / tp * a.o_lora_rank;
}

int64_t widest_intermediate_elems(const ModelConfig& m, const Parallelism& p) {
  const int64_t tp = p.tensor_parallel;
  int64_t widest = 0;
  for (const LayerSpec& l : m.layers) {
    int64_t mixer = 0;
    if (l.kind == LayerKind::kFullAttention || l.kind == LayerKind::kSlidingAttention ||
        l.kind == LayerKind::kChunkedAttention) {
      const AttentionShape& a = layer_attention(m, l);
      int64_t kv = a.num_kv_heads >= tp ? a.num_kv_heads / tp : 1;
      mixer = (a.num_q_heads / tp + 2 * kv) * a.head_dim + a.num_q_heads / tp * a.v_head_dim;
    } else if (l.kind == LayerKind::kMla) {
      const MlaShape& a = m.mla;
      mixer = a.num_heads / tp * (a.qk_nope_head_dim + a.qk_rope_head_dim) * 2 +
              a.num_heads / tp * (a.qk_nope_head_dim + a.v_head_dim);
    } else if (l.kind == LayerKind::kMamba1 || l.kind == LayerKind::kMamba2) {
      mixer = 3 * m.mamba.d_inner / tp;
    } else if (l.kind == LayerKind::kNoMixer) {
      mixer = 0;
    } else if (l.kind == LayerKind::kCompressedAttention) {
      mixer = compressed_attention_intermediate_elems(m.compressed, tp);
    } else {
      const LinearAttentionShape& a = m.linear;
      mixer = 2 * (2 * a.num_key_heads * a.key_head_dim + 2 * a.num_value_heads * a.value_head_dim) / tp;
    }
    widest = std::max({widest, mixer, mlp_intermediate_elems(l.mlp, tp)});
  }
  return widest;
}

int vllm_mla_block_alignment(const EngineVersion& version) { return version.at_least(0, 27) ? 128 : 64; }

VllmHybridPages vllm_v1_hybrid_pages(const KvLayout& layout, bool blackwell, int user_block_tokens, int mla_alignment) {
  VllmHybridPages out;
  double attention_bytes = -1;  // one attention layer, one token
  bool mla = false;
  int head_dim = 0;
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.num_layers == 0) continue;
    if (!holds_kv_per_token(g.kind)) {
      out.state_bytes = std::max(out.state_bytes, g.state_bytes_per_request);
      continue;
    }
    if (attention_bytes >= 0 && g.bytes_per_token != attention_bytes) return {};  // vLLM sizes one attention spec
    attention_bytes = g.bytes_per_token;
    mla = mla || g.kind == LayerKind::kMla;
    if (g.heads_per_gpu > 0) head_dim = g.elements_per_token / (2 * g.heads_per_gpu);
  }
  const auto per_token = static_cast<int64_t>(std::ceil(attention_bytes));
  if (out.state_bytes <= 0 || per_token <= 0) return {};
  // FlashAttention needs multiples of 16 tokens; MLA backends 64 (CUTLASS_MLA 128, not the
  // default), 128 from vLLM 0.27; FlashInfer on Blackwell with head_dim 256 needs 32 (flashinfer
  // issue 1993).
  out.alignment = mla ? mla_alignment : (blackwell && head_dim == 256 ? 32 : 16);
  const int64_t a = out.alignment;
  const int64_t needed = a * ((out.state_bytes + a * per_token - 1) / (a * per_token));
  out.block_tokens = static_cast<int>(std::max<int64_t>(needed, user_block_tokens));
  out.page_bytes = out.block_tokens * per_token;
  return out;
}

namespace {

// One layer's page: its group's block of tokens at the group's bytes per token.
int64_t layer_page_bytes(const KvLayout& layout, const KvLayerGroup& g) {
  return static_cast<int64_t>(std::ceil(g.bytes_per_token * layout.block_tokens(g)));
}

// vLLM's UniformTypeKVCacheSpecs (kv_cache_interface.py, kv_cache_utils.py get_kv_cache_groups):
// when every layer's spec is a FullAttentionSpec (MLAAttentionSpec included) of one block size, all
// layers form ONE KV cache group whose block holds each layer's page, whatever the page sizes, so
// neither page unification nor the hybrid grouping applies. Several full-attention groups arise
// only from MiniMax-M3 (its K / V and its index keys, kv_layout.cpp).
bool vllm_uniform_full_attention(const KvLayout& layout) {
  int full = 0;
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.num_layers == 0) continue;
    if (g.kind != LayerKind::kFullAttention || layout.block_tokens(g) != layout.scheme().tokens_per_block) return false;
    ++full;
  }
  return full > 1;
}

}  // namespace

int64_t vllm_v1_unify_attention_pages(KvLayout& layout) {
  if (vllm_uniform_full_attention(layout)) return 0;
  int64_t largest = 0;
  bool differ = false;
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.num_layers == 0) continue;
    if (!holds_kv_per_token(g.kind)) return 0;  // recurrent state: vllm_v1_hybrid_pages' rule
    const int64_t page = layer_page_bytes(layout, g);
    differ = differ || (largest > 0 && page != largest);
    largest = std::max(largest, page);
  }
  if (!differ) return 0;
  for (size_t i = 0; i < layout.groups().size(); ++i) {
    const KvLayerGroup& g = layout.groups()[i];
    if (g.num_layers == 0) continue;
    const int64_t page = layer_page_bytes(layout, g);
    if (page == largest) continue;
    if (largest % page != 0) {
      throw ConfigError(fmt::format(
          "vLLM cannot serve this layout: the {} layers' KV page of {} B does not divide the largest page of {} B, "
          "and vLLM unifies page sizes only by multiplying a block (kv_cache_utils.py unify_kv_cache_spec_page_size "
          "raises NotImplementedError)",
          g.name, page, largest));
    }
    layout.set_block_tokens(i, static_cast<int>(layout.block_tokens(g) * (largest / page)));
  }
  return largest;
}

VllmKvGroups vllm_v1_kv_groups(const KvLayout& layout) {
  VllmKvGroups out;
  if (vllm_uniform_full_attention(layout)) return out;
  std::vector<int> counts;
  int64_t attention_page = -1;
  for (const KvLayerGroup& g : layout.groups()) {
    if (!holds_kv_per_token(g.kind) || g.num_layers == 0) continue;
    const int64_t page = layer_page_bytes(layout, g);
    if (attention_page >= 0 && page != attention_page) return {};
    attention_page = page;
    counts.push_back(g.num_layers);
    out.types.push_back({g.kind, g.window_tokens, 0, layout.block_tokens(g)});
  }
  // Recurrent-state layers join the groups when their state fills exactly one attention page (the
  // engine accounting pads it so: KvScheme::state_page_bytes); otherwise their pages differ.
  for (const KvLayerGroup& g : layout.groups()) {
    if (holds_kv_per_token(g.kind) || g.num_layers == 0) continue;
    if (attention_page < 0 || g.state_bytes_per_request != attention_page) return {};
    counts.push_back(g.num_layers);
    out.types.push_back({g.kind, 0, 0, 0});
  }
  if (counts.size() < 2) return {};
  const int smallest = *std::min_element(counts.begin(), counts.end());
  const int largest = *std::max_element(counts.begin(), counts.end());
  out.group_size = 2 * largest < 3 * smallest ? largest : smallest;
  for (size_t i = 0; i < counts.size(); ++i) out.types[i].num_groups = (counts[i] + out.group_size - 1) / out.group_size;
  return out;
}

int VllmKvGroups::num_groups() const {
  int n = 0;
  for (const Type& t : types) n += t.num_groups;
  return n;
}

int vllm_v1_padded_kv_layers(const KvLayout& layout) {
  const VllmKvGroups g = vllm_v1_kv_groups(layout);
  return g.num_groups() * g.group_size;
}

double vllm_v1_hybrid_max_concurrency(const VllmKvGroups& groups, int64_t vllm_blocks, int tokens_per_block,
                                      int64_t max_model_len, int64_t max_num_batched_tokens) {
  if (groups.types.empty() || tokens_per_block <= 0 || max_model_len <= 0) return 0;
  int64_t blocks_per_request = 0;
  for (const VllmKvGroups::Type& t : groups.types) {
    const int64_t b = t.block_tokens > 0 ? t.block_tokens : tokens_per_block;
    int64_t per_group = 0;
    if (t.kind == LayerKind::kFullAttention || t.kind == LayerKind::kMla) {
      per_group = (max_model_len + b - 1) / b;  // FullAttentionSpec (MLAAttentionSpec is one)
    } else if (t.kind == LayerKind::kSlidingAttention && t.window_tokens > 0) {
      const int64_t tokens = std::min<int64_t>(t.window_tokens - 1 + max_num_batched_tokens, max_model_len);
      per_group = (tokens + b - 1) / b + 1;
    } else if (!holds_kv_per_token(t.kind)) {
      per_group = 1;  // MambaSpec: one block of max_model_len tokens, i.e. the state's one page
    } else {
      return 0;
    }
    blocks_per_request += per_group * t.num_groups;
  }
  return static_cast<double>(vllm_blocks) / static_cast<double>(blocks_per_request);
}

int64_t vllm_default_max_model_len(const ModelConfig& m) {
  int64_t len = m.max_position_embeddings > 0 ? m.max_position_embeddings : 4096;
  const RopeScaling& r = m.rope_scaling;
  const bool gemma3 = m.model_type.find("gemma3") != std::string::npos;
  if (r.type.empty() || gemma3 || r.type == "su" || r.type == "longrope" || r.type == "llama3") return len;
  if (r.type == "yarn" && r.original_max_position_embeddings > 0) len = r.original_max_position_embeddings;
  return static_cast<int64_t>(static_cast<double>(len) * r.factor);
}

VllmProfile vllm_profile(const ModelConfig& m, const GpuSpec& gpu, const Parallelism& p, const ServingConfig& c,
                         int64_t max_model_len, bool samples) {
  VllmProfile prof;
  const EngineVersion& v = c.version;
  prof.v1 = vllm_uses_v1(v, c.vllm_engine);
  prof.samples = samples;

  // Batch limits. V1 >= 0.9 (arg_utils _set_default_args_v1; asserted by
  // tests/engine/test_arg_utils.py test_defaults_with_usage_context): GPUs with >= 70 GiB that
  // are not A100 get 8192 tokens / 1024 sequences for the API server, the others 2048 / 256
  // (logs 77-82 print "max_num_batched_tokens=2048" on A100 80GB). The offline LLM class doubles
  // the token figure; the API server is assumed.
  const bool a100 = lower(gpu.id + " " + gpu.name).find("a100") != std::string::npos;
  const bool big_gpu = gpu.usable_memory_bytes >= (int64_t{70} << 30) && !a100;
  int max_seqs = c.max_num_seqs;
  int64_t batched = c.max_num_batched_tokens;
  if (prof.v1) {
    prof.chunked_prefill = c.chunked_prefill != ChunkedPrefill::kOff;
    prof.chunked_prefill_why = "V1 schedules prefill in chunks";
    if (max_seqs == 0) max_seqs = v.at_least(0, 9) && big_gpu ? 1024 : 256;
    if (batched == 0) batched = v.at_least(0, 9) ? (big_gpu ? 8192 : 2048) : 8192;
  } else {
    // V0 (arg_utils.py, 0.5-0.10): chunked prefill is switched on by default when max_model_len
    // exceeds 32K, unless the model uses a sliding window or is multimodal; otherwise the engine
    // warns "The model has a long context length ... may cause OOM errors during the initial memory
    // profiling phase" and profiles one prompt of max_model_len tokens.
    if (c.chunked_prefill == ChunkedPrefill::kOn) {
      prof.chunked_prefill = true;
      prof.chunked_prefill_why = "chunked prefill switched on";
    } else if (c.chunked_prefill == ChunkedPrefill::kOff) {
      prof.chunked_prefill_why = "chunked prefill switched off";
    } else {
      const bool sliding = m.count_layers(LayerKind::kSlidingAttention) > 0;
      const bool multimodal = m.vision.kind != VisionKind::kNone;
      prof.chunked_prefill = v.at_least(0, 5) && max_model_len > 32768 && !sliding && !multimodal;
      prof.chunked_prefill_why =
          prof.chunked_prefill ? "V0 default: on for max_model_len > 32K"
                               : fmt::format("V0 default: off ({})", !v.at_least(0, 5)    ? "before 0.5"
                                                                     : sliding             ? "sliding-window model"
                                                                     : multimodal          ? "multimodal model"
                                                                                           : "max_model_len <= 32K");
    }
    if (max_seqs == 0) max_seqs = 256;
    if (batched == 0) {
      // SchedulerConfig: 512 tokens with chunked prefill (config.py, v0.6.1), 2048 later
      // (_DEFAULT_MAX_NUM_BATCHED_TOKENS; log 09, 0.7.x, fits 2048); without it one prompt of
      // max_model_len must fit a step, at least 2048.
      batched = prof.chunked_prefill ? (v.at_least(0, 7) ? 2048 : 512) : std::max<int64_t>(max_model_len, 2048);
    }
  }
  prof.batched_tokens = batched;
  prof.max_num_seqs = max_seqs;

  // Forward live set at the widest point of a layer: the widest intermediate (gate_up and its
  // activation, or qkv and the attention output, or the fused-MoE caches) plus [T, hidden] tensors.
  // V0 (eager PyTorch): the residual, the layer input the caller still holds, and the row-parallel
  // output; at TP > 1 the custom all-reduce writes a new tensor (out of place), one more (NCCL on
  // ROCm reduces in place). Logs 01/02 (0.6.4, TP1: 2.07 / 2.99 GiB at 20,000 / 29,000 tokens) and
  // 03 (0.7.1, TP2: 1.54 GiB at 12,288 tokens) print exactly these. V1 (torch.compile'd): four,
  // read off logs 17 and 30 (0.19, TP1, where the forward dominates: 0.77 and 0.85 GiB).
  const int64_t s = dtype_bits(m.dtype) / 8;
  prof.hidden_copies = prof.v1 ? 4 : (p.tensor_parallel > 1 && !c.rocm ? 4 : 3);
  const int64_t h = m.hidden_size;
  // Gemma-4 E2B/E4B: the per-layer inputs [T, layers x width] stay live through the pass.
  const int64_t per_layer_inputs = int64_t{m.per_layer_input_size} * m.num_layers();
  // Kimi-K3's attention residuals: the block snapshots [T, cdiv(layers, block), hidden] live through
  // the pass (vLLM models/kimi_k3 KimiModel.forward: block_residual = new_empty(num_tokens,
  // num_attn_res_blocks, hidden)); an activation, not a cache.
  const int64_t attn_res_bank =
      m.attn_res_block_size > 0 ? (m.num_layers() + m.attn_res_block_size - 1) / m.attn_res_block_size * h : 0;
  prof.forward_bytes =
      batched * s * (prof.hidden_copies * h + widest_intermediate_elems(m, p) + per_layer_inputs + attn_res_bank);
  // V0 0.2.5-0.6.3 read the peak as free memory lost (total - free, then free at init - free), so
  // what PyTorch's caching allocator reserved counts, not only what was allocated at the peak. A
  // long pass leaves at least one freed [T, hidden] block the allocator cannot reuse for the wider
  // intermediates: logs 13 (0.4.2, 65,536 tokens: 1.1 such blocks unexplained without it) and 87
  // (0.6.3, 131,072 tokens: 1.6) show it, in-sample; 0.6.4+ reads torch.cuda.memory_stats' allocated
  // peak (logs 01/02 fit without it), <= 0.2.4 max_memory_allocated().
  prof.reserved_slack = !prof.v1 && v.at_least(0, 2, 5) && !v.at_least(0, 6, 4);
  if (prof.reserved_slack) prof.forward_bytes += batched * s * h;
  if (samples) {
    const int64_t vocab = (m.vocab_size + 63) / 64 * 64;
    const int64_t logits = static_cast<int64_t>(max_seqs) * vocab;
    const int64_t per_logit =
        prof.v1 ? logits * kV1SamplerBytesPerLogitX10 / 10 : logits * kV0SamplerBytesPerLogit;
    // The model output [T, hidden] stays referenced while the sampler runs.
    prof.sampler_bytes = per_logit + batched * s * h;
  }
  prof.activation_bytes = std::max(prof.forward_bytes, prof.sampler_bytes);
  prof.activation_how = fmt::format(
      "estimate: the larger of the forward pass over {} tokens ({}: {} x hidden + widest intermediate{}{}, {:.2f} "
      "GiB) and the sampler over {} sequences ({}, {:.2f} GiB); they run one after the other",
      batched, prof.v1 ? "V1" : "V0 eager", prof.hidden_copies,
      prof.reserved_slack ? " + one [T, hidden] block the allocator holds (free-memory profiler)" : "",
      attn_res_bank > 0 ? fmt::format(" + the attention-residual block snapshots ({} x hidden)", attn_res_bank / h)
                        : std::string(),
      static_cast<double>(prof.forward_bytes) / (1 << 30),
      samples ? max_seqs : 0,
      !samples ? "this rank does not sample" : prof.v1 ? "~14.7 B per logit, logs 22-24" : "32 B per logit, sort-based top-k/top-p",
      static_cast<double>(prof.sampler_bytes) / (1 << 30));

  if (c.rocm && !prof.v1) {
    prof.non_torch_bytes = p.tensor_parallel > 1 ? kRocmNonTorchTpBytes : kRocmNonTorchTp1Bytes;
    prof.non_torch_how = "estimate for ROCm builds (RCCL, hipBLAS workspaces) read off MI300X logs 85 (TP1) and 86 "
                         "(TP8), in-sample";
  } else {
    prof.non_torch_bytes = nvidia_non_torch_bytes(v, prof.v1, p.tensor_parallel, prof.non_torch_how);
    if (c.rocm) prof.non_torch_how += "; ROCm V1 not calibrated (no public log)";
  }
  return prof;
}

}  // namespace kvplan
