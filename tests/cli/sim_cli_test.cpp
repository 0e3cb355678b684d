// End-to-end tests of `kvplan simulate` and `kvplan capacity`: files, determinism, bad input.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "run_cli.h"
#include <nlohmann/json.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define KVPLAN_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVPLAN_UNDER_ASAN 1
#endif
#endif

namespace {

using Result = kvplan::testing::CliResult;
using kvplan::testing::expect_bad_input;

Result run(const std::string& args) { return kvplan::testing::run_cli(args); }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


// The JSON document in stdout; the speed line on stderr may come before or after it.
nlohmann::json json_of(const std::string& out) {
  size_t begin = out.find('{');
  return nlohmann::json::parse(out.substr(begin, out.rfind('}') - begin + 1));
}

const std::string kTrace = std::string(KVPLAN_SOURCE_DIR) + "/data/traces/azure_llm_2023_conv.csv";

TEST(SimCli, SameSeedGivesByteIdenticalFiles) {
  const std::string a = ::testing::TempDir() + "kvplan_sim_a";
  const std::string b = ::testing::TempDir() + "kvplan_sim_b";
  const std::string args = " --trace " + kTrace + " --max-requests 800 --time-scale 0.05 --seed 3 --slo-ttft-ms 2000";
  Result ra = run("simulate --out " + a + args);
  Result rb = run("simulate --out " + b + args);
  ASSERT_EQ(ra.status, 0) << ra.out;
  ASSERT_EQ(rb.status, 0) << rb.out;
  for (const char* f : {"/summary.json", "/requests.csv", "/timeseries.csv"}) {
    std::string x = slurp(a + f), y = slurp(b + f);
    EXPECT_FALSE(x.empty()) << f;
    EXPECT_EQ(x, y) << f;
  }
  nlohmann::json s = nlohmann::json::parse(slurp(a + "/summary.json"));
  EXPECT_EQ(s["summary"]["finished"].get<int>(), 800);
  // requests.csv: a header and one row per finished request.
  std::string csv = slurp(a + "/requests.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 801);
}

TEST(SimCli, SeedChangesAPoissonWorkload) {
  Result a = run("simulate --json --rate 20 --num-requests 200 --seed 1");
  Result b = run("simulate --json --rate 20 --num-requests 200 --seed 2");
  ASSERT_EQ(a.status, 0) << a.out;
  ASSERT_EQ(b.status, 0) << b.out;
  auto ja = json_of(a.out);
  auto jb = json_of(b.out);
  EXPECT_NE(ja["summary"]["ttft_ms"]["p90"], jb["summary"]["ttft_ms"]["p90"]);
}

TEST(SimCli, TextOutputNamesTheSetupAndLatencies) {
  Result r = run("simulate --rate 5 --num-requests 100 --slo-ttft-ms 1000");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* f : {"Llama-3.1-8B", "scheduler vllm", "TTFT", "TPOT", "SLO (p90 TTFT <= 1000 ms)", "datasheet"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  }
}

// Every shipped trace runs to the end: mooncake_synthetic.jsonl stopped with "PagedKvManager
// invariant broken: make_free: no evictable prefix node left" when a publish hung a live sequence's
// prefix nodes under cached nodes nobody held (KvPrefix.PublishOverAnotherSequencesCopyTakesTheCachedBlocks).
TEST(SimCli, MooncakeSyntheticTraceRunsToTheEnd) {
  Result r = run("simulate --trace " + std::string(KVPLAN_SOURCE_DIR) + "/data/traces/mooncake_synthetic.jsonl");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("3983 finished, 0 unfinished, 10 rejected"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
}

TEST(SimCli, CapacitySearchIsReproducible) {
  const std::string args = "capacity --json --rate 1 --prompt-lengths fixed:512 --output-lengths fixed:64 "
                           "--num-requests 200 --slo-ttft-ms 500 --tolerance 0.1";
  Result a = run(args);
  Result b = run(args);
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  auto j = nlohmann::json::parse(a.out);
  EXPECT_GT(j["best"].get<double>(), 0);
  EXPECT_GT(j["first_failing"].get<double>(), j["best"].get<double>());
  EXPECT_TRUE(j["at_best"]["meets_slo"].get<bool>());
}

// Small closed-loop users of fixed lengths, 30 s per probe: a capacity search in well under a second.
const std::string kSmallUsers = "--users 4 --think-time 1 --prompt-lengths fixed:256 --output-lengths fixed:64 "
                                "--duration 30 --tolerance 0.2 ";

TEST(SimCli, CapacityNamesTheBindingConstraintAndTheCost) {
  Result r = run("capacity " + kSmallUsers + "--slo-tpot-ms 12 --gpu-price 2");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* f : {"binding constraint: tpot", "at the answer: p90 TPOT", "KV memory peak", "max_num_seqs",
                        "cost: $2.00/hour for 1 GPU (1 replica x 1)", "per concurrent user",
                        "per million output tokens", "price source: given (--gpu-price)"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  }
  // A GPU without a price: said, never invented.
  Result unpriced = run("capacity " + kSmallUsers + "--slo-tpot-ms 12 --gpu h800");
  ASSERT_EQ(unpriced.status, 0) << unpriced.out;
  EXPECT_NE(unpriced.out.find("cost: unknown for 1 GPU"), std::string::npos) << unpriced.out;
  EXPECT_NE(unpriced.out.find("--gpu-price"), std::string::npos) << unpriced.out;
}

// The workload line above a capacity answer used to print the first probe's count ("workload: 4
// closed-loop users") above a different answer; the count is what the search finds (issue 27).
TEST(SimCli, CapacityWorkloadLineHasNoProbeCount) {
  Result r = run("capacity " + kSmallUsers + "--slo-tpot-ms 12");
  ASSERT_EQ(r.status, 0) << r.out;
  const size_t line = r.out.find("workload: ");
  ASSERT_NE(line, std::string::npos) << r.out;
  const std::string text = r.out.substr(line, r.out.find('\n', line) - line);
  EXPECT_EQ(text.rfind("workload: closed-loop users, think time 1 s", 0), 0u) << text;
  // `simulate` runs the given count, so there the count stays.
  Result sim = run("simulate --users 4 --think-time 1 --prompt-lengths fixed:256 --output-lengths fixed:64 --duration 30");
  ASSERT_EQ(sim.status, 0) << sim.out;
  EXPECT_NE(sim.out.find("workload: 4 closed-loop users, think time 1 s"), std::string::npos) << sim.out;
}

TEST(SimCli, SimulateReportsEngineLimitsAndCost) {
  Result r = run("simulate --users 8 --think-time 0 --duration 20 --prompt-lengths fixed:256 --output-lengths fixed:64 "
                 "--max-num-seqs 4 --gpu-price 3");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* f : {"engine limits: running peak 4 of 4 max_num_seqs", "cost: $3.00/hour for 1 GPU",
                        "$0.3750/hour per concurrent user"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  }
  Result j = run("simulate --json --users 8 --think-time 0 --duration 20 --prompt-lengths fixed:256 --output-lengths fixed:64 "
                 "--max-num-seqs 4 --gpu-price 3");
  ASSERT_EQ(j.status, 0) << j.out;
  const nlohmann::json s = json_of(j.out);
  EXPECT_EQ(s["summary"]["limits"]["peak_running"], 4);
  EXPECT_GT(s["summary"]["limits"]["seq_limited_steps"].get<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(s["cost"]["usd_per_user"].get<double>(), 3.0 / 8);
}

TEST(SimCli, CapacityCompareIsTheCartesianProduct) {
  const std::string args = "capacity --json " + kSmallUsers +
                           "--slo-ttft-ms 1000 --compare max-num-seqs=2,64 --compare gpu=h100-sxm,h800";
  Result a = run(args);
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, run(args).out);  // deterministic
  const nlohmann::json j = nlohmann::json::parse(a.out);
  ASSERT_EQ(j.size(), 4u);
  // First axis slowest.
  EXPECT_EQ(j[0]["compare"], (nlohmann::json{{"max-num-seqs", "2"}, {"gpu", "h100-sxm"}}));
  EXPECT_EQ(j[1]["compare"], (nlohmann::json{{"max-num-seqs", "2"}, {"gpu", "h800"}}));
  EXPECT_EQ(j[3]["compare"], (nlohmann::json{{"max-num-seqs", "64"}, {"gpu", "h800"}}));
  EXPECT_EQ(j[0]["binding_constraint"]["kind"], "max_num_seqs");
  EXPECT_TRUE(j[1]["cost"]["usd_per_hour"].is_null());  // h800 has no price
  EXPECT_DOUBLE_EQ(j[0]["cost"]["usd_per_user"].get<double>(),
                   j[0]["cost"]["usd_per_hour"].get<double>() / j[0]["best"].get<double>());
  Result table = run("capacity " + kSmallUsers + "--slo-ttft-ms 1000 --compare max-num-seqs=2,64");
  ASSERT_EQ(table.status, 0) << table.out;
  for (const char* f : {"comparing 2 combinations", "max-num-seqs", "binding", "$/user-hour", "price of h100-sxm"}) {
    EXPECT_NE(table.out.find(f), std::string::npos) << f << "\n" << table.out;
  }
}

TEST(SimCli, BadCapacityCompareExitsWithStatus2) {
  expect_bad_input("capacity --users 4 --slo-ttft-ms 1000 --compare bogus=1,2", {"bogus", "not a setting of `kvplan capacity`"});
  expect_bad_input("capacity --users 4 --slo-ttft-ms 1000 --compare max-num-seqs=4,x", {"max-num-seqs=x"});
  expect_bad_input("capacity --users 4 --slo-ttft-ms 1000 --compare max-num-seqs", {"--compare=max-num-seqs", "KEY=V1,V2"});
  expect_bad_input("capacity --users 4 --slo-ttft-ms 1000 --compare tensor-parallel-size=1,3",
                   {"--compare tensor-parallel-size=3"});
}

TEST(SimCli, BadInputExitsWithStatus2) {
  expect_bad_input("simulate --scheduler fifo", {"scheduler", "fifo", "static, orca, vllm, sglang"});
  expect_bad_input("simulate --scheduler static --kv-policy paged", {"kv-policy=paged", "max-length"});
  expect_bad_input("simulate --rate 0", {"--rate=0", "must be in"});
  expect_bad_input("simulate --rate abc", {"--rate=abc", "number"});
  expect_bad_input("simulate --trace /nonexistent/trace.csv", {"/nonexistent/trace.csv"});
  expect_bad_input("simulate --prompt-lengths lognormal:x", {"prompt-lengths"});
  expect_bad_input("simulate --preemption swap", {"--swap-space"});
  expect_bad_input("simulate --spec-acceptance 1.5", {"spec-acceptance", "1.5"});
  expect_bad_input("simulate --router random", {"router", "random"});
  expect_bad_input("simulate --prefill-replicas 1", {"prefill-replicas=1", "decode-replicas=0"});
  expect_bad_input("simulate --users 4 --trace " + kTrace, {"--trace and --users"});
  expect_bad_input("capacity --rate 1", {"SLO"});
  expect_bad_input("simulate --bogus 1", {"bogus"});
}

TEST(SimCli, BenchClientLikeVllmBenchServe) {
  Result r = run("simulate --json --client bench --max-concurrency 8 --num-prompts 40 --random-input-len 512 "
                 "--random-output-len 64 --seed 2");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = json_of(r.out);
  EXPECT_EQ(j["inputs"]["client"], "bench");
  EXPECT_EQ(j["summary"]["finished"].get<int>(), 40);
  EXPECT_EQ(j["summary"]["warmup_excluded"].get<int>(), 8);
  EXPECT_EQ(j["summary"]["cooldown_excluded"].get<int>(), 8);
  EXPECT_EQ(j["summary"]["measured"].get<int>(), 24);
  EXPECT_EQ(j["bench"]["start"], "staggered");  // vLLM's default (bench_client.h)
  EXPECT_GT(j["bench"]["stagger_window_ms"].get<double>(), 0);
  // Every latency names the overheads in it and their source: vLLM's fitted defaults here.
  EXPECT_DOUBLE_EQ(j["serving_overheads"]["request_ms"].get<double>(), 14.067);
  EXPECT_DOUBLE_EQ(j["serving_overheads"]["request_per_in_flight_ms"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["serving_overheads"]["request_per_in_flight_prefill_share"].get<double>(), 0.0552);
  EXPECT_NE(j["serving_overheads"]["request_source"].get<std::string>().find("fitted"), std::string::npos);
  EXPECT_DOUBLE_EQ(j["serving_overheads"]["step_ms"].get<double>(), 0.321);
  EXPECT_DOUBLE_EQ(j["serving_overheads"]["step_time_factor"].get<double>(), 1.073);
  EXPECT_DOUBLE_EQ(j["serving_overheads"]["prefill_time_factor"].get<double>(), 1.073);

  // The prefill-shaped per-in-flight term: 0 leaves only the fixed delay, so the mean TTFT falls.
  Result z = run("simulate --json --client bench --max-concurrency 8 --num-prompts 40 --random-input-len 512 "
                 "--random-output-len 64 --seed 2 --request-overhead-per-in-flight-prefill-share 0");
  ASSERT_EQ(z.status, 0) << z.out;
  auto zj = json_of(z.out);
  EXPECT_EQ(zj["serving_overheads"]["request_per_in_flight_prefill_share_source"],
            "given (--request-overhead-per-in-flight-prefill-share)");
  EXPECT_LT(zj["summary"]["ttft_ms"]["mean"].get<double>(), j["summary"]["ttft_ms"]["mean"].get<double>());
  // --step-time-factor alone sets the whole step's factor; --prefill-time-factor the prefill part's.
  Result whole = run("simulate --json --client bench --max-concurrency 8 --num-prompts 40 --random-input-len 512 "
                     "--random-output-len 64 --seed 2 --step-time-factor 1.2");
  ASSERT_EQ(whole.status, 0) << whole.out;
  EXPECT_DOUBLE_EQ(json_of(whole.out)["serving_overheads"]["prefill_time_factor"].get<double>(), 1.2);
  Result g = run("simulate --json --client bench --max-concurrency 8 --num-prompts 40 --random-input-len 512 "
                 "--random-output-len 64 --seed 2 --step-time-factor 1.2 --prefill-time-factor 2");
  ASSERT_EQ(g.status, 0) << g.out;
  auto gj = json_of(g.out);
  EXPECT_EQ(gj["serving_overheads"]["prefill_time_factor_source"], "given (--prefill-time-factor)");
  EXPECT_GT(gj["summary"]["ttft_ms"]["mean"].get<double>(),
            json_of(whole.out)["summary"]["ttft_ms"]["mean"].get<double>());

  // --max-concurrency alone means the bench client; overrides name themselves as the source.
  Result o = run("simulate --json --max-concurrency 4 --num-prompts 20 --random-input-len 128 --random-output-len 16 "
                 "--request-overhead-ms 10 --step-overhead-ms 0 --engine sglang");
  ASSERT_EQ(o.status, 0) << o.out;
  auto k = json_of(o.out);
  EXPECT_EQ(k["bench"]["start"], "staggered");  // SGLang's default when no release is given (0.5.6 on)
  Result old = run("simulate --json --max-concurrency 4 --num-prompts 20 --random-input-len 128 --random-output-len 16 "
                   "--engine sglang --engine-version 0.5.1.post1");
  ASSERT_EQ(old.status, 0) << old.out;
  EXPECT_EQ(json_of(old.out)["bench"]["start"], "burst");  // releases before 0.5.6 ran lock-stepped
  EXPECT_DOUBLE_EQ(k["serving_overheads"]["request_ms"].get<double>(), 10.0);
  EXPECT_EQ(k["serving_overheads"]["request_source"], "given (--request-overhead-ms)");
  EXPECT_EQ(k["serving_overheads"]["step_source"], "given (--step-overhead-ms)");
  // No request is measured before its TTFT includes the 10 ms.
  EXPECT_GE(k["summary"]["ttft_ms"]["p50"].get<double>(), 10.0);

  Result text = run("simulate --max-concurrency 4 --num-prompts 20 --random-input-len 128 --random-output-len 16");
  ASSERT_EQ(text.status, 0) << text.out;
  for (const char* f : {"bench client: 20 prompts at max concurrency 4", "steady state: 12 requests measured",
                        "serving overheads in these latencies: per request 14.067 ms (fitted",
                        "+ 0.0552 x its prompt's prefill time per other request in flight (fitted",
                        "step time x 1.073 (fitted"}) {
    EXPECT_NE(text.out.find(f), std::string::npos) << f << "\n" << text.out;
  }
}

TEST(SimCli, PerInFlightTermIsTheBenchClientsOnly) {
  // Fitted on closed-loop sweeps whose users fall into lock step: open-loop arrivals and chat
  // users do not get it (it over-predicts open-loop Poisson runs, docs/benchmarks.md), and say so.
  const std::string why = "not applied: fitted on closed-loop benchmark sweeps whose users fall into lock step";
  for (const std::string& workload : {std::string("--rate 2 --num-requests 20 --prompt-lengths fixed:512 "
                                                  "--output-lengths fixed:16"),
                                      std::string("--workload chat --users 8 --duration 20")}) {
    Result r = run("simulate --json " + workload);
    ASSERT_EQ(r.status, 0) << r.out;
    auto j = json_of(r.out);
    EXPECT_DOUBLE_EQ(j["serving_overheads"]["request_per_in_flight_prefill_share"].get<double>(), 0.0) << workload;
    EXPECT_EQ(j["serving_overheads"]["request_per_in_flight_prefill_share_source"].get<std::string>().rfind(why, 0),
              0u)
        << workload;
    EXPECT_DOUBLE_EQ(j["serving_overheads"]["request_ms"].get<double>(), 14.067) << workload;  // the fixed part stays
    Result text = run("simulate " + workload);
    EXPECT_NE(text.out.find("(per-in-flight term " + why), std::string::npos) << text.out;
  }
  // Given, it applies to any workload.
  Result g = run("simulate --json --rate 2 --num-requests 20 --prompt-lengths fixed:512 --output-lengths fixed:16 "
                 "--request-overhead-per-in-flight-prefill-share 0.05");
  ASSERT_EQ(g.status, 0) << g.out;
  EXPECT_DOUBLE_EQ(json_of(g.out)["serving_overheads"]["request_per_in_flight_prefill_share"].get<double>(), 0.05);
}

TEST(SimCli, UnknownWorkloadPresetIsBadInput) {
  expect_bad_input("simulate --workload chatbot", {"--workload=chatbot", "must be one of chat, code, rag, agent, batch"});
  expect_bad_input("capacity --workload Chat --slo-ttft-ms 1000", {"--workload=Chat"});
  expect_bad_input("simulate --users 4 --rate 2", {"--users=4", "--rate=2", "choose one workload"});
}

// --users N: the per-request file holds exactly N distinct users (0 .. N-1), with several turns.
TEST(SimCli, UsersNWritesRequestsOfExactlyNUsers) {
  kvplan::testing::ScratchDir d("users_n");
  Result r = run("simulate --users 13 --turns 2 --think-time 0.2 --prompt-lengths fixed:64 --output-lengths fixed:8 "
                 "--duration 10 --out " + d.path());
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream csv(slurp(d.path() + "/requests.csv"));
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  ASSERT_EQ(line.rfind("id,replica,user,", 0), 0u) << line;
  std::set<int> users;
  int rows = 0;
  while (std::getline(csv, line)) {
    const size_t a = line.find(',');
    const size_t b = line.find(',', a + 1);
    const size_t c = line.find(',', b + 1);
    users.insert(std::stoi(line.substr(b + 1, c - b - 1)));
    ++rows;
  }
  EXPECT_EQ(users.size(), 13u);
  EXPECT_EQ(*users.begin(), 0);
  EXPECT_EQ(*users.rbegin(), 12);
  EXPECT_GT(rows, 26);
}

TEST(SimCli, BenchClientSameSeedSameBytes) {
  const std::string a = ::testing::TempDir() + "kvplan_bench_a";
  const std::string b = ::testing::TempDir() + "kvplan_bench_b";
  const std::string args = " --max-concurrency 16 --num-prompts 96 --prompt-lengths uniform:256,1024 "
                           "--output-lengths uniform:16,128 --seed 5";
  ASSERT_EQ(run("simulate --out " + a + args).status, 0);
  ASSERT_EQ(run("simulate --out " + b + args).status, 0);
  for (const char* f : {"/summary.json", "/requests.csv", "/timeseries.csv"}) {
    EXPECT_FALSE(slurp(a + f).empty()) << f;
    EXPECT_EQ(slurp(a + f), slurp(b + f)) << f;
  }
}

TEST(SimCli, BenchClientBadInput) {
  expect_bad_input("simulate --client bench", {"--client=bench needs --max-concurrency"});
  expect_bad_input("simulate --max-concurrency 8 --num-prompts 16", {"num_prompts=16 must exceed"});
  expect_bad_input("simulate --max-concurrency 8 --users 4", {"choose one workload"});
  expect_bad_input("simulate --num-prompts 100", {"--num-prompts is the bench client's"});
  expect_bad_input("simulate --max-concurrency 8 --bench-start later", {"staggered or burst"});
  expect_bad_input("simulate --request-overhead-ms -1", {"--request-overhead-ms=-1"});
  expect_bad_input("simulate --client robots", {"users or bench"});
}

TEST(SimCli, BadTraceRowNamesLineAndField) {
  const std::string path = ::testing::TempDir() + "bad_trace.csv";
  std::ofstream(path) << "arrival_s,prompt_tokens,output_tokens\n0.0,10,5\n0.5,-3,5\n";
  expect_bad_input("simulate --trace " + path, {"line 3", "prompt_tokens"});
}

}  // namespace

// ---- outputs are atomic and checked (issue 16) -------------------------------------------------

namespace {

using kvplan::testing::run_shell;
using kvplan::testing::ScratchDir;

bool exists(const std::string& p) { return std::filesystem::exists(p); }

// A complete earlier run in `dir`, so that a later run that stops early could leave a stale mix.
void complete_run(const std::string& dir) {
  Result r = run("simulate --rate 20 --num-requests 50 --seed 9 --out " + dir);
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_TRUE(exists(dir + "/summary.json"));
  ASSERT_TRUE(exists(dir + "/requests.csv"));
}

// Starts a long run (minutes uninterrupted) into `dir`, sends `signal` after a second, and returns
// the shell's "status=N" line.
Result interrupt_long_run(const std::string& dir, const std::string& signal) {
  return run_shell("$KVPLAN simulate --rate 500 --num-requests 5000000 --seed 4 --out " + dir +
                   " >/dev/null 2>&1 & pid=$!; sleep 1; kill -" + signal + " $pid; wait $pid; echo status=$?");
}

}  // namespace

TEST(SimCli, InterruptedRunIsMarkedPartialNeverAStaleMix) {
  ScratchDir d("sigint");
  complete_run(d.path());
  Result r = interrupt_long_run(d.path(), "INT");
  ASSERT_NE(r.out.find("status=130"), std::string::npos) << r.out;
  // The earlier run's files are gone; this run's rows are kept under .partial names and the
  // summary says it is incomplete and why.
  EXPECT_FALSE(exists(d / "requests.csv"));
  EXPECT_FALSE(exists(d / "timeseries.csv"));
  ASSERT_TRUE(exists(d / "requests.csv.partial"));
  ASSERT_TRUE(exists(d / "timeseries.csv.partial"));
  ASSERT_TRUE(exists(d / "summary.json"));
  nlohmann::json s = nlohmann::json::parse(slurp(d / "summary.json"));
  EXPECT_FALSE(s["complete"].get<bool>());
  EXPECT_NE(s["interrupted"].get<std::string>().find("SIGINT"), std::string::npos);
  // Every row written is a whole row: the header plus `finished` requests.
  std::string csv = slurp(d / "requests.csv.partial");
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv.back(), '\n');
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), s["summary"]["finished"].get<int64_t>() + 1);
}

TEST(SimCli, KilledRunLeavesNoCompletionMarker) {
  ScratchDir d("sigkill");
  complete_run(d.path());
  Result r = interrupt_long_run(d.path(), "KILL");
  ASSERT_NE(r.out.find("status=137"), std::string::npos) << r.out;
  // No summary.json: the directory does not claim to be a finished run, and nothing of the
  // earlier run is left to be mistaken for this one.
  EXPECT_FALSE(exists(d / "summary.json"));
  EXPECT_FALSE(exists(d / "requests.csv"));
  EXPECT_FALSE(exists(d / "timeseries.csv"));
}

TEST(SimCli, CompleteRunLeavesNoPartialFiles) {
  ScratchDir d("complete");
  complete_run(d.path());
  EXPECT_TRUE(exists(d / "timeseries.csv"));
  EXPECT_FALSE(exists(d / "requests.csv.partial"));
  EXPECT_FALSE(exists(d / "timeseries.csv.partial"));
  EXPECT_FALSE(exists(d / "summary.json.partial"));
  EXPECT_TRUE(nlohmann::json::parse(slurp(d / "summary.json"))["complete"].get<bool>());
}

TEST(SimCli, FullDiskIsExit2AndNoSummary) {
  // A file-size limit of 1 KiB makes every write past it fail (EFBIG), as a full disk would.
  ScratchDir d("fulldisk");
  Result r = run_shell("trap \"\" XFSZ; ulimit -f 2; $KVPLAN simulate --rate 20 --num-requests 400 --out " + d.path() +
                       "; echo status=$?");
  EXPECT_NE(r.out.find("status=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wrote "), std::string::npos) << r.out;
  EXPECT_FALSE(exists(d / "summary.json"));
  EXPECT_FALSE(exists(d / "requests.csv"));
}

TEST(SimCli, StdoutToAFullDeviceIsExit2) {
  Result r = run_shell("$KVPLAN simulate --rate 20 --num-requests 50 > /dev/full; echo status=$?");
  EXPECT_NE(r.out.find("status=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stdout"), std::string::npos) << r.out;
  Result j = run_shell("$KVPLAN models --json > /dev/full; echo status=$?");
  EXPECT_NE(j.out.find("status=2"), std::string::npos) << j.out;
}

TEST(SimCli, ABillionSecondGapInATraceSimulatesInUnder100MB) {
  ScratchDir d("gap");
  std::ofstream(d / "gap.csv") << "arrival_s,prompt_tokens,output_tokens\n0,512,64\n999999999,512,64\n"
                                  "999999999.5,512,64\n";
  Result r = run("simulate --trace " + (d / "gap.csv") + " --json --out " + d.path());
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json s = nlohmann::json::parse(slurp(d / "summary.json"));
  EXPECT_EQ(s["summary"]["finished"].get<int>(), 3);
  EXPECT_GE(s["engine"]["end_s"].get<double>(), 999999999.0);
  const std::string ts = slurp(d / "timeseries.csv");
  EXPECT_LT(std::count(ts.begin(), ts.end(), '\n'), 1000);
#ifndef KVPLAN_UNDER_ASAN  // AddressSanitizer's shadow memory would dominate the figure
  // The same run again under a forked helper process, whose RUSAGE_CHILDREN covers that run alone
  // (this test process's own figure would include every child any earlier test in it waited for).
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    close(fds[0]);
    run("simulate --trace " + (d / "gap.csv") + " --json");
    struct rusage usage {};
    long max_rss_kib = getrusage(RUSAGE_CHILDREN, &usage) == 0 ? usage.ru_maxrss : -1;
    if (write(fds[1], &max_rss_kib, sizeof max_rss_kib) != static_cast<ssize_t>(sizeof max_rss_kib)) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  long max_rss_kib = -1;
  const ssize_t got = read(fds[0], &max_rss_kib, sizeof max_rss_kib);
  close(fds[0]);
  int status = 0;
  waitpid(helper, &status, 0);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof max_rss_kib));
  ASSERT_GT(max_rss_kib, 0);
  EXPECT_LT(max_rss_kib, 100 * 1024) << "max RSS " << max_rss_kib << " KiB";
#endif
}

TEST(SimCli, ArrivalsBeyondTheTimeLimitAreBadInputNotAnOverflow) {
  // Found by the fuzz regression inputs: 200 requests at 1e-9 req/s arrive ~2e11 s out; the int64
  // nanosecond clock overflowed and the event queue reported an internal error (exit 70).
  expect_bad_input("simulate --rate 1e-9 --num-requests 200", {"rate=1e-09", "beyond the simulator's limit"});
  expect_bad_input("simulate --rate 1e-9 --num-requests 200 --arrivals constant", {"rate=1e-09", "request 3 of 200"});
}

TEST(SimCli, DisaggregatedDeepSeekR1TtftIncludesTheKvTransferAndNamesItsSource) {
  // DeepSeek-R1 on H200: one prefill engine and one decode engine of TP 8 with experts spread (16
  // GPUs: two HGX boards, so the default link is RDMA at one ConnectX-7 port's 400 Gb/s = 50 GB/s
  // per GPU). One 8,192-token prompt: each TP rank holds the whole MLA latent, (512 + 64) x 2 bytes
  // x 61 layers = 70,272 bytes per token, so each GPU sends 8,192 x 70,272 = 575,668,224 bytes:
  // 575,668,224 / 50e9 s = 11.51336448 ms (11,513,365 ns, ceil to the ns).
  const std::string args = "simulate --model deepseek-r1 --gpu h200 --tensor-parallel-size 8 --enable-expert-parallel "
                           "--prefill-replicas 1 --decode-replicas 1 --rate 1 --num-requests 1 "
                           "--prompt-lengths fixed:8192 --output-lengths fixed:16 --seed 1";
  Result j = run(args + " --json");
  ASSERT_EQ(j.status, 0) << j.out;
  const nlohmann::json s = json_of(j.out);
  const nlohmann::json& t = s["kv_transfer"];
  EXPECT_EQ(t["link"], "RDMA");
  EXPECT_DOUBLE_EQ(t["bytes_per_s_per_gpu"].get<double>(), 50e9);
  EXPECT_NE(t["source"].get<std::string>().find("ConnectX-7"), std::string::npos) << t;
  EXPECT_EQ(t["transfers"].get<int64_t>(), 1);
  EXPECT_EQ(t["bytes_per_gpu"].get<int64_t>(), 575'668'224);
  EXPECT_NEAR(t["mean_ms"].get<double>(), 11.513365, 1e-9);
  EXPECT_EQ(t["in_ttft"], true);
  // The first token comes after the transfer: TTFT = prefill (> 0) + 11.51 ms.
  EXPECT_GT(s["summary"]["ttft_ms"]["mean"].get<double>(), 11.513365);
  Result text = run(args);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("KV transfer prefill -> decode (in TTFT): 1 transfers, mean 11.51 ms over RDMA 50.0 GB/s per "
                          "GPU (datasheet: one NVIDIA ConnectX-7 port per GPU"),
            std::string::npos)
      << text.out;
}

TEST(SimCli, PrefillPoolParallelismWithoutDisaggregationIsBadInput) {
  expect_bad_input("simulate --prefill-tensor-parallel-size 2", {"--prefill-replicas"});
}
