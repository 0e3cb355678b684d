// Low-rank KV decode (low_rank.h): the latent variant of the scheme decode loop
// (scheme_decode_kernels.cuh). The query is projected into the rank-r latent space once per CTA
// (q_lat = q U_kᵀ), the loop runs over r-wide latent rows (16-bit or int4), and the r-wide result is
// projected back with U_v once per CTA.
#include "kvplan/kernels/low_rank.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "scheme_decode_kernels.cuh"

namespace kvplan::kernels {
namespace {

using scheme_detail::SchemeArgs;

template <bool kInt4>
struct LatentVariant {
  const void* k_latent;         // 16-bit [num_seqs, num_kv_heads, max_seq_len, rank] or int4 bytes [.., rank / 2]
  const void* v_latent;
  const uint16_t* k_meta;       // int4: [num_seqs, num_kv_heads, max_seq_len, rank / group_size, 2] fp16
  const uint16_t* v_meta;
  const uint16_t* u_k;          // [num_kv_heads, rank, head_dim]
  const uint16_t* u_v;          // [num_kv_heads, rank, head_dim]
  const int32_t* context_lens;  // [num_seqs]
  int num_kv_heads;
  int max_seq_len;
  int head_dim;
  int group_size;

  struct Seq {
    int n;
  };
  __device__ Seq seq_state(int seq, int /*lane*/) const { return Seq{max(0, __ldg(context_lens + seq))}; }

  // s_q[g][j] = sum_d q[head0 + g][d] * U_k[kv_head][j][d], fp32.
  template <typename T, int kDim>
  __device__ void prepare_query(const SchemeArgs& a, const Seq&, int seq, int kv_head, int head0, int heads, float* s_q) const {
    for (int e = static_cast<int>(threadIdx.x); e < heads * kDim; e += scheme_detail::kThreads) {
      const int g = e / kDim;
      const int j = e % kDim;
      const uint16_t* q = a.q + (static_cast<size_t>(seq) * a.num_q_heads + head0 + g) * head_dim;
      const uint16_t* u = u_k + (static_cast<size_t>(kv_head) * kDim + j) * head_dim;
      float dot = 0.f;
      for (int d = 0; d < head_dim; d += 8) {
        float qf[8], uf[8];
        scheme_detail::to_float8<T>(scheme_detail::load16(q + d), qf);
        scheme_detail::to_float8<T>(scheme_detail::load16(u + d), uf);
#pragma unroll
        for (int i = 0; i < 8; ++i) dot = fmaf(qf[i], uf[i], dot);
      }
      s_q[e] = dot;
    }
  }

  template <bool kKey, typename T, int kDim>
  __device__ void load_one(int seq, int kv_head, int i, int lane, bool valid, float (&x)[8]) const {
    const size_t row = (static_cast<size_t>(seq) * num_kv_heads + kv_head) * max_seq_len + i;
    if constexpr (!kInt4) {
      const uint16_t* base = static_cast<const uint16_t*>(kKey ? k_latent : v_latent);
      uint4 raw = make_uint4(0, 0, 0, 0);
      if (valid) raw = scheme_detail::load16(base + row * kDim + lane * 8);
      scheme_detail::to_float8<T>(raw, x);
    } else {
      // 8 channels = 4 bytes of codes (channel 2j low nibble, 2j+1 high); group_size is a multiple of
      // 8, so one {scale, zero} pair covers the lane's 8 channels.
      uint32_t codes = 0, meta = 0;
      if (valid) {
        const uint8_t* base = static_cast<const uint8_t*>(kKey ? k_latent : v_latent);
        codes = __ldg(reinterpret_cast<const uint32_t*>(base + row * (kDim / 2) + lane * 4));
        const uint16_t* m = (kKey ? k_meta : v_meta) + (row * (kDim / group_size) + lane * 8 / group_size) * 2;
        meta = __ldg(reinterpret_cast<const uint32_t*>(m));
      }
      const float scale = __half2float(__ushort_as_half(static_cast<uint16_t>(meta & 0xFFFFu)));
      const float zero = __half2float(__ushort_as_half(static_cast<uint16_t>(meta >> 16)));
#pragma unroll
      for (int c = 0; c < 8; ++c) x[c] = fmaf(static_cast<float>((codes >> (4 * c)) & 0xFu), scale, zero);
    }
  }

  template <typename T, int kDim>
  __device__ void load(const Seq&, int seq, int kv_head, int i, int lane, bool valid, float (&kf)[8], float (&vf)[8]) const {
    load_one<true, T, kDim>(seq, kv_head, i, lane, valid, kf);
    load_one<false, T, kDim>(seq, kv_head, i, lane, valid, vf);
  }

  // out[head0 + g][d] = sum_j s_res[g][j] * U_v[kv_head][j][d]; consecutive threads take consecutive
  // d, so each U_v row is read coalesced.
  template <typename T, int kDim>
  __device__ void finish(const SchemeArgs& a, int seq, int split, int kv_head, int head0, int heads, const float* s_res) const {
    for (int e = static_cast<int>(threadIdx.x); e < heads * head_dim; e += scheme_detail::kThreads) {
      const int g = e / head_dim;
      const int d = e % head_dim;
      const uint16_t* u = u_v + static_cast<size_t>(kv_head) * kDim * head_dim + d;
      float o = 0.f;
      for (int j = 0; j < kDim; ++j) o = fmaf(s_res[g * kDim + j], scheme_detail::to_float<T>(u[static_cast<size_t>(j) * head_dim]), o);
      scheme_detail::store_out<T>(a, seq, split, head0 + g, d, o);
    }
  }
};

template <typename T, bool kInt4>
cudaError_t launch_rank(const LowRankDecodeParams& p, const SchemeArgs& a, cudaStream_t stream) {
  const LatentVariant<kInt4> var{p.k_latent, p.v_latent, p.k_meta, p.v_meta, p.u_k, p.u_v, p.context_lens,
                                 p.num_kv_heads, p.max_seq_len, p.head_dim, p.group_size};
  switch (p.rank) {
    case 32: return scheme_detail::launch_group<T, 32>(a, p.num_kv_heads, p.num_seqs, var, stream);
    case 64: return scheme_detail::launch_group<T, 64>(a, p.num_kv_heads, p.num_seqs, var, stream);
    case 128: return scheme_detail::launch_group<T, 128>(a, p.num_kv_heads, p.num_seqs, var, stream);
    default: return cudaErrorInvalidValue;  // excluded by the checks
  }
}

template <typename T>
cudaError_t launch_typed(const LowRankDecodeParams& p, const SchemeArgs& a, cudaStream_t stream) {
  return p.int4_latents ? launch_rank<T, true>(p, a, stream) : launch_rank<T, false>(p, a, stream);
}

}  // namespace

Status launch_low_rank_decode_attention(const LowRankDecodeParams& p, Stream stream) {
  KVPLAN_SCHEME_CHECK(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  KVPLAN_SCHEME_CHECK(p.num_seqs >= 0 && p.num_seqs <= 65535, "num_seqs must be in [0, 65535] (grid z)");
  KVPLAN_SCHEME_CHECK(p.num_q_heads > 0 && p.num_kv_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
                      "num_kv_heads=" + std::to_string(p.num_kv_heads) + " must divide num_q_heads=" +
                          std::to_string(p.num_q_heads));
  KVPLAN_SCHEME_CHECK(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256,
                      "head_dim=" + std::to_string(p.head_dim) + " has no instance (64, 128, 256)");
  KVPLAN_SCHEME_CHECK(p.rank == 32 || p.rank == 64 || p.rank == 128,
                      "rank=" + std::to_string(p.rank) + " has no instance (32, 64, 128)");
  KVPLAN_SCHEME_CHECK(!p.int4_latents || (p.group_size >= 8 && p.group_size % 8 == 0 && p.rank % p.group_size == 0),
                      "group_size=" + std::to_string(p.group_size) + " must be a multiple of 8 dividing rank=" +
                          std::to_string(p.rank));
  KVPLAN_SCHEME_CHECK(p.max_seq_len > 0, "max_seq_len must be > 0");
  KVPLAN_SCHEME_CHECK(std::isfinite(p.softmax_scale), "softmax_scale must be finite");
  KVPLAN_SCHEME_CHECK(p.q && p.u_k && p.u_v && p.k_latent && p.v_latent && p.context_lens && p.out,
                      "null pointer among q, u_k, u_v, k_latent, v_latent, context_lens, out");
  KVPLAN_SCHEME_CHECK(!p.int4_latents || (p.k_meta && p.v_meta), "int4 latents need k_meta and v_meta");
  KVPLAN_SCHEME_CHECK(scheme_detail::aligned16(p.q) && scheme_detail::aligned16(p.u_k) && scheme_detail::aligned16(p.u_v) &&
                          scheme_detail::aligned16(p.k_latent) && scheme_detail::aligned16(p.v_latent),
                      "q, u_k, u_v, k_latent and v_latent must be 16-byte aligned");
  KVPLAN_SCHEME_CHECK(!p.int4_latents || (reinterpret_cast<uintptr_t>(p.k_meta) % 4 == 0 &&
                                          reinterpret_cast<uintptr_t>(p.v_meta) % 4 == 0),
                      "k_meta and v_meta must be 4-byte aligned");
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
  const cudaError_t e = p.dtype == ElemType::kBF16 ? launch_typed<__nv_bfloat16>(p, a, stream) : launch_typed<__half>(p, a, stream);
  if (e != cudaSuccess) return scheme_detail::cuda_status(e, "scheme_decode_kernel<low_rank><<<>>>", __FILE__, __LINE__);
  if (p.num_splits == 1) return Status::success();
  // Partials are already in head_dim space (U_v is linear, so it commutes with the combine's weights).
  return scheme_detail::combine_splits(p.dtype, p.num_seqs, p.num_splits, p.num_q_heads, p.head_dim, p.partial_out,
                                       p.partial_lse, p.out, stream);
}

}  // namespace kvplan::kernels
