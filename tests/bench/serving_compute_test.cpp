// Rows that need more linear-layer work than the GPU was ever measured to do (bench/serving_compute.h).
#include "serving_compute.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kvplan/core/error.h"

namespace kvplan::bench {
namespace {

// Llama-3.1-8B on one H200, bf16, a closed loop of 100 users: TTFT 100 ms and 100 more tokens at
// 9 ms each make a 1.0 s cycle, 100 requests/s of 1,000 + 101 tokens = 110,100 tokens/s. Its 32
// decoder layers hold 41,943,040 attention (q 4096x4096, k and v 4096x1024, o 4096x4096) and
// 176,160,768 MLP (3 x 4096 x 14336) parameters each: 6,979,321,856, so 2 x that per token is
// 110,100 x 13,958,643,712 = 1,536.85 TFLOP/s on the one GPU.
ServingCase llama_row() {
  ServingCase c;
  c.id = "row";
  c.engine = "vllm";
  c.gpu = "h200";
  c.concurrency = 100;
  c.isl = 1000;
  c.osl = 101;
  c.measured_ttft_ms = 100;
  c.measured_tpot_ms = 9;
  c.memory_flags = {{"model", "llama-3.1-8b"}, {"tensor-parallel-size", "1"}};
  return c;
}

TEST(ServingCompute, TheLowerBoundIsTheDecoderLinearLayersOverTheLoop) {
  std::string dtype;
  EXPECT_NEAR(implied_linear_tflops_per_gpu(llama_row(), &dtype), 1536.85, 0.01);
  EXPECT_EQ(dtype, "bf16");
  ServingCase tp2 = llama_row();
  tp2.memory_flags.insert_or_assign("tensor-parallel-size", std::string("2"));
  EXPECT_NEAR(implied_linear_tflops_per_gpu(tp2), 1536.85 / 2, 0.01);
  ServingCase fp8 = llama_row();
  fp8.memory_flags.insert_or_assign("quantization", std::string("fp8"));
  implied_linear_tflops_per_gpu(fp8, &dtype);
  EXPECT_EQ(dtype, "fp8");
  // Not checked: MoE models, open-loop and disaggregated rows, rows already refused.
  ServingCase moe = llama_row();
  moe.memory_flags.insert_or_assign("model", std::string("qwen3-30b-a3b"));
  EXPECT_EQ(implied_linear_tflops_per_gpu(moe), 0);
  ServingCase open = llama_row();
  open.rate = 5;
  EXPECT_EQ(implied_linear_tflops_per_gpu(open), 0);
  ServingCase disagg = llama_row();
  disagg.deployment = "disagg";
  EXPECT_EQ(implied_linear_tflops_per_gpu(disagg), 0);
}

TEST(ServingCompute, AboveTheFastestGemmIsExcludedNearItNoted) {
  std::vector<ServingCase> cases = {llama_row(), llama_row(), llama_row()};
  cases[1].measured_tpot_ms = 9 * 1.25;  // cycle 1.225 s: 1,254.6 TFLOP/s
  cases[2].measured_tpot_ms = 18;        // cycle 1.9 s: 808.9 TFLOP/s
  mark_runs_beyond_compute(cases, {{"h200|bf16", 1500.0}});
  EXPECT_TRUE(cases[0].excluded);  // 102% of 1,500
  EXPECT_NE(cases[0].why_not.find("not every recorded prompt token"), std::string::npos) << cases[0].why_not;
  EXPECT_FALSE(cases[1].excluded);  // 83.6%: noted
  EXPECT_NE(cases[1].notes.find("84% of the fastest bf16 GEMM"), std::string::npos) << cases[1].notes;
  EXPECT_TRUE(cases[2].notes.empty()) << cases[2].notes;  // 54%
}

TEST(ServingCompute, FastestGemmIsTheBestRowPerGpuAndDtype) {
  const std::string path = std::string(::testing::TempDir()).append("gemm.csv");
  std::ofstream(path) << "gpu,vllm_version,gemm_dtype,m,n,k,latency_ms\r\n"
                         "h200_sxm,0.24.0,bfloat16,1024,1024,1024,0.004\r\n"   // 536.9 TFLOP/s
                         "h200_sxm,0.24.0,bfloat16,2048,2048,2048,0.02\r\n"    // 859.0
                         "h200_sxm,0.24.0,fp8,2048,2048,2048,0.01\r\n"         // 1,718.0
                         "h100_sxm,0.24.0,fp8,2048,2048,2048,0.02\r\n";        // 859.0
  const GemmCeilings best = fastest_published_gemm(path);
  EXPECT_NEAR(best.at("h200|bf16"), 858.99, 0.01);
  EXPECT_NEAR(best.at("h200|fp8"), 1717.99, 0.01);
  EXPECT_NEAR(best.at("h100-sxm|fp8"), 858.99, 0.01);
  EXPECT_THROW(fastest_published_gemm(std::string(path).append(".missing")), ConfigError);
}

}  // namespace
}  // namespace kvplan::bench
