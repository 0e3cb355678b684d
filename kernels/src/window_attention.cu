// Sliding-window and StreamingLLM decode (window_attention.h): the paged-window variant of the
// scheme decode loop (scheme_decode_kernels.cuh), its Params checks and launch.
#include "kvplan/kernels/window_attention.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "scheme_decode_kernels.cuh"

namespace kvplan::kernels {
namespace {

using scheme_detail::SchemeArgs;

// w_j = theta^(-2j / rotary_dim) for pair j, in fp32 (the same function for q and k).
__device__ __forceinline__ float rope_inv_freq(int j, int rotary_dim, float log2_theta) {
  return exp2f(-2.f * static_cast<float>(j) / static_cast<float>(rotary_dim) * log2_theta);
}

// Tokens of window_span over a paged cache; kRope: rotate K at cache position i and q at n - 1.
template <bool kRope>
struct PagedWindowVariant {
  const uint16_t* k;            // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const uint16_t* v;            // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const int32_t* block_table;   // [num_seqs, max_blocks_per_seq]
  const int32_t* context_lens;  // [num_seqs]
  int max_blocks_per_seq;
  int num_kv_heads;
  int log2_tokens_per_block;
  int sink_tokens;
  int window_tokens;
  int rotary_dim;
  float log2_theta;

  struct Seq {
    int n;
    WindowSpan span;
    float inv_freq[8];  // kRope: w of this lane's 8 channels (unused past rotary_dim)
  };

  __device__ Seq seq_state(int seq, int lane) const {
    Seq s{};
    s.span = window_span(__ldg(context_lens + seq), sink_tokens, window_tokens);
    s.n = s.span.count;
    if constexpr (kRope) {
      const int half = rotary_dim / 2;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int c = lane * 8 + i;
        s.inv_freq[i] = rope_inv_freq(c < half ? c : c - half, rotary_dim, log2_theta);
      }
    }
    return s;
  }

  template <typename T, int kDim>
  __device__ void prepare_query(const SchemeArgs& a, const Seq& sq, int seq, int /*kv_head*/, int head0, int heads,
                                float* s_q) const {
    if constexpr (!kRope) {
      scheme_detail::plain_query<T, kDim>(a, seq, head0, heads, s_q);
    } else {
      const float pos = static_cast<float>(sq.n > 0 ? sq.n - 1 : 0);  // the query is the last cached token
      const int half = rotary_dim / 2;
      const uint16_t* q = a.q + (static_cast<size_t>(seq) * a.num_q_heads + head0) * kDim;
      for (int e = static_cast<int>(threadIdx.x); e < heads * kDim; e += scheme_detail::kThreads) {
        const int c = e % kDim;
        float x = scheme_detail::to_float<T>(q[e]);
        if (c < rotary_dim) {
          const bool low = c < half;
          const float other = scheme_detail::to_float<T>(q[low ? e + half : e - half]);
          float sn, cs;
          sincosf(pos * rope_inv_freq(low ? c : c - half, rotary_dim, log2_theta), &sn, &cs);
          x = low ? x * cs - other * sn : x * cs + other * sn;
        }
        s_q[e] = x;
      }
    }
  }

  template <typename T, int kDim>
  __device__ void load(const Seq& sq, int seq, int kv_head, int i, int lane, bool valid, float (&kf)[8],
                       float (&vf)[8]) const {
    uint4 kr = make_uint4(0, 0, 0, 0), vr = make_uint4(0, 0, 0, 0);
    if (valid) {  // only attended tokens' table entries are read
      const int token = window_token(sq.span, i);
      const int block = __ldg(block_table + static_cast<size_t>(seq) * max_blocks_per_seq + (token >> log2_tokens_per_block));
      const int slot = token & ((1 << log2_tokens_per_block) - 1);
      const size_t row = ((static_cast<size_t>(block) * num_kv_heads + kv_head) << log2_tokens_per_block) + slot;
      kr = scheme_detail::load16(k + row * kDim + lane * 8);
      vr = scheme_detail::load16(v + row * kDim + lane * 8);
    }
    scheme_detail::to_float8<T>(kr, kf);
    scheme_detail::to_float8<T>(vr, vf);
    if constexpr (kRope) {
      // Channel c < h pairs with c + h (h = rotary_dim / 2), which sits h / 8 lanes away in the same
      // token's lane group. Every lane shuffles (convergence); lanes past rotary_dim keep their values.
      constexpr int kLanes = kDim / 8;
      const int half_lanes = rotary_dim / 16;
      const bool rotated = lane < rotary_dim / 8;
      const bool low = lane < half_lanes;
      const int partner = rotated ? (low ? lane + half_lanes : lane - half_lanes) : lane;
      const int src = (static_cast<int>(threadIdx.x) & 31) - lane + partner;
      static_assert(32 % kLanes == 0, "lane groups inside a warp");
      float other[8];
#pragma unroll
      for (int c = 0; c < 8; ++c) other[c] = __shfl_sync(0xffffffffu, kf[c], src);
      if (rotated) {
        const float pos = static_cast<float>(i);  // cache position = visit index
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          float sn, cs;
          sincosf(pos * sq.inv_freq[c], &sn, &cs);
          kf[c] = low ? kf[c] * cs - other[c] * sn : kf[c] * cs + other[c] * sn;
        }
      }
    }
  }

  template <typename T, int kDim>
  __device__ void finish(const SchemeArgs& a, int seq, int split, int /*kv_head*/, int head0, int heads,
                         const float* s_res) const {
    scheme_detail::plain_finish<T, kDim>(a, seq, split, head0, heads, s_res);
  }
};

template <typename T, bool kRope>
cudaError_t launch_dim(int head_dim, const SchemeArgs& a, int num_kv_heads, int num_seqs,
                       const PagedWindowVariant<kRope>& var, cudaStream_t stream) {
  switch (head_dim) {
    case 64: return scheme_detail::launch_group<T, 64>(a, num_kv_heads, num_seqs, var, stream);
    case 128: return scheme_detail::launch_group<T, 128>(a, num_kv_heads, num_seqs, var, stream);
    case 256: return scheme_detail::launch_group<T, 256>(a, num_kv_heads, num_seqs, var, stream);
    default: return cudaErrorInvalidValue;  // excluded by the checks
  }
}

template <bool kRope>
cudaError_t launch_typed(const WindowDecodeParams& p, const SchemeArgs& a, const PagedWindowVariant<kRope>& var,
                         cudaStream_t stream) {
  return p.dtype == ElemType::kBF16 ? launch_dim<__nv_bfloat16>(p.head_dim, a, p.num_kv_heads, p.num_seqs, var, stream)
                                    : launch_dim<__half>(p.head_dim, a, p.num_kv_heads, p.num_seqs, var, stream);
}

}  // namespace

Status launch_window_decode_attention(const WindowDecodeParams& p, Stream stream) {
  KVPLAN_SCHEME_CHECK(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  KVPLAN_SCHEME_CHECK(p.num_seqs >= 0 && p.num_seqs <= 65535, "num_seqs must be in [0, 65535] (grid z)");
  KVPLAN_SCHEME_CHECK(p.num_q_heads > 0 && p.num_kv_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
                      "num_kv_heads=" + std::to_string(p.num_kv_heads) + " must divide num_q_heads=" +
                          std::to_string(p.num_q_heads));
  KVPLAN_SCHEME_CHECK(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256,
                      "head_dim=" + std::to_string(p.head_dim) + " has no instance (64, 128, 256)");
  const int tpb = p.tokens_per_block;
  KVPLAN_SCHEME_CHECK(tpb >= 1 && tpb <= 1024 && (tpb & (tpb - 1)) == 0,
                      "tokens_per_block=" + std::to_string(tpb) + " must be a power of two in [1, 1024]");
  KVPLAN_SCHEME_CHECK(p.num_blocks > 0 && p.max_blocks_per_seq > 0, "num_blocks and max_blocks_per_seq must be > 0");
  KVPLAN_SCHEME_CHECK(std::isfinite(p.softmax_scale), "softmax_scale must be finite");
  KVPLAN_SCHEME_CHECK(p.window_tokens > 0, "window_tokens=" + std::to_string(p.window_tokens) + " must be > 0");
  KVPLAN_SCHEME_CHECK(p.sink_tokens >= 0, "sink_tokens=" + std::to_string(p.sink_tokens) + " must be >= 0");
  KVPLAN_SCHEME_CHECK(p.rotary_dim >= 0 && p.rotary_dim % 16 == 0 && p.rotary_dim <= p.head_dim,
                      "rotary_dim=" + std::to_string(p.rotary_dim) + " must be a multiple of 16 in [0, head_dim]");
  KVPLAN_SCHEME_CHECK(p.rotary_dim == 0 || (std::isfinite(p.rope_theta) && p.rope_theta > 1.f),
                      "rope_theta must be finite and > 1");
  KVPLAN_SCHEME_CHECK(p.q && p.k_cache && p.v_cache && p.out && p.context_lens && p.block_table,
                      "null pointer among q, k_cache, v_cache, out, context_lens, block_table");
  KVPLAN_SCHEME_CHECK(scheme_detail::aligned16(p.q) && scheme_detail::aligned16(p.k_cache) &&
                          scheme_detail::aligned16(p.v_cache),
                      "q, k_cache and v_cache must be 16-byte aligned");
  KVPLAN_SCHEME_CHECK(p.num_splits >= 1 && p.num_splits <= 65535, "num_splits must be in [1, 65535] (grid y)");
  KVPLAN_SCHEME_CHECK(p.num_splits == 1 || (p.partial_out && p.partial_lse), "num_splits > 1 needs partial_out and partial_lse");
  if (p.num_seqs == 0) return Status::success();

  SchemeArgs a{};
  a.q = p.q;
  a.out = p.out;
  a.partial_out = p.num_splits > 1 ? p.partial_out : nullptr;
  a.partial_lse = p.num_splits > 1 ? p.partial_lse : nullptr;
  a.num_q_heads = p.num_q_heads;
  a.head_dim = p.head_dim;
  a.group = p.num_q_heads / p.num_kv_heads;
  a.group_tiles = 1;
  a.num_splits = p.num_splits;
  a.scale_log2 = p.softmax_scale * scheme_detail::kLog2e;
  int log2_tpb = 0;
  while ((1 << log2_tpb) < tpb) ++log2_tpb;
  const float log2_theta = p.rotary_dim > 0 ? std::log2(p.rope_theta) : 0.f;
  cudaError_t e;
  if (p.rotary_dim > 0) {
    const PagedWindowVariant<true> var{p.k_cache, p.v_cache, p.block_table, p.context_lens, p.max_blocks_per_seq,
                                       p.num_kv_heads, log2_tpb, p.sink_tokens, p.window_tokens, p.rotary_dim, log2_theta};
    e = launch_typed(p, a, var, stream);
  } else {
    const PagedWindowVariant<false> var{p.k_cache, p.v_cache, p.block_table, p.context_lens, p.max_blocks_per_seq,
                                        p.num_kv_heads, log2_tpb, p.sink_tokens, p.window_tokens, 0, 0.f};
    e = launch_typed(p, a, var, stream);
  }
  if (e != cudaSuccess) return scheme_detail::cuda_status(e, "scheme_decode_kernel<window><<<>>>", __FILE__, __LINE__);
  if (p.num_splits == 1) return Status::success();
  return scheme_detail::combine_splits(p.dtype, p.num_seqs, p.num_splits, p.num_q_heads, p.head_dim, p.partial_out,
                                       p.partial_lse, p.out, stream);
}

}  // namespace kvplan::kernels
