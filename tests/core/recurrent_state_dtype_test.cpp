// The engines' recurrent-state dtypes (core/recurrent_state_dtype.h), each against the engine
// source it follows, and a public vLLM log whose page rule lines only the bf16 state reproduces.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/recurrent_state_dtype.h"
#include "kvplan/core/vllm_log.h"
#include "kvplan/core/vllm_profile.h"

namespace kvplan {
namespace {

DType state(const char* model, Engine e) { return engine_state_dtype(resolve_model(model), e, DType::kBF16).dtype; }

TEST(RecurrentStateDtype, VllmUsesTheModelDtypeExceptWhereQwen35ConfigNamesOne) {
  // mamba_utils.py: --mamba-ssm-cache-dtype auto = the conv state's dtype = the model dtype.
  EXPECT_EQ(state("qwen3-next-80b-a3b", Engine::kVllm), DType::kBF16);
  EXPECT_EQ(state("jamba-v0.1", Engine::kVllm), DType::kBF16);
  EXPECT_EQ(state("mamba2-2.7b", Engine::kVllm), DType::kBF16);
  EXPECT_EQ(state("minimax-m1", Engine::kVllm), DType::kBF16);
  // models/config.py Qwen3_5ForConditionalGenerationConfig reads the config's mamba_ssm_dtype.
  EXPECT_EQ(state("qwen3.5-27b", Engine::kVllm), DType::kF32);
  EXPECT_EQ(state("qwen3.5-397b-a17b", Engine::kVllm), DType::kF32);
  // An fp16 model's state follows the model dtype it runs in.
  EXPECT_EQ(engine_state_dtype(resolve_model("jamba-v0.1"), Engine::kVllm, DType::kF16).dtype, DType::kF16);
}

TEST(RecurrentStateDtype, SglangDefaultsToFp32AndTensorRtLlmToTheWeights) {
  EXPECT_EQ(state("qwen3-next-80b-a3b", Engine::kSglang), DType::kF32);
  EXPECT_EQ(state("qwen3.5-27b", Engine::kSglang), DType::kF32);
  EXPECT_EQ(state("qwen3-next-80b-a3b", Engine::kTrtllm), DType::kBF16);
  EXPECT_EQ(state("qwen3.5-27b", Engine::kTrtllm), DType::kF32);
  EXPECT_EQ(state("qwen3-next-80b-a3b", Engine::kStatic), DType::kF32);
}

TEST(RecurrentStateDtype, ADeclaredDtypeIsReadFromTextConfigFirstAndSglangFollowsIt) {
  nlohmann::json c = {{"model_type", "qwen3_next"}, {"hidden_size", 2048}, {"num_hidden_layers", 4},
                      {"num_attention_heads", 16}, {"num_key_value_heads", 2}, {"head_dim", 256},
                      {"vocab_size", 151936}, {"intermediate_size", 5120}, {"full_attention_interval", 4},
                      {"linear_num_key_heads", 16}, {"linear_num_value_heads", 32}, {"linear_key_head_dim", 128},
                      {"linear_value_head_dim", 128}, {"linear_conv_kernel_dim", 4}, {"num_experts", 8},
                      {"num_experts_per_tok", 2}, {"moe_intermediate_size", 512},
                      {"shared_expert_intermediate_size", 512}, {"max_position_embeddings", 4096},
                      {"mamba_ssm_dtype", "bfloat16"}};
  const ModelConfig m = parse_model_config(c, "declared");
  ASSERT_TRUE(m.declared_state_dtype.has_value());
  EXPECT_EQ(*m.declared_state_dtype, DType::kBF16);
  EXPECT_EQ(engine_state_dtype(m, Engine::kSglang, DType::kBF16).dtype, DType::kBF16);
  // vLLM does not read it for qwen3_next, and says so.
  const RecurrentStateDtype v = engine_state_dtype(m, Engine::kVllm, DType::kBF16);
  EXPECT_EQ(v.dtype, DType::kBF16);
  EXPECT_NE(v.source.find("does not read"), std::string::npos) << v.source;
  c["mamba_ssm_dtype"] = "float8";
  try {
    parse_model_config(c, "bad");
    FAIL() << "an unknown mamba_ssm_dtype must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mamba_ssm_dtype=float8"), std::string::npos) << e.what();
  }
}

TEST(RecurrentStateDtype, VllmRefusesAChoiceItWouldIgnore) {
  const ModelConfig minimax = resolve_model("minimax-m1");
  EXPECT_THROW(chosen_state_dtype(minimax, Engine::kVllm, DType::kBF16, DType::kF32), ConfigError);
  EXPECT_EQ(chosen_state_dtype(minimax, Engine::kVllm, DType::kBF16, DType::kBF16).dtype, DType::kBF16);
  EXPECT_EQ(chosen_state_dtype(minimax, Engine::kSglang, DType::kBF16, DType::kF32).dtype, DType::kF32);
  EXPECT_EQ(chosen_state_dtype(resolve_model("qwen3-next-80b-a3b"), Engine::kVllm, DType::kBF16, DType::kF32).dtype,
            DType::kF32);
}

TEST(RecurrentStateDtype, ALogStatesTheFlagInEitherEnginesSpelling) {
  const VllmLog v = parse_vllm_log("INFO [utils.py:328] non-default args: {'model': 'x', 'mamba_ssm_cache_dtype': 'float32'}\n"
                                   "GPU KV cache size: 1,000 tokens\n", "v");
  ASSERT_TRUE(v.mamba_ssm_cache_dtype.has_value());
  EXPECT_EQ(*v.mamba_ssm_cache_dtype, "float32");
  const VllmLog unset = parse_vllm_log("server_args=ServerArgs(model_path='x', mamba_ssm_dtype=None, tp_size=1)\n"
                                       "GPU KV cache size: 1,000 tokens\n", "s");
  EXPECT_FALSE(unset.mamba_ssm_cache_dtype.has_value());
  const VllmLog sglang = parse_vllm_log("server_args=ServerArgs(model_path='x', mamba_ssm_dtype='bfloat16', tp_size=1)\n"
                                        "GPU KV cache size: 1,000 tokens\n", "s");
  ASSERT_TRUE(sglang.mamba_ssm_cache_dtype.has_value());
  EXPECT_EQ(*sglang.mamba_ssm_cache_dtype, "bfloat16");
}

// data/vllm_logs/96: vLLM 0.10.2, Qwen3-Next-80B-A3B-Instruct, TP 2, defaults. Per GPU: 2 KV heads
// over 2 ranks = 1 x 2 x 256 x 2 B = 1,024 B per token per layer; Gated DeltaNet state 3 x (2 x 8 x
// 128 + 16 x 128) x 2 B = 24,576 conv + 16 x 128 x 128 x 2 B = 524,288 (bf16) -> 548,864 B;
// 16 x cdiv(548,864, 16 x 1,024) = 544 tokens, page 557,056 B, padding 1.49% (fp32 would give
// 1,073,152 B and 1,056 tokens). 12 attention + 36 recurrent layers in 4 groups of 12: the printed
// 973,760 tokens = 7,162 pool blocks // 4 x 544, and 14.77x = 7,162 / (cdiv(262,144, 544) + 3).
TEST(RecurrentStateDtype, ReproducesTheQwen3NextVllmLog) {
  const ModelConfig m = resolve_model("qwen3-next-80b-a3b");
  KvScheme s;
  s.state_dtype = engine_state_dtype(m, Engine::kVllm, DType::kBF16).dtype;
  const Parallelism tp2{.tensor_parallel = 2};
  const VllmHybridPages pages = vllm_v1_hybrid_pages(build_kv_layout(m, s, tp2), false, 16);
  EXPECT_EQ(pages.state_bytes, 548864);
  EXPECT_EQ(pages.block_tokens, 544);
  const double padding = 100.0 * static_cast<double>(pages.page_bytes - pages.state_bytes) / static_cast<double>(pages.state_bytes);
  EXPECT_EQ(fmt::format("{:.2f}", padding), "1.49");
  s.tokens_per_block = pages.block_tokens;
  s.state_page_bytes = pages.page_bytes;
  const VllmKvGroups groups = vllm_v1_kv_groups(build_kv_layout(m, s, tp2));
  ASSERT_EQ(groups.num_groups(), 4);
  EXPECT_EQ(7162 / groups.num_groups() * 544, 973760);
  EXPECT_EQ(fmt::format("{:.2f}", vllm_v1_hybrid_max_concurrency(groups, 7162, 544, 262144, 8192)), "14.77");
  // The old fp32 default gave another block.
  KvScheme fp32;
  EXPECT_EQ(vllm_v1_hybrid_pages(build_kv_layout(m, fp32, tp2), false, 16).block_tokens, 1056);
  // plan_memory pages with the same block.
  ServingConfig cfg;
  cfg.version = EngineVersion{0, 10, 2};
  cfg.max_model_len = 262144;
  KvScheme fresh;
  fresh.state_dtype = DType::kBF16;
  EXPECT_EQ(plan_memory(m, resolve_gpu("h200"), fresh, tp2, cfg).tokens_per_block, 544);
}

}  // namespace
}  // namespace kvplan
