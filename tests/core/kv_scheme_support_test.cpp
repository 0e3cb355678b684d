// Lossy KV schemes and schemes an engine does not implement are answered with warnings, never as if
// nothing were odd; the production schemes (bf16, fp8 in every engine; int8 and NVFP4 in
// TensorRT-LLM) carry none.
#include <gtest/gtest.h>

#include "kvplan/core/kv_scheme_support.h"

namespace kvplan {
namespace {

KvScheme with_dtype(DType d) {
  KvScheme s;
  s.kv_dtype = d;
  return s;
}

TEST(KvSchemeSupport, ProductionSchemesCarryNoWarning) {
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm, Engine::kStatic}) {
    EXPECT_TRUE(kv_scheme_warnings(with_dtype(DType::kBF16), e).empty());
    EXPECT_TRUE(kv_scheme_warnings(with_dtype(DType::kFp8E4M3), e).empty());
    EXPECT_TRUE(kv_scheme_warnings(with_dtype(DType::kFp8E5M2), e).empty());
  }
  EXPECT_TRUE(kv_scheme_warnings(with_dtype(DType::kInt8), Engine::kTrtllm).empty());
}

TEST(KvSchemeSupport, LossySchemesSaySo) {
  const std::vector<std::string> w = kv_scheme_warnings(with_dtype(DType::kInt4), Engine::kStatic);
  ASSERT_EQ(w.size(), 1u);  // the static batcher runs anything: only the accuracy warning
  EXPECT_EQ(w[0], "int4 KV is lossy: the accuracy cost is not modelled, check it on your evaluation");
  KvScheme s = with_dtype(DType::kInt2);
  s.eviction = Eviction::kStreaming;
  s.streaming_window_tokens = 4096;
  EXPECT_EQ(kv_scheme_warnings(s, Engine::kStatic)[0],
            "KIVI-2 (2-bit) KV and StreamingLLM (sinks + window) are lossy: the accuracy cost is not modelled, check it "
            "on your evaluation");
}

TEST(KvSchemeSupport, WhatTheEngineDoesNotImplementIsNamed) {
  std::vector<std::string> w = kv_scheme_warnings(with_dtype(DType::kInt4), Engine::kVllm);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1], "vLLM does not implement int4 KV cache: this answer is for an engine that would, with vLLM's memory "
                  "accounting");
  // int8 KV: not lossy enough to warn about, but vLLM and SGLang do not offer it.
  w = kv_scheme_warnings(with_dtype(DType::kInt8), Engine::kSglang);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("SGLang does not implement int8 KV cache"), std::string::npos) << w[0];
  // TensorRT-LLM keeps sink tokens with a sliding window; nobody ships H2O.
  KvScheme streaming;
  streaming.eviction = Eviction::kStreaming;
  streaming.streaming_window_tokens = 2048;
  EXPECT_EQ(kv_scheme_warnings(streaming, Engine::kTrtllm).size(), 1u);
  KvScheme h2o;
  h2o.eviction = Eviction::kH2O;
  h2o.h2o_budget_tokens = 1024;
  w = kv_scheme_warnings(h2o, Engine::kTrtllm);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[1].find("TensorRT-LLM does not implement H2O eviction"), std::string::npos) << w[1];
}

}  // namespace
}  // namespace kvplan
