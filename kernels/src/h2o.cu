// H2O decode (attention + accumulated attention mass) and eviction with compaction (h2o.h).
// Attention: the contiguous head-major variant of the scheme decode loop (scheme_decode_kernels.cuh)
// writing the final log-sum-exp; mass: a second kernel, one owner thread per token (no atomics);
// eviction: one CTA per (sequence, KV head), rank by counting, block scan, ordered out-of-place copy.
#include "kvplan/kernels/h2o.h"

#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "scheme_decode_kernels.cuh"

namespace kvplan::kernels {
namespace {

using scheme_detail::SchemeArgs;

// All tokens [0, len) of a head-major slab [num_seqs, num_kv_heads, max_tokens, head_dim].
struct HeadMajorVariant {
  const uint16_t* k;
  const uint16_t* v;
  const int32_t* context_lens;
  int num_kv_heads;
  int max_tokens;

  struct Seq {
    int n;
  };
  __device__ Seq seq_state(int seq, int /*lane*/) const { return Seq{max(0, __ldg(context_lens + seq))}; }

  template <typename T, int kDim>
  __device__ void prepare_query(const SchemeArgs& a, const Seq&, int seq, int, int head0, int heads, float* s_q) const {
    scheme_detail::plain_query<T, kDim>(a, seq, head0, heads, s_q);
  }
  template <typename T, int kDim>
  __device__ void load(const Seq&, int seq, int kv_head, int i, int lane, bool valid, float (&kf)[8], float (&vf)[8]) const {
    uint4 kr = make_uint4(0, 0, 0, 0), vr = make_uint4(0, 0, 0, 0);
    if (valid) {
      const size_t at = ((static_cast<size_t>(seq) * num_kv_heads + kv_head) * max_tokens + i) * kDim + lane * 8;
      kr = scheme_detail::load16(k + at);
      vr = scheme_detail::load16(v + at);
    }
    scheme_detail::to_float8<T>(kr, kf);
    scheme_detail::to_float8<T>(vr, vf);
  }
  template <typename T, int kDim>
  __device__ void finish(const SchemeArgs& a, int seq, int split, int, int head0, int heads, const float* s_res) const {
    scheme_detail::plain_finish<T, kDim>(a, seq, split, head0, heads, s_res);
  }
};

constexpr int kAccThreads = 128;
constexpr int kAccChunk = 256;  // tokens per CTA of the mass kernel

// acc[s, h, t] += sum_g exp(score_g(t) - lse_g), t in this CTA's chunk. Grid (num_kv_heads, chunks,
// num_seqs); dynamic shared memory: group floats (the merged lse of each query head, base 2).
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kAccThreads) h2o_mass_kernel(H2ODecodeParams p, float scale_log2) {
  constexpr int kLanes = kHeadDim / 8;
  constexpr int kSlots = kAccThreads / kLanes;
  extern __shared__ float s_lse2[];  // [group]
  const int kv_head = static_cast<int>(blockIdx.x);
  const int seq = static_cast<int>(blockIdx.z);
  const int group = p.num_q_heads / p.num_kv_heads;
  const int len = max(0, __ldg(p.context_lens + seq));
  const int begin = static_cast<int>(blockIdx.y) * kAccChunk;
  if (begin >= len) return;  // CTA-uniform
  const int end = min(len, begin + kAccChunk);
  for (int g = static_cast<int>(threadIdx.x); g < group; g += kAccThreads) {
    // Merge the splits' natural-log lse into one, base 2. len > 0: at least one split is finite.
    const float* lse = p.lse + static_cast<size_t>(seq) * p.num_splits * p.num_q_heads + kv_head * group + g;
    float mx = -INFINITY;
    for (int sp = 0; sp < p.num_splits; ++sp) mx = fmaxf(mx, lse[static_cast<size_t>(sp) * p.num_q_heads]);
    float sum = 0.f;
    for (int sp = 0; sp < p.num_splits; ++sp) {
      const float l = lse[static_cast<size_t>(sp) * p.num_q_heads];
      if (l != -INFINITY) sum += expf(l - mx);
    }
    s_lse2[g] = (mx + logf(sum)) * scheme_detail::kLog2e;
  }
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int slot = static_cast<int>(threadIdx.x) / kLanes;
  const size_t slab = static_cast<size_t>(seq) * p.num_kv_heads + kv_head;
  for (int t0 = begin; t0 < end; t0 += kSlots) {  // same trip count for every thread: convergent shuffles
    const int t = t0 + slot;
    const bool valid = t < end;
    float k[8];
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (valid) raw = scheme_detail::load16(p.k_cache + (slab * p.max_tokens + t) * kHeadDim + lane * 8);
    scheme_detail::to_float8<T>(raw, k);
    float mass = 0.f;
#pragma unroll 1
    for (int g = 0; g < group; ++g) {  // head order: a fixed summation order, deterministic
      float qf[8];
      scheme_detail::to_float8<T>(
          scheme_detail::load16(p.q + (static_cast<size_t>(seq) * p.num_q_heads + kv_head * group + g) * kHeadDim + lane * 8), qf);
      float dot = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot = fmaf(qf[i], k[i], dot);
#pragma unroll
      for (int offset = kLanes / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      mass += exp2f(dot * scale_log2 - s_lse2[g]);
    }
    if (valid && lane == 0) p.acc_scores[slab * p.max_tokens + t] += mass;  // sole owner of element t
  }
}

constexpr int kEvictThreads = 256;

// One CTA per (KV head, sequence): grid (num_kv_heads, num_seqs).
__global__ void __launch_bounds__(kEvictThreads) h2o_evict_kernel(H2OEvictParams p) {
  using Scan = cub::BlockScan<int, kEvictThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int s_src[kEvictThreads];  // source token of the chunk's r-th kept token
  const int kv_head = static_cast<int>(blockIdx.x);
  const int seq = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x);
  const int len = min(max(0, __ldg(p.context_lens + seq)), p.max_tokens);
  const bool keep_all = len <= p.budget_tokens;
  const int num_old = keep_all ? len : len - p.recent_tokens;  // candidates [0, num_old)
  const int heavy = p.budget_tokens - p.recent_tokens;         // candidates kept (when !keep_all)
  const size_t slab = static_cast<size_t>(seq) * p.num_kv_heads + kv_head;
  const float* sc = p.scores_in + slab * p.max_tokens;
  const int vecs = p.head_dim / 8;  // 16-byte vectors per row
  int written = 0;                  // kept tokens so far (CTA-uniform)
  for (int base = 0; base < len; base += kEvictThreads) {
    const int t = base + tid;
    int keep = 0;
    if (t < len) {
      if (keep_all || t >= num_old) {
        keep = 1;
      } else {
        // rank = #{u : s_u > s_t or (s_u == s_t and u < t)}; every thread walks the same u: broadcast reads.
        const float st = sc[t];
        int rank = 0;
        for (int u = 0; u < num_old && rank < heavy; ++u) {
          const float su = sc[u];
          rank += (su > st || (su == st && u < t)) ? 1 : 0;
        }
        keep = rank < heavy ? 1 : 0;
      }
    }
    int pos = 0, total = 0;
    Scan(scan_storage).ExclusiveSum(keep, pos, total);
    if (keep) {
      s_src[pos] = t;
      p.scores_out[slab * p.max_tokens + written + pos] = sc[t];
    }
    __syncthreads();
    for (int e = tid; e < total * vecs; e += kEvictThreads) {
      const int r = e / vecs;
      const int c = e % vecs;
      const size_t src = (slab * p.max_tokens + s_src[r]) * p.head_dim + c * 8;
      const size_t dst = (slab * p.max_tokens + written + r) * p.head_dim + c * 8;
      *reinterpret_cast<uint4*>(p.k_out + dst) = scheme_detail::load16(p.k_in + src);
      *reinterpret_cast<uint4*>(p.v_out + dst) = scheme_detail::load16(p.v_in + src);
    }
    written += total;
    __syncthreads();  // s_src and the scan storage are reused by the next chunk
  }
  if (kv_head == 0 && tid == 0) p.new_context_lens[seq] = written;
}

// Attention (out, or partials + combine, and lse), then the mass kernel, in order on `stream`.
template <typename T, int kHeadDim>
Status launch_attention_and_mass(const H2ODecodeParams& p, const SchemeArgs& a, cudaStream_t stream) {
  const HeadMajorVariant var{p.k_cache, p.v_cache, p.context_lens, p.num_kv_heads, p.max_tokens};
  const cudaError_t e = scheme_detail::launch_group<T, kHeadDim>(a, p.num_kv_heads, p.num_seqs, var, stream);
  if (e != cudaSuccess) return scheme_detail::cuda_status(e, "scheme_decode_kernel<h2o><<<>>>", __FILE__, __LINE__);
  if (p.num_splits > 1) {
    const Status s = scheme_detail::combine_splits(p.dtype, p.num_seqs, p.num_splits, p.num_q_heads, p.head_dim,
                                                   p.partial_out, p.lse, p.out, stream);
    if (!s.ok()) return s;
  }
  const int group = p.num_q_heads / p.num_kv_heads;
  const dim3 grid(static_cast<unsigned>(p.num_kv_heads), static_cast<unsigned>((p.max_tokens + kAccChunk - 1) / kAccChunk),
                  static_cast<unsigned>(p.num_seqs));
  h2o_mass_kernel<T, kHeadDim><<<grid, kAccThreads, group * sizeof(float), stream>>>(p, a.scale_log2);
  return scheme_detail::cuda_status(cudaGetLastError(), "h2o_mass_kernel<<<>>>", __FILE__, __LINE__);
}

template <typename T>
Status launch_dim(const H2ODecodeParams& p, const SchemeArgs& a, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64: return launch_attention_and_mass<T, 64>(p, a, stream);
    case 128: return launch_attention_and_mass<T, 128>(p, a, stream);
    default: return launch_attention_and_mass<T, 256>(p, a, stream);  // 256: the checks allow nothing else
  }
}

}  // namespace

Status launch_h2o_decode_attention(const H2ODecodeParams& p, Stream stream) {
  KVPLAN_SCHEME_CHECK(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  KVPLAN_SCHEME_CHECK(p.num_seqs >= 0 && p.num_seqs <= 65535, "num_seqs must be in [0, 65535] (grid z)");
  KVPLAN_SCHEME_CHECK(p.num_q_heads > 0 && p.num_kv_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
                      "num_kv_heads=" + std::to_string(p.num_kv_heads) + " must divide num_q_heads=" +
                          std::to_string(p.num_q_heads));
  KVPLAN_SCHEME_CHECK(p.num_q_heads / p.num_kv_heads <= 8192, "group must be <= 8192 (mass kernel shared memory)");
  KVPLAN_SCHEME_CHECK(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256,
                      "head_dim=" + std::to_string(p.head_dim) + " has no instance (64, 128, 256)");
  KVPLAN_SCHEME_CHECK(p.max_tokens > 0, "max_tokens must be > 0");
  KVPLAN_SCHEME_CHECK(std::isfinite(p.softmax_scale), "softmax_scale must be finite");
  KVPLAN_SCHEME_CHECK(p.q && p.k_cache && p.v_cache && p.out && p.context_lens && p.acc_scores && p.lse,
                      "null pointer among q, k_cache, v_cache, out, context_lens, acc_scores, lse");
  KVPLAN_SCHEME_CHECK(scheme_detail::aligned16(p.q) && scheme_detail::aligned16(p.k_cache) &&
                          scheme_detail::aligned16(p.v_cache),
                      "q, k_cache and v_cache must be 16-byte aligned");
  KVPLAN_SCHEME_CHECK(p.num_splits >= 1 && p.num_splits <= 65535, "num_splits must be in [1, 65535] (grid y)");
  KVPLAN_SCHEME_CHECK(p.num_splits == 1 || p.partial_out, "num_splits > 1 needs partial_out");
  if (p.num_seqs == 0) return Status::success();
  SchemeArgs a{};
  a.q = p.q;
  a.out = p.out;
  a.partial_out = p.num_splits > 1 ? p.partial_out : nullptr;
  a.partial_lse = p.lse;  // always: the mass kernel needs the final log-sum-exp
  a.num_q_heads = p.num_q_heads;
  a.head_dim = p.head_dim;
  a.group = p.num_q_heads / p.num_kv_heads;
  a.group_tiles = 1;
  a.num_splits = p.num_splits;
  a.scale_log2 = p.softmax_scale * scheme_detail::kLog2e;
  return p.dtype == ElemType::kBF16 ? launch_dim<__nv_bfloat16>(p, a, stream) : launch_dim<__half>(p, a, stream);
}

Status launch_h2o_evict(const H2OEvictParams& p, Stream stream) {
  KVPLAN_SCHEME_CHECK(p.num_seqs >= 0 && p.num_seqs <= 65535, "num_seqs must be in [0, 65535] (grid y)");
  KVPLAN_SCHEME_CHECK(p.num_kv_heads > 0 && p.head_dim > 0 && p.head_dim % 8 == 0,
                      "num_kv_heads must be > 0 and head_dim=" + std::to_string(p.head_dim) + " a positive multiple of 8");
  KVPLAN_SCHEME_CHECK(p.max_tokens > 0, "max_tokens must be > 0");
  KVPLAN_SCHEME_CHECK(p.budget_tokens >= 1, "budget_tokens=" + std::to_string(p.budget_tokens) + " must be >= 1");
  KVPLAN_SCHEME_CHECK(p.recent_tokens >= 0 && p.recent_tokens <= p.budget_tokens,
                      "recent_tokens=" + std::to_string(p.recent_tokens) + " must be in [0, budget_tokens=" +
                          std::to_string(p.budget_tokens) + "]");
  KVPLAN_SCHEME_CHECK(p.k_in && p.v_in && p.scores_in && p.context_lens && p.k_out && p.v_out && p.scores_out &&
                          p.new_context_lens,
                      "null pointer among k_in, v_in, scores_in, context_lens, k_out, v_out, scores_out, new_context_lens");
  KVPLAN_SCHEME_CHECK(p.k_out != p.k_in && p.v_out != p.v_in && p.scores_out != p.scores_in && p.k_out != p.v_in &&
                          p.v_out != p.k_in,
                      "outputs must not alias inputs (compaction is out of place)");
  KVPLAN_SCHEME_CHECK(scheme_detail::aligned16(p.k_in) && scheme_detail::aligned16(p.v_in) &&
                          scheme_detail::aligned16(p.k_out) && scheme_detail::aligned16(p.v_out),
                      "k_in, v_in, k_out and v_out must be 16-byte aligned");
  if (p.num_seqs == 0) return Status::success();
  const dim3 grid(static_cast<unsigned>(p.num_kv_heads), static_cast<unsigned>(p.num_seqs));
  h2o_evict_kernel<<<grid, kEvictThreads, 0, stream>>>(p);
  return scheme_detail::cuda_status(cudaGetLastError(), "h2o_evict_kernel<<<>>>", __FILE__, __LINE__);
}

}  // namespace kvplan::kernels
