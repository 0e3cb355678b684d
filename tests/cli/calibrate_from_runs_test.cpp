// `kvplan calibrate from-runs` end to end on the public run files of tests/data/runs: the fit
// writes a profile whose label "fitted to your runs" and band every answer shows; contradictory
// runs and a missing GPU or model are refused with exit 2, naming the runs or the field.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_cli.h"

namespace {

using kvplan::testing::expect_bad_input;
using kvplan::testing::run_cli;
using kvplan::testing::ScratchDir;

const std::string kRuns = std::string(KVPLAN_SOURCE_DIR) + "/tests/data/runs/";
const std::string kNerdalert = kRuns + "nerdalert_h100_llama31_8b_results.jsonl";
const std::string kVllmDeployment = " --gpu h100-sxm --engine vllm --engine-version 0.8.3 --tensor-parallel-size 1";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CalibrateFromRuns, ContradictoryPairIsRefusedWithBothNamed) {
  // The file holds the same sweep against vLLM and against SGLang: without --where, the rate-30
  // runs of the two servers are the same load with TTFTs 373 and 766 ms.
  expect_bad_input("calibrate from-runs " + kNerdalert + kVllmDeployment,
                   {"nerdalert_h100_llama31_8b_results.jsonl #4 and", "nerdalert_h100_llama31_8b_results.jsonl #10",
                    "contradict each other", "rate 30 req/s"});
}

TEST(CalibrateFromRuns, MissingGpuOrModelExitsTwoNamingTheField) {
  expect_bad_input("calibrate from-runs " + kNerdalert +
                       " --where framework=vllm --engine vllm --engine-version 0.8.3 --tensor-parallel-size 1",
                   {"the GPU is not stated", "--gpu"});
  // SGLang's old JSONL does not name the model.
  expect_bad_input("calibrate from-runs " + kRuns + "datacrunch_h200_llama33_70b_sglang_online.jsonl --gpu h200 "
                   "--tensor-parallel-size 4",
                   {"the model is not stated", "--model"});
  expect_bad_input("calibrate from-runs " + kNerdalert + " --where framework=vllm --gpu h100-sxm --tensor-parallel-size 1",
                   {"the serving engine is not stated", "--engine"});
}

TEST(CalibrateFromRuns, FittedProfileLabelInEveryAnswer) {
  ScratchDir dir("from_runs");
  const std::string profile = dir / "fit.json";
  auto fit = run_cli("calibrate from-runs " + kNerdalert + " --where framework=vllm" + kVllmDeployment + " --out " +
                     profile + " --explain");
  ASSERT_EQ(fit.status, 0) << fit.out;
  // 6 vLLM runs, the burst with 985 failed requests left out: 5, one of them held out.
  EXPECT_NE(fit.out.find("5 runs; errors on the held-out quarter"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("985 of 2000 requests failed"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("shipped default    fitted to your runs"), std::string::npos) << fit.out;
  const nlohmann::json p = nlohmann::json::parse(read(profile));
  EXPECT_EQ(p.at("serving_fit").at("label"), "fitted to your runs");
  EXPECT_EQ(p.at("serving_fit").at("runs").size(), 5u);
  EXPECT_EQ(p.at("serving_fit").at("runs").at(0).at("date"), "2025-04-14");
  for (const auto& [name, c] : p.at("classes").items()) {
    EXPECT_EQ(c.at("source").get<std::string>().rfind("fitted to your runs (5 runs of llama-3.1-8b with vllm 0.8.3 on "
                                                      "h100-sxm, 2025-04-14; band from the held-out quarter)", 0),
              0u)
        << name;
  }
  const std::string text = read(profile);
  EXPECT_EQ(text.find("\"measured"), std::string::npos);
  EXPECT_EQ(text.find("\"source\": \"published"), std::string::npos);

  const std::string scenario = " --model llama-3.1-8b --gpu h100-sxm --engine vllm --engine-version 0.8.3 --rate 2 "
                               "--num-requests 40 --prompt-lengths fixed:1000 --output-lengths fixed:100 --profile " +
                               profile;
  auto sim = run_cli("simulate" + scenario);
  ASSERT_EQ(sim.status, 0) << sim.out;
  EXPECT_NE(sim.out.find("step times: fitted to your runs profile from --profile=" + profile), std::string::npos) << sim.out;
  EXPECT_NE(sim.out.find("after the fit, on the held-out quarter"), std::string::npos) << sim.out;  // the band
  EXPECT_NE(sim.out.find("step time x " + p.at("serving_fit").at("terms").at("step_time_factor").dump()), std::string::npos)
      << sim.out;

  auto json = run_cli("simulate --json" + scenario, false);
  ASSERT_EQ(json.status, 0) << json.out;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("step_time_source"), "fitted to your runs profile from --profile=" + profile + " (GPU h100-sxm)");
  EXPECT_NE(j.at("latency_band").at("how").get<std::string>().find("on the held-out quarter"), std::string::npos);

  auto cap = run_cli("capacity" + scenario + " --slo-ttft-ms 500");
  ASSERT_EQ(cap.status, 0) << cap.out;
  EXPECT_NE(cap.out.find("fitted to your runs profile from --profile=" + profile), std::string::npos) << cap.out;

  // The report's first section names the source.
  std::ofstream(dir / "s.json") << R"({"kvplan_scenario": 1, "name": "fitted",
    "memory": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "engine": "vllm", "engine-version": "0.8.3"},
    "simulate": {"rate": 2, "num-requests": 40, "prompt-lengths": "fixed:1000", "output-lengths": "fixed:100",
                 "profile": ")" + profile + R"("}})";
  auto report = run_cli("report " + (dir / "s.json") + " --html " + (dir / "r.html") + " --json " + (dir / "r.json"));
  ASSERT_EQ(report.status, 0) << report.out;
  EXPECT_NE(read(dir / "r.html").find("fitted to your runs"), std::string::npos);
  EXPECT_NE(read(dir / "r.json").find("fitted to your runs"), std::string::npos);

  // Another GPU or engine is refused: the factor and the terms are this deployment's.
  expect_bad_input("simulate --model llama-3.1-8b --gpu a100-sxm-80gb --rate 2 --num-requests 10 --profile " + profile,
                   {"fitted to your runs on h100-sxm", "--gpu=a100"});
}

}  // namespace
