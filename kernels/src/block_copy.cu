// Block copy (one kernel, 16-byte copies) and swap to/from pinned host memory (cudaMemcpyAsync
// batches); see block_copy.h.
#include "kvplan/kernels/block_copy.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <tuple>

namespace kvplan::kernels {
namespace {

constexpr int kCopyThreads = 256;

std::string where(int line) { return std::string(__FILE__) + ":" + std::to_string(line); }

Status cuda_error(const char* call, cudaError_t e, int line) {
  return Status::error(call, static_cast<int>(e), cudaGetErrorString(e), where(line));
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// grid = (num_pairs, 1 for K only or 2 for K and V). One CTA copies one block of one cache as
// block_vecs 16-byte words; consecutive threads take consecutive words (coalesced).
__global__ void __launch_bounds__(kCopyThreads)
    block_copy_kernel(uint4* k_cache,        // [num_blocks, block_vecs]
                      uint4* v_cache,        // [num_blocks, block_vecs] or nullptr (then gridDim.y == 1)
                      const int64_t* pairs,  // [num_pairs, 2] (src, dst)
                      int num_blocks, int64_t block_vecs) {
  uint4* cache = blockIdx.y == 0 ? k_cache : v_cache;
  const int64_t pair = blockIdx.x;
  const int64_t src = pairs[2 * pair];
  const int64_t dst = pairs[2 * pair + 1];
  if (src < 0 || src >= num_blocks || dst < 0 || dst >= num_blocks) return;  // never write out of bounds
  const uint4* from = cache + src * block_vecs;
  uint4* to = cache + dst * block_vecs;
  for (int64_t i = threadIdx.x; i < block_vecs; i += kCopyThreads) to[i] = from[i];
}

// Host pointers must be pinned, device pointers device (or managed) memory.
Status check_memory(const void* ptr, bool host, const char* name, int line) {
  cudaPointerAttributes attr{};
  if (const cudaError_t e = cudaPointerGetAttributes(&attr, ptr); e != cudaSuccess)
    return cuda_error("cudaPointerGetAttributes", e, line);
  const bool ok = host ? attr.type == cudaMemoryTypeHost
                       : (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged);
  if (!ok)
    return params_error(std::string(name) + (host ? " must be pinned host memory (cudaHostAlloc or cudaHostRegister)"
                                                  : " must be device memory"),
                        __FILE__, line);
  return Status::success();
}

Status swap_blocks(const BlockSwapParams& p, bool swap_out, Stream stream) {
  if (const std::string problem = block_swap_params_problem(p, swap_out); !problem.empty())
    return params_error(problem, __FILE__, __LINE__);
  if (p.num_pairs == 0) return Status::success();
  for (const auto& [ptr, host, name] : {std::tuple<const void*, bool, const char*>{p.host_k_cache, true, "host_k_cache"},
                                        {p.host_v_cache, true, "host_v_cache"},
                                        {p.device_k_cache, false, "device_k_cache"},
                                        {p.device_v_cache, false, "device_v_cache"}}) {
    if (ptr == nullptr) continue;  // v caches absent (checked above: both or neither)
    if (Status s = check_memory(ptr, host, name, __LINE__); !s.ok()) return s;
  }

  const int64_t block_bytes = block_elems(p.num_kv_heads, p.tokens_per_block, p.head_dim) * 2;
  const cudaMemcpyKind kind = swap_out ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  char* const src_k = reinterpret_cast<char*>(swap_out ? p.device_k_cache : p.host_k_cache);
  char* const src_v = reinterpret_cast<char*>(swap_out ? p.device_v_cache : p.host_v_cache);
  char* const dst_k = reinterpret_cast<char*>(swap_out ? p.host_k_cache : p.device_k_cache);
  char* const dst_v = reinterpret_cast<char*>(swap_out ? p.host_v_cache : p.device_v_cache);
  // Runs of pairs (s, d), (s+1, d+1), ... are contiguous on both sides: one copy per run, so a
  // sequence whose blocks were allocated together pays one DMA setup instead of one per block.
  for (int64_t i = 0; i < p.num_pairs;) {
    const int64_t src = p.block_pairs[2 * i], dst = p.block_pairs[2 * i + 1];
    int64_t run = 1;
    while (i + run < p.num_pairs && p.block_pairs[2 * (i + run)] == src + run && p.block_pairs[2 * (i + run) + 1] == dst + run)
      ++run;
    const size_t bytes = static_cast<size_t>(run * block_bytes);
    if (const cudaError_t e = cudaMemcpyAsync(dst_k + dst * block_bytes, src_k + src * block_bytes, bytes, kind, stream);
        e != cudaSuccess)
      return cuda_error("cudaMemcpyAsync (k)", e, __LINE__);
    if (src_v != nullptr) {
      if (const cudaError_t e = cudaMemcpyAsync(dst_v + dst * block_bytes, src_v + src * block_bytes, bytes, kind, stream);
          e != cudaSuccess)
        return cuda_error("cudaMemcpyAsync (v)", e, __LINE__);
    }
    i += run;
  }
  return Status::success();
}

}  // namespace

Status launch_block_copy(const BlockCopyParams& p, Stream stream) {
  if (const std::string problem = block_copy_params_problem(p); !problem.empty())
    return params_error(problem, __FILE__, __LINE__);
  const int64_t elems = block_elems(p.num_kv_heads, p.tokens_per_block, p.head_dim);
  if (elems % 8 != 0)
    return params_error("block_elems=" + std::to_string(elems) + " must be a multiple of 8 (16-byte copies)", __FILE__,
                        __LINE__);
  if (!aligned16(p.k_cache) || !aligned16(p.v_cache))
    return params_error("k_cache and v_cache must be 16-byte aligned", __FILE__, __LINE__);
  if (p.num_pairs > 0x7fffffff)
    return params_error("num_pairs=" + std::to_string(p.num_pairs) + " exceeds the grid (2^31 - 1)", __FILE__, __LINE__);
  if (p.num_pairs == 0) return Status::success();
  const dim3 grid(static_cast<unsigned>(p.num_pairs), p.v_cache != nullptr ? 2u : 1u);
  block_copy_kernel<<<grid, kCopyThreads, 0, stream>>>(reinterpret_cast<uint4*>(p.k_cache),
                                                       reinterpret_cast<uint4*>(p.v_cache), p.block_pairs,
                                                       p.num_blocks, elems / 8);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_error("block_copy_kernel launch", e, __LINE__);
  return Status::success();
}

Status launch_swap_out(const BlockSwapParams& p, Stream stream) { return swap_blocks(p, true, stream); }
Status launch_swap_in(const BlockSwapParams& p, Stream stream) { return swap_blocks(p, false, stream); }

}  // namespace kvplan::kernels
