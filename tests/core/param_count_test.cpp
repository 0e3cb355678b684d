// Parameter counts and weight bytes (param_count.h), checked against hand arithmetic and the
// published totals recorded in the presets.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "kvplan/core/kv_layout.h"
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
  // 54 presets carry an undisputed published total (see data/models/*.json)
  EXPECT_EQ(checked, 54);
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

// --- Families added for issue 24. None has an exact published total (each preset says why), so
// the arithmetic is checked here by hand, tensor by tensor.

TEST(ParamCount, MiniMaxM25) {
  ParamCount c = count_parameters(resolve_model("minimax-m2.5"));
  // per layer: q 6144*3072 = 18,874,368, k and v 1024*3072 = 3,145,728 each, o 3072*6144 = 18,874,368
  //   -> 44,040,192; q_norm over 48*128 = 6,144 and k_norm over 8*128 = 1,024 (full width)
  //   experts 256 * 3*3072*1536 = 3,623,878,656; router 256*3072 = 786,432 + correction bias 256;
  //   norms 2*3072 -> 3,668,718,848
  EXPECT_EQ(c.attention, int64_t{62} * (44040192 + 7168));
  EXPECT_EQ(c.experts, int64_t{62} * 3623878656);
  EXPECT_EQ(c.routers, int64_t{62} * (786432 + 256));
  // 62 * 3,668,718,848 + embed and head 2 * 200064*3072 = 1,229,193,216 + final norm 3,072
  EXPECT_EQ(c.total(), 228689764864);
  // no MTP modules counted, no shared expert
  EXPECT_EQ(c.shared_experts, 0);
  // active: 8 of 256 experts: total - 61/62 ... = total - experts + 62 * 8 * 14,155,776
  EXPECT_EQ(c.active(), 228689764864 - int64_t{62} * 3623878656 + int64_t{62} * 8 * 14155776);
}

TEST(ParamCount, Qwen35_397bA17b) {
  ParamCount c = count_parameters(resolve_model("qwen3.5-397b-a17b"));
  // 15 full-attention layers: q with gate 2*32*256 = 16,384 rows * 4096 = 67,108,864, k and v
  //   512*4096 = 2,097,152 each, o 4096*8192 = 33,554,432, q/k norms 2*256 -> 104,858,112
  // 45 Gated DeltaNet layers: key_dim 16*128 = 2,048, value_dim 64*128 = 8,192;
  //   in_proj_qkvz (2*2048 + 2*8192) * 4096 = 83,886,080, in_proj_ba 128*4096 = 524,288,
  //   conv1d 12,288*4 = 49,152, dt_bias 64, A_log 64, norm 128, out_proj 4096*8192 = 33,554,432
  //   -> 118,014,208
  EXPECT_EQ(c.attention, int64_t{15} * 104858112);
  EXPECT_EQ(c.recurrent, int64_t{45} * 118014208);
  // MoE on all 60 layers: 512 * 3*4096*1024 = 6,442,450,944; router 512*4096 = 2,097,152;
  //   shared expert 3*4096*1024 = 12,582,912 + its gate 4,096
  EXPECT_EQ(c.experts, int64_t{60} * 6442450944);
  EXPECT_EQ(c.shared_experts, int64_t{60} * (12582912 + 4096));
  // vision (Qwen3-VL ViT, 27 blocks of 1152, MLP 4304, patch 16, temporal 2, merge 2):
  //   patch_embed 1152*3*2*16*16 + 1152 = 1,770,624; pos_embed 2304*1152 = 2,654,208;
  //   block: norms 4*1152, qkv 3*1152^2 + 3456, proj 1152^2 + 1152, fc1 4304*1152 + 4304,
  //   fc2 1152*4304 + 1152 -> 15,239,504, x27 = 411,466,608; merger: norm 2304,
  //   fc1 4608^2 + 4608 = 21,238,272, fc2 4096*4608 + 4096 = 18,878,464 -> 40,119,040
  EXPECT_EQ(c.vision, 1770624 + 2654208 + 411466608 + 40119040);
  // 1,572,871,680 + 5,310,639,360 + 60 * (6,457,135,104 + norms 8,192) + embed and head
  //   2 * 248320*4096 = 2,034,237,440 + final norm 4,096 + vision 456,010,480
  EXPECT_EQ(c.total(), 396802360816);
}

TEST(ParamCount, Qwen35_27bDense) {
  ParamCount c = count_parameters(resolve_model("qwen3.5-27b"));
  // 16 full: q 12,288*5120 = 62,914,560, k and v 1024*5120 each, o 5120*6144, norms 512 -> 104,858,112
  // 48 DeltaNet: qkvz 16,384*5120 = 83,886,080, ba 96*5120 = 491,520, conv 10,240*4 = 40,960,
  //   dt_bias/A_log 48 each, norm 128, out 5120*6144 = 31,457,280 -> 115,876,064
  // MLP 3*5120*17408 = 267,386,880 and norms 10,240 on all 64 layers
  EXPECT_EQ(c.attention + c.recurrent, int64_t{16} * 104858112 + int64_t{48} * 115876064);
  EXPECT_EQ(c.mlp, int64_t{64} * 267386880);
  // vision as the 397B one but merger fc2 into 5120: 456,010,480 - 18,878,464 + 23,598,080
  EXPECT_EQ(c.vision, 460730096);
  // 24,353,196,544 layers + embed and head 2 * 248320*5120 = 2,542,796,800 + norm 5,120 + vision
  EXPECT_EQ(c.total(), 27356728560);
}

TEST(ParamCount, DeepseekV32IsV3PlusTheIndexer) {
  ParamCount c = count_parameters(resolve_model("deepseek-v3.2"));
  // indexer per layer: wq_b 64*128 * 1536 = 12,582,912; wk 128*7168 = 917,504;
  //   k_norm weight + bias 256; weights_proj 64*7168 = 458,752 -> 13,959,424
  const int64_t v3 = count_parameters(resolve_model("deepseek-v3")).total();
  EXPECT_EQ(v3, 671026419200);
  EXPECT_EQ(c.total(), v3 + int64_t{61} * 13959424);
  EXPECT_EQ(c.total(), 671877944064);
}

TEST(ParamCount, Glm5) {
  ParamCount c = count_parameters(resolve_model("glm-5"));
  // MLA: q_a 2048*6144 = 12,582,912 + norm 2,048; q_b 64*256 * 2048 = 33,554,432;
  //   kv_a 576*6144 = 3,538,944 + norm 512; kv_b 64*448 * 512 = 14,680,064; o 6144*16384 = 100,663,296
  //   -> 165,022,208; indexer 32*128*2048 + 128*6144 + 256 + 32*6144 = 9,371,904
  EXPECT_EQ(c.attention, int64_t{78} * (165022208 + 9371904));
  // 3 dense layers: MLP 3*6144*12288 = 226,492,416; 75 MoE layers: 256 experts of 3*6144*2048 =
  //   9,663,676,416, router 256*6144 + 256 bias, one shared expert 37,748,736
  EXPECT_EQ(c.mlp, int64_t{3} * 226492416);
  EXPECT_EQ(c.experts, int64_t{75} * 9663676416);
  // 3 * 400,898,816 + 75 * 9,877,404,672 + 2 * 154880*6144 + 6,144 = 743,911,218,432
  // (zai-org announces GLM-5 as 744B parameters)
  EXPECT_EQ(c.total(), 743911218432);
  EXPECT_EQ(count_parameters(resolve_model("glm-5-fp8")).total(), c.total());
}

TEST(ParamCount, KimiK25IsKimiK2PlusMoonVit) {
  ParamCount c = count_parameters(resolve_model("kimi-k2.5"));
  // MoonViT (27 blocks of 1152, MLP 4304, patch 14, 64x64 position grid, 2x2 merge):
  //   patch_embed 1152*3*14*14 + 1152 = 678,528; pos_emb 64*64*1152 = 4,718,592;
  //   block 15,239,504 (as Qwen3-VL's: LayerNorms, qkv, proj, fc0, fc1, all with bias) x27 = 411,466,608;
  //   final_layernorm 2,304; mm_projector pre_norm 2,304, proj.0 4608^2 + 4608 = 21,238,272,
  //   proj.2 7168*4608 + 7168 = 33,037,312
  EXPECT_EQ(c.vision, 678528 + 4718592 + 411466608 + 2304 + 2304 + 21238272 + 33037312);
  EXPECT_EQ(c.vision, 471143920);
  // the same formula gives the 49,558,272 projector parameters quoted for Kimi-K2.6 (text width 6144):
  //   2,304 + 21,238,272 + 6144*4608 + 6144
  EXPECT_EQ(2304 + 21238272 + int64_t{6144} * 4608 + 6144, 49558272);
  EXPECT_EQ(c.total() - c.vision, count_parameters(resolve_model("kimi-k2")).total());
}

TEST(ParamCount, Qwen3SmallTiedPresetsAreTheirCheckpointTotalsLessTheStoredHead) {
  // Qwen3-0.6B: per layer q 2048*1024 + k, v 1024*1024 + o 1024*2048 + q/k norms 256 = 6,291,712,
  //   MLP 3*1024*3072 = 9,437,184, norms 2,048 -> 15,730,944; 28 layers 440,466,432
  //   + tied embedding 151936*1024 = 155,582,464 + final norm 1,024 = 596,049,920
  EXPECT_EQ(count_parameters(resolve_model("qwen3-0.6b")).total(), 596049920);
  // the checkpoint also stores lm_head: the HF total 751,632,384 counts the embedding twice
  EXPECT_EQ(596049920 + int64_t{151936} * 1024, 751632384);
  // Qwen3-1.7B: per layer 12,583,168 + 37,748,736 + 4,096 = 50,336,000; 28 layers 1,409,408,000
  //   + 151936*2048 = 311,164,928 + 2,048 = 1,720,574,976; + the stored head = 2,031,739,904
  EXPECT_EQ(count_parameters(resolve_model("qwen3-1.7b")).total(), 1720574976);
  EXPECT_EQ(1720574976 + int64_t{151936} * 2048, 2031739904);
}

// --- The common sizes added for issue 24, each equal to its checkpoint's published total (the
// preset file names the source). Worked by hand, tensor by tensor.

TEST(ParamCount, Llama32SmallTiedPresets) {
  // Llama-3.2-1B: q 2048*2048 = 4,194,304, k and v 512*2048 = 1,048,576 each, o 4,194,304
  //   -> 10,485,760; MLP 3*2048*8192 = 50,331,648; norms 4,096 -> 60,821,504; 16 layers 973,144,064
  //   + tied embedding 128256*2048 = 262,668,288 (stored once) + final norm 2,048
  EXPECT_EQ(count_parameters(resolve_model("llama-3.2-1b")).total(), 1235814400);
  // Llama-3.2-3B: q 3072*3072 = 9,437,184, k and v 1024*3072 = 3,145,728 each, o 9,437,184
  //   -> 25,165,824; MLP 3*3072*8192 = 75,497,472; norms 6,144 -> 100,669,440; 28 layers
  //   2,818,744,320 + tied embedding 128256*3072 = 394,002,432 + 3,072
  EXPECT_EQ(count_parameters(resolve_model("llama-3.2-3b")).total(), 3212749824);
}

TEST(ParamCount, Qwen25InstructPresets) {
  // 7B: q 3584^2 + bias 3,584 = 12,848,640; k and v 512*3584 + 512 = 1,835,520 each; o 12,845,056
  //   -> 29,364,736; MLP 3*3584*18944 = 203,685,888; norms 7,168 -> 233,057,792; 28 layers
  //   6,525,618,176 + embed and head 2 * 152064*3584 = 1,089,994,752 + 3,584
  EXPECT_EQ(count_parameters(resolve_model("qwen2.5-7b")).total(), 7615616512);
  // 14B: q 5120^2 + 5,120 = 26,219,520; k and v 1024*5120 + 1,024 = 5,243,904 each; o 26,214,400
  //   -> 62,921,728; MLP 3*5120*13824 = 212,336,640; norms 10,240 -> 275,268,608; 48 layers
  //   13,212,893,184 + 2 * 152064*5120 = 1,557,135,360 + 5,120
  EXPECT_EQ(count_parameters(resolve_model("qwen2.5-14b")).total(), 14770033664);
  // 32B: attention as 14B 62,921,728; MLP 3*5120*27648 = 424,673,280; norms 10,240 -> 487,605,248;
  //   64 layers 31,206,735,872 + 1,557,135,360 + 5,120
  EXPECT_EQ(count_parameters(resolve_model("qwen2.5-32b")).total(), 32763876352);
}

TEST(ParamCount, Qwen3_4bAnd14b) {
  // 4B: q 4096*2560 = 10,485,760, k and v 1024*2560 = 2,621,440 each, o 2560*4096 = 10,485,760,
  //   q/k norms 256 -> 26,214,656; MLP 3*2560*9728 = 74,711,040; norms 5,120 -> 100,930,816;
  //   36 layers 3,633,509,376 + tied embedding 151936*2560 = 388,956,160 (stored once) + 2,560
  EXPECT_EQ(count_parameters(resolve_model("qwen3-4b")).total(), 4022468096);
  // 14B: q and o 5120^2 = 26,214,400 each, k and v 1024*5120 = 5,242,880 each, norms 256
  //   -> 62,914,816; MLP 3*5120*17408 = 267,386,880; norms 10,240 -> 330,311,936; 40 layers
  //   13,212,477,440 + embed and head 2 * 151936*5120 = 1,555,824,640 + 5,120
  EXPECT_EQ(count_parameters(resolve_model("qwen3-14b")).total(), 14768307200);
}

TEST(ParamCount, Gemma3SmallPresets) {
  // 1B (gemma3_text): q 4*256*1152 = 1,179,648, k and v 256*1152 = 294,912 each, o 1,179,648,
  //   q/k norms 512 -> 2,949,632; MLP 3*1152*6912 = 23,887,872; four norms 4,608 -> 26,842,112;
  //   26 layers 697,894,912 + tied embedding 262144*1152 = 301,989,888 + final norm 1,152
  EXPECT_EQ(count_parameters(resolve_model("gemma-3-1b")).total(), 999885952);
  // SigLIP (27 x 1152, MLP 4304, patch 14, 896 px): patch embed 1152*3*14*14 + 1,152 = 678,528;
  //   positions (896/14)^2 * 1152 = 4,718,592; block 15,239,504 x 27 = 411,466,608; post norm 2,304
  //   -> 416,866,032; projector: soft-embedding norm 1,152 + 1152 x text width
  const int64_t siglip = 678528 + 4718592 + 411466608 + 2304;
  // 4B: text_config names neither heads nor head_dim: Gemma3TextConfig's 8 / 4 heads of 256.
  //   q 2048*2560 = 5,242,880, k and v 1024*2560 = 2,621,440 each, o 5,242,880, norms 512
  //   -> 15,729,152; MLP 3*2560*10240 = 78,643,200; norms 10,240 -> 94,382,592; 34 layers
  //   3,209,008,128 + tied embedding 262208*2560 = 671,252,480 + 2,560 = 3,880,263,168
  ParamCount c4 = count_parameters(resolve_model("gemma-3-4b"));
  EXPECT_EQ(c4.vision, siglip + 1152 + int64_t{1152} * 2560);
  EXPECT_EQ(c4.total() - c4.vision, 3880263168);
  EXPECT_EQ(c4.total(), 4300079472);
  // 12B: q 4096*3840 = 15,728,640, k and v 2048*3840 = 7,864,320 each, o 15,728,640, norms 512
  //   -> 47,186,432; MLP 3*3840*15360 = 176,947,200; norms 15,360 -> 224,148,992; 48 layers
  //   10,759,151,616 + 262208*3840 = 1,006,878,720 + 3,840 = 11,766,034,176
  ParamCount c12 = count_parameters(resolve_model("gemma-3-12b"));
  EXPECT_EQ(c12.vision, siglip + 1152 + int64_t{1152} * 3840);
  EXPECT_EQ(c12.total() - c12.vision, 11766034176);
  EXPECT_EQ(c12.total(), 12187325040);
}

TEST(ParamCount, Phi4MiniTiedWithPartialRotary) {
  // qkv (24 + 2*8) * 128 * 3072 = 15,728,640; o 3072^2 = 9,437,184; gate_up 2*8192*3072 =
  //   50,331,648; down 25,165,824; norms 6,144 -> 100,669,440; 32 layers 3,221,422,080
  //   + tied embedding 200064*3072 = 614,596,608 (stored once) + final norm 3,072
  EXPECT_EQ(count_parameters(resolve_model("phi-4-mini")).total(), 3836021760);
}

TEST(WeightBytes, Llama31_8bBf16Total) {
  // 2 B * 8,030,261,248
  EXPECT_EQ(weight_bytes_total(resolve_model("llama-3.1-8b"), WeightFormat{}), int64_t{2} * 8030261248);
  // vocab 128256 is already a multiple of 64 (2004 * 64): per GPU at tp=1 equals the total
  EXPECT_EQ(weight_bytes_per_gpu(resolve_model("llama-3.1-8b"), WeightFormat{}, Parallelism{}),
            int64_t{2} * 8030261248);
}

TEST(ParamCount, Qwen3VlIsQwen3PlusItsVitWithDeepstackMergers) {
  // Qwen3-VL ViT (27 blocks of 1152, MLP 4304, patch 16, temporal 2, merge 2, 2304 positions), as
  //   Qwen3.5's: patch_embed 1,770,624 + pos_embed 2,654,208 + blocks 411,466,608 = 415,891,440;
  //   merger: LayerNorm 2,304, fc1 4608^2 + 4608 = 21,238,272, fc2 out*4608 + out;
  //   three deepstack mergers (deepstack_visual_indexes [8, 16, 24]), each with its LayerNorm over
  //   the merged 4608 (9,216), fc1 21,238,272 and fc2 out*4608 + out.
  auto vit = [](int64_t out) {
    const int64_t fc2 = out * 4608 + out;
    return int64_t{415891440} + (2304 + 21238272 + fc2) + 3 * (9216 + 21238272 + fc2);
  };
  // 8B: out 4096 -> vision 576,388,336; text = Qwen3-8B's 8,190,735,360
  ParamCount c8 = count_parameters(resolve_model("qwen3-vl-8b"));
  EXPECT_EQ(c8.vision, vit(4096));
  EXPECT_EQ(c8.vision, 576388336);
  EXPECT_EQ(c8.total() - c8.vision, count_parameters(resolve_model("qwen3-8b")).total());
  EXPECT_EQ(c8.total(), 8767123696);
  // 30B-A3B: out 2048 -> vision 538,631,408; text = Qwen3-30B-A3B's 30,532,122,624
  ParamCount c30 = count_parameters(resolve_model("qwen3-vl-30b-a3b"));
  EXPECT_EQ(c30.vision, vit(2048));
  EXPECT_EQ(c30.total() - c30.vision, count_parameters(resolve_model("qwen3-30b-a3b")).total());
  EXPECT_EQ(c30.total(), 31070754032);
  // 4B and 2B: a ViT of 24 blocks of 1024 (MLP 4096, 2304 positions): patch_embed 1024*3*2*16*16
  //   + 1,024 = 1,573,888; positions 2,359,296; block 4*1024 + (3*1024^2 + 3,072) + (1024^2 + 1,024)
  //   + (4096*1024 + 4,096) + (1024*4096 + 1,024) = 12,596,224, x24 = 302,309,376; mergers over 4096:
  //   LayerNorm 2,048 (main) or 8,192 (deepstack), fc1 4096^2 + 4,096 = 16,781,312, fc2 out*4096 + out
  auto small_vit = [](int64_t out) {
    const int64_t fc2 = out * 4096 + out;
    return int64_t{1573888 + 2359296 + 302309376} + (2048 + 16781312 + fc2) + 3 * (8192 + 16781312 + fc2);
  };
  ParamCount c4 = count_parameters(resolve_model("qwen3-vl-4b"));
  EXPECT_EQ(c4.vision, small_vit(2560));
  EXPECT_EQ(c4.total() - c4.vision, count_parameters(resolve_model("qwen3-4b")).total());  // 4,022,468,096
  EXPECT_EQ(c4.total(), 4437815808);
  ParamCount c2 = count_parameters(resolve_model("qwen3-vl-2b"));
  EXPECT_EQ(c2.vision, small_vit(2048));
  EXPECT_EQ(c2.total() - c2.vision, count_parameters(resolve_model("qwen3-1.7b")).total());  // tied, 1,720,574,976
  EXPECT_EQ(c2.total(), 2127532032);
  // the text model's KV cache is Qwen3's: 36 layers x 2 x 8 heads x 128 x 2 B = 147,456 B/token
  EXPECT_EQ(kv_bytes_per_token(resolve_model("qwen3-vl-8b"), KvScheme{}), 147456);
}

// --- Vendor-quantized presets (issue 24): the same parameters as the 16-bit preset, stored as
// the checkpoint stores them. Totals are whole-model (tp = 1), worked tensor by tensor.

TEST(WeightBytes, Qwen3_32bFp8BlockCheckpoint) {
  const ModelConfig m = resolve_model("qwen3-32b-fp8");
  EXPECT_EQ(count_parameters(m).total(), count_parameters(resolve_model("qwen3-32b")).total());
  // fp8 e4m3 weights (1 B) + one weight_scale_inv per 128 x 128 block, which Qwen's FP8 checkpoints
  // store in bf16 (2 B; DeepSeek's are fp32: data/quantized/README.md), per layer:
  //   q [8192, 5120]: 41,943,040 + 64*40*2 = 5,120;  k, v [1024, 5120]: 5,242,880 + 8*40*2 = 640 each
  //   o [5120, 8192]: 41,943,040 + 5,120;  gate, up [25600, 5120]: 131,072,000 + 200*40*2 = 16,000 each
  //   down [5120, 25600]: 131,072,000 + 16,000  -> 487,587,840 + 59,520
  //   bf16 norms: 2*5120 + q/k norms 2*128 = 10,496 elements -> 20,992  => 487,668,352 per layer
  // 64 layers 31,210,774,528 + bf16 embedding and lm_head 2 * 151936*5120*2 = 3,111,649,280
  //   + final norm 10,240
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}), 34322434048);
}

TEST(WeightBytes, Qwen35_397bNvfp4OnlyTheRoutedExpertsAreFp4) {
  const ModelConfig m = resolve_model("qwen3.5-397b-a17b-nvfp4");
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.total(), count_parameters(resolve_model("qwen3.5-397b-a17b")).total());
  // ModelOpt NVFP4 linear [rows, cols]: e2m1 weight rows*cols/2 + fp8 weight_scale rows*cols/16
  //   + fp32 weight_scale_2 and input_scale (8 B). An expert's gate and up [1024, 4096] and down
  //   [4096, 1024]: 3 * (2,097,152 + 262,144 + 8) = 7,077,912 B; 512 experts x 60 layers
  //   = 217,433,456,640 B for 386,547,056,640 parameters.
  const int64_t expert_params = int64_t{60} * 512 * 3 * 4096 * 1024;
  EXPECT_EQ(c.experts, expert_params);
  // Everything else stays bf16 (the ignore list covers attention, Gated DeltaNet, shared experts,
  //   the vision tower, lm_head; routers, norms and embeddings are never quantized):
  //   (396,802,360,816 - 386,547,056,640) * 2 = 20,510,608,352
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}),
            int64_t{60} * 512 * 7077912 + (c.total() - expert_params) * 2);
  EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}), 237944064992);
}

TEST(WeightBytes, DeepseekV32Nvfp4KeepsTheLatentProjectionsButNotOProj) {
  const ModelConfig m = resolve_model("deepseek-v3.2-nvfp4");
  const ModelConfig bf16 = resolve_model("deepseek-v3.2");
  const WeightFormat f{m.dtype, m.quantization};
  // Against the same model with every MLA projection but o_proj ignored by hand: the preset's
  // exclude list names q_a, q_b, kv_a, kv_b and the indexer of each of the 61 layers, so the only
  // attention tensor in NVFP4 is o_proj [7168, 128*128] = 117,440,512 elements. Its bf16 bytes
  //   234,881,024 become e2m1 58,720,256 + fp8 scales 7,340,032 + two fp32 scales 8 = 66,060,296.
  ModelConfig all_kept = m;
  all_kept.quantization.ignore.push_back("self_attn");
  const int64_t kept = weight_bytes_total(all_kept, WeightFormat{m.dtype, all_kept.quantization});
  EXPECT_EQ(kept - weight_bytes_total(m, f), int64_t{61} * (234881024 - 66060296));
  EXPECT_EQ(count_parameters(m).total(), count_parameters(bf16).total());
}

// The quantized presets whose checkpoint size is published (data/quantized/README.md gives each
// total and how it was read): kvplan's bytes from the preset's own quantization_config equal it.
TEST(WeightBytes, QuantizedPresetsWeighExactlyWhatTheirCheckpointsStore) {
  const std::pair<const char*, int64_t> checkpoints[] = {
      {"qwen2.5-7b-awq", 5570747392},             // safetensors header element counts
      {"llama-3.3-70b-nvfp4", 42709045632},        // index total_size
      {"llama-3.1-8b-fp8-dynamic", 9083953152},    // summed header data_offsets
      {"llama-3.3-70b-fp8-dynamic", 72669806592},  // per-dtype element counts (derived)
      {"llama-3.3-70b-w4a16", 39525311232},        // summed header data_offsets
      {"qwen3-14b-fp8", 16326169600},              // artifact manifest payloads (derived)
  };
  for (const auto& [id, bytes] : checkpoints) {
    const ModelConfig m = resolve_model(id);
    ASSERT_NE(m.quantization.method, QuantMethod::kNone) << id;
    EXPECT_EQ(weight_bytes_total(m, WeightFormat{m.dtype, m.quantization}), bytes) << id;
  }
  // and each preset records that total itself
  for (const auto& [id, bytes] : checkpoints) {
    std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/data/models/" + id + ".json");
    EXPECT_EQ(nlohmann::json::parse(in)["_kvplan_checkpoint_bytes"].get<int64_t>(), bytes) << id;
  }
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

// The whole model's bytes from a parameter count agree with the tensor pass for every preset in
// every unquantized format (the identity write_memory relies on), and a quantized format still
// takes the pass.
TEST(WeightBytes, FromTheParameterCountForEveryUnquantizedPreset) {
  for (const ModelConfig& m : model_presets()) {
    const ParamCount counted = count_parameters(m);
    for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
      const WeightFormat f{d, QuantizationConfig{}};
      EXPECT_EQ(weight_bytes_total(m, f, counted), weight_bytes_total(m, f)) << m.id << " " << dtype_name(d);
    }
    if (m.quantization.quantized()) {
      const WeightFormat q{m.dtype, m.quantization};
      EXPECT_EQ(weight_bytes_total(m, q, counted), weight_bytes_total(m, q)) << m.id;
    }
  }
}

}  // namespace kvplan
