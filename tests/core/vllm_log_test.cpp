// Reading vLLM start-up logs (vllm_log.h) and naming the GPU (vllm_log_scenario.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kvplan/core/error.h"
#include "kvplan/core/vllm_log.h"
#include "kvplan/core/vllm_log_scenario.h"

namespace kvplan {
namespace {

constexpr const char* kV1Log =
    "INFO 08-20 10:00:00 [core.py:74] Initializing a V1 LLM engine (v0.10.1) with config: "
    "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, "
    "tokenizer='meta-llama/Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, "
    "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=8192, "
    "download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
    "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, "
    "device_config=cuda, seed=0\n"
    "INFO 08-20 10:00:10 [gpu_model_runner.py:1892] Model loading took 14.99 GiB and 4.1 seconds\n"
    "INFO 08-20 10:00:20 [gpu_worker.py:276] Available KV cache memory: 53.12 GiB\n"
    "INFO 08-20 10:00:20 [kv_cache_utils.py:849] GPU KV cache size: 435,152 tokens\n"
    "INFO 08-20 10:00:20 [kv_cache_utils.py:853] Maximum concurrency for 8,192 tokens per request: 53.12x\n";

TEST(VllmLog, ParsesV1Snippet) {
  VllmLog log = parse_vllm_log(kV1Log, "v1");
  EXPECT_EQ(log.name, "v1");
  EXPECT_EQ(log.version, "0.10.1");
  EXPECT_EQ(log.model, "meta-llama/Llama-3.1-8B-Instruct");
  ASSERT_TRUE(log.dtype.has_value());
  EXPECT_EQ(*log.dtype, "bfloat16");
  ASSERT_TRUE(log.max_model_len.has_value());
  EXPECT_EQ(*log.max_model_len, 8192);
  ASSERT_TRUE(log.tensor_parallel_size.has_value());
  EXPECT_EQ(*log.tensor_parallel_size, 1);
  ASSERT_TRUE(log.pipeline_parallel_size.has_value());
  EXPECT_EQ(*log.pipeline_parallel_size, 1);
  ASSERT_TRUE(log.enforce_eager.has_value());
  EXPECT_FALSE(*log.enforce_eager);
  ASSERT_TRUE(log.kv_cache_dtype.has_value());
  EXPECT_EQ(*log.kv_cache_dtype, "auto");
  ASSERT_TRUE(log.weights_gib.has_value());
  EXPECT_DOUBLE_EQ(*log.weights_gib, 14.99);
  ASSERT_TRUE(log.kv_cache_memory_gib.has_value());
  EXPECT_DOUBLE_EQ(*log.kv_cache_memory_gib, 53.12);
  ASSERT_TRUE(log.kv_cache_tokens.has_value());
  EXPECT_EQ(*log.kv_cache_tokens, 435152);  // "435,152" with the thousands separator removed
  ASSERT_TRUE(log.max_concurrency.has_value());
  EXPECT_DOUBLE_EQ(*log.max_concurrency, 53.12);
  ASSERT_TRUE(log.concurrency_tokens.has_value());
  EXPECT_EQ(*log.concurrency_tokens, 8192);
  EXPECT_FALSE(log.num_gpu_blocks.has_value());
  EXPECT_FALSE(log.gpu_memory_utilization.has_value());  // not printed
}

TEST(VllmLog, ParsesV0Snippet) {
  const std::string text =
      "# source: x\n"
      "INFO 02-01 12:00:00 worker.py:267] Memory profiling takes 5.1 seconds\n"
      "INFO 02-01 12:00:00 worker.py:267] the current vLLM instance can use total_gpu_memory (47.50GiB) x "
      "gpu_memory_utilization (0.90) = 42.75GiB\n"
      "# GPU blocks: 1952, # CPU blocks: 2048\n";
  VllmLog log = parse_vllm_log(text, "v0");
  EXPECT_EQ(log.source, "x");
  ASSERT_TRUE(log.total_gpu_memory_gib.has_value());
  EXPECT_DOUBLE_EQ(*log.total_gpu_memory_gib, 47.50);
  ASSERT_TRUE(log.gpu_memory_utilization.has_value());
  EXPECT_DOUBLE_EQ(*log.gpu_memory_utilization, 0.90);
  ASSERT_TRUE(log.num_gpu_blocks.has_value());
  EXPECT_EQ(*log.num_gpu_blocks, 1952);
  // no block size printed: default 16 -> 1952 * 16 = 31,232 tokens
  ASSERT_TRUE(log.kv_cache_tokens.has_value());
  EXPECT_EQ(*log.kv_cache_tokens, 31232);
}

TEST(VllmLog, BlockLineRightAfterAnnotationIsALogLine) {
  // "# GPU blocks:" begins with '#' like an annotation but is a V0 log line
  VllmLog log = parse_vllm_log("# source: x\n# GPU blocks: 1952, # CPU blocks: 2048\n", "v0b");
  EXPECT_EQ(log.source, "x");
  ASSERT_TRUE(log.num_gpu_blocks.has_value());
  EXPECT_EQ(*log.num_gpu_blocks, 1952);
  ASSERT_TRUE(log.kv_cache_tokens.has_value());
  EXPECT_EQ(*log.kv_cache_tokens, 1952 * 16);  // 31,232
}

TEST(VllmLog, BlockSizeSettingScalesTokens) {
  const std::string text =
      "INFO engine args: block_size=32, gpu_memory_utilization=0.95\n"
      "INFO # GPU blocks: 100, # CPU blocks: 0\n";
  VllmLog log = parse_vllm_log(text, "b32");
  ASSERT_TRUE(log.block_size.has_value());
  EXPECT_EQ(*log.block_size, 32);
  // 100 blocks * 32 = 3,200 tokens
  ASSERT_TRUE(log.kv_cache_tokens.has_value());
  EXPECT_EQ(*log.kv_cache_tokens, 3200);
  EXPECT_DOUBLE_EQ(*log.gpu_memory_utilization, 0.95);
}

TEST(VllmLog, EmptyTextHasNoFigures) {
  VllmLog log = parse_vllm_log("hello\nworld\n", "none");
  EXPECT_FALSE(log.kv_cache_tokens.has_value());
  EXPECT_FALSE(log.kv_cache_memory_gib.has_value());
}

TEST(VllmLog, EveryShippedLogHasKvFigures) {
  std::filesystem::path dir = std::filesystem::path(KVPLAN_SOURCE_DIR) / "data" / "vllm_logs";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".log") continue;
    std::ifstream in(entry.path());
    std::stringstream buffer;
    buffer << in.rdbuf();
    VllmLog log = parse_vllm_log(buffer.str(), entry.path().filename().string());
    EXPECT_TRUE(log.kv_cache_tokens.has_value() || log.kv_cache_memory_gib.has_value())
        << entry.path().filename();
    EXPECT_FALSE(log.source.empty()) << entry.path().filename();
    EXPECT_NO_THROW(load_vllm_log(entry.path().string())) << entry.path().filename();
    ++files;
  }
  // data/vllm_logs ships 98 start-up logs (vLLM, SGLang, TensorRT-LLM; README.md lists them)
  EXPECT_EQ(files, 98);
}

TEST(VllmLog, ShippedV0LogFigures) {
  // 01: "GPU blocks: 1952" (16-token blocks) and "total_gpu_memory=23.58GiB", "kv_cache_size=3.81GiB"
  VllmLog log = load_vllm_log(std::string(KVPLAN_SOURCE_DIR) + "/data/vllm_logs/01_llama31-8b_rtx3090_v0_20k.log");
  ASSERT_TRUE(log.num_gpu_blocks.has_value());
  EXPECT_EQ(*log.num_gpu_blocks, 1952);
  EXPECT_EQ(*log.kv_cache_tokens, 1952 * 16);
  ASSERT_TRUE(log.total_gpu_memory_gib.has_value());
  EXPECT_DOUBLE_EQ(*log.total_gpu_memory_gib, 23.58);
  ASSERT_TRUE(log.kv_cache_memory_gib.has_value());
  EXPECT_DOUBLE_EQ(*log.kv_cache_memory_gib, 3.81);
  EXPECT_EQ(log.kvplan_model, "llama-3.1-8b");
  EXPECT_EQ(log.kvplan_gpu, "rtx-3090");
  // "Maximum concurrency for 20000 tokens per request" and max_model_len=20000 in the settings
  EXPECT_EQ(*log.max_model_len, 20000);
}

TEST(VllmLog, ReadsWhetherChunkedPrefillIsOn) {
  EXPECT_FALSE(parse_vllm_log("INFO x\n", "none").chunked_prefill.has_value());
  // V0's warning: printed only when chunked prefill stays off above 32K
  VllmLog warned = parse_vllm_log(
      "WARNING 10-07 10:28:40 arg_utils.py:964] The model has a long context length (131072). This may cause OOM "
      "errors during the initial memory profiling phase, or result in low performance due to small KV cache space.\n",
      "warn");
  ASSERT_TRUE(warned.chunked_prefill.has_value());
  EXPECT_FALSE(*warned.chunked_prefill);
  VllmLog ns = parse_vllm_log("Namespace(backend='vllm', enable_prefix_caching=False, enable_chunked_prefill=False)\n", "ns");
  ASSERT_TRUE(ns.chunked_prefill.has_value());
  EXPECT_FALSE(*ns.chunked_prefill);
  VllmLog none = parse_vllm_log("Namespace(enable_chunked_prefill=None)\n", "unset");
  EXPECT_FALSE(none.chunked_prefill.has_value());
  VllmLog on = parse_vllm_log("INFO [scheduler.py:222] Chunked prefill is enabled with max_num_batched_tokens=2048.\n", "on");
  ASSERT_TRUE(on.chunked_prefill.has_value());
  EXPECT_TRUE(*on.chunked_prefill);
  EXPECT_EQ(*on.max_num_batched_tokens, 2048);
  VllmLog engine = parse_vllm_log("INFO llm_engine.py:232] ... enable_prefix_caching=False, chunked_prefill_enabled=False, "
                                  "use_async_output_proc=False\n",
                                  "engine");
  ASSERT_TRUE(engine.chunked_prefill.has_value());
  EXPECT_FALSE(*engine.chunked_prefill);
  // the shipped log 87 (Llama-3.1-405B on MI300X): off, so the profile runs 131,072 tokens
  VllmLog l87 = load_vllm_log(std::string(KVPLAN_SOURCE_DIR) + "/data/vllm_logs/87_llama31-405b_8xmi300x_tp8_v063dev.log");
  ASSERT_TRUE(l87.chunked_prefill.has_value());
  EXPECT_FALSE(*l87.chunked_prefill);
  LogScenario s = scenario_from_vllm_log(l87, std::string(KVPLAN_SOURCE_DIR) + "/data/vllm_logs/87.log", {});
  EXPECT_EQ(s.serving.chunked_prefill, ChunkedPrefill::kOff);
  EXPECT_TRUE(s.serving.rocm);
  MemoryPlan plan = plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
  EXPECT_EQ(plan.max_num_batched_tokens, 131072);
}

// A traceback quotes engine source; its "dtype=torch.float32" is not the model dtype (log 56).
TEST(VllmLog, TracebackLinesSetNoSettings) {
  VllmLog log = parse_vllm_log(
      "INFO 04-22 19:53:00 [core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: model='m', dtype=torch.bfloat16, "
      "max_seq_len=8192\n"
      "(Worker_TP1 pid=450) ERROR 04-22 19:54:39 [multiproc_executor.py:949]     probs = logits.softmax(dim=-1, "
      "dtype=torch.float32)\n",
      "tb");
  ASSERT_TRUE(log.dtype.has_value());
  EXPECT_EQ(*log.dtype, "bfloat16");
}

// The validation in docs/benchmarks.md ("Engine start-up logs: KV cache size"), pinned: the
// median |error| of the KV capacity in tokens over the shipped logs stays <= 2%, and the logs
// above 10% are exactly the seven listed there (any change to the set must update the document).
TEST(VllmLog, ShippedLogsValidation) {
  std::filesystem::path dir = std::filesystem::path(KVPLAN_SOURCE_DIR) / "data" / "vllm_logs";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<double> errors;
  std::vector<std::string> above10;
  for (const auto& path : files) {
    VllmLog log = load_vllm_log(path.string());
    if (log.kvplan_model.empty() || !log.kv_cache_tokens) continue;
    LogScenario s;
    try {
      s = scenario_from_vllm_log(log, path.string(), {});
    } catch (const ConfigError&) {
      continue;  // refused architectures (phi, llava_next, kimi_vl)
    }
    MemoryPlan plan = plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
    const double printed = static_cast<double>(*log.kv_cache_tokens);
    // what the engine prints: vLLM >= 0.20 prints max concurrency x max_model_len (MemoryPlan::printed_kv_tokens)
    const double err = std::fabs((static_cast<double>(plan.printed_kv_tokens) - printed) / printed);
    errors.push_back(err);
    if (err > 0.10) above10.push_back(path.filename().string().substr(0, 2));
  }
  EXPECT_EQ(errors.size(), 92u);
  std::sort(errors.begin(), errors.end());
  const double median = (errors[errors.size() / 2] + errors[(errors.size() - 1) / 2]) / 2;
  EXPECT_LE(median, 0.02);
  EXPECT_EQ(above10, (std::vector<std::string>{"07", "15", "83", "84", "88", "93", "96"}));
}

TEST(VllmLog, UnreadableFileThrows) {
  EXPECT_THROW(load_vllm_log("/nonexistent/kvplan/run.log"), ConfigError);
}

TEST(VllmLog, GpuPresetFromText) {
  EXPECT_EQ(gpu_preset_from_text("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(gpu_preset_from_text("A100 40GB"), "a100-40gb");
  EXPECT_EQ(gpu_preset_from_text("8xL4(24gb)"), "l4");
  EXPECT_EQ(gpu_preset_from_text("RTX 3090"), "rtx-3090");
  EXPECT_EQ(gpu_preset_from_text("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(gpu_preset_from_text("H100 PCIe"), "h100-pcie");
  EXPECT_EQ(gpu_preset_from_text("some unknown accelerator"), "");
}

TEST(VllmLog, GpuPresetFromDeviceNamesAndAliases) {
  // device names as drivers print them, inside collect_env / nvidia-smi lines
  EXPECT_EQ(gpu_preset_from_text("GPU 0: NVIDIA L40S"), "l40s");
  EXPECT_EQ(gpu_preset_from_text("GPU 0: NVIDIA L4"), "l4");  // not l40s: whole words only
  EXPECT_EQ(gpu_preset_from_text("Tesla T4"), "t4");
  EXPECT_EQ(gpu_preset_from_text("NVIDIA A30 (from: collect_env \"GPU 0: NVIDIA A30\")"), "a30");
  EXPECT_EQ(gpu_preset_from_text("NVIDIA RTX 6000 Ada Generation"), "rtx-6000-ada");
  EXPECT_EQ(gpu_preset_from_text("NVIDIA A100-SXM4-40GB"), "a100-40gb");
  // the device name wins over the free-text rule that reads any "40" as the 40GB A100
  EXPECT_EQ(gpu_preset_from_text("4x NVIDIA A100-SXM4-80GB, 40 CPU cores"), "a100-80gb");
  // ids and aliases as the whole text (the free-text rules know neither)
  EXPECT_EQ(gpu_preset_from_text("6000-ada"), "rtx-6000-ada");
  EXPECT_EQ(gpu_preset_from_text("h100"), "h100-sxm");
  EXPECT_EQ(gpu_preset_from_text(" a6000 "), "rtx-a6000");
  EXPECT_EQ(gpu_preset_from_text("rtx-6000-ada"), "rtx-6000-ada");
}

}  // namespace
}  // namespace kvplan
