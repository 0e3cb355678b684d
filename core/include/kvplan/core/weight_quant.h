// kvplan/core/weight_quant.h — how a checkpoint stores its weights: the quantization method read
// from config.json's `quantization_config` (or forced with --quantization), which modules stay in
// 16-bit, and the exact bytes of one linear layer's weight in that format.
//
//   QuantizationConfig q = parse_quantization_config(config["quantization_config"], "model 'x'");
//   bool low = is_quantized_module(q, "model.layers.3.mlp.experts.0.down_proj");
//   int64_t bytes = quantized_linear_bytes(q, /*rows (out)=*/4096, /*cols (in)=*/14336, DType::kBF16);
//
// Every method lists the tensors a checkpoint holds for one linear weight W[rows=out, cols=in]
// (docs/quantization.md gives each rule with its source):
//  - fp8 per tensor:   W in 1 byte + one fp32 weight_scale (+ one fp32 input_scale when static)
//  - fp8 per channel:  W in 1 byte + one scale per output row (scale_bytes each)
//  - fp8 block:        W in 1 byte + one fp32 scale per [block_n, block_k] tile
//  - int8 per channel: W in 1 byte + one scale per output row (+ a zero point when asymmetric)
//  - AWQ:              qweight int32 [in, out·bits/32], qzeros int32 [in/g, out·bits/32],
//                      scales fp16 [in/g, out]
//  - GPTQ:             qweight int32 [in·bits/32, out], qzeros int32 [in/g, out·bits/32],
//                      scales fp16 [in/g, out], g_idx int32 [in]
//  - packed int (compressed-tensors pack-quantized): weight_packed int32 [out, in·bits/32],
//                      weight_scale [out, in/g] (scale_bytes), zero points when asymmetric,
//                      weight_shape int64 [2]
//  - bitsandbytes 4-bit: W packed 2 per byte + an absmax per block of 64 (fp32; with double
//                      quantization uint8 + an fp32 absmax per 256 blocks and a 256-entry map),
//                      a 16-entry fp32 code map
//  - MXFP4:            W packed 2 per byte + one E8M0 (1 byte) scale per 32 elements
//  - NVFP4:            W packed 2 per byte + one fp8 scale per 16 elements + fp32 weight_scale_2
//                      + fp32 input_scale
// Biases, norms, embeddings, routers and the vision encoder stay in 16-bit; the LM head too unless
// the config quantizes it explicitly (GPTQ lm_head=true).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvplan/core/dtype.h"

namespace kvplan {

enum class QuantMethod {
  kNone,         // 16-bit weights (the model dtype)
  kFp8,          // fp8 e4m3, one scale per tensor
  kFp8Channel,   // fp8 e4m3, one scale per output channel
  kFp8Block,     // fp8 e4m3, one fp32 scale per [block_n, block_k] tile (DeepSeek-V3, Qwen3-FP8)
  kInt8Channel,  // int8, one scale per output channel (W8A8 or bitsandbytes 8-bit)
  kAwq,          // AWQ int4 groups
  kGptq,         // GPTQ intN groups
  kPackedInt,    // compressed-tensors pack-quantized intN groups (W4A16, W8A16)
  kBnb4,         // bitsandbytes 4-bit (nf4 / fp4)
  kMxfp4,        // OCP microscaling fp4 (gpt-oss experts)
  kNvfp4,        // NVIDIA fp4 with fp8 block scales (ModelOpt, compressed-tensors nvfp4)
};
std::string_view quant_method_name(QuantMethod m);

// How ignore entries are matched against module names.
enum class IgnoreMatch {
  kNameOrRegex,  // compressed-tensors: exact module name, or "re:<regex>" matched from the start
  kGlob,         // ModelOpt exclude_modules: shell-style wildcards over the whole name
  kSubstring,    // Hugging Face modules_to_not_convert: the entry occurs in the name ('*' = any)
};

struct QuantizationConfig {
  QuantMethod method = QuantMethod::kNone;
  int bits = 16;               // bits per stored weight element
  int group_size = 0;          // elements per scale along the input dim; 0 = per channel
  int block_n = 0;             // fp8 block tile (rows, cols)
  int block_k = 0;
  bool symmetric = true;       // false: zero points are stored
  bool desc_act = false;       // GPTQ act-order (g_idx is stored either way)
  bool static_input_scale = false;  // one stored input_scale per tensor
  bool double_quant = false;   // bitsandbytes nested quantization of absmax
  int scale_bytes = 2;         // per-channel / per-group scale width where the format allows both
  bool activations_quantized = false;  // W8A8 / W4A4: GEMMs run at the low-precision rate
  bool quantize_lm_head = false;
  std::vector<std::string> ignore;  // modules kept in 16-bit
  IgnoreMatch ignore_match = IgnoreMatch::kNameOrRegex;
  std::string description;     // e.g. "fp8 block 128x128, dynamic activations"
  std::string origin;          // "config.json quantization_config" or "--quantization fp8"
  std::vector<std::string> notes;  // things worth saying (kv_cache_scheme in the config, ...)
  // The checkpoint ships fp8 KV-cache scales (ModelOpt kv_cache_quant_algo FP8, compressed-tensors
  // kv_cache_scheme): TensorRT-LLM then stores the cache in fp8; vLLM and SGLang only when asked.
  bool kv_cache_fp8 = false;
  // Routed experts stored in a format of their own (DeepSeek-V4's `expert_dtype: fp4`: MXFP4 experts
  // in an fp8-block checkpoint); kNone: the experts follow `method`. expert_quantization() gives
  // their whole description.
  QuantMethod expert_method = QuantMethod::kNone;

  bool quantized() const { return method != QuantMethod::kNone; }
};

// How the routed experts are stored: `q` itself, or the format expert_method names (MXFP4 only).
QuantizationConfig expert_quantization(const QuantizationConfig& q);

// Reads a quantization_config object. Unknown methods and malformed fields throw ConfigError
// naming `what`, the field, the value and the rule (with the list of supported methods).
QuantizationConfig parse_quantization_config(const nlohmann::json& config, std::string_view what);

// The --quantization flag: none, fp8, fp8-block, int8, int4 / gptq, awq, w4a16, bitsandbytes,
// mxfp4, nvfp4. `group_size` applies to the grouped int formats. Throws ConfigError for others.
QuantizationConfig quantization_from_flag(std::string_view name, int group_size);

// The quantization methods --quantization accepts, for help and error texts.
const std::vector<std::string>& quantization_flag_choices();

// Whether the module (a Hugging Face style name such as "model.layers.3.self_attn.q_proj") is
// stored quantized: the method is not kNone, the module is quantizable (a linear layer of the
// decoder), and no ignore entry matches it.
bool is_quantized_module(const QuantizationConfig& q, std::string_view module_name);

// Exact bytes of one linear weight [rows = out features, cols = in features] under `q`
// (the weight alone; a bias is counted separately in 16-bit). `dtype16` is the checkpoint's
// 16-bit type, used when q.method is kNone.
int64_t quantized_linear_bytes(const QuantizationConfig& q, int64_t rows, int64_t cols, DType dtype16);

// The tensor-core type GEMMs through weights in this format run at on a GPU with (or without)
// fp8 / fp4 tensor cores: W8A8 fp8 and int8 at their rates, NVFP4 at fp4 where the GPU has it,
// and every weight-only format at 16-bit (dequantized in the kernel).
DType gemm_compute_dtype(const QuantizationConfig& q, bool gpu_has_fp8, bool gpu_has_int8, bool gpu_has_fp4);

}  // namespace kvplan
