// Engine memory accounting for vLLM, SGLang, TensorRT-LLM and static batching (DESIGN §3).
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/kv_scheme_support.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/limits.h"
#include "kvplan/core/minimax_m3_cache.h"
#include "kvplan/core/number_text.h"
#include "kvplan/core/sglang_swa.h"
#include "kvplan/core/sglang_dsv4_pool.h"
#include "kvplan/core/vllm_dsv4_pool.h"
#include "kvplan/core/vllm_profile.h"

namespace kvplan {

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kMiB = int64_t{1} << 20;

// CUDA context plus library handles that exist before an engine measures free memory.
constexpr int64_t kCudaContextBytes = 512 * kMiB;

int64_t rope_cache_bytes(const ModelConfig& m) {
  // vLLM keeps one cos/sin cache of [max_position_embeddings, rotary_dim] in the model dtype per
  // distinct rotary embedding (Gemma-4's full-attention layers have their own, AttentionShape::rotary_dim).
  const AttentionShape* own = own_attention_shape(m);
  const int64_t widths = m.rotary_dim + (own != nullptr ? own->rotary_dim : 0);
  return m.max_position_embeddings * widths * (dtype_bits(m.dtype) / 8);
}

int64_t default_max_model_len(const ModelConfig& m) {
  return m.max_position_embeddings > 0 ? m.max_position_embeddings : 4096;
}

std::string gib(int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / kGiB); }

int layout_state_layers(const KvLayout& layout) {
  int n = 0;
  for (const KvLayerGroup& g : layout.groups()) n += holds_kv_per_token(g.kind) ? 0 : g.num_layers;
  return n;
}

// Compute capability 10.0 (B200, GB200): vLLM's is_device_capability(100). B300 is 10.3 and the
// RTX 50 / RTX PRO Blackwell cards 12.0.
bool gpu_is_sm100(const GpuSpec& gpu) { return gpu.id == "b200" || gpu.id == "gb200"; }
// Any compute capability 10.x (SGLang's is_sm100_supported): B200, GB200, B300, GB300.
bool gpu_is_sm10x(const GpuSpec& gpu) { return gpu_is_sm100(gpu) || gpu.id == "b300" || gpu.id == "gb300"; }

bool has_windowed_layers(const KvLayout& layout) {
  for (const KvLayerGroup& g : layout.groups()) {
    if (g.num_layers > 0 && (g.kind == LayerKind::kSlidingAttention || g.kind == LayerKind::kChunkedAttention)) return true;
  }
  return false;
}

}  // namespace

double sglang_default_mem_fraction_static(int tp) {
  if (tp >= 16) return 0.79;
  if (tp >= 8) return 0.81;
  if (tp >= 4) return 0.85;
  if (tp >= 2) return 0.87;
  return 0.88;
}

std::string_view engine_name(Engine e) {
  switch (e) {
    case Engine::kVllm: return "vllm";
    case Engine::kSglang: return "sglang";
    case Engine::kTrtllm: return "trtllm";
    case Engine::kStatic: return "static";
  }
  return "?";
}

Engine parse_engine(std::string_view text) {
  if (text == "vllm") return Engine::kVllm;
  if (text == "sglang") return Engine::kSglang;
  if (text == "trtllm" || text == "tensorrt-llm") return Engine::kTrtllm;
  if (text == "static" || text == "hf") return Engine::kStatic;
  throw ConfigError(fmt::format("engine={} is not known; use vllm, sglang, trtllm or static", text));
}

std::string EngineVersion::text() const {
  return patch > 0 ? fmt::format("{}.{}.{}", major, minor, patch) : fmt::format("{}.{}", major, minor);
}

ChunkedPrefill parse_chunked_prefill(std::string_view text) {
  if (text == "auto") return ChunkedPrefill::kAuto;
  if (text == "on" || text == "true") return ChunkedPrefill::kOn;
  if (text == "off" || text == "false") return ChunkedPrefill::kOff;
  throw ConfigError(fmt::format("chunked-prefill={} must be auto, on or off", text));
}

std::string_view chunked_prefill_name(ChunkedPrefill c) {
  switch (c) {
    case ChunkedPrefill::kAuto: return "auto";
    case ChunkedPrefill::kOn: return "on";
    case ChunkedPrefill::kOff: return "off";
  }
  return "?";
}

VllmEngine parse_vllm_engine(std::string_view text) {
  if (text == "auto") return VllmEngine::kAuto;
  if (text == "v0" || text == "V0") return VllmEngine::kV0;
  if (text == "v1" || text == "V1") return VllmEngine::kV1;
  throw ConfigError(fmt::format("vllm-engine={} must be auto, v0 or v1", text));
}

bool vllm_uses_v1(const EngineVersion& v, VllmEngine e) {
  if (e == VllmEngine::kV0) return false;
  if (e == VllmEngine::kV1) return true;
  return v.at_least(0, 8);
}

EngineVersion parse_engine_version(std::string_view text) {
  std::string s(text);
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s = s.substr(1);
  EngineVersion v;
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%d.%d%n", &v.major, &v.minor, &consumed) != 2 || v.major < 0 || v.minor < 0 ||
      v.major > 1000 || v.minor > 1000) {
    throw ConfigError(fmt::format("engine-version={} must look like MAJOR.MINOR, e.g. 0.10", text));
  }
  // An optional numeric patch level: "0.7.1", "0.6.4.post1", "0.11.1.dev12+g5ded9e9aa".
  int patch = 0;
  if (static_cast<size_t>(consumed) < s.size() && s[static_cast<size_t>(consumed)] == '.' &&
      std::sscanf(s.c_str() + consumed + 1, "%d", &patch) == 1 && patch >= 0 && patch < 100000) {
    v.patch = patch;
  }
  return v;
}

int64_t MemoryPlan::term(std::string_view key) const {
  for (const MemoryTerm& t : terms) {
    if (t.key == key) return t.bytes;
  }
  return 0;
}

int64_t vllm_activation_peak_bytes(const ModelConfig& m, const Parallelism& p, int64_t tokens, int num_seqs) {
  // The profiling pass runs `tokens` tokens through every layer, then samples `num_seqs` rows.
  // Live set at the widest point of a layer: the residual stream and the layer input
  // ([T, hidden] each) plus the layer's widest intermediates. For a gated MLP that is gate_up
  // [T, 2I/tp] and its activation [T, I/tp]; for attention qkv [T, (Hq + 2 Hkv) d / tp] and the
  // attention output; for MoE the fused kernel's [T, top_k, 2I/tp] and [T, top_k, I/tp].
  const int64_t s = dtype_bits(m.dtype) / 8;
  const int64_t tp = p.tensor_parallel;
  const int64_t h = m.hidden_size;
  int64_t widest = 0;
  for (const LayerSpec& l : m.layers) {
    int64_t mixer = 0;
    if (l.kind == LayerKind::kFullAttention || l.kind == LayerKind::kSlidingAttention) {
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
  // Gemma-4 E2B/E4B: the per-layer inputs [T, layers x width] stay live through the pass.
  const int64_t per_layer_inputs = int64_t{m.per_layer_input_size} * m.num_layers();
  int64_t forward = tokens * s * (2 * h + widest + per_layer_inputs);
  // Sampling: fp32 logits of every sequence and their fp32 softmax probabilities.
  int64_t vocab = (m.vocab_size + 63) / 64 * 64;
  int64_t sampler = static_cast<int64_t>(num_seqs) * vocab * (4 + 4);
  return forward + sampler;
}

namespace {

MemoryPlan plan_stage(const ModelConfig& m, const GpuSpec& gpu, const KvScheme& scheme,
                      const Parallelism& p, const ServingConfig& c, int stage) {
  MemoryPlan plan;
  plan.engine = c.engine;
  plan.pipeline_stage = stage;
  plan.gpu_total_bytes = gpu.usable_memory_bytes;
  plan.max_model_len = c.max_model_len > 0                ? c.max_model_len
                       : c.engine == Engine::kVllm ? vllm_default_max_model_len(m)
                                                    : default_max_model_len(m);
  KvScheme s = scheme;
  if (c.engine == Engine::kSglang && !scheme.paged) s.paged = true;
  const EngineVersion& v = c.version;
  const bool v1 = vllm_uses_v1(v, c.vllm_engine);
  if (c.engine == Engine::kVllm && !v.at_least(0, 7, 1) && m.count_layers(LayerKind::kMla) > 0) {
    // vLLM before 0.7.1 had no MLA cache: DeepSeek attention ran as ordinary attention with K and V
    // per head, zero-padded to 256 (deepseek_v2.py), so each rank caches heads/tp x 2 x 256.
    s.mla_expanded_head_dim = 256;
    plan.notes.push_back(fmt::format(
        "vLLM {} predates the MLA cache (0.7.1): the KV cache holds per-head K and V padded to 256, not the "
        "{}-value latent",
        v.text(), m.mla.kv_lora_rank + m.mla.qk_rope_head_dim));
  }
  // DeepSeek-V4: vLLM's and SGLang's own pool rules for its caches (vllm_dsv4_pool.h,
  // sglang_dsv4_pool.h); TensorRT-LLM's is not modelled.
  const bool dsv4 = m.count_layers(LayerKind::kCompressedAttention) > 0;
  if (dsv4) {
    if (c.engine != Engine::kVllm && c.engine != Engine::kSglang) {
      throw ConfigError(fmt::format(
          "model '{}': the {} KV pool for DeepSeek-V4's compressed caches is not modelled yet; kvplan answers "
          "DeepSeek-V4 under vLLM and SGLang only (--engine vllm or sglang)",
          m.id, engine_name(c.engine)));
    }
    if (s.tokens_per_block % 128 != 0) {
      plan.notes.push_back(fmt::format(
          "{} pages DeepSeek-V4's compressed caches in blocks of 256 tokens ({}), not {}: pass --block-size (a "
          "multiple of 128) to choose another",
          c.engine == Engine::kVllm ? "vLLM" : "SGLang",
          c.engine == Engine::kVllm ? "its sparse backend's preferred block size"
                                    : "its page_size for DeepSeek-V4, server_args.py",
          s.tokens_per_block));
      s.tokens_per_block = kSglangDsv4PageTokens;
    }
    if (c.engine == Engine::kVllm && (!v1 || !v.at_least(0, 24))) {
      plan.notes.push_back(fmt::format(
          "vLLM {} predates DeepSeek-V4 support; its pool is sized by the 0.25 / 0.26 allocator rules", v.text()));
    }
  }
  apply_msa_engine_rules(m, c, s, plan.notes);  // MiniMax-M3 (minimax_m3_cache.h)
  if (m.attn_res_block_size > 0 && c.engine == Engine::kVllm && !v.at_least(0, 27)) {
    plan.notes.push_back(fmt::format(
        "vLLM {} predates Kimi-K3 support (0.27.0: vllm-project/vllm#50000, the recipe's min_vllm_version); its pool "
        "is sized by this release's memory rules: pass --engine-version 0.27 or later for a release that runs it",
        v.text()));
  }
  KvLayout layout = build_kv_layout(m, s, p, stage);
  if (c.engine == Engine::kVllm && v1 && v.at_least(0, 10) && !dsv4) {
    // Attention and recurrent-state layers share one page size (vllm_profile.h VllmHybridPages).
    const VllmHybridPages pages =
        vllm_v1_hybrid_pages(layout, gpu_is_sm100(gpu), s.tokens_per_block, vllm_mla_block_alignment(v));
    if (pages.block_tokens > 0) {
      s.tokens_per_block = pages.block_tokens;
      if (pages.page_bytes > pages.state_bytes) s.state_page_bytes = pages.page_bytes;
      layout = build_kv_layout(m, s, p, stage);
      plan.notes.push_back(fmt::format(
          "vLLM sets the attention block size to {} tokens (a multiple of {}) so that one attention page, {} B per "
          "layer, holds a recurrent layer's state of {} B, padded by {:.2f}% (model_executor/models/config.py "
          "HybridAttentionMambaModelConfig; the rule without prefix caching, which vLLM <= 0.11 turns off for these "
          "models)",
          pages.block_tokens, pages.alignment, pages.page_bytes, pages.state_bytes,
          100.0 * static_cast<double>(pages.page_bytes - pages.state_bytes) / static_cast<double>(pages.state_bytes)));
    }
  }
  if (c.engine == Engine::kVllm && v1 && v.at_least(0, 10) && !dsv4) {
    // Attention layers of different page sizes (Gemma-4): vLLM multiplies the smaller pages' blocks.
    const int64_t page = vllm_v1_unify_attention_pages(layout);
    if (page > 0) {
      std::string raised;
      for (const KvLayerGroup& g : layout.groups()) {
        if (g.block_tokens > 0 && g.block_tokens != s.tokens_per_block) {
          raised += fmt::format("{}{} to {} tokens", raised.empty() ? "" : ", ", g.name, g.block_tokens);
        }
      }
      plan.notes.push_back(fmt::format(
          "vLLM makes every layer's KV page {} B by enlarging the blocks of the layers whose page is smaller: {} "
          "(kv_cache_utils.py unify_kv_cache_spec_page_size); kvplan's simulator pages every group at {} tokens",
          page, raised, s.tokens_per_block));
    }
  }
  const bool last_stage = stage == p.pipeline_parallel - 1;

  const WeightBytes wb = weight_bytes_breakdown(m, c.weights, p, stage);
  const int64_t weights = wb.total();
  const int64_t rope = rope_cache_bytes(m);
  std::string weights_how = fmt::format("this GPU's shard of the parameters, {}", c.weights.describe());
  if (c.weights.quant.quantized()) {
    weights_how += fmt::format("; {} quantized, {} in {}", gib(wb.quantized), gib(wb.unquantized),
                               dtype_name(c.weights.dtype));
    if (!wb.kept_16bit.empty()) {
      std::string kept;
      for (const std::string& k : wb.kept_16bit) kept += (kept.empty() ? "" : ", ") + k;
      weights_how += fmt::format(" (kept in {}: {}; embeddings, norms and routers always)", dtype_name(c.weights.dtype), kept);
    }
  }
  if (wb.vision > 0) {
    weights_how += fmt::format("; {} {} (16-bit, sharded by TP)",
                               m.audio.kind == VisionKind::kNone ? "vision encoder" : "vision and audio encoders",
                               gib(wb.vision));
  }
  if (p.expert_parallel && p.expert_tensor_parallel() > 1) {
    weights_how += fmt::format("; routed experts spread over {} groups of {} GPUs, each expert split over its group's "
                               "GPUs (MoE TP {} x EP {})",
                               p.expert_parallel_size(), p.expert_tensor_parallel(), p.expert_tensor_parallel(),
                               p.expert_parallel_size());
  } else if (p.expert_parallel) {
    weights_how += fmt::format("; routed experts spread over {} GPUs (expert parallel)", p.expert_parallel_size());
  }
  if (!p.expert_parallel && p.data_parallel > 1 && m.has_moe()) {
    weights_how += fmt::format("; each routed expert split over all {} GPUs of tp {} x dp {} (the data-parallel ranks "
                               "share the experts)",
                               p.expert_tensor_parallel(), p.tensor_parallel, p.data_parallel);
  }
  weights_how += fmt::format("; vocabulary padded to 64; RoPE cos/sin cache {}; exact", gib(rope));
  MemoryTerm w{"weights", "model weights", weights + rope, true, weights_how};

  // Batch limits, which set the size of the profiling pass (vLLM: vllm_profile.h).
  VllmProfile prof;
  int max_seqs = c.max_num_seqs;
  int64_t batched = c.max_num_batched_tokens;
  if (c.engine == Engine::kVllm) {
    prof = vllm_profile(m, gpu, p, c, plan.max_model_len, last_stage);
    max_seqs = prof.max_num_seqs;
    batched = prof.batched_tokens;
  } else {
    if (max_seqs == 0) max_seqs = 256;
    if (batched == 0) batched = 8192;
  }
  plan.max_num_seqs = max_seqs;
  plan.max_num_batched_tokens = batched;

  const int64_t activation =
      c.engine == Engine::kVllm ? prof.activation_bytes
      : last_stage              ? vllm_activation_peak_bytes(m, p, batched, max_seqs)
                                : vllm_activation_peak_bytes(m, p, batched, 0);
  MemoryTerm act{"activation_peak", "activation peak (profiling pass)", activation, true,
                 c.engine == Engine::kVllm
                     ? fmt::format("{}; chunked prefill {} ({})", prof.activation_how,
                                   prof.chunked_prefill ? "on" : "off", prof.chunked_prefill_why)
                     : fmt::format("estimate: forward pass of {} tokens (residual, layer input and the "
                                   "widest intermediate) plus sampling of {} sequences (fp32 logits and "
                                   "probabilities)",
                                   batched, last_stage ? max_seqs : 0)};

  // CUDA graphs: vLLM captures batch sizes 1, 2, 4, 8..248 step 8, 256..max step 16; each graph
  // keeps a private pool (~6 MiB) and the largest holds its activations. Before 0.21 the largest
  // size is min(max_num_seqs, 512) and two capture modes (~12 MiB per size) are outside vLLM's
  // budget (shown, not subtracted). From 0.21 (config/vllm.py _set_cudagraph_sizes) the largest
  // is min(2 x max_num_seqs, 512, max_num_batched_tokens) for the piecewise graphs and the full
  // (decode) graphs take the sizes up to max_num_seqs; vLLM subtracts its estimate of them
  // (gpu_model_runner.py profile_cudagraph_memory: per mode the largest capture plus (n - 1) x
  // the next one's).
  auto capture_sizes = [](int64_t largest) {
    int64_t n = (largest >= 1 ? 1 : 0) + (largest >= 2 ? 1 : 0) + (largest >= 4 ? 1 : 0);
    if (largest >= 8) n += (std::min<int64_t>(largest, 248) - 8) / 8 + 1;
    if (largest >= 256) n += (largest - 256) / 16 + 1;
    return n;
  };
  const bool graphs_profiled = c.engine == Engine::kVllm && prof.v1 && v.at_least(0, 21);
  int64_t graphs = 0;
  int64_t graph_count = 0;
  if (!c.enforce_eager) {
    int64_t largest = std::min<int64_t>(max_seqs, 512);
    graph_count = 2 * capture_sizes(largest);
    if (graphs_profiled) {
      largest = std::min<int64_t>({int64_t{2} * max_seqs, 512, batched});
      graph_count = capture_sizes(largest) + capture_sizes(std::min<int64_t>(max_seqs, largest));
    }
    graphs = graph_count * 6 * kMiB + vllm_activation_peak_bytes(m, p, largest, 0);
  }

  const int64_t fixed = layout.fixed_bytes();
  const int64_t total = gpu.usable_memory_bytes;
  const int64_t in_use = c.memory_in_use_bytes;  // other processes' memory when the engine starts
  auto in_use_term = [&](bool subtracted, std::string how) {
    return MemoryTerm{"memory_in_use", "in use by other processes", in_use, subtracted, std::move(how)};
  };
  switch (c.engine) {
    case Engine::kVllm: {
      plan.engine_label = fmt::format("vLLM {} ({} engine)", v.text(), v1 ? "V1" : "V0");
      plan.engine_budget_bytes = static_cast<int64_t>(static_cast<double>(total) * c.gpu_memory_utilization);
      plan.terms = {w, act, {"non_torch", "non-torch memory", prof.non_torch_bytes, true, prof.non_torch_how}};
      if (in_use > 0 && v1) {
        // V1 requests total · utilization up front and measures its own usage from a baseline
        // taken at start, so other processes do not shrink the budget, but they can stop it.
        const int64_t free_at_start = total - in_use;
        const double requested = static_cast<double>(total) * c.gpu_memory_utilization;
        const bool refuses = static_cast<double>(free_at_start) < requested;
        plan.terms.push_back(in_use_term(
            false, fmt::format("vLLM V1 rule: it requests total x {:.2f} = {} and {} is free at start (total - in "
                               "use); {}",
                               c.gpu_memory_utilization, gib(static_cast<int64_t>(requested)), gib(free_at_start),
                               refuses ? "too little, so vLLM refuses to start"
                                       : "enough, and the budget counts only vLLM's own memory: not subtracted")));
        if (refuses) {
          plan.fits = false;
          plan.problems.push_back(fmt::format(
              "vLLM refuses to start: \"Free memory on device ({:.2f}/{:.2f} GiB) on startup is less than desired "
              "GPU memory utilization ({:.2f}, {:.2f} GiB)\" ({} is in use by other processes); lower "
              "--gpu-memory-utilization to at most {:.3f} or free the memory",
              static_cast<double>(free_at_start) / kGiB, static_cast<double>(total) / kGiB, c.gpu_memory_utilization,
              requested / kGiB, gib(in_use),
              std::floor(static_cast<double>(free_at_start) / static_cast<double>(total) * 1000) / 1000));
        }
      } else if (in_use > 0) {
        plan.terms.push_back(in_use_term(
            true, "vLLM V0 rule: its profiler reads the peak with torch.cuda.mem_get_info, which counts other "
                  "processes' memory: subtracted from total x gpu_memory_utilization"));
      }
      if (!c.enforce_eager) {
        if (graphs_profiled) {
          plan.terms.push_back({"cuda_graphs", "CUDA graphs (vLLM's estimate)", graphs, true,
                                fmt::format("estimate of vLLM's own CUDA-graph estimate ({} graphs, piecewise and full, "
                                            "~6 MiB each, plus the largest one's activations); vLLM >= 0.21 subtracts it "
                                            "from the KV budget (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, the "
                                            "default since v0.21.0)",
                                            graph_count)});
        } else {
          plan.terms.push_back({"cuda_graphs", "CUDA graphs", graphs, false,
                                "estimate: captured decode graphs; vLLM takes it from the "
                                "(1 - gpu_memory_utilization) headroom, not from the KV budget"});
        }
      }
      break;
    }
    case Engine::kSglang: {
      double frac = c.mem_fraction_static > 0 ? c.mem_fraction_static : sglang_default_mem_fraction_static(p.tensor_parallel);
      plan.engine_label = fmt::format("SGLang (mem_fraction_static {:.2f})", frac);
      // SGLang (model_runner.py) measures the free memory before loading (its "total"), loads the
      // weights, then keeps free_at_start x (1 - mem_fraction_static) back for activations and
      // CUDA graphs:  pool = free_after_weights - free_at_start x (1 - frac),
      // free_at_start = total - CUDA context - memory in use, free_after_weights = free_at_start - weights.
      // Checked on data/vllm_logs 89 and 90 (printed avail mem before and after loading).
      const int64_t context = kSglangStartContextBytes;
      const int64_t free_at_start = total - context - in_use;
      const int64_t reserve = static_cast<int64_t>(static_cast<double>(free_at_start) * (1.0 - frac));
      const int64_t free_after_weights = free_at_start - w.bytes;
      (void)free_after_weights;  // = free_at_start - weights; the terms below sum to free_after_weights - reserve
      plan.engine_budget_bytes = total;
      plan.terms = {w, {"cuda_context", "CUDA context before SGLang starts", context, true,
                        "estimate: total minus the free memory SGLang prints at start on an idle H100 (79.19 - 78.81 GiB, "
                        "data/vllm_logs/90)"}};
      if (in_use > 0) {
        plan.terms.push_back(in_use_term(
            true, fmt::format("SGLang rule: it sizes everything from the memory free at start ({}), so other "
                              "processes' memory is subtracted",
                              gib(free_at_start))));
      }
      plan.terms.push_back({"reserve", "reserve for activations and CUDA graphs", reserve, true,
                            fmt::format("SGLang keeps (1 - {:.2f}) of the memory free at start", frac)});
      if (!dsv4) {
        s.tokens_per_block = 1;
        layout = build_kv_layout(m, s, p, stage);
      }
      break;
    }
    case Engine::kTrtllm: {
      plan.engine_label = fmt::format("TensorRT-LLM (kv_cache_free_gpu_mem_fraction {:.2f})", c.free_gpu_memory_fraction);
      int64_t free_after = total - in_use - weights - rope - activation - kCudaContextBytes;
      int64_t kv = static_cast<int64_t>(static_cast<double>(std::max<int64_t>(free_after, 0)) * c.free_gpu_memory_fraction);
      plan.engine_budget_bytes = total;
      plan.terms = {w, act, {"cuda_context", "CUDA context and handles", kCudaContextBytes, true, "estimate"}};
      if (in_use > 0) {
        plan.terms.push_back(in_use_term(
            true, "TensorRT-LLM rule: the fraction applies to the memory free after loading, which already "
                  "excludes other processes' memory: subtracted before the fraction"));
      }
      plan.terms.push_back({"reserve", "unused reserve", free_after - kv, true,
                            fmt::format("(1 - {:.2f}) of the memory free after loading", c.free_gpu_memory_fraction)});
      break;
    }
    case Engine::kStatic: {
      plan.engine_label = "static batching (Hugging Face generate)";
      plan.engine_budget_bytes = total;
      int64_t prefill_act = vllm_activation_peak_bytes(m, p, plan.max_model_len, 1);
      plan.terms = {w, {"activation_peak", "activation peak (one max-length prefill)", prefill_act, true,
                        "estimate: one prompt of max_model_len tokens"},
                    {"cuda_context", "CUDA context and handles", kCudaContextBytes, true, "estimate"}};
      if (in_use > 0) {
        plan.terms.push_back(in_use_term(
            true, "static rule: the batch slots get what is left of the GPU, so other processes' memory is subtracted"));
      }
      break;
    }
  }
  plan.kv_scheme = s;
  if (fixed > 0) plan.terms.push_back({"kv_scales", "KV quantization scales", fixed, true, "exact: per-layer fp8 scales"});

  int64_t used = 0;
  for (const MemoryTerm& t : plan.terms) used += t.subtracted ? t.bytes : 0;
  plan.kv_budget_bytes = plan.engine_budget_bytes - used;

  plan.tokens_per_block = s.tokens_per_block;
  plan.block_bytes = layout.engine_block_bytes();
  // vLLM V1's hybrid allocator: layer groups of one page size (vllm_profile.h); empty otherwise.
  const VllmKvGroups groups =
      c.engine == Engine::kVllm && v1 && v.at_least(0, 10) && !dsv4 ? vllm_v1_kv_groups(layout) : VllmKvGroups{};
  // Recurrent layers are in the groups only when their state was paged like attention (above).
  const bool state_grouped = std::any_of(groups.types.begin(), groups.types.end(),
                                         [](const VllmKvGroups::Type& t) { return !holds_kv_per_token(t.kind); });
  if (!groups.types.empty()) {
    const int padded = groups.num_groups() * groups.group_size;
    const int layers = layout.num_kv_layers();
    const int state_layers = state_grouped ? layout_state_layers(layout) : 0;
    if (padded > layers && layers > 0) {
      plan.block_bytes = plan.block_bytes / layers * padded;
      if (padded > layers + state_layers) {
        plan.notes.push_back(fmt::format(
            "vLLM's hybrid KV allocator pads the layer groups to a common size: {} layers are paged as {} "
            "(\"Add {} padding layers\"), so each block costs {} layer pages",
            layers + state_layers, padded, padded - layers - state_layers, padded));
      }
      if (state_layers > 0) {
        plan.notes.push_back(fmt::format(
            "vLLM's hybrid KV allocator groups the {} attention and {} recurrent layers {} to a group: a block of the "
            "pool is {} layer pages, and every request holds one of them per recurrent group for its state",
            layers, state_layers, groups.group_size, padded));
      }
    }
  }
  plan.request_bytes_at_max_len = layout.request_allocated_bytes(plan.max_model_len);
  const int64_t state = layout.state_bytes_per_request();
  if (plan.kv_budget_bytes <= 0) {
    plan.fits = false;
    plan.problems.push_back(fmt::format("the fixed terms take {} more than the engine's budget of {}",
                                        gib(-plan.kv_budget_bytes), gib(plan.engine_budget_bytes)));
    return plan;
  }
  if (c.engine == Engine::kStatic) {
    // Every slot reserves max_model_len tokens, contiguous.
    KvScheme contiguous = s;
    contiguous.paged = false;
    int64_t slot = build_kv_layout(m, contiguous, p, stage).request_bytes(plan.max_model_len);
    plan.request_bytes_at_max_len = slot;
    plan.requests_at_max_len = slot > 0 ? plan.kv_budget_bytes / slot : 0;
    plan.num_blocks = plan.requests_at_max_len;
    plan.kv_cache_tokens = plan.requests_at_max_len * plan.max_model_len;
    plan.max_concurrency = static_cast<double>(plan.requests_at_max_len);
    plan.block_bytes = slot;
    plan.tokens_per_block = static_cast<int>(std::min<int64_t>(plan.max_model_len, std::numeric_limits<int>::max()));
  } else {
    if (plan.block_bytes > 0) {
      plan.num_blocks = plan.kv_budget_bytes / plan.block_bytes;
      if (c.engine == Engine::kTrtllm && c.trtllm_max_tokens > 0) {
        // kv_cache_config.max_tokens: "the smaller value will be used", rounded up to whole blocks
        const int64_t cap = (c.trtllm_max_tokens + s.tokens_per_block - 1) / s.tokens_per_block;
        if (cap < plan.num_blocks) {
          plan.num_blocks = cap;
          plan.notes.push_back(fmt::format("the pool is capped by max_tokens={} ({} blocks), not by memory",
                                           c.trtllm_max_tokens, cap));
        }
      }
    } else {
      plan.num_blocks = 0;  // state-only model: capacity is counted in requests below
    }
    plan.kv_cache_tokens = plan.num_blocks * s.tokens_per_block;
    int64_t blocks_per_request = (plan.max_model_len + s.tokens_per_block - 1) / s.tokens_per_block;
    if (c.engine == Engine::kVllm && !v.at_least(0, 9)) {
      plan.max_concurrency = static_cast<double>(plan.kv_cache_tokens) / static_cast<double>(plan.max_model_len);
    } else {
      plan.max_concurrency = static_cast<double>(plan.num_blocks) / static_cast<double>(blocks_per_request);
    }
    if (!groups.types.empty() && layout.num_kv_layers() > 0) {
      // Hybrid allocator (vllm_profile.h): its pool counts blocks of one group's page each, and a
      // request's sliding-window groups take only their window's blocks, so the concurrency vLLM
      // prints is not the pool's tokens over max_model_len.
      const int64_t page = layout.engine_block_bytes() / layout.num_kv_layers();
      if (page > 0) {
        const int64_t vllm_blocks = plan.kv_budget_bytes / (page * groups.group_size);
        const double concurrency = vllm_v1_hybrid_max_concurrency(groups, vllm_blocks, s.tokens_per_block,
                                                                  plan.max_model_len, plan.max_num_batched_tokens);
        if (concurrency > 0) {
          plan.max_concurrency = concurrency;
          const bool sliding = std::any_of(groups.types.begin(), groups.types.end(), [](const VllmKvGroups::Type& t) {
            return t.kind == LayerKind::kSlidingAttention;
          });
          std::string rules;
          if (sliding) {
            rules += fmt::format(", a sliding-window group only min(window - 1 + max_num_batched_tokens {}, "
                                 "max_model_len) tokens' worth + 1",
                                 plan.max_num_batched_tokens);
          }
          if (state_grouped) rules += ", a recurrent-state group one block";
          plan.notes.push_back(fmt::format(
              "vLLM's maximum concurrency for this hybrid layout: its pool of {} blocks ({} groups of {} layers share "
              "it) over the blocks one {}-token request takes in every group{} "
              "(kv_cache_utils.py get_max_concurrency_for_kv_cache_config)",
              vllm_blocks, groups.num_groups(), groups.group_size, plan.max_model_len, rules));
        }
      }
    }
    if (dsv4 && c.engine == Engine::kSglang) {
      apply_sglang_dsv4_pool(m, c, p, stage, s.tokens_per_block, plan);
    } else if (dsv4) {
      const VllmDsv4Pool pool =
          vllm_dsv4_pool(layout, s.tokens_per_block, plan.max_model_len, plan.max_num_batched_tokens);
      plan.block_bytes = pool.block_stride_bytes;
      plan.num_blocks = plan.kv_budget_bytes / pool.block_stride_bytes;
      plan.kv_cache_tokens = plan.num_blocks * s.tokens_per_block;
      plan.max_concurrency = static_cast<double>(plan.num_blocks) / static_cast<double>(pool.blocks_per_request);
      std::string groups_text;
      for (const VllmDsv4Pool::Group& g : pool.groups) {
        groups_text += fmt::format("{}{} ({} caches, block {}{})", groups_text.empty() ? "" : ", ",
                                   g.full ? "compressed" : "sliding", g.pages.size(), g.block_tokens,
                                   g.full ? "" : fmt::format(", window {}", g.window_tokens));
      }
      plan.notes.push_back(fmt::format(
          "vLLM's DeepSeek-V4 pool: {} KV cache groups of up to {} layer caches: {}; pages padded to 576 B; one block "
          "id takes {} B across the groups, so {} blocks; a {}-token request takes {} of them (each group's pages "
          "weighed by its page bytes; vllm_dsv4_pool.h, the 0.25 / 0.26 rules). An MTP draft layer would add one "
          "window cache, not counted here",
          pool.groups.size(), pool.group_size, groups_text, with_commas(pool.block_stride_bytes),
          with_commas(plan.num_blocks), with_commas(plan.max_model_len), with_commas(pool.blocks_per_request)));
    }
    if (!(dsv4 && c.engine == Engine::kSglang)) {  // SGLang's fixed pool split sets it (admission by F)
      plan.requests_at_max_len = plan.request_bytes_at_max_len > 0
                                     ? plan.kv_budget_bytes / plan.request_bytes_at_max_len
                                     : 0;
    }
  }
  if (c.engine == Engine::kSglang && !dsv4 && plan.kv_budget_bytes > 0 && has_windowed_layers(layout) &&
      layout_state_layers(layout) == 0) {
    std::string why;
    const bool kv_shared = std::any_of(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) { return l.kv_shared; });
    if (kv_shared) {
      plan.notes.push_back(
          "SGLang and kv-shared layers (Gemma-4 E2B/E4B): kvplan sizes SGLang's pools with the KV-owning layers only; "
          "whether SGLang's pool sizing leaves the shared layers out was not confirmed from its source");
    }
    if (sglang_uses_hybrid_swa(m, gpu_is_sm10x(gpu), v, &why)) {
      const SglangSwaPools pools = sglang_hybrid_swa_pools(layout, plan.kv_budget_bytes, kSglangSwaFullTokensRatio);
      plan.kv_cache_tokens = plan.num_blocks = pools.full_tokens;
      plan.block_bytes = pools.cell_bytes;
      plan.max_concurrency =
          plan.max_model_len > 0 ? static_cast<double>(pools.full_tokens) / static_cast<double>(plan.max_model_len) : 0;
      plan.notes.push_back(fmt::format(
          "SGLang splits the KV budget into a full-attention pool of {} tokens and a sliding-window pool of {} "
          "(swa_full_tokens_ratio {:.1f}): a token of the full pool costs {} B in the full-attention layers plus {:.1f} x "
          "{} B in the sliding ones, and it prints the full pool as max_total_num_tokens (pool_configurator.py "
          "HybridSWAPoolConfigurator; {}). kvplan's simulator lets the layer groups share the bytes instead",
          with_commas(pools.full_tokens), with_commas(pools.swa_tokens), kSglangSwaFullTokensRatio,
          with_commas(pools.full_layer_bytes), kSglangSwaFullTokensRatio, with_commas(pools.swa_layer_bytes), why));
    } else {
      plan.notes.push_back(fmt::format("SGLang keeps every layer at full length in one pool here: {}", why));
    }
  }
  round_msa_sglang_pool(m, c, plan);  // MiniMax-M3 (minimax_m3_cache.h)
  plan.printed_kv_tokens = plan.kv_cache_tokens;
  if (c.engine == Engine::kVllm && v1 && v.at_least(0, 20) && plan.max_model_len > 0) {
    // vLLM >= 0.20 prints the pool as int(maximum concurrency x max_model_len) (PR #38364; a 0.19.1
    // log still prints blocks / groups x block size, a 0.20.1 one the product). For a hybrid or
    // windowed layout that is not the pool's token count.
    plan.printed_kv_tokens = static_cast<int64_t>(plan.max_concurrency * static_cast<double>(plan.max_model_len));
    if (plan.printed_kv_tokens != plan.kv_cache_tokens) {
      plan.notes.push_back(fmt::format(
          "vLLM >= 0.20 prints \"GPU KV cache size: {} tokens\": its maximum concurrency x max_model_len "
          "(kv_cache_utils.py _report_kv_cache_config), not the pool's {} tokens",
          with_commas(plan.printed_kv_tokens), with_commas(plan.kv_cache_tokens)));
    }
  }
  if (plan.requests_at_max_len < 1) {
    plan.fits = false;
    plan.problems.push_back(fmt::format(
        "one request of max_model_len={} tokens needs {} of KV but the budget is {}", plan.max_model_len,
        gib(plan.request_bytes_at_max_len), gib(plan.kv_budget_bytes)));
  }
  if (state > 0) {
    plan.notes.push_back(fmt::format("recurrent state: {} per request on this GPU, independent of length; "
                                     "the SSM / linear-attention state in {}{}",
                                     gib(state), dtype_name(s.state_dtype),
                                     s.state_dtype_source.empty() ? "" : ": " + s.state_dtype_source));
  }
  if (s.eviction != Eviction::kNone) {
    plan.notes.push_back("token eviction caps each request's KV; its effect on output quality is not modelled");
  }
  return plan;
}

}  // namespace

MemoryPlan plan_memory(const ModelConfig& m, const GpuSpec& gpu, const KvScheme& scheme,
                       const Parallelism& p, const ServingConfig& c) {
  validate_split(m, p, c.weights);
  if (c.gpu_memory_utilization <= 0 || c.gpu_memory_utilization > 1) {
    throw ConfigError(fmt::format("gpu-memory-utilization={} must be in (0, 1]", c.gpu_memory_utilization));
  }
  if (c.mem_fraction_static < 0 || c.mem_fraction_static > 1) {
    throw ConfigError(fmt::format("mem-fraction-static={} must be in (0, 1]", c.mem_fraction_static));
  }
  if (c.free_gpu_memory_fraction <= 0 || c.free_gpu_memory_fraction > 1) {
    throw ConfigError(fmt::format("free-gpu-memory-fraction={} must be in (0, 1]", c.free_gpu_memory_fraction));
  }
  if (c.memory_in_use_bytes < 0 || c.memory_in_use_bytes >= gpu.usable_memory_bytes) {
    throw ConfigError(fmt::format("memory-in-use={:.2f} GiB must be at least 0 and less than the total memory of gpu "
                                  "'{}' ({:.2f} GiB)",
                                  static_cast<double>(c.memory_in_use_bytes) / kGiB, gpu.id,
                                  static_cast<double>(gpu.usable_memory_bytes) / kGiB));
  }
  if (c.max_model_len < 0 || c.max_model_len > kMaxTokens) {
    throw ConfigError(fmt::format("max-model-len={} must be between 1 and {} tokens (0: the model's)", c.max_model_len, kMaxTokens));
  }
  if (c.max_num_seqs > kMaxSequences) {
    throw ConfigError(fmt::format("max-num-seqs={} must be at most {}", c.max_num_seqs, kMaxSequences));
  }
  if (c.max_num_batched_tokens > kMaxTokens) {
    throw ConfigError(fmt::format("max-num-batched-tokens={} must be at most {}", c.max_num_batched_tokens, kMaxTokens));
  }
  if (c.max_num_seqs < 0) throw ConfigError(fmt::format("max-num-seqs={} must be positive", c.max_num_seqs));
  if (c.max_num_batched_tokens < 0) {
    throw ConfigError(fmt::format("max-num-batched-tokens={} must be positive", c.max_num_batched_tokens));
  }
  MemoryPlan best;
  for (int stage = 0; stage < p.pipeline_parallel; ++stage) {
    MemoryPlan plan = plan_stage(m, gpu, scheme, p, c, stage);
    if (stage == 0 || plan.kv_cache_tokens < best.kv_cache_tokens ||
        (plan.kv_cache_tokens == best.kv_cache_tokens && plan.requests_at_max_len < best.requests_at_max_len)) {
      best = std::move(plan);
    }
  }
  if (p.pipeline_parallel > 1) {
    best.notes.push_back(fmt::format("pipeline stage {} of {} limits capacity; figures are for its GPUs",
                                     best.pipeline_stage, p.pipeline_parallel));
  }
  best.data_parallel = p.data_parallel;
  if (p.data_parallel > 1) {
    best.notes.push_back(fmt::format(
        "{} data-parallel ranks, each with its own KV cache: per-rank figures below, x{} for the deployment{}",
        p.data_parallel, p.data_parallel,
        m.count_layers(LayerKind::kMla) > 0 ? " (data-parallel attention: each rank holds the latent of its own requests)" : ""));
  }
  best.warnings = m.warnings;
  best.notes.insert(best.notes.end(), m.notes.begin(), m.notes.end());
  for (const std::string& n : c.weights.quant.notes) best.warnings.push_back(n);
  for (std::string& w : kv_scheme_warnings(scheme, c.engine)) best.warnings.push_back(std::move(w));
  // Parallelism beyond one scale-up domain crosses the network, which the cost model does not price.
  const int domain = gpu.scale_up_domain_gpus;
  if (p.tensor_parallel > domain) {
    best.warnings.push_back(fmt::format(
        "tensor parallel {} spans more than one scale-up domain of {} ({} GPU{}: {}): kvplan prices every "
        "tensor-parallel all-reduce on the in-domain link, but beyond it they cross the network "
        "(InfiniBand/Ethernet), which is slower and not modelled: latency is optimistic",
        p.tensor_parallel, gpu.id, domain, domain == 1 ? "" : "s", gpu.scale_up_domain_source));
  } else if (p.tensor_parallel * p.pipeline_parallel > domain) {
    best.warnings.push_back(fmt::format(
        "tensor parallel {} x pipeline parallel {} spans more than one scale-up domain of {} ({} GPU{}: {}): "
        "activations between pipeline stages on different domains cross the network, which is not modelled",
        p.tensor_parallel, p.pipeline_parallel, gpu.id, domain, domain == 1 ? "" : "s", gpu.scale_up_domain_source));
  }
  return best;
}

DistributionFit fit_distribution(const MemoryPlan& plan, const KvLayout& layout, const LengthDistribution& lengths) {
  DistributionFit fit;
  LengthDistribution d = lengths.clamped(plan.max_model_len);
  fit.distribution = d.describe();
  fit.mean_tokens = d.mean();
  fit.p99_tokens = d.quantile(0.99);
  fit.mean_request_bytes = d.expect([&](int64_t L) { return static_cast<double>(layout.request_allocated_bytes(L)); });
  fit.p99_request_bytes = layout.request_allocated_bytes(fit.p99_tokens);
  if (plan.kv_budget_bytes > 0 && fit.mean_request_bytes > 0) {
    fit.requests_at_mean = static_cast<int64_t>(std::floor(static_cast<double>(plan.kv_budget_bytes) / fit.mean_request_bytes));
  }
  if (plan.kv_budget_bytes > 0 && fit.p99_request_bytes > 0) fit.requests_at_p99 = plan.kv_budget_bytes / fit.p99_request_bytes;
  return fit;
}

}  // namespace kvplan
