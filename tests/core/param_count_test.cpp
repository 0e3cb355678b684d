// Parameter counts and weight bytes (param_count.h), checked against hand arithmetic and the
// published totals recorded in the presets.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/model_config.h"
#include "kvplan/core/param_count.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/weight_quant.h"

namespace kvplan {
namespace {

TEST(ParamCount, Llama2_7b) {
  // embed 32000*4096 = 131,072,000, lm_head the same;
  // per layer: attn 4*4096^2 = 67,108,864 + MLP 3*4096*11008 = 135,266,304 + norms 2*4096 = 202,383,360;
  // 32 * 202,383,360 + 2 * 131,072,000 + final norm 4096 = 6,738,415,616
  EXPECT_EQ(count_parameters(resolve_model("llama-2-7b")).total(), 6738415616);
}

TEST(ParamCount, Llama31_8b) {
  ParamCount c = count_parameters(resolve_model("llama-3.1-8b"));
  // attn: q 4096^2 + k 1024*4096 + v 1024*4096 + o 4096^2 = 41,943,040 per layer
  EXPECT_EQ(c.attention, int64_t{32} * 41943040);
  // MLP: 3 * 4096 * 14336 = 176,160,768 per layer
  EXPECT_EQ(c.mlp, int64_t{32} * 176160768);
  // embedding 128256 * 4096 = 525,336,576; untied head the same
  EXPECT_EQ(c.embedding, 525336576);
  EXPECT_EQ(c.lm_head, 525336576);
  // norms: 32 * 2 * 4096 + 4096 = 266,240
  EXPECT_EQ(c.norms, 266240);
  // 32 * 218,112,000 + 2 * 525,336,576 + 4096 = 8,030,261,248
  EXPECT_EQ(c.total(), 8030261248);
  EXPECT_EQ(c.active(), c.total());  // dense
}

TEST(ParamCount, Mistral7b) {
  // per layer as Llama-3.1-8B: 218,112,000; 32 * that + 2 * 32000*4096 + 4096 = 7,241,732,096
  EXPECT_EQ(count_parameters(resolve_model("mistral-7b-v0.1")).total(), 7241732096);
}

TEST(ParamCount, Mixtral8x7bTotalAndActive) {
  ParamCount c = count_parameters(resolve_model("mixtral-8x7b"));
  // per layer: attn 41,943,040 + 8 experts * 176,160,768 + router 8*4096 + norms 8192
  //          = 1,451,270,144; 32 * that + 262,144,000 + 4096 = 46,702,792,704
  EXPECT_EQ(c.total(), 46702792704);
  // routed experts: 32 * 8 * 176,160,768 = 45,097,156,608
  EXPECT_EQ(c.experts, 45097156608);
  // router: 32 * 8 * 4096 = 1,048,576
  EXPECT_EQ(c.routers, 1048576);
  // active: total - all experts + 32 layers * 2 of 8 experts * 176,160,768
  //       = 46,702,792,704 - 45,097,156,608 + 11,274,289,152 = 12,879,925,248
  EXPECT_EQ(c.active_experts, 11274289152);
  EXPECT_EQ(c.active(), 12879925248);
}

TEST(ParamCount, DeepseekV3MainModel) {
  // MLA per layer: q_a 1536*7168 + q_a_norm 1536 + q_b 128*192*1536 + kv_a 576*7168 + kv_a_norm 512
  //   + kv_b 128*256*512 + o 7168*128*128 = 187,107,328
  // dense layers (0-2): + MLP 3*7168*18432 = 396,361,728 + norms 14,336 -> 583,483,392 each
  // MoE layers (58): + 256 * 3*7168*2048 + router 256*7168 + bias 256 + shared 3*7168*2048 + norms
  //   = 187,107,328 + 11,320,164,608 + 14,336 = 11,507,286,272 each
  // 3 * 583,483,392 + 58 * 11,507,286,272 + 2 * 129280*7168 + 7168 = 671,026,419,200
  EXPECT_EQ(count_parameters(resolve_model("deepseek-v3")).total(), 671026419200);
}

TEST(ParamCount, Falcon40bTiedHead) {
  // the preset's published 41,835,970,560 counts a separate lm_head although the config ties it;
  // unique parameters: 41,835,970,560 - 65,024 * 8,192 (532,676,608) = 41,303,293,952
  EXPECT_EQ(count_parameters(resolve_model("falcon-40b")).total(), 41835970560 - int64_t{65024} * 8192);
}

TEST(ParamCount, Mamba2_2_7b) {
  // per layer: in_proj (2*5120 + 2*128 + 80 = 10,576) * 2560 = 27,074,560; conv 5,376 * 4 = 21,504 +
  //   bias 5,376; dt_bias, A_log, D 3 * 80 = 240; gated norm 5,120; out_proj 2560 * 5120 = 13,107,200;
  //   one block norm 2,560 -> 40,216,560
  // 64 layers 2,573,859,840 + tied embedding 50288 * 2560 = 128,737,280 + final norm 2,560
  //   = 2,702,599,680
  EXPECT_EQ(count_parameters(resolve_model("mamba2-2.7b")).total(), 2702599680);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ParamCount, PresetsMatchPublishedTotals) {
  int checked = 0;
  for (const ModelConfig& m : model_presets()) {
    std::string path = std::string(KVPLAN_SOURCE_DIR) + "/data/models/" + m.id + ".json";
    std::string text = read_text(path);
    ASSERT_FALSE(text.empty()) << path;
    // Python's json writes bare Infinity (Mamba-2's time_step_limit); make it parseable.
    for (const std::string word : {"-Infinity", "Infinity", "NaN"}) {
      for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at)) {
        text.replace(at, word.size(), "null");
      }
    }
    nlohmann::json j = nlohmann::json::parse(text);
    bool published = j.contains("_kvplan_published_params") && !j["_kvplan_published_params"].is_null();
    bool differs = j.contains("_kvplan_published_params_differs");
    EXPECT_EQ(m.published_params.has_value(), published) << m.id;
    if (!published || differs) continue;
    ASSERT_TRUE(m.published_params.has_value()) << m.id;
    EXPECT_EQ(count_parameters(m).total(), *m.published_params) << m.id;
    ++checked;
  }
  // 26 presets carry an undisputed published total (see data/models/*.json)
  EXPECT_EQ(checked, 26);
}

// The glm4_moe checkpoints carry one multi-token-prediction layer that serving without speculative
// decoding does not load, so their presets are marked "differs". Adding that layer by hand must give
// the Hugging Face safetensors totals exactly: it checks the GLM-4.5 preset, which is reconstructed
// (data/models/SOURCES.md), to the parameter.
int64_t glm4_moe_mtp_layer(int64_t hidden, int64_t q_width, int64_t kv_width, bool qk_norm, int64_t experts,
                           int64_t expert_width, int64_t vocab) {
  const int64_t attention = hidden * q_width + q_width             // q with bias
                            + 2 * (hidden * kv_width + kv_width)   // k, v with biases
                            + q_width * hidden                     // o, no bias
                            + (qk_norm ? 2 * 128 : 0);             // q_norm, k_norm over head_dim 128
  const int64_t moe = (experts + 1) * 3 * hidden * expert_width    // routed + one shared expert
                      + experts * hidden + experts;                // router + correction bias
  const int64_t norms = 2 * hidden                                 // input, post-attention
                        + 3 * hidden;                              // enorm, hnorm, shared_head.norm
  const int64_t eh_proj = 2 * hidden * hidden;
  const int64_t embedding_and_head = 2 * vocab * hidden;
  return attention + moe + norms + eh_proj + embedding_and_head;
}

TEST(ParamCount, Glm45PresetsPlusTheirMtpLayerEqualTheCheckpointTotals) {
  // GLM-4.5: hidden 5120, 96 x 128 query, 8 x 128 KV, QK norms, 160 experts of 1536, vocab 151552
  EXPECT_EQ(glm4_moe_mtp_layer(5120, 12288, 1024, true, 160, 1536, 151552), 5539962272);
  EXPECT_EQ(count_parameters(resolve_model("glm-4.5")).total() + 5539962272, 358337791296);
  // GLM-4.5-Air: hidden 4096, 96 x 128 query, 8 x 128 KV, no QK norms, 128 experts of 1408
  EXPECT_EQ(glm4_moe_mtp_layer(4096, 12288, 1024, false, 128, 1408, 151552), 3616573568);
  EXPECT_EQ(count_parameters(resolve_model("glm-4.5-air")).total() + 3616573568, 110468824832);
}

TEST(WeightBytes, Llama31_8bBf16Total) {
  // 2 B * 8,030,261,248
  EXPECT_EQ(weight_bytes_total(resolve_model("llama-3.1-8b"), WeightFormat{}), int64_t{2} * 8030261248);
  // vocab 128256 is already a multiple of 64 (2004 * 64): per GPU at tp=1 equals the total
  EXPECT_EQ(weight_bytes_per_gpu(resolve_model("llama-3.1-8b"), WeightFormat{}, Parallelism{}),
            int64_t{2} * 8030261248);
}

// A tiny Llama: hidden 64, 4 heads (head_dim 16), 2 KV heads, MLP 128, 2 layers, vocab 100.
ModelConfig tiny_llama(int intermediate = 128) {
  nlohmann::json j = {{"model_type", "llama"},          {"hidden_size", 64},
                      {"num_attention_heads", 4},        {"num_key_value_heads", 2},
                      {"intermediate_size", intermediate}, {"num_hidden_layers", 2},
                      {"vocab_size", 100},               {"max_position_embeddings", 256},
                      {"tie_word_embeddings", false},    {"torch_dtype", "bfloat16"}};
  return parse_model_config(j, "tiny");
}

TEST(WeightBytes, TinyLlamaParameterCount) {
  // per layer: q 64*64 = 4096, k 32*64 = 2048, v 2048, o 4096 -> 12,288;
  //   MLP gate_up 256*64 = 16,384 + down 64*128 = 8,192 -> 24,576; norms 128 -> 36,992
  // 2 layers 73,984 + embed 100*64 = 6,400 + head 6,400 + final norm 64 = 86,848
  EXPECT_EQ(count_parameters(tiny_llama()).total(), 86848);
  EXPECT_EQ(weight_bytes_total(tiny_llama(), WeightFormat{}), 2 * 86848);
}

TEST(WeightBytes, TinyLlamaTensorParallel) {
  ModelConfig m = tiny_llama();
  // tp=1: vocab padded to ceil(100/64)*64 = 128 rows: embed 8,192 + head 8,192;
  //   73,984 + 16,384 + 64 = 90,432 params * 2 B = 180,864
  EXPECT_EQ(weight_bytes_per_gpu(m, WeightFormat{}, Parallelism{}), 180864);
  // tp=2: per layer q 32*64 = 2048, k 16*64 = 1024, v 1024, o 64*32 = 2048 -> 6,144;
  //   MLP gate_up 128*64 = 8,192 + down 64*64 = 4,096 -> 12,288; norms (replicated) 128 -> 18,560
  //   2 layers 37,120 + embed 64*64 = 4,096 + head 4,096 + final norm 64 = 45,376 params * 2 B = 90,752
  EXPECT_EQ(weight_bytes_per_gpu(m, WeightFormat{}, Parallelism{.tensor_parallel = 2}), 90752);
  // roughly half: the only excess over 180,864 / 2 = 90,432 is the replicated half of the
  //   320 norm elements: 160 * 2 B = 320
  EXPECT_EQ(90752 - 180864 / 2, 320);
}

TEST(WeightBytes, TinyLlamaKvHeadsReplicatedAboveTheirCount) {
  ModelConfig m = tiny_llama();
  // tp=4 > 2 KV heads: 1 replicated KV head per GPU, 1 query head.
  //   q 16*64 = 1,024, k 1,024, v 1,024, o 64*16 = 1,024 -> 4,096; MLP gate_up 64*64 = 4,096 +
  //   down 64*32 = 2,048 -> 6,144; norms 128 -> 10,368 per layer; 2 layers 20,736
  //   embed (128/4 = 32) * 64 = 2,048 + head 2,048 + final norm 64 -> 24,896 params * 2 B = 49,792
  EXPECT_EQ(weight_bytes_per_gpu(m, WeightFormat{}, Parallelism{.tensor_parallel = 4}), 49792);
}

TEST(WeightBytes, TinyLlamaPipelineStages) {
  nlohmann::json j = {{"model_type", "llama"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 2}, {"intermediate_size", 128},
                      {"num_hidden_layers", 2}, {"vocab_size", 100}, {"tie_word_embeddings", true}};
  ModelConfig m = parse_model_config(j, "tiny-tied");
  Parallelism pp{.tensor_parallel = 1, .pipeline_parallel = 2};
  // stage 0: padded embedding 128 * 64 = 8,192 + layer 0 36,992 = 45,184 params * 2 B = 90,368
  EXPECT_EQ(weight_bytes_per_gpu(m, WeightFormat{}, pp, 0), 90368);
  // stage 1: layer 1 36,992 + final norm 64 + its own copy of the tied head 8,192 = 45,248 * 2 = 90,496
  EXPECT_EQ(weight_bytes_per_gpu(m, WeightFormat{}, pp, 1), 90496);
}

TEST(WeightBytes, TinyLlamaFp8PerTensor) {
  ModelConfig m = tiny_llama();
  const WeightFormat f{DType::kBF16, quantization_from_flag("fp8", 128)};
  // 7 linears per layer, each rows*cols * 1 B + one fp32 weight_scale (4 B):
  //   q 4,096 + k 2,048 + v 2,048 + o 4,096 + gate 8,192 + up 8,192 + down 8,192 = 36,864 + 28 = 36,892
  //   norms 128 * 2 B = 256 -> 37,148 per layer; 2 layers 74,296
  //   + embedding 6,400 * 2 B = 12,800 + final norm 128 + LM head kept 16-bit 12,800 = 100,024
  EXPECT_EQ(weight_bytes_total(m, f), 100024);
}

TEST(WeightBytes, TinyLlamaGptqInt4) {
  ModelConfig m = tiny_llama();
  const WeightFormat f{DType::kBF16, quantization_from_flag("gptq", 128)};
  // GPTQ linear [rows, cols]: qweight cols/8 * rows * 4, qzeros groups * rows/8 * 4, scales groups * rows * 2,
  //   g_idx cols * 4, and AutoGPTQ's zero fp16 bias rows * 2 (one group per row: cols <= 128):
  //   q [64,64]: 2,048 + 32 + 128 + 256 + 128 = 2,592;  k [32,64]: 1,024 + 16 + 64 + 256 + 64 = 1,424; v 1,424
  //   o 2,592;  gate [128,64]: 4,096 + 64 + 256 + 256 + 256 = 4,928; up 4,928
  //   down [64,128]: 4,096 + 32 + 128 + 512 + 128 = 4,896  -> 22,784 + norms 256 = 23,040 per layer
  //   2 layers 46,080 + embedding 12,800 + LM head 12,800 + final norm 128 = 71,808
  EXPECT_EQ(weight_bytes_total(m, f), 71808);
}

TEST(WeightBytes, TinyLlamaAwqInt4) {
  ModelConfig m = tiny_llama();
  const WeightFormat f{DType::kBF16, quantization_from_flag("awq", 128)};
  // AWQ linear: qweight cols * rows/8 * 4, qzeros groups * rows/8 * 4, scales groups * rows * 2:
  //   q 2,048 + 32 + 128 = 2,208; k 1,024 + 16 + 64 = 1,104; v 1,104; o 2,208
  //   gate 4,096 + 64 + 256 = 4,416; up 4,416; down [64,128] 4,096 + 32 + 128 = 4,256 -> 19,712
  //   + norms 256 = 19,968 per layer; 2 layers 39,936 + 25,728 = 65,664
  EXPECT_EQ(weight_bytes_total(m, f), 65664);
}

TEST(WeightBytes, TinyLlamaGptqPartialGroup) {
  ModelConfig m = tiny_llama(192);
  const WeightFormat f{DType::kBF16, quantization_from_flag("gptq", 128)};
  // attention as above 8,032; gate [192,64]: 6,144 + 96 + 384 + 256 + 384 = 7,264; up 7,264;
  //   down [64,192] has ceil(192/128) = 2 groups: 6,144 + 2*32 + 2*128 + 768 + 128 = 7,360
  //   per layer 8,032 + 21,888 + 256 = 30,176; 2 layers 60,352 + 25,728 = 86,080
  EXPECT_EQ(weight_bytes_total(m, f), 86080);
}

TEST(WeightBytes, TiedEmbeddingsCountedOnce) {
  nlohmann::json j = {{"model_type", "llama"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 2}, {"intermediate_size", 128},
                      {"num_hidden_layers", 2}, {"vocab_size", 100}, {"tie_word_embeddings", true}};
  ParamCount c = count_parameters(parse_model_config(j, "tiny-tied"));
  // as the untied tiny model minus the 6,400-element head: 86,848 - 6,400 = 80,448
  EXPECT_EQ(c.lm_head, 0);
  EXPECT_EQ(c.total(), 80448);
}

}  // namespace
}  // namespace kvplan
