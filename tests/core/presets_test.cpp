// Embedded model and GPU presets (presets.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"

namespace kvplan {
namespace {

// A file under the test temp dir, unique per test and process, removed when the object goes.
class TempFile {
 public:
  TempFile(const std::string& tag, const std::string& text)
      : path_(::testing::TempDir() + "kvplan_" + tag + "_" + std::to_string(::getpid()) + ".json") {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(Presets, EveryModelPresetLoads) {
  const std::vector<ModelConfig>& models = model_presets();
  // data/models holds 94 presets (core/CMakeLists.txt KVPLAN_MODEL_PRESETS)
  EXPECT_EQ(models.size(), 94u);
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
  EXPECT_EQ(gpus.size(), 36u);  // entries in data/gpus/gpus.json
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
  GpuSpec h800 = resolve_gpu("h800");
  // 80 * 0.99 = 79.2; 79.2 * 1,073,741,824 = 85,040,352,460.8 -> 85,040,352,460
  EXPECT_EQ(h800.usable_memory_bytes, 85040352460);
  EXPECT_NE(h800.usable_memory_source.find("estimate"), std::string::npos);
  EXPECT_TRUE(h800.usable_memory_estimated);
  // L4's total comes from a public log: 22.03 GiB
  GpuSpec l4 = resolve_gpu("l4");
  EXPECT_EQ(l4.usable_memory_bytes, static_cast<int64_t>(22.03 * 1073741824.0));
  EXPECT_FALSE(l4.usable_memory_estimated);
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

TEST(Presets, GpuAliasesAndDeviceNamesResolve) {
  EXPECT_EQ(resolve_gpu("h100").id, "h100-sxm");
  EXPECT_EQ(resolve_gpu("A100").id, "a100-80gb");
  EXPECT_EQ(resolve_gpu("4090").id, "rtx-4090");
  EXPECT_EQ(resolve_gpu("NVIDIA H100 80GB HBM3").id, "h100-sxm");
  EXPECT_EQ(resolve_gpu("tesla t4").id, "t4");  // device name, case-insensitive
  EXPECT_EQ(resolve_gpu("NVIDIA H100 PCIe").id, "h100-pcie");
}

TEST(Presets, EveryGpuPresetHasAnAliasAndADeviceName) {
  for (const GpuSpec& g : gpu_presets()) {
    EXPECT_FALSE(g.aliases.empty()) << g.id;
    // the driver shows each MI250X GCD as its own device ("mi250x"); the package has no name of its own
    if (g.id != "mi250x-package") {
      EXPECT_FALSE(g.device_names.empty()) << g.id;
    }
    for (const std::string& a : g.aliases) EXPECT_EQ(resolve_gpu(a).id, g.id) << a;
    for (const std::string& d : g.device_names) EXPECT_EQ(resolve_gpu(d).id, g.id) << d;
  }
  EXPECT_FALSE(resolve_gpu("h100-sxm").usable_memory_estimated);  // measured 79.19 GiB
  EXPECT_TRUE(resolve_gpu("h800").usable_memory_estimated);
}

TEST(Presets, UnknownGpuSuggestsTheClosestName) {
  std::string msg = error_of([] { resolve_gpu("h10"); });
  // "h100" (alias of h100-sxm) is one edit away; nothing else is as close
  EXPECT_NE(msg.find("gpu=h10 is not"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean h100-sxm (alias h100)?"), std::string::npos) << msg;
  EXPECT_NE(msg.find("presets: t4, a10, a10g, l4"), std::string::npos) << msg;
  // "rtx 3090" is one edit from the id "rtx-3090"
  EXPECT_NE(error_of([] { resolve_gpu("rtx 3090"); }).find("did you mean rtx-3090?"), std::string::npos);
  // nothing close: no suggestion, still the list
  msg = error_of([] { resolve_gpu("tpu-v9"); });
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
  EXPECT_NE(msg.find("presets:"), std::string::npos) << msg;
}

TEST(Presets, GpuFileRoundTripsEveryField) {
  TempFile file("gpu_roundtrip", R"({
    "_comment": "keys starting with an underscore are ignored",
    "id": "test-gpu", "name": "Test GPU 64GB", "vendor": "nvidia", "architecture": "blackwell",
    "aliases": ["tg-64"], "device_names": ["Test GPU 64GB"],
    "memory_gb": 64, "usable_memory_gib": 62.5, "usable_memory_source": "measured on the test bench",
    "memory_type": "HBM3e", "memory_bandwidth_gb_s": 4000, "bf16_dense_tflops": 1000,
    "fp8_dense_tflops": 2000, "int8_dense_tops": 1500, "fp4_dense_tflops": 4000, "num_sms": 100,
    "interconnect_gb_s": 900, "pcie_gb_s": 64, "tdp_w": 700, "price_usd_per_gpu_hour": 3.5,
    "price_source": "test quote", "spec_only": true, "source": "unit test"})");
  GpuSpec g = resolve_gpu(file.path());
  EXPECT_EQ(g.id, "test-gpu");
  EXPECT_EQ(g.name, "Test GPU 64GB");
  EXPECT_EQ(g.vendor, "nvidia");
  EXPECT_EQ(g.architecture, "blackwell");
  EXPECT_EQ(g.aliases, std::vector<std::string>{"tg-64"});
  EXPECT_EQ(g.device_names, std::vector<std::string>{"Test GPU 64GB"});
  EXPECT_EQ(g.memory_bytes, 64000000000);          // 64 GB = 64e9 B
  EXPECT_EQ(g.usable_memory_bytes, 67108864000);   // 62.5 * 2^30
  EXPECT_EQ(g.usable_memory_source, "measured on the test bench");
  EXPECT_FALSE(g.usable_memory_estimated);
  EXPECT_EQ(g.memory_type, "HBM3e");
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 4e12);
  EXPECT_DOUBLE_EQ(g.peak_flops_bf16, 1e15);
  EXPECT_DOUBLE_EQ(g.peak_flops_fp8, 2e15);
  EXPECT_DOUBLE_EQ(g.peak_flops_int8, 1.5e15);
  EXPECT_DOUBLE_EQ(g.peak_flops_fp4, 4e15);
  EXPECT_DOUBLE_EQ(g.peak_flops(DType::kFp8E4M3), 2e15);
  EXPECT_DOUBLE_EQ(g.peak_flops(DType::kInt4), 1e15);  // no fp4 DType: bf16 rate
  EXPECT_EQ(g.num_sms, 100);
  EXPECT_DOUBLE_EQ(g.interconnect_bytes_per_s, 9e11);
  EXPECT_DOUBLE_EQ(g.pcie_bytes_per_s, 6.4e10);
  EXPECT_DOUBLE_EQ(g.tdp_w, 700);
  EXPECT_DOUBLE_EQ(g.price_usd_per_gpu_hour, 3.5);
  EXPECT_EQ(g.price_source, "test quote");
  EXPECT_TRUE(g.spec_only);
  EXPECT_EQ(g.source, "unit test");
}

TEST(Presets, ExampleGpuFileLoads) {
  GpuSpec g = resolve_gpu(std::string(KVPLAN_SOURCE_DIR) + "/data/gpus/examples/custom-gpu.json");
  EXPECT_EQ(g.id, "a100-80gb-pcie");
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 1935e9);
  // no usable_memory_gib: 80 * 0.99 * 2^30 = 85,040,352,460.8 -> 85,040,352,460, labelled an estimate
  EXPECT_EQ(g.usable_memory_bytes, 85040352460);
  EXPECT_TRUE(g.usable_memory_estimated);
  EXPECT_DOUBLE_EQ(g.price_usd_per_gpu_hour, 2.0);
  EXPECT_DOUBLE_EQ(g.tdp_w, 300);
  EXPECT_DOUBLE_EQ(g.peak_flops_fp4, 0);
}

TEST(Presets, GpuFileErrorsNameTheField) {
  const std::string base = R"("id": "x", "name": "X", "architecture": "hopper", "memory_gb": 80,
      "bf16_dense_tflops": 989, "num_sms": 132, "pcie_gb_s": 64, "source": "test")";
  TempFile typo("gpu_typo", "{" + base + R"(, "memory_bandwith_gb_s": 3350})");
  std::string msg = error_of([&] { resolve_gpu(typo.path()); });
  EXPECT_NE(msg.find("gpu file '" + typo.path() + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown field 'memory_bandwith_gb_s'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean memory_bandwidth_gb_s?"), std::string::npos) << msg;

  TempFile negative("gpu_negative", "{" + base + R"(, "memory_bandwidth_gb_s": -3350})");
  msg = error_of([&] { resolve_gpu(negative.path()); });
  EXPECT_NE(msg.find("memory_bandwidth_gb_s=-3350 must be a positive number"), std::string::npos) << msg;

  TempFile price("gpu_price", "{" + base + R"(, "memory_bandwidth_gb_s": 3350, "price_usd_per_gpu_hour": 2})");
  msg = error_of([&] { resolve_gpu(price.path()); });
  EXPECT_NE(msg.find("field 'price_source' is missing"), std::string::npos) << msg;

  TempFile alias("gpu_alias", "{" + base + R"(, "memory_bandwidth_gb_s": 3350, "aliases": ["My GPU"]})");
  msg = error_of([&] { resolve_gpu(alias.path()); });
  EXPECT_NE(msg.find("aliases[0]=My GPU must be a lower-case id"), std::string::npos) << msg;

  TempFile tdp("gpu_tdp", "{" + base + R"(, "memory_bandwidth_gb_s": 3350, "tdp_w": 0})");
  msg = error_of([&] { resolve_gpu(tdp.path()); });
  EXPECT_NE(msg.find("tdp_w=0 must be a positive number"), std::string::npos) << msg;

  TempFile array("gpu_array", "[{" + base + R"(, "memory_bandwidth_gb_s": 3350}])");
  msg = error_of([&] { resolve_gpu(array.path()); });
  EXPECT_NE(msg.find("expected one GPU object"), std::string::npos) << msg;

  msg = error_of([] { resolve_gpu("/nonexistent/gpu.json"); });
  EXPECT_NE(msg.find("gpu=/nonexistent/gpu.json: no such file"), std::string::npos) << msg;
}

TEST(Presets, ModelFromHuggingFaceRepo) {
  EXPECT_EQ(resolve_model("meta-llama/Llama-3.1-70B-Instruct").id, "llama-3.1-70b");
  EXPECT_EQ(resolve_model("META-LLAMA/llama-3.1-70b-instruct").id, "llama-3.1-70b");
  EXPECT_EQ(resolve_model("meta-llama/Meta-Llama-3.1-8B").id, "llama-3.1-8b");
  EXPECT_EQ(resolve_model("mistralai/Mixtral-8x7B-Instruct-v0.1").id, "mixtral-8x7b");
  // every preset with a Hugging Face source answers to the repo its source URL names
  size_t with_repo = 0;
  for (const ModelConfig& m : model_presets()) {
    std::string repo = hf_repo_from_url(m.source);
    if (repo.empty()) continue;
    ++with_repo;
    EXPECT_EQ(resolve_model(repo).id, m.id) << repo;
  }
  EXPECT_GE(with_repo, 16u);  // all 16 shipped presets come from huggingface.co
}

// Every preset keeps the repo ids its file lists, whatever its family parser does with the file:
// the multimodal wrappers (Gemma-3, Llama-4, Mistral-3, Qwen2-VL) parse the language model from
// text_config and used to drop them, so those repos resolved only through the source URL.
TEST(Presets, EveryPresetKeepsTheRepoIdsItsFileLists) {
  size_t checked = 0;
  for (const ModelConfig& m : model_presets()) {
    std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/data/models/" + m.id + ".json");
    ASSERT_TRUE(in) << m.id;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Python's json writes bare Infinity (Mamba-2's time_step_limit); make it parseable.
    for (size_t at = text.find("Infinity"); at != std::string::npos; at = text.find("Infinity", at)) {
      text.replace(at, 8, "null");
    }
    const nlohmann::json j = nlohmann::json::parse(text);
    const size_t listed = j.contains("_kvplan_hf_repos") ? j["_kvplan_hf_repos"].size() : 0;
    EXPECT_EQ(m.hf_repos.size(), listed) << m.id;
    for (const std::string& r : m.hf_repos) EXPECT_EQ(resolve_model(r).id, m.id) << r;
    if (listed > 0) ++checked;
  }
  EXPECT_EQ(checked, model_presets().size());  // every preset lists its repos
  EXPECT_EQ(resolve_model("google/gemma-3-27b-it").hf_repos, std::vector<std::string>{"google/gemma-3-27b-it"});
  EXPECT_EQ(resolve_model("mistralai/Mistral-Small-3.2-24B-Instruct-2506").id, "mistral-small-3.1-24b");
  EXPECT_EQ(resolve_model("meta-llama/Llama-4-Scout-17B-16E-Instruct").hf_repos.size(), 1u);
}

TEST(Presets, HfRepoFromUrl) {
  EXPECT_EQ(hf_repo_from_url("https://huggingface.co/Qwen/Qwen2-7B/blob/main/config.json"), "Qwen/Qwen2-7B");
  EXPECT_EQ(hf_repo_from_url("https://huggingface.co/Qwen/Qwen2-7B"), "Qwen/Qwen2-7B");
  EXPECT_EQ(hf_repo_from_url("https://huggingface.co/Qwen"), "");
  EXPECT_EQ(hf_repo_from_url("https://example.com/Qwen/Qwen2-7B"), "");
}

TEST(Presets, UnknownModelSuggestsTheClosestName) {
  std::string msg = error_of([] { resolve_model("llama-3.1-8c"); });
  EXPECT_NE(msg.find("model=llama-3.1-8c is not a preset id"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean llama-3.1-8b?"), std::string::npos) << msg;

  msg = error_of([] { resolve_model("meta-llama/Llama-3.1-70B-Instruc"); });
  EXPECT_NE(msg.find("model=meta-llama/Llama-3.1-70B-Instruc: no such file, and no preset for the Hugging Face "
                     "repo meta-llama/Llama-3.1-70B-Instruc"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("did you mean meta-llama/Llama-3.1-70B-Instruct (preset llama-3.1-70b)?"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("presets: "), std::string::npos) << msg;

  // a repo name without its organisation points at the repo
  msg = error_of([] { resolve_model("Llama-3.1-70B-Instruct"); });
  EXPECT_NE(msg.find("did you mean meta-llama/Llama-3.1-70B-Instruct (preset llama-3.1-70b)?"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace kvplan
