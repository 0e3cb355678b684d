// The fit / held-out split of whole-model runs by sweep (bench/serving_split.h) and the reading of
// aiconfigurator rows into sweeps and deployments (bench/serving_cases.h).
#include "serving_split.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "kvplan/calibration/heldout_split.h"
#include "kvplan/core/error.h"
#include "serving_cases.h"

namespace kvplan::bench {
namespace {

const char* kHeader =
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
    "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_batch_size,"
    "prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,"
    "prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,"
    "decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";

// One agg row of Llama-3.1-8B on one H100 with vLLM 0.11.2 (a row of the shipped file's shape).
std::string agg_row(const std::string& id, int concurrency, int isl) {
  return id + ",source_file=x.csv; silicon_concurrency=" + std::to_string(concurrency) +
         ",vllm,0.11.2,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg," + std::to_string(isl) + ",1024,,," +
         std::to_string(concurrency) + ",1,1,1,1,1,,,,,,,,,,,,,,,123.4,9.5\n";
}

std::string write_csv(const std::string& name, const std::string& rows) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << kHeader << rows;
  return path;
}

std::map<std::string, std::string> llama_record(const std::string& isl) {
  return {{"model_path", "meta-llama/Llama-3.1-8B-Instruct"},
          {"backend", "vllm"},
          {"backend_version", "0.11.2"},
          {"system", "h100_sxm"},
          {"mode", "agg"},
          {"tp_size", "1"},
          {"pp_size", "1"},
          {"attention_dp_size", "1"},
          {"moe_tp_size", "1"},
          {"moe_ep_size", "1"},
          {"isl", isl},
          {"osl", "1024"},
          // Not part of the key: they move with the concurrency, or are the measurement.
          {"id", "x_c16"},
          {"batch_size", "16"},
          {"silicon_ttft_ms", "100"}};
}

TEST(ServingSplit, SweepKeyNamesTheDeploymentColumnsInOrderAndNothingElse) {
  EXPECT_EQ(aiconfigurator_sweep_key(llama_record("1024")),
            "model_path=meta-llama/Llama-3.1-8B-Instruct|backend=vllm|backend_version=0.11.2|system=h100_sxm|mode=agg|"
            "tp_size=1|pp_size=1|attention_dp_size=1|moe_tp_size=1|moe_ep_size=1|prefill_num_workers=|prefill_tp_size=|"
            "prefill_pp_size=|prefill_attention_dp_size=|prefill_moe_tp_size=|prefill_moe_ep_size=|decode_num_workers=|"
            "decode_tp_size=|decode_pp_size=|decode_attention_dp_size=|decode_moe_tp_size=|decode_moe_ep_size=|"
            "isl=1024|osl=1024");
}

TEST(ServingSplit, SweepHalfIsTheSplitmixBucketOfTheKeysFnvHash) {
  // Worked by hand (an independent Python transcription of FNV-1a 64 and the splitmix64 finaliser):
  // the key above hashes to 0x93ad8d5f805575ee, bucket 91 -> held out; with isl 1000: bucket 13 -> fit.
  ServingCase c;
  c.sweep_key = aiconfigurator_sweep_key(llama_record("1024"));
  EXPECT_EQ(calibration::split_hash(c.sweep_key), 0x93ad8d5f805575eeull);
  EXPECT_EQ(calibration::split_bucket(calibration::split_hash(c.sweep_key), 0), 91);
  EXPECT_FALSE(in_fit_half(c, SplitRule::kSweep));
  c.sweep_key = aiconfigurator_sweep_key(llama_record("1000"));
  EXPECT_EQ(calibration::split_bucket(calibration::split_hash(c.sweep_key), 0), 13);
  EXPECT_TRUE(in_fit_half(c, SplitRule::kSweep));
  // A run without a sweep (the public runs) is never fitted.
  c.sweep_key.clear();
  EXPECT_FALSE(in_fit_half(c, SplitRule::kSweep));
}

TEST(ServingSplit, RunsDifferingOnlyInConcurrencyShareAHalfAndRunsOfAnotherLengthNeedNot) {
  const std::string path = write_csv("sweep.csv", agg_row("llama_c4", 4, 1024) + agg_row("llama_c64", 64, 1024) +
                                                      agg_row("llama_1000_c4", 4, 1000));
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(path);
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].concurrency, 4);
  EXPECT_EQ(cases[1].concurrency, 64);
  EXPECT_EQ(cases[0].sweep_key, cases[1].sweep_key);
  EXPECT_EQ(in_fit_half(cases[0], SplitRule::kSweep), in_fit_half(cases[1], SplitRule::kSweep));
  EXPECT_FALSE(in_fit_half(cases[0], SplitRule::kSweep));  // bucket 91, as worked above
  EXPECT_NE(cases[0].sweep_key, cases[2].sweep_key);
  EXPECT_TRUE(in_fit_half(cases[2], SplitRule::kSweep));  // isl 1000: bucket 13
  // The rule before issue 26 splits the two concurrencies of one sweep by their ids' FNV parity.
  EXPECT_EQ(in_fit_half(cases[0], SplitRule::kRowId), (calibration::split_hash("llama_c4") & 1u) == 0);
}

TEST(ServingSplit, ParsesItsRuleAndRefusesOthers) {
  EXPECT_EQ(parse_split_rule("sweep"), SplitRule::kSweep);
  EXPECT_EQ(parse_split_rule("row"), SplitRule::kRowId);
  EXPECT_THROW(parse_split_rule("id"), ConfigError);
}

TEST(ServingCases, AttentionDpRowIsOneInstancePerRankWithExpertsOverAllGpus) {
  // DeepSeek-R1 on 8 H200s, TensorRT-LLM, attention DP 8: tp 1 x DP 8 = moe tp 1 x ep 8 GPUs.
  const std::string row =
      "dsr1_agg_c64,silicon_concurrency=64,trtllm,1.1.0rc2,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,8192,1024,fp8,fp8,"
      "8,1,1,8,1,8,,,,,,,,,,,,,,,4734.2,47.8\n";
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(write_csv("dp.csv", row));
  ASSERT_EQ(cases.size(), 1u);
  const ServingCase& c = cases[0];
  EXPECT_EQ(c.why_not, "");
  EXPECT_EQ(c.deployment, "attention DP");
  EXPECT_EQ(c.replicas, 8);
  EXPECT_EQ(c.memory_flags.at("tensor-parallel-size"), "1");
  EXPECT_EQ(c.memory_flags.at("data-parallel-size"), "8");
  EXPECT_EQ(c.memory_flags.at("enable-expert-parallel"), "true");
}

TEST(ServingCases, SplitMultipliedIntoTheColumnsIsReadAsTheIdSays) {
  // The same DeepSeek-R1 run twice, as the H200 dump records it: once with tp 8, moe tp 1, ep 8, once
  // ("..._tp8_ep8_...") with tp 64 = 8 x 8 and moe tp 8. Then attention DP: DP 64, batch 1 for DP 8,
  // batch 8. A real TensorRT-LLM split (tp 4 = moe tp 2 x ep 2, id without "_ep") stays as it is.
  const std::string sane =
      "a_c16_tp8_0_ep8_0_1,silicon_concurrency=16,trtllm,1.1.0rc2,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,1024,1024,"
      "fp8,fp8,16,8,1,1,1,8,,,,,,,,,,,,,,,300.5,20.25\n";
  const std::string multiplied =
      "b_c16_tp8_ep8_2,silicon_concurrency=16,trtllm,1.1.0rc2,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,1024,1024,"
      "fp8,fp8,16,64,1,1,8,8,,,,,,,,,,,,,,,300.5,20.25\n";
  const std::string dp =
      "c_c64_tp8_ep8_3,silicon_concurrency=64,trtllm,1.1.0rc2,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,8192,1024,"
      "fp8,fp8,1,1,1,64,8,8,,,,,,,,,,,,,,,4734.2,47.8\n";
  const std::string hybrid =
      "d_c16_tp4_epnone_4,silicon_concurrency=16,trtllm,1.0.0,Qwen/Qwen3-235B-A22B-FP8,h100_sxm,fp8,agg,128,128,"
      "fp8_block,fp8_block,16,4,1,1,2,2,,,,,,,,,,,,,,,90.0,12.0\n";
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(write_csv("split.csv", sane + multiplied + dp + hybrid));
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].why_not, "");
  EXPECT_EQ(cases[0].memory_flags.at("tensor-parallel-size"), "8");
  // Repaired, it is the first row's run exactly: the same sweep, the same flags, scored once.
  EXPECT_EQ(cases[1].sweep_key, cases[0].sweep_key);
  EXPECT_EQ(cases[1].memory_flags, cases[0].memory_flags);
  EXPECT_TRUE(cases[1].excluded);
  EXPECT_NE(cases[1].why_not.find("the same measurement as row a_c16_tp8_0_ep8_0_1"), std::string::npos)
      << cases[1].why_not;
  EXPECT_NE(cases[1].notes.find("split columns multiplied"), std::string::npos) << cases[1].notes;
  // Attention DP 64 read as DP 8: 8 instances of tp 1, experts over the 8 GPUs.
  EXPECT_EQ(cases[2].why_not, "");
  EXPECT_FALSE(cases[2].excluded);
  EXPECT_EQ(cases[2].memory_flags.at("data-parallel-size"), "8");
  EXPECT_EQ(cases[2].memory_flags.at("tensor-parallel-size"), "1");
  EXPECT_EQ(cases[2].replicas, 8);
  // The real moe tp x ep hybrid keeps its columns and runs as MoE TP 2 x EP 2 (TensorRT-LLM).
  EXPECT_EQ(cases[3].why_not, "");
  EXPECT_EQ(cases[3].memory_flags.at("tensor-parallel-size"), "4");
  EXPECT_EQ(cases[3].memory_flags.at("enable-expert-parallel"), "true");
  EXPECT_EQ(cases[3].memory_flags.at("expert-parallel-size"), "2");
  EXPECT_FALSE(cases[3].excluded);
}

TEST(ServingCases, ASplitVllmRefusesIsReadAsTheExpertParallelismItNeeds) {
  // MiniMax-M2.5's FP8 experts (moe_intermediate_size 1,536, 128 x 128 blocks) at tp 8 are 192
  // wide per GPU: vLLM stops at load, so a vLLM row recorded as moe tp 8, ep 1 ran with
  // --enable-expert-parallel. At tp 4 (384 per GPU) pure TP starts and the row stays as recorded;
  // another engine's row is not reinterpreted.
  const std::string tp8 =
      "m_c16,silicon_concurrency=16,vllm,0.18.0,MiniMaxAI/MiniMax-M2.5,h200_sxm,fp8,agg,1024,1024,"
      "fp8,fp8_block,16,8,1,1,8,1,,,,,,,,,,,,,,,150.0,12.0\n";
  const std::string tp4 =
      "n_c16,silicon_concurrency=16,vllm,0.16.0,MiniMaxAI/MiniMax-M2.5,h200_sxm,fp8,agg,1024,1024,"
      "fp8,fp8_block,16,4,1,1,4,1,,,,,,,,,,,,,,,150.0,12.0\n";
  const std::string trtllm =
      "o_c16,silicon_concurrency=16,trtllm,1.1.0rc2,MiniMaxAI/MiniMax-M2.5,h200_sxm,fp8,agg,1024,1024,"
      "fp8,fp8_block,16,8,1,1,8,1,,,,,,,,,,,,,,,150.0,12.0\n";
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(write_csv("ep_only.csv", tp8 + tp4 + trtllm));
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].why_not, "");
  EXPECT_EQ(cases[0].memory_flags.at("tensor-parallel-size"), "8");
  EXPECT_EQ(cases[0].memory_flags.at("enable-expert-parallel"), "true");
  EXPECT_NE(cases[0].notes.find("which vLLM refuses to start"), std::string::npos) << cases[0].notes;
  EXPECT_NE(cases[0].notes.find("moe tp 1 ep 8"), std::string::npos) << cases[0].notes;
  EXPECT_EQ(cases[1].memory_flags.count("enable-expert-parallel"), 0u);
  EXPECT_EQ(cases[1].notes.find("vLLM refuses"), std::string::npos) << cases[1].notes;
  EXPECT_EQ(cases[2].memory_flags.count("enable-expert-parallel"), 0u);
}

TEST(ServingCases, VllmRunWithMoreMoeGpusThanTpGpusIsDataParallel) {
  // Qwen3-235B-A22B-FP8 on H200 with vLLM 0.12 as the H200 set records it: no attention-DP size,
  // moe tp above tp. vLLM splits the experts over all tp x dp GPUs of a data-parallel run, so tp 1
  // on moe tp 2 is DP 2, tp 2 on moe tp 4 is DP 2 of tp 2; tp 4 on moe tp 4 stays as it is, and so
  // does another engine's row.
  auto row = [](const std::string& id, int tp, int moe_tp, const std::string& engine) {
    return id + ",silicon_concurrency=8," + engine + ",0.12.0,Qwen/Qwen3-235B-A22B-FP8,h200_sxm,fp8,agg,1000,100,fp8,fp8,8," +
           std::to_string(tp) + ",1,," + std::to_string(moe_tp) + ",1,,,,,,,,,,,,,,,356.9,54.9\n";
  };
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(write_csv(
      "vllm_dp.csv", row("p_c8", 1, 2, "vllm") + row("q_c8", 2, 4, "vllm") + row("r_c8", 4, 4, "vllm") +
                         row("s_c8", 1, 2, "trtllm")));
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].why_not, "");
  EXPECT_EQ(cases[0].deployment, "attention DP");
  EXPECT_EQ(cases[0].replicas, 2);
  EXPECT_EQ(cases[0].memory_flags.at("tensor-parallel-size"), "1");
  EXPECT_EQ(cases[0].memory_flags.at("data-parallel-size"), "2");
  EXPECT_EQ(cases[0].memory_flags.count("enable-expert-parallel"), 0u);
  EXPECT_NE(cases[0].notes.find("read as tp 1 pp 1 attention-dp 2 moe tp 2 ep 1"), std::string::npos) << cases[0].notes;
  EXPECT_EQ(cases[1].memory_flags.at("tensor-parallel-size"), "2");
  EXPECT_EQ(cases[1].memory_flags.at("data-parallel-size"), "2");
  EXPECT_EQ(cases[1].replicas, 2);
  EXPECT_EQ(cases[2].memory_flags.count("data-parallel-size"), 0u);
  EXPECT_EQ(cases[2].deployment, "agg");
  EXPECT_EQ(cases[3].memory_flags.count("data-parallel-size"), 0u);
}

TEST(ServingCases, MoeTpTimesEpBeyondOneNvlinkDomainWithoutAnIdStaysRefused) {
  // DeepSeek's "cfg181" rows: tp 64 = moe tp 8 x ep 8 on H200 (8 GPUs per NVLink domain), ids that do
  // not say how to read them. The same split on vLLM has no form at all.
  auto row = [](const std::string& id, const std::string& engine_model, int tp) {
    return id + ",silicon_concurrency=16," + engine_model + ",h200_sxm,fp8,agg,1024,1024,fp8,fp8,16," +
           std::to_string(tp) + ",1,1," + (tp == 64 ? "8,8" : "2,2") + ",,,,,,,,,,,,,,,300.5,20.25\n";
  };
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(
      write_csv("cfg.csv", row("x_c16_cfg181", "trtllm,1.1.0rc2,deepseek-ai/DeepSeek-V3", 64) +
                               row("y_c16", "vllm,0.12.0,Qwen/Qwen3-235B-A22B-FP8", 4)));
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_NE(cases[0].why_not.find("over 64 GPUs, beyond one 8-GPU NVLink domain"), std::string::npos) << cases[0].why_not;
  EXPECT_NE(cases[1].why_not.find("vLLM has no MoE TP x EP split"), std::string::npos) << cases[1].why_not;
}

TEST(ServingCases, OnlyTheSameMeasurementOfTheSameRunIsARepeat) {
  // Same run settings and measurement: a repeat. Another concurrency, or another TTFT: not one.
  const std::string path = write_csv("repeats.csv", agg_row("r1_c4", 4, 1024) + agg_row("r2_c4", 4, 1024) +
                                                        agg_row("r3_c8", 8, 1024));
  std::vector<ServingCase> cases = read_aiconfigurator_e2e(path);
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_FALSE(cases[0].excluded);
  EXPECT_TRUE(cases[1].excluded);
  EXPECT_NE(cases[1].why_not.find("row r1_c4"), std::string::npos);
  EXPECT_FALSE(cases[2].excluded);
  std::string other_ttft = agg_row("r4_c4", 4, 1024);
  other_ttft.replace(other_ttft.find("123.4"), 5, "123.5");
  cases = read_aiconfigurator_e2e(write_csv("not_repeats.csv", agg_row("r1_c4", 4, 1024) + other_ttft));
  EXPECT_FALSE(cases[1].excluded);
}

TEST(ServingCases, DisaggRowWithoutWorkerCountsIsExcludedNotRefused) {
  const std::string row =
      "dsr1_disagg_c16,silicon_concurrency=16,sglang,0.5.8,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,disagg,1024,1024,fp8,"
      "fp8_block,,,,,,,,,8,1,1,1,8,,,8,1,1,1,8,462.0,23.3\n";
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(write_csv("disagg.csv", row));
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].deployment, "disagg");
  EXPECT_TRUE(cases[0].excluded);
  EXPECT_NE(cases[0].why_not.find("worker counts not recorded"), std::string::npos);
}

TEST(ServingCases, DisaggPoolWithMoeTpTimesEpIsNotExpressed) {
  // The decode pool runs moe tp 2 x ep 4 on 8 GPUs; kvplan's --prefill-* flags have no expert-parallel
  // size of their own, so the row is refused rather than run with another split.
  const std::string prefill_pool = "16,1,8,1,1,1,8", decode_pool = "16,1,8,1,1,2,4";  // batch, workers, tp..ep
  const ServingCase c = read_aiconfigurator_e2e(
      write_csv("disagg_hybrid.csv",
                "dsr1_disagg_c16,silicon_concurrency=16,trtllm,1.1.0rc2,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,"
                "disagg,1024,1024,fp8,fp8_block,,,,,,," +
                    prefill_pool + "," + decode_pool + ",462.0,23.3\n"))
                            .at(0);
  EXPECT_NE(c.why_not.find("disagg: a pool with MoE split tp 2 x ep 4"), std::string::npos) << c.why_not;
  EXPECT_FALSE(c.excluded);
}

TEST(ServingCases, BlockScaledFp8RowsRunAsFp8BlockNotPerTensorFp8) {
  // Qwen3.5-397B (a bf16 preset) on 8 H200s with SGLang, FP8 with 128x128 block scales on the experts:
  // vLLM's fused MoE runs another kernel for block scales (6x faster at 4 tokens), so the row must be
  // --quantization fp8-block, not fp8; a per-tensor row stays fp8.
  const std::string block =
      "q35_c4,silicon_concurrency=4,sglang,0.5.9,Qwen/Qwen3.5-397B-A17B,h200_sxm,fp8,agg,1024,8192,fp8,fp8_block,"
      "4,8,1,1,1,8,,,,,,,,,,,,,,,308.8,9.4\n";
  const std::string tensor =
      "l8_c4,silicon_concurrency=4,vllm,0.11.2,meta-llama/Llama-3.1-8B-Instruct,h200_sxm,fp8,agg,1024,1024,fp8,,"
      "4,1,1,1,1,1,,,,,,,,,,,,,,,30.0,5.0\n";
  const std::vector<ServingCase> cases = read_aiconfigurator_e2e(write_csv("fp8.csv", block + tensor));
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].memory_flags.at("quantization"), "fp8-block") << cases[0].notes;
  EXPECT_NE(cases[0].notes.find("per-tensor fp8 GEMMs with fp8_block experts run as fp8-block"), std::string::npos)
      << cases[0].notes;
  EXPECT_EQ(cases[1].memory_flags.at("quantization"), "fp8");
}

}  // namespace
}  // namespace kvplan::bench
