// `kvplan plan` end to end: the text answer, --json equal whatever the thread count, --out DIR
// with its CSV files, and exit status 2 with the flag named for bad input.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_cli.h"

namespace {

using kvplan::testing::run_cli;

// A small space: Llama-3.1-8B chat users with short fixed lengths, 20 s per probe.
const std::string kSmall =
    "plan --model llama-3.1-8b --max-model-len 4096 --users 8 --think-time 2 --prompt-lengths fixed:512 "
    "--output-lengths fixed:64 --duration 20 --seed 3 --slo-ttft-ms 400 --slo-tpot-ms 40 --target-users 500 "
    "--gpus l4,a10g,h100-sxm --max-gpus 2 --gpu-price l4=0.5,a10g=1 --gpu-price h100-sxm=2.5";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PlanCli, PrintsTheCheapestTheFrontAndEveryCandidateWithExplain) {
  const auto r = run_cli(kSmall + " --explain");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* s : {"cheapest deployment for 500 users:", "Pareto front, one replica", "binding", "CHEAPEST",
                        "price: $2.5/GPU-hour — given (--gpu-price)", "simulations"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST(PlanCli, JsonIsTheSameWithOneOrThreeThreads) {
  const auto one = run_cli(kSmall + " --json --exact-front", false);
  const auto three = run_cli(kSmall + " --json --exact-front --threads 3", false);
  ASSERT_EQ(one.status, 0) << one.out;
  ASSERT_EQ(three.status, 0) << three.out;
  EXPECT_EQ(one.out, three.out);
  const nlohmann::json j = nlohmann::json::parse(one.out);
  EXPECT_FALSE(j.at("cheapest").is_null());
  EXPECT_TRUE(j.at("exact_front").get<bool>());
  EXPECT_EQ(j.at("candidates").size(), 6u);  // 3 GPUs x TP 1, 2
}

TEST(PlanCli, OutDirHoldsThePlanAndItsCsvFiles) {
  kvplan::testing::ScratchDir dir("plan_out");
  const auto r = run_cli(kSmall + " --out " + dir.path());
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(read(dir.path() + "/plan.json"));
  const std::string csv = read(dir.path() + "/candidates.csv");
  EXPECT_EQ(csv.rfind("index,label,gpu,", 0), 0u) << csv;
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), j.at("candidates").size() + 1);
  EXPECT_NE(read(dir.path() + "/front.csv").find("rank,index,label"), std::string::npos);
}

TEST(PlanCli, BadInputIsExitTwoNamingTheFlag) {
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"plan --users 8 --slo-ttft-ms 500", "exactly one target"},
      {"plan --users 8 --slo-ttft-ms 500 --target-users 10 --target-rate 2", "exactly one target"},
      {"plan --rate 2 --slo-ttft-ms 500 --target-users 10", "--target-users: the workload is open loop"},
      {"plan --users 8 --slo-ttft-ms 500 --target-users 10 --tp 0", "--tp=0"},
      {"plan --users 8 --slo-ttft-ms 500 --target-users 10 --gpu-price h200", "--gpu-price h200"},
      {"plan --users 8 --slo-ttft-ms 500 --target-users 10 --vary nonsense=1,2", "nonsense"},
      {"plan --users 8 --target-users 10", "SLO"},
      {"plan --users 8 --slo-ttft-ms 500 --target-users 10 --disaggregation 1:0", "--disaggregation=1:0"},
      {"plan --users 8 --slo-ttft-ms 500 --target-users 10 --threads 999", "--threads=999"},
  };
  for (const Case& c : cases) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expected), std::string::npos) << c.args << "\n" << r.out;
  }
}

}  // namespace
