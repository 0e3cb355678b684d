// Launchers of decode attention (decode_attention.h): Params checks, the choice of kernel instance
// (dtype x head dim x query-head tile x KV addressing), the launch, and CUDA errors as Status.
#include "kvplan/kernels/decode_attention.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "decode_attention_kernels.cuh"

namespace kvplan::kernels {
namespace {

using decode_detail::DecodeArgs;

#define KVPLAN_CHECK_PARAM(cond, why) \
  do {                                \
    if (!(cond)) return params_error(why, __FILE__, __LINE__); \
  } while (0)

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(call, static_cast<int>(e), cudaGetErrorString(e), std::string(file) + ":" + std::to_string(line));
}

// Checks shared by the contiguous and the paged Params.
template <typename P>
Status check_common(const P& p) {
  KVPLAN_CHECK_PARAM(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  KVPLAN_CHECK_PARAM(p.num_seqs >= 0 && p.num_seqs <= 65535, "num_seqs must be in [0, 65535] (grid z)");
  KVPLAN_CHECK_PARAM(p.num_q_heads > 0 && p.num_kv_heads > 0, "num_q_heads and num_kv_heads must be > 0");
  KVPLAN_CHECK_PARAM(p.num_q_heads % p.num_kv_heads == 0,
                     "num_kv_heads=" + std::to_string(p.num_kv_heads) + " must divide num_q_heads=" +
                         std::to_string(p.num_q_heads));
  KVPLAN_CHECK_PARAM(p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256,
                     "head_dim=" + std::to_string(p.head_dim) + " has no instance (64, 128, 256)");
  KVPLAN_CHECK_PARAM(std::isfinite(p.softmax_scale), "softmax_scale must be finite");
  KVPLAN_CHECK_PARAM(p.q && p.k_cache && p.v_cache && p.out && p.context_lens, "null pointer among q, k_cache, v_cache, out, context_lens");
  KVPLAN_CHECK_PARAM(aligned16(p.q) && aligned16(p.k_cache) && aligned16(p.v_cache),
                     "q, k_cache and v_cache must be 16-byte aligned");
  KVPLAN_CHECK_PARAM(p.num_splits >= 1 && p.num_splits <= 65535, "num_splits must be in [1, 65535] (grid y)");
  KVPLAN_CHECK_PARAM(p.num_splits == 1 || (p.partial_out && p.partial_lse),
                     "num_splits > 1 needs partial_out and partial_lse");
  return Status::success();
}

template <typename T, int kHeadDim, int kGroupTile, typename Rows>
cudaError_t launch_instance(DecodeArgs args, int num_kv_heads, int num_seqs, const Rows& rows, cudaStream_t stream) {
  args.group_tiles = (args.group + kGroupTile - 1) / kGroupTile;
  const dim3 grid(static_cast<unsigned>(num_kv_heads * args.group_tiles), static_cast<unsigned>(args.num_splits),
                  static_cast<unsigned>(num_seqs));
  decode_detail::decode_attention_kernel<T, kHeadDim, kGroupTile, Rows><<<grid, decode_detail::kThreads, 0, stream>>>(args, rows);
  return cudaGetLastError();
}

// Query-head tile: 1 for MHA (no registers spent on absent heads), 4 for groups of 2-4, 8 above.
template <typename T, int kHeadDim, typename Rows>
cudaError_t launch_group(const DecodeArgs& args, int num_kv_heads, int num_seqs, const Rows& rows, cudaStream_t stream) {
  if (args.group == 1) return launch_instance<T, kHeadDim, 1>(args, num_kv_heads, num_seqs, rows, stream);
  if (args.group <= 4) return launch_instance<T, kHeadDim, 4>(args, num_kv_heads, num_seqs, rows, stream);
  return launch_instance<T, kHeadDim, 8>(args, num_kv_heads, num_seqs, rows, stream);
}

template <typename T, typename Rows>
cudaError_t launch_head_dim(int head_dim, const DecodeArgs& args, int num_kv_heads, int num_seqs, const Rows& rows,
                            cudaStream_t stream) {
  switch (head_dim) {
    case 64: return launch_group<T, 64>(args, num_kv_heads, num_seqs, rows, stream);
    case 128: return launch_group<T, 128>(args, num_kv_heads, num_seqs, rows, stream);
    case 256: return launch_group<T, 256>(args, num_kv_heads, num_seqs, rows, stream);
    default: return cudaErrorInvalidValue;  // excluded by check_common
  }
}

Status check_combine(const DecodeCombineParams& p) {
  KVPLAN_CHECK_PARAM(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  KVPLAN_CHECK_PARAM(p.num_seqs >= 0 && p.num_q_heads > 0 && p.num_splits >= 1, "num_seqs >= 0, num_q_heads > 0, num_splits >= 1");
  KVPLAN_CHECK_PARAM(int64_t{p.num_seqs} * p.num_q_heads <= INT32_MAX, "num_seqs * num_q_heads must fit the grid");
  KVPLAN_CHECK_PARAM(p.head_dim > 0 && p.head_dim <= 256 && p.head_dim % 8 == 0, "head_dim must be a multiple of 8 in [8, 256]");
  KVPLAN_CHECK_PARAM(p.partial_out && p.partial_lse && p.out, "null pointer among partial_out, partial_lse, out");
  return Status::success();
}

Status launch_combine_checked(const DecodeCombineParams& p, Stream stream) {
  if (p.num_seqs == 0) return Status::success();
  const unsigned ctas = static_cast<unsigned>(p.num_seqs) * static_cast<unsigned>(p.num_q_heads);
  if (p.dtype == ElemType::kBF16) {
    decode_detail::decode_combine_kernel<__nv_bfloat16><<<ctas, decode_detail::kCombineThreads, 0, stream>>>(p);
  } else {
    decode_detail::decode_combine_kernel<__half><<<ctas, decode_detail::kCombineThreads, 0, stream>>>(p);
  }
  return cuda_status(cudaGetLastError(), "decode_combine_kernel<<<>>>", __FILE__, __LINE__);
}

// Shared tail of both attention launchers: the attention kernel (final output, or partials when
// split), then the combine kernel when split.
template <typename P, typename Rows>
Status run(const P& p, const Rows& rows, Stream stream) {
  if (p.num_seqs == 0) return Status::success();
  DecodeArgs args{};
  args.q = p.q;
  args.context_lens = p.context_lens;
  args.out = p.out;
  args.partial_out = p.num_splits > 1 ? p.partial_out : nullptr;
  args.partial_lse = p.num_splits > 1 ? p.partial_lse : nullptr;
  args.num_q_heads = p.num_q_heads;
  args.group = p.num_q_heads / p.num_kv_heads;
  args.group_tiles = 1;  // set per instance
  args.num_splits = p.num_splits;
  args.scale_log2 = p.softmax_scale * decode_detail::kLog2e;
  const cudaError_t e = p.dtype == ElemType::kBF16
                            ? launch_head_dim<__nv_bfloat16>(p.head_dim, args, p.num_kv_heads, p.num_seqs, rows, stream)
                            : launch_head_dim<__half>(p.head_dim, args, p.num_kv_heads, p.num_seqs, rows, stream);
  if (e != cudaSuccess) return cuda_status(e, "decode_attention_kernel<<<>>>", __FILE__, __LINE__);
  if (p.num_splits == 1) return Status::success();
  DecodeCombineParams c;
  c.dtype = p.dtype;
  c.num_seqs = p.num_seqs;
  c.num_splits = p.num_splits;
  c.num_q_heads = p.num_q_heads;
  c.head_dim = p.head_dim;
  c.partial_out = p.partial_out;
  c.partial_lse = p.partial_lse;
  c.out = p.out;
  return launch_combine_checked(c, stream);
}

}  // namespace

Status launch_decode_attention(const DecodeAttentionParams& p, Stream stream) {
  if (Status s = check_common(p); !s.ok()) return s;
  KVPLAN_CHECK_PARAM(p.max_seq_len > 0, "max_seq_len must be > 0");
  decode_detail::ContiguousRows rows{p.k_cache, p.v_cache, p.max_seq_len, p.num_kv_heads};
  return run(p, rows, stream);
}

Status launch_paged_decode_attention(const PagedDecodeAttentionParams& p, Stream stream) {
  if (Status s = check_common(p); !s.ok()) return s;
  const int tpb = p.tokens_per_block;
  KVPLAN_CHECK_PARAM(tpb >= 1 && tpb <= 1024 && (tpb & (tpb - 1)) == 0,
                     "tokens_per_block=" + std::to_string(tpb) + " must be a power of two in [1, 1024]");
  KVPLAN_CHECK_PARAM(p.num_blocks > 0 && p.max_blocks_per_seq > 0, "num_blocks and max_blocks_per_seq must be > 0");
  KVPLAN_CHECK_PARAM(p.block_table != nullptr, "block_table is null");
  int log2_tpb = 0;
  while ((1 << log2_tpb) < tpb) ++log2_tpb;
  decode_detail::PagedRows rows{p.k_cache, p.v_cache, p.block_table, p.max_blocks_per_seq, p.num_kv_heads, log2_tpb};
  return run(p, rows, stream);
}

Status launch_decode_attention_combine(const DecodeCombineParams& p, Stream stream) {
  if (Status s = check_combine(p); !s.ok()) return s;
  return launch_combine_checked(p, stream);
}

}  // namespace kvplan::kernels
