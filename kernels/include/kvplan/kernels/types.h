// kvplan/kernels/types.h — element types and the stream handle shared by every kernel's Params.
//
//   DecodeParams p;  p.dtype = ElemType::kBF16;   // q, k, v, out are 16-bit words of this type
//   Status s = launch_decode_attention(p, stream);
//
// Public kernel headers include no CUDA header: 16-bit values travel as uint16_t bit patterns and
// the stream as an opaque handle, so the same Params structs drive the CPU references (host
// pointers) and the CUDA kernels (device pointers).
#pragma once

#include <cstdint>
#include <string_view>

struct CUstream_st;

namespace kvplan::kernels {

using Stream = CUstream_st*;  // cudaStream_t; nullptr = the default stream

// 16-bit floating types of activations and unquantized caches.
enum class ElemType : uint8_t { kBF16, kFP16 };
std::string_view elem_type_name(ElemType t);

// How a KV cache stores its elements (see kv_cache.h for each layout).
enum class CacheType : uint8_t {
  kBF16,
  kFP16,
  kFp8E4M3,  // 1 byte per element, fp32 scale per tensor or per KV head
  kInt8,     // asymmetric: uint8 codes, fp16 scale and fp16 minimum per group of channels
  kInt4,     // asymmetric: 4-bit codes (two per byte, low nibble first), fp16 scale + minimum per group
  kKivi2,    // KIVI 2-bit: keys per channel over token groups, values per token; residual in 16-bit
};
std::string_view cache_type_name(CacheType t);

}  // namespace kvplan::kernels
