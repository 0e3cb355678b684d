// The workload presets (workload_presets.h): each preset's documented fields in the simulator's
// workload, explicit settings over the preset in any order, --rate and --users against a preset,
// the same default workload for `capacity` and `kvplan` alone, --users N simulating N users, and
// the prefix-caching default of each engine.
#include "kvplan/plan/workload_presets.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kvplan/core/error.h"
#include "kvplan/core/length_distribution.h"
#include "kvplan/plan/data_dir.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/settings.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::plan {
namespace {

sim::WorkloadConfig workload_of(const SettingValues& values) {
  return simulation_config(with_values(Scenario{}, values)).workload;
}

std::string spec_text(const std::string& spec) { return parse_length_distribution(spec, "test").describe(); }
// The shipped traces' row counts (data/traces/README.md).
std::string trace_text(const std::string& file, const char* column) {
  const int rows = file == "azure_llm_2023_code.csv" ? 8819 : 19366;
  return "empirical, " + std::to_string(rows) + " samples from " + data_dir() + "/traces/" + file + " " + column +
         " lengths";
}

// A closed-loop preset's users: 8 when no load is given, 300 s simulated.
void expect_users(const sim::WorkloadConfig& w, double think_time_s, const std::string& prompt,
                  const std::string& output) {
  EXPECT_EQ(w.kind, sim::WorkloadKind::kClosedLoop);
  EXPECT_EQ(w.client, sim::ClosedLoopClient::kUsers);
  EXPECT_EQ(w.closed.num_users, 8);
  EXPECT_EQ(w.closed.think_time_s, think_time_s);
  EXPECT_EQ(w.closed.first_prompt.describe(), prompt);
  EXPECT_EQ(w.closed.output.describe(), output);
  EXPECT_EQ(w.horizon_ns, 300 * sim::kNsPerSecond);
}

TEST(WorkloadPresets, ChatIsTheAzureConversationTraceWithTenSecondThinkTime) {
  for (const SettingValues& v : {SettingValues{}, SettingValues{{"workload", "chat"}}}) {
    const sim::WorkloadConfig w = workload_of(v);
    expect_users(w, 10, trace_text("azure_llm_2023_conv.csv", "prompt"), trace_text("azure_llm_2023_conv.csv", "output"));
    EXPECT_EQ(w.closed.turns, 1);
    EXPECT_EQ(w.closed.shared_prefix_tokens, 0);
  }
}

TEST(WorkloadPresets, CodeIsTheAzureCodeTraceWithTwoSecondThinkTime) {
  expect_users(workload_of({{"workload", "code"}}), 2, trace_text("azure_llm_2023_code.csv", "prompt"),
               trace_text("azure_llm_2023_code.csv", "output"));
}

TEST(WorkloadPresets, RagIsLongPromptsShortAnswers) {
  expect_users(workload_of({{"workload", "rag"}}), 10, spec_text("normal:5120,1024"), spec_text("normal:256,96"));
}

TEST(WorkloadPresets, AgentIsEightTurnsAfterASharedSystemPrompt) {
  const sim::WorkloadConfig w = workload_of({{"workload", "agent"}});
  expect_users(w, 1, spec_text("normal:512,128"), spec_text("normal:256,64"));
  EXPECT_EQ(w.closed.turns, 8);
  EXPECT_EQ(w.closed.shared_prefix_tokens, 2048);
  EXPECT_EQ(w.closed.followup.describe(), spec_text("normal:512,256"));
  EXPECT_EQ(w.closed.hash_block_tokens, 16);  // the KV block size: prefix identity per block
}

TEST(WorkloadPresets, BatchQueuesEveryRequestAtOnce) {
  const sim::WorkloadConfig w = workload_of({{"workload", "batch"}});
  EXPECT_EQ(w.kind, sim::WorkloadKind::kOpenLoop);
  EXPECT_EQ(w.open.arrivals, sim::ArrivalKind::kConstant);
  EXPECT_EQ(w.open.rate_per_s, 1e9);
  EXPECT_EQ(w.open.num_requests, 1000);
  EXPECT_EQ(w.open.prompt.describe(), trace_text("azure_llm_2023_conv.csv", "prompt"));
  EXPECT_EQ(w.horizon_ns, 0);  // until every request ends
}

TEST(WorkloadPresets, EveryPresetIsASettingChoiceWithADescriptionAndASource) {
  const Setting& row = setting("workload");
  EXPECT_EQ(row.file_key(), "workload.preset");
  EXPECT_EQ(row.default_text, "chat");
  EXPECT_EQ(row.choices, (std::vector<std::string>{"chat", "code", "rag", "agent", "batch"}));
  for (const WorkloadPresetInfo& p : workload_presets()) {
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
    EXPECT_EQ(parse_workload_preset(p.name), p.preset);
    Scenario s;
    row.set(s, std::string(p.name));
    EXPECT_EQ(s.workload.preset, p.preset);
    EXPECT_EQ(row.text(s), p.name);
  }
}

TEST(WorkloadPresets, ExplicitSettingsOverrideThePresetInAnyOrder) {
  const SettingValues given = {{"think-time", "3"}, {"prompt-lengths", "fixed:100"}, {"turns", "2"},
                               {"shared-prefix", "32"}, {"users", "5"}};
  Scenario preset_first;
  setting("workload").set(preset_first, "agent");
  set_values(preset_first, given);
  Scenario preset_last = with_values(Scenario{}, given);
  setting("workload").set(preset_last, "agent");
  for (const Scenario& s : {preset_first, preset_last}) {
    const sim::WorkloadConfig w = simulation_config(s).workload;
    EXPECT_EQ(w.closed.num_users, 5);
    EXPECT_EQ(w.closed.think_time_s, 3);
    EXPECT_EQ(w.closed.turns, 2);
    EXPECT_EQ(w.closed.shared_prefix_tokens, 32);
    EXPECT_EQ(w.closed.first_prompt.describe(), spec_text("fixed:100"));
    // Not given: the preset's.
    EXPECT_EQ(w.closed.output.describe(), spec_text("normal:256,64"));
    EXPECT_EQ(w.closed.followup.describe(), spec_text("normal:512,256"));
  }
}

TEST(WorkloadPresets, ScenarioFileReadsThePresetAndItsOverrides) {
  const ScenarioFile f = parse_scenario_json(
      R"({"kvplan_scenario": 2, "workload": {"preset": "rag", "users": 16, "output_lengths": "fixed:64"}})", "t.json");
  const sim::WorkloadConfig w = simulation_config(f.scenario).workload;
  EXPECT_EQ(w.closed.num_users, 16);
  EXPECT_EQ(w.closed.first_prompt.describe(), spec_text("normal:5120,1024"));
  EXPECT_EQ(w.closed.output.describe(), spec_text("fixed:64"));
  // Written back: the preset and only what was given.
  const nlohmann::json back = nlohmann::json::parse(scenario_json(f));
  EXPECT_EQ(back["workload"]["preset"], "rag");
  EXPECT_FALSE(back["workload"].contains("prompt_lengths"));
}

TEST(WorkloadPresets, RateSwitchesToOpenLoopWithThePresetsLengths) {
  const sim::WorkloadConfig w = workload_of({{"workload", "rag"}, {"rate", "2.5"}});
  EXPECT_EQ(w.kind, sim::WorkloadKind::kOpenLoop);
  EXPECT_EQ(w.open.rate_per_s, 2.5);
  EXPECT_EQ(w.open.arrivals, sim::ArrivalKind::kPoisson);
  EXPECT_EQ(w.open.prompt.describe(), spec_text("normal:5120,1024"));
  EXPECT_EQ(w.open.output.describe(), spec_text("normal:256,96"));
  // --users 0 is open loop too, at 1 request/s unless --rate says otherwise.
  const sim::WorkloadConfig zero = workload_of({{"users", "0"}});
  EXPECT_EQ(zero.kind, sim::WorkloadKind::kOpenLoop);
  EXPECT_EQ(zero.open.rate_per_s, 1);
  // --users with the batch preset: closed-loop users with batch's lengths.
  const sim::WorkloadConfig users = workload_of({{"workload", "batch"}, {"users", "3"}});
  EXPECT_EQ(users.kind, sim::WorkloadKind::kClosedLoop);
  EXPECT_EQ(users.closed.num_users, 3);
}

TEST(WorkloadPresets, UsersAndRateTogetherAreAConfigError) {
  try {
    workload_of({{"users", "4"}, {"rate", "2"}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--users=4"), std::string::npos) << m;
    EXPECT_NE(m.find("--rate=2"), std::string::npos) << m;
    EXPECT_NE(m.find("choose one"), std::string::npos) << m;
  }
}

TEST(WorkloadPresets, UnknownPresetNamesTheFieldTheValueAndTheChoices) {
  Scenario s;
  try {
    setting("workload").set(s, "chatbot");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--workload=chatbot must be one of chat, code, rag, agent, batch");
  }
  try {
    parse_scenario_json(R"({"kvplan_scenario": 2, "workload": {"preset": "chatbot"}})", "t.json");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("workload.preset=\"chatbot\""), std::string::npos) << m;
    EXPECT_NE(m.find("chat, code, rag, agent, batch"), std::string::npos) << m;
  }
}

// `kvplan capacity --slo-ttft-ms 2000` (no workload flag) and `kvplan` alone simulate the same
// workload. The default scenario pins seed 1 for its printed figures; the seed picks the random
// draws, not the workload, so it is set alike here before comparing.
TEST(WorkloadPresets, CapacityWithoutWorkloadFlagsUsesTheDefaultScenariosWorkload) {
  const sim::WorkloadConfig a = workload_of({{"slo-ttft-ms", "2000"}, {"seed", "1"}});
  const sim::WorkloadConfig b = simulation_config(default_scenario()).workload;
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.client, b.client);
  EXPECT_EQ(a.horizon_ns, b.horizon_ns);
  EXPECT_EQ(a.closed.num_users, b.closed.num_users);
  EXPECT_EQ(a.closed.think_time_s, b.closed.think_time_s);
  EXPECT_EQ(a.closed.turns, b.closed.turns);
  EXPECT_EQ(a.closed.first_prompt.describe(), b.closed.first_prompt.describe());
  EXPECT_EQ(a.closed.followup.describe(), b.closed.followup.describe());
  EXPECT_EQ(a.closed.output.describe(), b.closed.output.describe());
  EXPECT_EQ(a.closed.shared_prefix_tokens, b.closed.shared_prefix_tokens);
  EXPECT_EQ(a.closed.max_context_tokens, b.closed.max_context_tokens);
  EXPECT_EQ(a.closed.hash_block_tokens, b.closed.hash_block_tokens);
  EXPECT_EQ(a.closed.requests_per_user, b.closed.requests_per_user);
  EXPECT_EQ(a.closed.seed, b.closed.seed);
  // And it is the chat preset's, not a copy of it.
  EXPECT_EQ(default_scenario().workload.preset, WorkloadPreset::kChat);
  EXPECT_EQ(non_default_values(default_scenario()),
            (SettingValues{{"seed", "1"}, {"slo-tpot-ms", "100"}, {"slo-ttft-ms", "2000"}}));
}

// --users N simulates N distinct users: every user sends (think time short against the run), none
// beyond N, whatever the turns.
TEST(WorkloadPresets, UsersNSimulatesExactlyNDistinctUsers) {
  for (const int users : {1, 37}) {
    Scenario s = with_values(Scenario{}, {{"users", std::to_string(users)},
                                          {"turns", "3"},
                                          {"think-time", "0.5"},
                                          {"prompt-lengths", "fixed:64"},
                                          {"output-lengths", "fixed:8"},
                                          {"duration", "20"}});
    std::set<int32_t> seen;
    int64_t requests = 0;
    sim::RunHooks hooks;
    hooks.on_request = [&](const sim::RequestRecord& r) {
      seen.insert(r.user);
      ++requests;
    };
    const SimulationAnswer a = simulate(s, hooks);
    EXPECT_EQ(a.config.workload.closed.num_users, users);
    EXPECT_EQ(static_cast<int>(seen.size()), users) << "users seen in the finished requests";
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), users - 1);
    EXPECT_GT(requests, 3 * users);  // each user got past one conversation
  }
}

// With the agent preset's shared system prompt and the engine's prefix caching (on for vLLM V1),
// first turns of later users find the system prompt cached; without it they find nothing.
TEST(WorkloadPresets, AgentsShareTheSystemPromptInThePrefixCache) {
  auto first_turn_cached = [](const SettingValues& extra) {
    SettingValues v = {{"workload", "agent"}, {"users", "4"}, {"duration", "30"}};
    v.insert(extra.begin(), extra.end());
    int64_t cached = 0;
    sim::RunHooks hooks;
    hooks.on_request = [&](const sim::RequestRecord& r) {
      if (r.turn == 0) cached += r.cached_tokens;
    };
    const SimulationAnswer a = simulate(with_values(Scenario{}, v), hooks);
    EXPECT_TRUE(a.config.prefix_caching);
    return cached;
  };
  EXPECT_GT(first_turn_cached({}), 0);
  EXPECT_EQ(first_turn_cached({{"shared-prefix", "0"}}), 0);
}

bool prefix_caching(const SettingValues& values) { return simulation_config(with_values(Scenario{}, values)).prefix_caching; }

TEST(PrefixCachingDefault, FollowsTheEngineAndItsVersion) {
  EXPECT_TRUE(prefix_caching({}));  // vLLM 0.10, V1
  EXPECT_TRUE(prefix_caching({{"engine-version", "0.8"}}));
  EXPECT_FALSE(prefix_caching({{"engine-version", "0.6.4"}}));  // V0
  EXPECT_FALSE(prefix_caching({{"vllm-engine", "v0"}}));
  EXPECT_TRUE(prefix_caching({{"engine", "sglang"}}));
  EXPECT_TRUE(prefix_caching({{"engine", "trtllm"}}));
  EXPECT_FALSE(prefix_caching({{"engine", "static"}}));
  // A scheduler that reserves cannot share blocks: off by default, whatever the engine.
  EXPECT_FALSE(prefix_caching({{"scheduler", "orca"}}));
  // Given, it wins.
  EXPECT_FALSE(prefix_caching({{"enable-prefix-caching", "false"}}));
  EXPECT_TRUE(prefix_caching({{"engine-version", "0.6.4"}, {"enable-prefix-caching", "true"}}));
  EXPECT_FALSE(prefix_caching({{"engine", "sglang"}, {"enable-prefix-caching", "false"}}));
}

}  // namespace
}  // namespace kvplan::plan

namespace kvplan::plan {
namespace {

// A given length spec may name a shipped trace as {traces}, so a scenario file works from any
// directory (data/scenarios/chat-h100.json does); the scenario keeps the token, the run resolves it.
TEST(WorkloadPresets, TracesTokenWorksInAGivenSpec) {
  Scenario s;
  set_values(s, {{"prompt-lengths", "trace:{traces}/azure_llm_2023_code.csv:prompt"}});
  EXPECT_EQ(s.workload.prompt_lengths, "trace:{traces}/azure_llm_2023_code.csv:prompt");
  const EffectiveWorkload w = effective_workload(s.workload);
  EXPECT_EQ(w.prompt_lengths, "trace:" + data_dir() + "/traces/azure_llm_2023_code.csv:prompt");
  // The code preset names the same file the same way: the same prompt lengths.
  Scenario code;
  code.workload.preset = WorkloadPreset::kCode;
  EXPECT_EQ(effective_workload(code.workload).prompt_lengths, w.prompt_lengths);
}

}  // namespace
}  // namespace kvplan::plan

namespace kvplan::plan {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Lengths read from a trace are kept between simulations (plan/src/simulate.cpp) but always follow
// the file: a rewrite of the same size within the same second, and a removal, are both seen.
TEST(WorkloadPresets, TraceLengthsFollowTheFileWhenItChanges) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("kvplan_trace_lengths_" + std::to_string(::getpid()) + ".csv")).string();
  const SettingValues values = {{"prompt-lengths", "trace:" + path + ":prompt"}};
  write_file(path, "arrival_s,prompt_tokens,output_tokens\n0.0,100,10\n1.0,200,10\n");
  EXPECT_DOUBLE_EQ(workload_of(values).closed.first_prompt.mean(), 150.0);
  EXPECT_DOUBLE_EQ(workload_of(values).closed.first_prompt.mean(), 150.0);  // kept: the same answer
  write_file(path, "arrival_s,prompt_tokens,output_tokens\n0.0,300,10\n1.0,500,10\n");  // same size
  EXPECT_DOUBLE_EQ(workload_of(values).closed.first_prompt.mean(), 400.0);
  std::filesystem::remove(path);
  EXPECT_THROW(workload_of(values), ConfigError);
}

}  // namespace
}  // namespace kvplan::plan
