// Mamba-2 decode kernels (mamba2.h): the selective state update and the causal conv update, with
// their launchers (Params checks, instance choice, CUDA errors as Status).
//
// State update: one CTA of 4 warps per (sequence, head). dt' and dA are per head; dt'·B and C of
// the head's group are staged in shared memory as float. Warp w takes channels p = w, w+4, ...;
// its lanes walk d_state (lane n reads h[p][n], consecutive lanes consecutive floats: coalesced),
// update the state in place, and y[p] = Σ_n C[n]·h[p][n] is a warp reduction. Each state element
// is read and written by exactly one thread: no race. Memory-bound (the state is 4·P·N bytes per
// head, read and written once).
//
// Conv update: one thread per (sequence, channel): it reads its d_conv - 1 state entries into
// registers, computes the output from the window [state..., x], then writes the shifted state.
#include "kvplan/kernels/mamba2.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "recurrent_common.cuh"

namespace kvplan::kernels {
namespace {

using recurrent_detail::cuda_status;
using recurrent_detail::load_f;
using recurrent_detail::to_float;
using recurrent_detail::to_bits;

constexpr int kSsmWarps = 4;
constexpr int kConvThreads = 256;

template <typename T>
__global__ void __launch_bounds__(32 * kSsmWarps) mamba2_decode_kernel(Mamba2DecodeParams p) {
  __shared__ float s_dtb[kMamba2MaxState];  // dt'·B[n]
  __shared__ float s_c[kMamba2MaxState];    // C[n]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int h = blockIdx.x, seq = blockIdx.y;
  const int P = p.head_dim, N = p.d_state, H = p.num_heads;
  const int64_t sh = int64_t{seq} * H + h;  // (sequence, head)
  float dt = load_f<T>(p.dt, sh) + (p.dt_bias ? p.dt_bias[h] : 0.f);
  if (p.dt_softplus && dt <= 20.f) dt = log1pf(expf(dt));  // mamba_ssm's softplus with threshold 20
  const float dA = expf(dt * p.A[h]);
  const int64_t bc = (int64_t{seq} * p.n_groups + h / (H / p.n_groups)) * N;
  for (int n = threadIdx.x; n < N; n += 32 * kSsmWarps) {
    s_dtb[n] = dt * load_f<T>(p.B, bc + n);
    s_c[n] = load_f<T>(p.C, bc + n);
  }
  __syncthreads();
  for (int c = warp; c < P; c += kSsmWarps) {  // warp-uniform: the shuffles below see the full warp
    const int64_t xi = sh * P + c;
    const float x = load_f<T>(p.x, xi);
    float* state = p.state + xi * N;
    float y = 0.f;
    for (int n = lane; n < N; n += 32) {
      const float hn = fmaf(dA, state[n], s_dtb[n] * x);  // h ← dA·h + (dt'·B)·x, then read
      state[n] = hn;
      y = fmaf(s_c[n], hn, y);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) y += __shfl_xor_sync(0xffffffffu, y, off);
    if (lane == 0) {
      if (p.D) y = fmaf(p.D[h], x, y);
      if (p.z) {
        const float z = load_f<T>(p.z, xi);
        y *= z / (1.f + expf(-z));  // y·silu(z)
      }
      p.out[xi] = to_bits<T>(y);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kConvThreads) causal_conv_update_kernel(CausalConvUpdateParams p) {
  const int64_t idx = int64_t{blockIdx.x} * kConvThreads + threadIdx.x;  // sequence * conv_dim + channel
  if (idx >= int64_t{p.num_seqs} * p.conv_dim) return;
  const int c = static_cast<int>(idx % p.conv_dim);
  const int W = p.d_conv, S = W - 1;
  // window = [old state (oldest first)..., x]: raw 16-bit values, indexed only by unrolled constants
  // (registers, no local memory); entries past S are unused.
  uint16_t* state = S > 0 ? p.conv_state + idx * S : nullptr;
  const uint16_t x = p.x[idx];
  uint16_t window[kCausalConvMaxWidth];
#pragma unroll
  for (int k = 0; k < kCausalConvMaxWidth; ++k) window[k] = k < S ? state[k] : x;
  float acc = p.bias ? load_f<T>(p.bias, c) : 0.f;
#pragma unroll
  for (int k = 0; k < kCausalConvMaxWidth; ++k) {
    if (k < W) acc = fmaf(load_f<T>(p.weight, int64_t{c} * W + k), to_float<T>(window[k]), acc);
  }
  if (p.silu) acc = acc / (1.f + expf(-acc));
  p.out[idx] = to_bits<T>(acc);
#pragma unroll
  for (int k = 0; k < kCausalConvMaxWidth - 1; ++k) {
    if (k < S) state[k] = window[k + 1];  // drop the oldest, append x
  }
}

#define KVPLAN_CHECK_PARAM(cond, why)                            \
  do {                                                           \
    if (!(cond)) return params_error(why, __FILE__, __LINE__);   \
  } while (0)

}  // namespace

Status launch_mamba2_decode(const Mamba2DecodeParams& p, Stream stream) {
  if (std::string why = mamba2_decode_problem(p); !why.empty()) return params_error(why, __FILE__, __LINE__);
  KVPLAN_CHECK_PARAM(p.d_state <= kMamba2MaxState,
                     "d_state=" + std::to_string(p.d_state) + " exceeds the kernel's maximum " + std::to_string(kMamba2MaxState));
  KVPLAN_CHECK_PARAM(p.num_seqs <= 65535, "num_seqs must be <= 65535 (grid y)");
  if (p.num_seqs == 0) return Status::success();
  const dim3 grid(static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.num_seqs));
  if (p.dtype == ElemType::kBF16) {
    mamba2_decode_kernel<__nv_bfloat16><<<grid, 32 * kSsmWarps, 0, stream>>>(p);
  } else {
    mamba2_decode_kernel<__half><<<grid, 32 * kSsmWarps, 0, stream>>>(p);
  }
  return cuda_status(cudaGetLastError(), "mamba2_decode_kernel<<<>>>", __FILE__, __LINE__);
}

Status launch_causal_conv_update(const CausalConvUpdateParams& p, Stream stream) {
  if (std::string why = causal_conv_update_problem(p); !why.empty()) return params_error(why, __FILE__, __LINE__);
  KVPLAN_CHECK_PARAM(p.d_conv <= kCausalConvMaxWidth,
                     "d_conv=" + std::to_string(p.d_conv) + " exceeds the kernel's maximum " + std::to_string(kCausalConvMaxWidth));
  const int64_t threads = int64_t{p.num_seqs} * p.conv_dim;
  KVPLAN_CHECK_PARAM(threads / kConvThreads < INT32_MAX, "num_seqs * conv_dim too large for the grid");
  if (threads == 0) return Status::success();
  const unsigned blocks = static_cast<unsigned>((threads + kConvThreads - 1) / kConvThreads);
  if (p.dtype == ElemType::kBF16) {
    causal_conv_update_kernel<__nv_bfloat16><<<blocks, kConvThreads, 0, stream>>>(p);
  } else {
    causal_conv_update_kernel<__half><<<blocks, kConvThreads, 0, stream>>>(p);
  }
  return cuda_status(cudaGetLastError(), "causal_conv_update_kernel<<<>>>", __FILE__, __LINE__);
}

}  // namespace kvplan::kernels
