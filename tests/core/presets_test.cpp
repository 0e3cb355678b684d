// Embedded model and GPU presets (presets.h).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan {
namespace {

TEST(Presets, EveryModelPresetLoads) {
  const std::vector<ModelConfig>& models = model_presets();
  // data/models holds 16 presets (core/CMakeLists.txt KVPLAN_MODEL_PRESETS)
  EXPECT_EQ(models.size(), 16u);
  std::set<std::string> ids;
  for (const ModelConfig& m : models) {
    EXPECT_FALSE(m.source.empty()) << m.id;
    EXPECT_GT(m.num_layers(), 0) << m.id;
    EXPECT_GT(m.hidden_size, 0) << m.id;
    EXPECT_GT(m.vocab_size, 0) << m.id;
    EXPECT_FALSE(m.name.empty()) << m.id;
    EXPECT_TRUE(ids.insert(m.id).second) << "duplicate id " << m.id;
  }
}

TEST(Presets, EveryGpuPresetIsUsable) {
  const std::vector<GpuSpec>& gpus = gpu_presets();
  EXPECT_EQ(gpus.size(), 16u);  // entries in data/gpus/gpus.json
  std::set<std::string> ids;
  for (const GpuSpec& g : gpus) {
    EXPECT_FALSE(g.source.empty()) << g.id;
    EXPECT_GT(g.usable_memory_bytes, 0) << g.id;
    EXPECT_LE(g.usable_memory_bytes, g.memory_bytes / 1000000000 * 1073741824) << g.id;
    EXPECT_GT(g.memory_bandwidth_bytes_per_s, 0) << g.id;
    EXPECT_GT(g.peak_flops_bf16, 0) << g.id;
    EXPECT_TRUE(ids.insert(g.id).second) << "duplicate id " << g.id;
  }
}

TEST(Presets, ResolveKnownIds) {
  EXPECT_EQ(resolve_model("llama-3.1-8b").id, "llama-3.1-8b");
  GpuSpec h100 = resolve_gpu("h100-sxm");
  EXPECT_EQ(h100.id, "h100-sxm");
  // measured usable total 79.19 GiB: 79.19 * 1,073,741,824 = 85,029,615,042.56 -> 85,029,615,042
  EXPECT_EQ(h100.usable_memory_bytes, 85029615042);
  // 3,350 GB/s
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth_bytes_per_s, 3350e9);
}

TEST(Presets, GpuWithoutMeasuredTotalIsEstimated) {
  GpuSpec l4 = resolve_gpu("l4");
  // 24 * 0.99 * 1,073,741,824 = 25,512,105,738.24 -> 25,512,105,738
  EXPECT_EQ(l4.usable_memory_bytes, 25512105738);
  EXPECT_NE(l4.usable_memory_source.find("estimate"), std::string::npos);
}

TEST(Presets, ResolveIsCaseInsensitive) {
  EXPECT_EQ(resolve_model("LLaMA-3.1-8B").id, "llama-3.1-8b");
  EXPECT_EQ(resolve_model("Mistral-7B-v0.1").id, "mistral-7b-v0.1");
  EXPECT_EQ(resolve_gpu("H100-SXM").id, "h100-sxm");
}

TEST(Presets, UnknownModelThrowsNamingIt) {
  try {
    resolve_model("no-such-model");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no-such-model"), std::string::npos) << msg;
    EXPECT_NE(msg.find("llama-3.1-8b"), std::string::npos) << "known ids listed: " << msg;
  }
}

TEST(Presets, UnknownGpuThrowsNamingIt) {
  try {
    resolve_gpu("no-such-gpu");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no-such-gpu"), std::string::npos) << msg;
    EXPECT_NE(msg.find("h100-sxm"), std::string::npos) << "known ids listed: " << msg;
  }
}

TEST(Presets, ResolveModelByPath) {
  std::string path = std::string(KVPLAN_SOURCE_DIR) + "/data/models/llama-2-7b.json";
  ModelConfig m = resolve_model(path);
  EXPECT_EQ(m.num_layers(), 32);
  EXPECT_EQ(m.attention.num_kv_heads, 32);
}

}  // namespace
}  // namespace kvplan
