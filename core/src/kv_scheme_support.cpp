#include "kvplan/core/kv_scheme_support.h"

#include <fmt/format.h>

namespace kvplan {

namespace {

// Names of the scheme's parts that approximate attention (the model then computes something other
// than what it was evaluated with). fp8 and int8 KV are left out: engines ship them as production
// options with published accuracy checks; the 4- and 2-bit formats and the eviction schemes are
// research methods whose loss depends on the task.
std::vector<std::string> lossy_parts(const KvScheme& s) {
  std::vector<std::string> parts;
  if (s.kv_dtype == DType::kInt4) parts.push_back("int4 KV");
  if (s.kv_dtype == DType::kInt2) parts.push_back("KIVI-2 (2-bit) KV");
  if (s.kv_dtype == DType::kFp4E2M1) parts.push_back("FP4 KV");
  if (s.eviction == Eviction::kH2O || s.h2o_budget_tokens > 0) parts.push_back("H2O eviction");
  if (s.eviction == Eviction::kStreaming || s.streaming_window_tokens > 0) parts.push_back("StreamingLLM (sinks + window)");
  if (s.low_rank > 0) parts.push_back("low-rank keys");
  if (s.cross_layer_share > 1) parts.push_back("cross-layer KV sharing");
  return parts;
}

// What each engine's KV cache offers (the parts of the scheme it does not are listed):
// - vLLM: --kv-cache-dtype auto | fp8 | fp8_e4m3 | fp8_e5m2 (engine arguments); no eviction, no
//   low-rank or shared KV (an attention-sinks PR, vllm-project/vllm#3515, was never merged).
// - SGLang: --kv-cache-dtype auto | fp8_e5m2 | fp8_e4m3 (server arguments); same otherwise.
// - TensorRT-LLM: KV cache in FP16, BF16, FP8, INT8 and NVFP4 (its KV cache documentation), and
//   StreamingLLM-style sink tokens with a sliding attention window (gpt-attention documentation).
std::vector<std::string> unsupported_parts(const KvScheme& s, Engine engine) {
  std::vector<std::string> parts;
  const DType d = s.kv_dtype;
  const bool fp8 = d == DType::kFp8E4M3 || d == DType::kFp8E5M2;
  const bool plain = d == DType::kBF16 || d == DType::kF16 || d == DType::kF32;
  switch (engine) {
    case Engine::kStatic: return parts;
    case Engine::kVllm:
    case Engine::kSglang:
      if (!plain && !fp8) parts.push_back(fmt::format("{} KV cache", dtype_name(d)));
      if (s.eviction == Eviction::kStreaming || s.streaming_window_tokens > 0) parts.push_back("StreamingLLM eviction");
      break;
    case Engine::kTrtllm:
      if (!plain && !fp8 && d != DType::kInt8 && d != DType::kFp4E2M1) parts.push_back(fmt::format("{} KV cache", dtype_name(d)));
      break;
  }
  if (s.eviction == Eviction::kH2O || s.h2o_budget_tokens > 0) parts.push_back("H2O eviction");
  if (s.low_rank > 0) parts.push_back("low-rank keys");
  if (s.cross_layer_share > 1) parts.push_back("cross-layer KV sharing");
  return parts;
}

// "vLLM", "SGLang", "TensorRT-LLM": the names users know the engines by.
std::string_view engine_words(Engine e) {
  switch (e) {
    case Engine::kVllm: return "vLLM";
    case Engine::kSglang: return "SGLang";
    case Engine::kTrtllm: return "TensorRT-LLM";
    case Engine::kStatic: return "the static batcher";
  }
  return "the engine";
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

}  // namespace

std::vector<std::string> kv_scheme_warnings(const KvScheme& scheme, Engine engine) {
  std::vector<std::string> out;
  const std::vector<std::string> lossy = lossy_parts(scheme);
  if (!lossy.empty()) {
    out.push_back(fmt::format("{} {} lossy: the accuracy cost is not modelled, check it on your evaluation",
                              joined(lossy), lossy.size() == 1 ? "is" : "are"));
  }
  const std::vector<std::string> missing = unsupported_parts(scheme, engine);
  if (!missing.empty()) {
    out.push_back(fmt::format("{} does not implement {}: this answer is for an engine that would, with {}'s memory "
                              "accounting",
                              engine_words(engine), joined(missing), engine_words(engine)));
  }
  return out;
}

}  // namespace kvplan
