// MLA decode, absorbed form, over a paged latent cache (mla_attention.h): the kernel, its launcher
// and the split combine (decode_attention's combine kernel, run over kv_lora_rank channels).
//
// SCALAR-FMA VERSION. Work split: a CTA per (sequence, tile of kMlaDecodeHeadTile = 16 query heads,
// split), 256 threads. The CTA stages 16 tokens of the latent at a time in shared memory as fp32
// (dequantized once there for fp8) and every one of its 16 heads reads them from shared memory, so
// each latent byte is read from memory once per head tile: DeepSeek-V3's 128 heads take 8 CTAs per
// sequence and split, adjacent in launch order (blockIdx.x is the head tile), so 7 of the 8 reads of
// a latent row hit L2 rather than HBM.
// Per token tile:
//   1. load: 16 tokens x 576 values -> s_kv (rows past the split's end are zeros, never loaded);
//   2. scores: thread (head h = tid / 16, token = tid % 16) computes q_h . row (576 FMAs from shared
//      memory, float4 reads; rows padded to 580 floats so 8 consecutive tokens hit distinct banks);
//   3. softmax: thread h < 16 updates head h's running max / sum (base 2) over the 16 scores and turns
//      them into probabilities in s_p, publishing the rescale factor alpha;
//   4. accumulate: thread owns latent channels 2*tid, 2*tid+1 for all 16 heads (32 fp32 accumulators):
//      acc = alpha * acc + sum_t p_t * c_t (float2 reads of s_kv, float4 broadcast reads of s_p).
// Barriers separate the steps; every thread runs every step (masked lanes compute on zeros).
// Why not tensor cores: with 128 heads a latent byte feeds ~120 FMAs, far above the H100/H200
// fp32 balance point (~14 FMA/byte), so this kernel is compute-bound on CUDA cores; FlashMLA uses
// wgmma for the same reason. It is the correct-by-construction baseline an MMA version must match;
// do not calibrate MLA decode bandwidth from it.
#include "kvplan/kernels/mla_attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "decode_attention_kernels.cuh"

namespace kvplan::kernels {
namespace {

using decode_detail::Elem;
using decode_detail::load16;
using decode_detail::to_float8;

constexpr int kThreads = 256;
constexpr int kHeads = kMlaDecodeHeadTile;  // 16
constexpr int kTile = 16;                   // latent tokens per shared-memory tile
constexpr int kRank = kMlaKvLoraRank;       // 512
constexpr int kRow = kMlaKvLoraRank + kMlaRopeDim;  // 576 values per latent row
constexpr int kStride = kRow + 4;  // floats per shared row: float4-aligned, 4 banks of skew per row
static_assert(kHeads * kTile == kThreads, "one score per thread per tile");
static_assert(2 * kThreads == kRank, "each thread owns two latent channels");
static_assert(kHeads % 4 == 0, "probabilities are read four heads at a time");

// Shared memory, in floats: s_q [kHeads][kStride], s_kv [kTile][kStride], s_p [kTile][kHeads],
// s_m, s_l, s_alpha [kHeads].
constexpr int kSmemFloats = kHeads * kStride + kTile * kStride + kTile * kHeads + 3 * kHeads;
constexpr size_t kSmemBytes = sizeof(float) * kSmemFloats;  // 75,456 B: needs the opt-in above 48 KB

struct MlaDecodeArgs {
  const uint16_t* q_nope;       // [num_seqs, num_heads, 512]
  const uint16_t* q_rope;       // [num_seqs, num_heads, 64]
  const void* cache;            // [num_blocks, tokens_per_block, 576] 16-bit words or e4m3 bytes
  const float* kv_scale;        // fp8: [1]
  const int32_t* block_table;   // [num_seqs, max_blocks_per_seq]
  const int32_t* context_lens;  // [num_seqs]
  uint16_t* out;                // [num_seqs, num_heads, 512]; written when partial_out is null
  float* partial_out;           // [num_seqs, num_splits, num_heads, 512] or null
  float* partial_lse;           // [num_seqs, num_splits, num_heads] or null
  int num_heads;
  int max_blocks_per_seq;
  int log2_tokens_per_block;
  int num_splits;
  float scale_log2;  // softmax_scale * log2(e)
};

// 16 e4m3 codes (byte i = element i) times `scale`, as fp32; fp8 -> fp16 is exact, then one fp32
// multiply: x = fp8(code) * scale, as mla_cache_value computes it.
__device__ __forceinline__ void fp8x16_to_float(const uint4& raw, float scale, float (&f)[16]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const __half2_raw h2 =
          __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>((w[i] >> (16 * half)) & 0xFFFFu), __NV_E4M3);
      const float2 x = __half22float2(__half2(h2));
      f[4 * i + 2 * half] = __fmul_rn(x.x, scale);
      f[4 * i + 2 * half + 1] = __fmul_rn(x.y, scale);
    }
  }
}

template <typename T, bool kFp8>
__global__ void __launch_bounds__(kThreads) mla_decode_kernel(MlaDecodeArgs a) {
  extern __shared__ float4 smem_f4[];  // float4: 16-byte alignment for the vector reads below
  float* s_q = reinterpret_cast<float*>(smem_f4);
  float* s_kv = s_q + kHeads * kStride;
  float* s_p = s_kv + kTile * kStride;  // [token][head]
  float* s_m = s_p + kTile * kHeads;
  float* s_l = s_m + kHeads;
  float* s_alpha = s_l + kHeads;

  const int tid = static_cast<int>(threadIdx.x);
  const int head0 = static_cast<int>(blockIdx.x) * kHeads;
  const int heads = min(kHeads, a.num_heads - head0);  // CTA-uniform
  const int split = static_cast<int>(blockIdx.y);
  const int seq = static_cast<int>(blockIdx.z);
  const int len = max(0, __ldg(a.context_lens + seq));
  const DecodeSplitRange range = decode_split_range(len, a.num_splits, split);

  // Queries [q_abs | q_rope] times scale * log2(e); heads past num_heads are zeros (never written out).
  constexpr int kVecPerRow = kRow / 8;  // 72 vectors of 8 values: 64 nope + 8 rope
  for (int i = tid; i < kHeads * kVecPerRow; i += kThreads) {
    const int h = i / kVecPerRow;
    const int v = i % kVecPerRow;
    float f[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (h < heads) {
      const size_t qrow = static_cast<size_t>(seq) * a.num_heads + head0 + h;
      const uint16_t* src = v < kRank / 8 ? a.q_nope + qrow * kRank + v * 8 : a.q_rope + qrow * kMlaRopeDim + (v - kRank / 8) * 8;
      to_float8<T>(load16(src), f);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) s_q[h * kStride + v * 8 + e] = f[e] * a.scale_log2;
  }
  if (tid < kHeads) {
    s_m[tid] = -INFINITY;
    s_l[tid] = 0.f;
  }

  float acc[kHeads][2];
#pragma unroll
  for (int h = 0; h < kHeads; ++h) acc[h][0] = acc[h][1] = 0.f;
  const float kv_scale = kFp8 ? __ldg(a.kv_scale) : 1.f;
  const int32_t* table = a.block_table + static_cast<size_t>(seq) * a.max_blocks_per_seq;
  const int tpb_mask = (1 << a.log2_tokens_per_block) - 1;

  for (int t0 = range.begin; t0 < range.end; t0 += kTile) {
    __syncthreads();  // the previous tile's s_kv / s_p are consumed (first pass: s_q, s_m, s_l written)

    // 1. Latent tile -> s_kv (fp32).
    constexpr int kVals = kFp8 ? 16 : 8;  // values per 16-byte vector
    constexpr int kVecs = kRow / kVals;   // vectors per row
    for (int i = tid; i < kTile * kVecs; i += kThreads) {
      const int tok = i / kVecs;
      const int v = i % kVecs;
      const int t = t0 + tok;
      float f[kVals];
#pragma unroll
      for (int e = 0; e < kVals; ++e) f[e] = 0.f;
      if (t < range.end) {
        const int32_t block = __ldg(table + (t >> a.log2_tokens_per_block));
        const size_t row = (static_cast<size_t>(block) << a.log2_tokens_per_block) + (t & tpb_mask);
        if constexpr (kFp8) {
          const uint8_t* src = static_cast<const uint8_t*>(a.cache) + row * kRow + v * 16;
          float g[16];
          fp8x16_to_float(__ldg(reinterpret_cast<const uint4*>(src)), kv_scale, g);
#pragma unroll
          for (int e = 0; e < kVals; ++e) f[e] = g[e];
        } else {
          float g[8];
          to_float8<T>(load16(static_cast<const uint16_t*>(a.cache) + row * kRow + v * 8), g);
#pragma unroll
          for (int e = 0; e < kVals; ++e) f[e] = g[e];
        }
      }
      float4* dst = reinterpret_cast<float4*>(s_kv + tok * kStride + v * kVals);
#pragma unroll
      for (int e = 0; e < kVals / 4; ++e) dst[e] = make_float4(f[4 * e], f[4 * e + 1], f[4 * e + 2], f[4 * e + 3]);
    }
    __syncthreads();

    // 2. Scores (base 2): thread (h, tok).
    {
      const int h = tid / kTile;
      const int tok = tid % kTile;
      const float4* qv = reinterpret_cast<const float4*>(s_q + h * kStride);
      const float4* kv = reinterpret_cast<const float4*>(s_kv + tok * kStride);
      float dot0 = 0.f, dot1 = 0.f;  // two chains: half the dependent-FMA latency
#pragma unroll 8
      for (int c = 0; c < kRow / 4; c += 2) {
        const float4 x0 = qv[c], y0 = kv[c], x1 = qv[c + 1], y1 = kv[c + 1];
        dot0 = fmaf(x0.x, y0.x, dot0);
        dot0 = fmaf(x0.y, y0.y, dot0);
        dot0 = fmaf(x0.z, y0.z, dot0);
        dot0 = fmaf(x0.w, y0.w, dot0);
        dot1 = fmaf(x1.x, y1.x, dot1);
        dot1 = fmaf(x1.y, y1.y, dot1);
        dot1 = fmaf(x1.z, y1.z, dot1);
        dot1 = fmaf(x1.w, y1.w, dot1);
      }
      s_p[tok * kHeads + h] = t0 + tok < range.end ? dot0 + dot1 : -INFINITY;
    }
    __syncthreads();

    // 3. Online softmax of head h over this tile. `base` is the new max, or 0 while no token has been
    // seen (cannot happen: token t0 is valid), so no -inf - -inf: masked tokens get exp2f(-inf) = 0.
    if (tid < kHeads) {
      const int h = tid;
      const float m_old = s_m[h];
      float m_new = m_old;
#pragma unroll
      for (int tok = 0; tok < kTile; ++tok) m_new = fmaxf(m_new, s_p[tok * kHeads + h]);
      const float base = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = exp2f(m_old - base);
      float l = s_l[h] * alpha;
#pragma unroll
      for (int tok = 0; tok < kTile; ++tok) {
        const float p = exp2f(s_p[tok * kHeads + h] - base);
        s_p[tok * kHeads + h] = p;
        l += p;
      }
      s_m[h] = m_new;
      s_l[h] = l;
      s_alpha[h] = alpha;
    }
    __syncthreads();

    // 4. acc = alpha * acc + sum_t p_t * c_t over this thread's two channels.
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      const float alpha = s_alpha[h];
      acc[h][0] *= alpha;
      acc[h][1] *= alpha;
    }
#pragma unroll 4
    for (int tok = 0; tok < kTile; ++tok) {
      const float2 c = *reinterpret_cast<const float2*>(s_kv + tok * kStride + 2 * tid);
#pragma unroll
      for (int h4 = 0; h4 < kHeads / 4; ++h4) {
        const float4 p = *reinterpret_cast<const float4*>(s_p + tok * kHeads + 4 * h4);
        acc[4 * h4 + 0][0] = fmaf(p.x, c.x, acc[4 * h4 + 0][0]);
        acc[4 * h4 + 0][1] = fmaf(p.x, c.y, acc[4 * h4 + 0][1]);
        acc[4 * h4 + 1][0] = fmaf(p.y, c.x, acc[4 * h4 + 1][0]);
        acc[4 * h4 + 1][1] = fmaf(p.y, c.y, acc[4 * h4 + 1][1]);
        acc[4 * h4 + 2][0] = fmaf(p.z, c.x, acc[4 * h4 + 2][0]);
        acc[4 * h4 + 2][1] = fmaf(p.z, c.y, acc[4 * h4 + 2][1]);
        acc[4 * h4 + 3][0] = fmaf(p.w, c.x, acc[4 * h4 + 3][0]);
        acc[4 * h4 + 3][1] = fmaf(p.w, c.y, acc[4 * h4 + 3][1]);
      }
    }
  }
  __syncthreads();  // s_m, s_l final (also when the range was empty)

#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    if (h < heads) {
      const float l = s_l[h];
      const float inv = l > 0.f ? 1.f / l : 0.f;  // empty range: 0, never NaN
      const float o0 = acc[h][0] * inv, o1 = acc[h][1] * inv;
      const size_t qrow = static_cast<size_t>(seq) * a.num_heads + head0 + h;
      if (a.partial_out == nullptr) {
        const uint32_t w = static_cast<uint32_t>(Elem<T>::from_float(o0)) | (static_cast<uint32_t>(Elem<T>::from_float(o1)) << 16);
        reinterpret_cast<uint32_t*>(a.out + qrow * kRank)[tid] = w;
      } else {
        const size_t at = (static_cast<size_t>(seq) * a.num_splits + split) * a.num_heads + head0 + h;
        reinterpret_cast<float2*>(a.partial_out + at * kRank)[tid] = make_float2(o0, o1);
        if (tid == 0) a.partial_lse[at] = l > 0.f ? (s_m[h] + log2f(l)) * decode_detail::kLn2 : -INFINITY;
      }
    }
  }
}

#define KVPLAN_CHECK_PARAM(cond, why) \
  do {                                \
    if (!(cond)) return params_error(why, __FILE__, __LINE__); \
  } while (0)

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(call, static_cast<int>(e), cudaGetErrorString(e), std::string(file) + ":" + std::to_string(line));
}

template <typename T, bool kFp8>
cudaError_t launch_instance(const MlaDecodeArgs& args, int num_seqs, cudaStream_t stream) {
  const auto kernel = mla_decode_kernel<T, kFp8>;
  if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmemBytes));
      e != cudaSuccess) {
    return e;
  }
  const dim3 grid(static_cast<unsigned>(mla_decode_head_tiles(args.num_heads)), static_cast<unsigned>(args.num_splits),
                  static_cast<unsigned>(num_seqs));
  kernel<<<grid, kThreads, kSmemBytes, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace

Status launch_mla_decode(const MlaDecodeParams& p, Stream stream) {
  KVPLAN_CHECK_PARAM(p.dtype == ElemType::kBF16 || p.dtype == ElemType::kFP16, "dtype must be bf16 or fp16");
  const bool fp8 = p.cache_type == CacheType::kFp8E4M3;
  const CacheType same16 = p.dtype == ElemType::kBF16 ? CacheType::kBF16 : CacheType::kFP16;
  KVPLAN_CHECK_PARAM(fp8 || p.cache_type == same16,
                     "cache_type=" + std::string(cache_type_name(p.cache_type)) + " must be fp8_e4m3 or the query dtype " +
                         std::string(elem_type_name(p.dtype)));
  KVPLAN_CHECK_PARAM(p.kv_lora_rank == kMlaKvLoraRank && p.rope_dim == kMlaRopeDim,
                     "kv_lora_rank=" + std::to_string(p.kv_lora_rank) + ", rope_dim=" + std::to_string(p.rope_dim) +
                         " has no instance (512, 64)");
  KVPLAN_CHECK_PARAM(p.num_seqs >= 0 && p.num_seqs <= 65535, "num_seqs must be in [0, 65535] (grid z)");
  KVPLAN_CHECK_PARAM(p.num_heads > 0, "num_heads must be > 0");
  const int tpb = p.tokens_per_block;
  KVPLAN_CHECK_PARAM(tpb >= 1 && tpb <= 1024 && (tpb & (tpb - 1)) == 0,
                     "tokens_per_block=" + std::to_string(tpb) + " must be a power of two in [1, 1024]");
  KVPLAN_CHECK_PARAM(p.num_blocks > 0 && p.max_blocks_per_seq > 0, "num_blocks and max_blocks_per_seq must be > 0");
  KVPLAN_CHECK_PARAM(std::isfinite(p.softmax_scale), "softmax_scale must be finite");
  KVPLAN_CHECK_PARAM(p.q_nope && p.q_rope && p.kv_cache && p.block_table && p.context_lens && p.out,
                     "null pointer among q_nope, q_rope, kv_cache, block_table, context_lens, out");
  KVPLAN_CHECK_PARAM(!fp8 || p.kv_scale, "fp8 cache needs kv_scale");
  KVPLAN_CHECK_PARAM(aligned16(p.q_nope) && aligned16(p.q_rope) && aligned16(p.kv_cache) && aligned16(p.out),
                     "q_nope, q_rope, kv_cache and out must be 16-byte aligned");
  KVPLAN_CHECK_PARAM(p.num_splits >= 1 && p.num_splits <= 65535, "num_splits must be in [1, 65535] (grid y)");
  KVPLAN_CHECK_PARAM(p.num_splits == 1 || (p.partial_out && p.partial_lse && aligned16(p.partial_out)),
                     "num_splits > 1 needs partial_out (16-byte aligned) and partial_lse");
  if (p.num_seqs == 0) return Status::success();

  MlaDecodeArgs args{};
  args.q_nope = p.q_nope;
  args.q_rope = p.q_rope;
  args.cache = p.kv_cache;
  args.kv_scale = p.kv_scale;
  args.block_table = p.block_table;
  args.context_lens = p.context_lens;
  args.out = p.out;
  args.partial_out = p.num_splits > 1 ? p.partial_out : nullptr;
  args.partial_lse = p.num_splits > 1 ? p.partial_lse : nullptr;
  args.num_heads = p.num_heads;
  args.max_blocks_per_seq = p.max_blocks_per_seq;
  while ((1 << args.log2_tokens_per_block) < tpb) ++args.log2_tokens_per_block;
  args.num_splits = p.num_splits;
  args.scale_log2 = p.softmax_scale * decode_detail::kLog2e;
  const bool bf16 = p.dtype == ElemType::kBF16;
  const cudaError_t e = bf16 ? (fp8 ? launch_instance<__nv_bfloat16, true>(args, p.num_seqs, stream)
                                    : launch_instance<__nv_bfloat16, false>(args, p.num_seqs, stream))
                             : (fp8 ? launch_instance<__half, true>(args, p.num_seqs, stream)
                                    : launch_instance<__half, false>(args, p.num_seqs, stream));
  if (e != cudaSuccess) return cuda_status(e, "mla_decode_kernel<<<>>>", __FILE__, __LINE__);
  if (p.num_splits == 1) return Status::success();

  // decode_attention's combine: one CTA per (sequence, head), a loop over channels, any width.
  DecodeCombineParams c;
  c.dtype = p.dtype;
  c.num_seqs = p.num_seqs;
  c.num_splits = p.num_splits;
  c.num_q_heads = p.num_heads;
  c.head_dim = kRank;
  c.partial_out = p.partial_out;
  c.partial_lse = p.partial_lse;
  c.out = p.out;
  const unsigned ctas = static_cast<unsigned>(p.num_seqs) * static_cast<unsigned>(p.num_heads);
  if (bf16) {
    decode_detail::decode_combine_kernel<__nv_bfloat16><<<ctas, decode_detail::kCombineThreads, 0, stream>>>(c);
  } else {
    decode_detail::decode_combine_kernel<__half><<<ctas, decode_detail::kCombineThreads, 0, stream>>>(c);
  }
  return cuda_status(cudaGetLastError(), "decode_combine_kernel<<<>>> (MLA, 512 channels)", __FILE__, __LINE__);
}

}  // namespace kvplan::kernels
