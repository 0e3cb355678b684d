// kvplan/core/dtype.h — element types of weights, activations, KV caches and recurrent state.
//
//   DType t = parse_dtype("fp8_e4m3", "kv-cache-dtype");   // throws ConfigError if unknown
//   int64_t bytes = dtype_bytes_for(t, 4096);                // 4096 elements, bits rounded up
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kvplan {

// kFp4E2M1 is a compute type only (NVFP4 / MXFP4 GEMMs on Blackwell); no KV cache stores it.
enum class DType { kF32, kF16, kBF16, kFp8E4M3, kFp8E5M2, kInt8, kInt4, kInt2, kFp4E2M1 };

// Bits per stored element (data only; quantization scales are counted by the KV layout).
int dtype_bits(DType t);
// Bytes of `elements` packed elements: ceil(elements * bits / 8).
int64_t dtype_bytes_for(DType t, int64_t elements);
std::string_view dtype_name(DType t);
bool is_quantized_int(DType t);
bool is_fp8(DType t);

// Accepts kvplan names and the spellings of vLLM / PyTorch / Hugging Face:
// "bf16", "bfloat16", "torch.bfloat16", "fp16", "float16", "half", "fp32", "float32",
// "fp8" (= e4m3), "fp8_e4m3", "fp8_e5m2", "int8", "int4", "int2". `field` names the flag or
// config key in the error message.
DType parse_dtype(std::string_view text, std::string_view field);

}  // namespace kvplan
