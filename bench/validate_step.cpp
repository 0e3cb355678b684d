// kvplan_validate_step: one complete engine step of a dense-attention preset run on the GPU, timed
// with CUDA events (median of N), next to the simulator's prediction for the same StepWork.
//
//   ./build/bench/kvplan_validate_step                       # llama-3.1-8b on the h200 datasheet profile
//   ./build/bench/kvplan_validate_step --model llama-3.1-8b --gpu h200 --profile fitted.json --reps 10
//
// What runs per layer (all layers, each with its own random bf16 weights, cuBLAS GEMMs):
//   norm (elementwise stand-in) -> qkv GEMM -> RoPE (elementwise stand-in over q and k) -> paged KV
//   write of the step's new tokens -> decode attention (paged, planned split-KV) over the decode
//   sequences' real context mix -> prefill attention for the prefill chunk (with its cached prefix)
//   -> o_proj GEMM -> residual + norm (elementwise) -> gate_up GEMM -> activation (elementwise) ->
//   down GEMM -> residual (elementwise); then the final norm and the LM-head GEMM over the rows
//   that emit logits.
// Approximations (said in the output too): RMSNorm / RoPE / SiLU-mul / residual adds are one
// elementwise kernel moving the same bytes, not the same arithmetic; attention q/k/v come from
// their own buffers rather than slices of the qkv output (same bytes); one KV cache is shared by
// all layers (each layer's slice is far larger than L2, so reads still come from HBM); sampling and
// the embedding gather are not run. Decode-only steps are also timed as a replayed CUDA graph,
// which is what the simulator assumes for them (CostOptions::cuda_graphs).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kvplan/calibration/gpu_probes.h"
#include "kvplan/core/gpu_spec.h"
#include "kvplan/core/kv_scheme.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/presets.h"
#include "kvplan/kernels/decode_attention.h"
#include "kvplan/kernels/device.h"
#include "kvplan/kernels/kv_write.h"
#include "kvplan/kernels/prefill_attention.h"
#include "kvplan/kernels/split_plan.h"
#include "kvplan/sim/cost_model.h"

namespace {

using kvplan::calibration::Status;
namespace kk = kvplan::kernels;

struct Point {
  std::string label;
  int batch = 0;           // decode sequences
  int ctx = 0;             // decode context (uniform), or the long one (skewed)
  bool skewed = false;     // batch/8 sequences at ctx, the rest at ctx/16
  int prefill_tokens = 0;  // one prefill chunk of this many new tokens (0: none)
  int prefill_context = 0; // its cached prefix
};

std::vector<int64_t> decode_contexts(const Point& p) {
  std::vector<int64_t> v(static_cast<size_t>(p.batch), p.ctx);
  if (p.skewed) {
    for (int i = std::max(1, p.batch / 8); i < p.batch; ++i) v[size_t(i)] = std::max(16, p.ctx / 16);
  }
  return v;
}

Status cuda(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(call, int(e), cudaGetErrorString(e), "validate_step.cpp");
}

struct Gpu {
  std::vector<void*> allocs;
  cublasHandle_t blas = nullptr;
  cudaStream_t stream = nullptr;
  ~Gpu() {
    cudaDeviceSynchronize();
    if (blas) cublasDestroy(blas);
    if (stream) cudaStreamDestroy(stream);
    for (void* p : allocs) cudaFree(p);
  }
  void* alloc(size_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 16)) != cudaSuccess) return nullptr;
    allocs.push_back(p);
    return p;
  }
  void* random(size_t elems, uint64_t seed) {
    void* p = alloc(elems * 2);
    if (p) kvplan::calibration::fill_random_16bit(p, elems, seed, false, stream);
    return p;
  }
  template <typename T>
  T* upload(const std::vector<T>& v) {
    void* p = alloc(v.size() * sizeof(T));
    if (p) cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return static_cast<T*>(p);
  }
};

// y[T, N] = x[T, K] · W[N, K]^T
Status gemm(Gpu& g, const void* x, const void* w, void* y, int t, int k, int n) {
  if (t == 0) return Status::success();
  const float a = 1.f, b = 0.f;
  cublasStatus_t c = cublasGemmEx(g.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, t, k, &a, w, CUDA_R_16BF, k, x, CUDA_R_16BF, k,
                                  &b, y, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return c == CUBLAS_STATUS_SUCCESS ? Status::success()
                                    : Status::error("cublasGemmEx", int(c), cublasGetStatusString(c), "validate_step.cpp");
}

struct Dims {
  int layers, hidden, q_heads, kv_heads, head_dim, inter, vocab;
};

// All device state of one point; enqueue() launches one whole step on g.stream.
struct Step {
  Dims d{};
  Point p;
  int t = 0;  // new tokens
  int emit = 0;
  std::vector<void*> wqkv, wo, wgu, wd;
  void *w_lm = nullptr, *x = nullptr, *x2 = nullptr, *qkv = nullptr, *attn = nullptr, *gu = nullptr, *act = nullptr,
       *logits = nullptr;
  kk::KvWriteParams write;
  std::optional<kk::PagedDecodeAttentionParams> decode;
  std::optional<kk::PrefillAttentionParams> prefill;

  Status enqueue(Gpu& g) const {
    using kvplan::calibration::launch_elementwise;
    const size_t th = size_t(t) * d.hidden;
    const int qkv_n = (d.q_heads + 2 * d.kv_heads) * d.head_dim;
    for (int l = 0; l < d.layers; ++l) {
      if (Status s = launch_elementwise(x, x2, th, g.stream); !s.ok()) return s;                      // input norm
      if (Status s = gemm(g, x2, wqkv[size_t(l)], qkv, t, d.hidden, qkv_n); !s.ok()) return s;         // qkv_proj
      if (Status s = launch_elementwise(qkv, qkv, size_t(t) * (d.q_heads + d.kv_heads) * d.head_dim, g.stream); !s.ok())
        return s;                                                                                       // RoPE
      if (Status s = kk::launch_kv_write(write, g.stream); !s.ok()) return s;            // KV write
      if (decode) {
        if (Status s = kk::launch_paged_decode_attention(*decode, g.stream); !s.ok()) return s;
      }
      if (prefill) {
        if (Status s = kk::launch_prefill_attention(*prefill, g.stream); !s.ok()) return s;
      }
      if (Status s = gemm(g, attn, wo[size_t(l)], x2, t, d.q_heads * d.head_dim, d.hidden); !s.ok()) return s;  // o_proj
      if (Status s = launch_elementwise(x2, x, th, g.stream); !s.ok()) return s;                      // residual + norm
      if (Status s = gemm(g, x, wgu[size_t(l)], gu, t, d.hidden, 2 * d.inter); !s.ok()) return s;    // gate_up
      if (Status s = launch_elementwise(gu, act, size_t(t) * d.inter, g.stream); !s.ok()) return s;  // SiLU * up
      if (Status s = gemm(g, act, wd[size_t(l)], x2, t, d.inter, d.hidden); !s.ok()) return s;        // down_proj
      if (Status s = launch_elementwise(x2, x, th, g.stream); !s.ok()) return s;                      // residual
    }
    if (Status s = launch_elementwise(x, x2, th, g.stream); !s.ok()) return s;  // final norm
    // LM head over the emitting rows (decode rows first, then the chunk's last row).
    return gemm(g, x2, w_lm, logits, emit, d.hidden, d.vocab);
  }
};

Status build(Gpu& g, const Dims& d, const Point& p, int num_sms, Step* st) {
  st->d = d;
  st->p = p;
  st->t = p.batch + p.prefill_tokens;
  st->emit = p.batch + (p.prefill_tokens > 0 ? 1 : 0);
  const int t = st->t;
  const int qkv_n = (d.q_heads + 2 * d.kv_heads) * d.head_dim;
  for (int l = 0; l < d.layers; ++l) {
    st->wqkv.push_back(g.random(size_t(qkv_n) * d.hidden, 100 + uint64_t(l)));
    st->wo.push_back(g.random(size_t(d.hidden) * d.q_heads * d.head_dim, 200 + uint64_t(l)));
    st->wgu.push_back(g.random(size_t(2) * d.inter * d.hidden, 300 + uint64_t(l)));
    st->wd.push_back(g.random(size_t(d.hidden) * d.inter, 400 + uint64_t(l)));
    if (!st->wqkv.back() || !st->wo.back() || !st->wgu.back() || !st->wd.back())
      return Status::error("cudaMalloc", 2, "weights do not fit", "validate_step.cpp");
  }
  st->w_lm = g.random(size_t(d.vocab) * d.hidden, 500);
  st->x = g.random(size_t(t) * d.hidden, 1);
  st->x2 = g.alloc(size_t(t) * d.hidden * 2);
  st->qkv = g.alloc(size_t(t) * qkv_n * 2);
  st->attn = g.random(size_t(t) * d.q_heads * d.head_dim, 2);
  st->gu = g.alloc(size_t(t) * 2 * d.inter * 2);
  st->act = g.alloc(size_t(t) * d.inter * 2);
  st->logits = g.alloc(size_t(std::max(st->emit, 1)) * d.vocab * 2);
  // One paged cache (tpb 16) holding every decode sequence and the chunk's prefix + new tokens.
  const int tpb = 16;
  const std::vector<int64_t> ctx = decode_contexts(p);
  std::vector<int32_t> lens;
  std::vector<int32_t> blocks_of;
  int num_blocks = 0, max_blocks = 1;
  for (int64_t c : ctx) {
    const int nb = int((c + 1 + tpb - 1) / tpb);  // + this step's token
    lens.push_back(int32_t(c + 1));
    blocks_of.push_back(nb);
    num_blocks += nb;
    max_blocks = std::max(max_blocks, nb);
  }
  const int pre_blocks = (p.prefill_context + p.prefill_tokens + tpb - 1) / tpb;
  const int total_blocks = num_blocks + pre_blocks + 1;
  const size_t cache_elems = size_t(total_blocks) * d.kv_heads * tpb * d.head_dim;
  void* kc = g.random(cache_elems, 3);
  void* vc = g.random(cache_elems, 4);
  void* kn = g.random(size_t(std::max(t, 1)) * d.kv_heads * d.head_dim, 5);
  void* vn = g.random(size_t(std::max(t, 1)) * d.kv_heads * d.head_dim, 6);
  if (!kc || !vc || !kn || !vn) return Status::error("cudaMalloc", 2, "KV cache does not fit", "validate_step.cpp");
  std::vector<int32_t> table(size_t(std::max(p.batch, 1)) * max_blocks, 0);
  std::vector<int64_t> slots;
  int next = 0;
  for (int b = 0; b < p.batch; ++b) {
    for (int i = 0; i < blocks_of[size_t(b)]; ++i) table[size_t(b) * max_blocks + i] = next++;
    const int64_t pos = ctx[size_t(b)];  // the new token's position
    slots.push_back(int64_t(table[size_t(b) * max_blocks + pos / tpb]) * tpb + pos % tpb);
  }
  const int pre_first = next;
  for (int i = 0; i < p.prefill_tokens; ++i) {
    const int64_t pos = p.prefill_context + i;
    slots.push_back(int64_t(pre_first + pos / tpb) * tpb + pos % tpb);
  }
  kk::QuantKvCache cache;
  cache.type = kk::CacheType::kBF16;
  cache.layout = kk::CacheLayout::kPaged;
  cache.k_data = kc;
  cache.v_data = vc;
  cache.num_kv_heads = d.kv_heads;
  cache.head_dim = d.head_dim;
  cache.tokens_per_block = tpb;
  cache.num_slots = int64_t(total_blocks) * tpb;
  st->write.dtype = kk::ElemType::kBF16;
  st->write.k_new = static_cast<const uint16_t*>(kn);
  st->write.v_new = static_cast<const uint16_t*>(vn);
  st->write.slot_mapping = g.upload(slots.empty() ? std::vector<int64_t>{-1} : slots);
  st->write.cache = cache;
  st->write.num_tokens = t;
  const float scale = 1.f / std::sqrt(float(d.head_dim));
  if (p.batch > 0) {
    kk::PagedDecodeAttentionParams a;
    a.dtype = kk::ElemType::kBF16;
    a.num_seqs = p.batch;
    a.num_q_heads = d.q_heads;
    a.num_kv_heads = d.kv_heads;
    a.head_dim = d.head_dim;
    a.num_blocks = total_blocks;
    a.tokens_per_block = tpb;
    a.max_blocks_per_seq = max_blocks;
    a.softmax_scale = scale;
    a.q = static_cast<const uint16_t*>(g.random(size_t(p.batch) * d.q_heads * d.head_dim, 7));
    a.k_cache = static_cast<const uint16_t*>(kc);
    a.v_cache = static_cast<const uint16_t*>(vc);
    a.block_table = g.upload(table);
    a.context_lens = g.upload(lens);
    a.out = static_cast<uint16_t*>(st->attn);
    const int64_t sum = std::accumulate(lens.begin(), lens.end(), int64_t{0});
    a.num_splits = kk::plan_decode_splits({.num_seqs = p.batch, .num_kv_heads = d.kv_heads,
                                           .max_context_len = *std::max_element(lens.begin(), lens.end()),
                                           .total_context_tokens = sum, .num_sms = num_sms})
                       .num_splits;
    if (a.num_splits > 1) {
      a.partial_out = static_cast<float*>(
          g.alloc(size_t(kk::decode_partial_out_elems(p.batch, a.num_splits, d.q_heads, d.head_dim)) * 4));
      a.partial_lse = static_cast<float*>(g.alloc(size_t(kk::decode_partial_lse_elems(p.batch, a.num_splits, d.q_heads)) * 4));
    }
    st->decode = a;
  }
  if (p.prefill_tokens > 0) {
    kk::PrefillAttentionParams a;
    a.dtype = kk::ElemType::kBF16;
    a.q = static_cast<const uint16_t*>(g.random(size_t(p.prefill_tokens) * d.q_heads * d.head_dim, 8));
    a.k = static_cast<const uint16_t*>(kn);
    a.v = static_cast<const uint16_t*>(vn);
    a.cu_seqlens = g.upload(std::vector<int32_t>{0, p.prefill_tokens});
    a.out = static_cast<uint16_t*>(st->attn) + size_t(p.batch) * d.q_heads * d.head_dim;
    a.num_seqs = 1;
    a.total_q_tokens = p.prefill_tokens;
    a.max_seqlen_q = p.prefill_tokens;
    a.num_q_heads = d.q_heads;
    a.num_kv_heads = d.kv_heads;
    a.head_dim = d.head_dim;
    a.softmax_scale = scale;
    if (p.prefill_context > 0) {
      const int nb = (p.prefill_context + tpb - 1) / tpb;
      std::vector<int32_t> pt(static_cast<size_t>(nb));
      std::iota(pt.begin(), pt.end(), pre_first);
      a.prefix_lens = g.upload(std::vector<int32_t>{p.prefill_context});
      a.k_cache = static_cast<const uint16_t*>(kc);
      a.v_cache = static_cast<const uint16_t*>(vc);
      a.block_table = g.upload(pt);
      a.num_blocks = total_blocks;
      a.tokens_per_block = tpb;
      a.max_blocks_per_seq = nb;
    }
    st->prefill = a;
  }
  if (!st->x2 || !st->qkv || !st->attn || !st->gu || !st->act || !st->logits || !st->w_lm)
    return Status::error("cudaMalloc", 2, "activations do not fit", "validate_step.cpp");
  return cuda(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize (setup)");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

// Median step time in ms: eager launches, or a captured graph's replays.
Status time_step(Gpu& g, const Step& st, int reps, bool graph, double* ms_out) {
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t gr = nullptr;
    if (Status s = cuda(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        !s.ok())
      return s;
    Status enq = st.enqueue(g);
    Status end = cuda(cudaStreamEndCapture(g.stream, &gr), "cudaStreamEndCapture");
    if (!enq.ok()) return enq;
    if (!end.ok()) return end;
    Status inst = cuda(cudaGraphInstantiate(&exec, gr, 0), "cudaGraphInstantiate");
    cudaGraphDestroy(gr);
    if (!inst.ok()) return inst;
  }
  auto once = [&]() -> Status {
    return graph ? cuda(cudaGraphLaunch(exec, g.stream), "cudaGraphLaunch") : st.enqueue(g);
  };
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> times;
  Status result = Status::success();
  for (int i = 0; i < reps + 2 && result.ok(); ++i) {
    cudaEventRecord(e0, g.stream);
    result = once();
    cudaEventRecord(e1, g.stream);
    if (result.ok()) result = cuda(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i >= 2) times.push_back(ms);  // two warm-ups
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (exec) cudaGraphExecDestroy(exec);
  *ms_out = median(times);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_id = "llama-3.1-8b", gpu_id = "h200", profile_path;
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) model_id = argv[++i];
    else if (a == "--gpu" && i + 1 < argc) gpu_id = argv[++i];
    else if (a == "--profile" && i + 1 < argc) profile_path = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else {
      std::cerr << "usage: kvplan_validate_step [--model ID] [--gpu ID] [--profile PerfProfile.json] [--reps N]\n";
      return 2;
    }
  }
  kvplan::ModelConfig model;
  kvplan::GpuSpec gpu;
  kvplan::PerfProfile profile;
  try {
    model = kvplan::resolve_model(model_id);
    gpu = kvplan::resolve_gpu(gpu_id);
    if (profile_path.empty()) {
      profile = kvplan::PerfProfile::datasheet_default(gpu);
    } else {
      std::ifstream f(profile_path);
      if (!f) throw std::runtime_error("cannot read profile " + profile_path);
      profile = kvplan::PerfProfile::from_json(nlohmann::json::parse(f), profile_path);
    }
  } catch (const std::exception& e) {
    std::cerr << "validate_step: " << e.what() << "\n";
    return 2;
  }
  if (model.has_moe() || model.count_layers(kvplan::LayerKind::kFullAttention) != model.num_layers() ||
      model.layers.empty() || model.layers[0].mlp.kind != kvplan::MlpKind::kGated) {
    std::cerr << "validate_step: " << model_id << " is not a dense full-attention gated-MLP model (Llama-like); "
              << "only those are assembled here\n";
    return 2;
  }
  const Dims d{model.num_layers(), model.hidden_size, model.attention.num_q_heads, model.attention.num_kv_heads,
               model.attention.head_dim, model.layers[0].mlp.intermediate_size, model.vocab_size};
  kvplan::sim::StepCostModel cost(model, gpu, kvplan::KvScheme{}, kvplan::Parallelism{}, profile, {});

  const std::vector<Point> points = {
      {"decode B=1 ctx=1024", 1, 1024, false, 0, 0},
      {"decode B=16 ctx=2048", 16, 2048, false, 0, 0},
      {"decode B=64 ctx=4096", 64, 4096, false, 0, 0},
      {"decode B=128 skewed ctx<=8192", 128, 8192, true, 0, 0},
      {"decode B=32 skewed ctx<=32768", 32, 32768, true, 0, 0},
      {"prefill 2048", 0, 0, false, 2048, 0},
      {"mixed B=32 ctx=2048 + chunk 512", 32, 2048, false, 512, 0},
      {"mixed B=16 ctx=4096 + chunk 512 after 4096", 16, 4096, false, 512, 4096},
  };
  std::string why;
  const bool have_gpu = kk::cuda_device_available(&why);
  std::printf("kvplan_validate_step: %s (%d layers, hidden %d, %d/%d heads x %d, MLP %d, vocab %d) on %s, profile %s\n",
              model_id.c_str(), d.layers, d.hidden, d.q_heads, d.kv_heads, d.head_dim, d.inter, d.vocab, gpu_id.c_str(),
              profile_path.empty() ? "datasheet" : profile_path.c_str());
  std::printf("approximations: norms/RoPE/activation/residual = one elementwise kernel of the same bytes; shared KV "
              "cache; no sampling/embedding; prefill attention is the scalar-FMA kernel (no tensor cores)\n");
  if (!have_gpu) {
    std::printf("no CUDA device (%s): nothing measured; predictions only\n", why.c_str());
  }
  std::unique_ptr<Gpu> g;
  int num_sms = 132;
  if (have_gpu) {
    g = std::make_unique<Gpu>();
    num_sms = kk::query_device(0).num_sms;
    cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) {
      std::printf("cublasCreate failed\n");
      return 1;
    }
    cublasSetStream(g->blas, g->stream);
  }
  std::vector<double> errors;
  std::printf("%-44s %12s %12s %12s %9s\n", "point", "predicted_ms", "eager_ms", "graph_ms", "error");
  for (const Point& p : points) {
    const std::vector<int64_t> ctx = decode_contexts(p);
    std::vector<kvplan::sim::PrefillChunk> chunks;
    if (p.prefill_tokens > 0) chunks.push_back({.context_tokens = p.prefill_context, .new_tokens = p.prefill_tokens});
    kvplan::sim::StepWork work;
    work.prefill = chunks;
    work.decode_contexts = ctx;
    const double predicted_ms = double(cost.step_ns(work)) * 1e-6;
    if (!have_gpu) {
      std::printf("%-44s %12.3f %12s %12s %9s\n", p.label.c_str(), predicted_ms, "-", "-", "-");
      continue;
    }
    double eager = 0, graph = 0;
    std::string note;
    {
      Gpu local;  // per-point buffers; weights are re-made per point (freed at the end of it)
      local.stream = g->stream;
      local.blas = g->blas;
      Step st;
      Status s = build(local, d, p, num_sms, &st);
      if (s.ok()) s = time_step(local, st, reps, false, &eager);
      if (s.ok() && p.prefill_tokens == 0) {
        Status gs = time_step(local, st, reps, true, &graph);
        if (!gs.ok()) {
          note = " (graph: " + gs.describe() + ")";
          graph = 0;
          cudaGetLastError();
        }
      }
      local.stream = nullptr;  // owned by g
      local.blas = nullptr;
      if (!s.ok()) {
        std::printf("%-44s %12.3f  FAILED: %s\n", p.label.c_str(), predicted_ms, s.describe().c_str());
        continue;
      }
    }
    // Decode-only steps: the simulator assumes CUDA-graph replay; mixed steps run eagerly.
    const double measured = graph > 0 ? graph : eager;
    const double err = (predicted_ms - measured) / measured;
    errors.push_back(std::fabs(err));
    char gbuf[32];
    std::snprintf(gbuf, sizeof gbuf, graph > 0 ? "%.3f" : "-", graph);
    std::printf("%-44s %12.3f %12.3f %12s %+8.1f%%%s\n", p.label.c_str(), predicted_ms, eager, gbuf, 100 * err,
                note.c_str());
  }
  if (!errors.empty()) {
    std::printf("|error| over %zu points: median %.1f%%, worst %.1f%% (error = predicted/measured - 1; measured = graph "
                "replay for decode-only steps, eager otherwise)\n",
                errors.size(), 100 * median(errors), 100 * *std::max_element(errors.begin(), errors.end()));
  }
  return 0;
}
