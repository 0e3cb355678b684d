// plan/src/workload_presets.cpp — the workload presets of workload_presets.h, each with the source
// of its numbers, and how a scenario's workload settings and its preset combine.
#include "kvplan/plan/workload_presets.h"

#include <fmt/format.h>

#include "internal/setting_codec.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/data_dir.h"
#include "kvplan/plan/scenario.h"

namespace kvplan::plan {

namespace {

constexpr std::string_view kTracesToken = "{traces}";

// Users a closed-loop preset simulates when no load is given (`kvplan simulate` alone): a light
// load that shows latency without queueing; `kvplan capacity` searches the number instead.
constexpr int64_t kDefaultUsers = 8;

// Empirical lengths of the shipped Azure 2023 traces (data/traces/README.md).
constexpr std::string_view kConvPrompts = "trace:{traces}/azure_llm_2023_conv.csv:prompt";
constexpr std::string_view kConvOutputs = "trace:{traces}/azure_llm_2023_conv.csv:output";

std::vector<WorkloadPresetInfo> build_presets() {
  std::vector<WorkloadPresetInfo> p;
  p.push_back({.preset = WorkloadPreset::kChat,
               .name = "chat",
               .description = "Chat users: Azure 2023 conversation lengths, 10 s think time",
               .source = "prompt and output lengths: Azure LLM inference trace 2023, conversation "
                         "(data/traces/azure_llm_2023_conv.csv, 19,366 requests); 10 s mean think time and "
                         "300 s simulated: kvplan's default scenario (assumptions, not measured)",
               .closed_loop = true,
               .users = kDefaultUsers,
               .think_time_s = 10,
               .prompt_lengths = kConvPrompts,
               .output_lengths = kConvOutputs});
  p.push_back({.preset = WorkloadPreset::kCode,
               .name = "code",
               .description = "Code completion in an editor: Azure 2023 code lengths, 2 s think time",
               .source = "prompt and output lengths: Azure LLM inference trace 2023, code "
                         "(data/traces/azure_llm_2023_code.csv, 8,819 requests: median prompt 1,469, median "
                         "output 13 tokens); 2 s think time is an assumption: completions are asked for at "
                         "pauses in typing and a suggestion of a few tokens is read at a glance",
               .closed_loop = true,
               .users = kDefaultUsers,
               .think_time_s = 2,
               .prompt_lengths = "trace:{traces}/azure_llm_2023_code.csv:prompt",
               .output_lengths = "trace:{traces}/azure_llm_2023_code.csv:output"});
  p.push_back({.preset = WorkloadPreset::kRag,
               .name = "rag",
               .description = "Retrieval-augmented Q&A: long prompts of retrieved chunks, short answers",
               .source = "prompt mean 5,120 tokens: 10 retrieved chunks of 512 tokens (512 is the NVIDIA RAG "
                         "Blueprint's default chunk size, APP_NVINGEST_CHUNKSIZE, docs.nvidia.com/rag/2.3.0/"
                         "accuracy_perf.html; 10 chunks per question is an assumption), sd 1,024; answers mean "
                         "256, sd 96 tokens and 10 s think time: assumptions",
               .closed_loop = true,
               .users = kDefaultUsers,
               .think_time_s = 10,
               .prompt_lengths = "normal:5120,1024",
               .output_lengths = "normal:256,96"});
  p.push_back({.preset = WorkloadPreset::kAgent,
               .name = "agent",
               .description = "Tool-using agents: 8-turn conversations after a 2,048-token system prompt shared by all",
               .source = "assumptions, not measured: a 2,048-token system prompt with tool definitions shared by "
                         "every conversation (the shared-prefix case RadixAttention targets, Zheng et al., "
                         "SGLang, 2024), a task of mean 512 tokens, 8 turns whose new input (tool results) is "
                         "mean 512 tokens, outputs (reasoning and a tool call) mean 256 tokens, 1 s between "
                         "turns (tool execution, not a person)",
               .closed_loop = true,
               .users = kDefaultUsers,
               .think_time_s = 1,
               .turns = 8,
               .shared_prefix_tokens = 2048,
               .prompt_lengths = "normal:512,128",
               .output_lengths = "normal:256,64",
               .followup_lengths = "normal:512,256"});
  p.push_back({.preset = WorkloadPreset::kBatch,
               .name = "batch",
               .description = "Offline batch: every request queued at once (--num-requests); read the throughput",
               .source = "lengths: Azure LLM inference trace 2023, conversation (as chat); arrivals 1 ns apart "
                         "(constant, 1e9 requests/s): the simulator's nearest to all at time 0",
               .closed_loop = false,
               .users = 0,
               .think_time_s = 0,
               .rate = 1e9,
               .arrivals = sim::ArrivalKind::kConstant,
               .prompt_lengths = kConvPrompts,
               .output_lengths = kConvOutputs});
  return p;
}

}  // namespace

const std::vector<WorkloadPresetInfo>& workload_presets() {
  static const std::vector<WorkloadPresetInfo> presets = build_presets();
  return presets;
}

const WorkloadPresetInfo& workload_preset(WorkloadPreset preset) {
  for (const WorkloadPresetInfo& p : workload_presets()) {
    if (p.preset == preset) return p;
  }
  throw std::logic_error("workload preset missing from the table");
}

std::string_view workload_preset_name(WorkloadPreset preset) { return workload_preset(preset).name; }

WorkloadPreset parse_workload_preset(std::string_view text, std::string_view label) {
  std::vector<std::string> names;
  for (const WorkloadPresetInfo& p : workload_presets()) {
    if (p.name == text) return p.preset;
    names.emplace_back(p.name);
  }
  internal::fail(label, text, internal::choice_rule(names));
}

std::string preset_length_spec(std::string_view spec) {
  std::string out(spec);
  if (const size_t at = out.find(kTracesToken); at != std::string::npos) {
    out.replace(at, kTracesToken.size(), data_dir() + "/traces");
  }
  return out;
}

EffectiveWorkload effective_workload(const WorkloadSettings& wl) {
  const WorkloadPresetInfo& p = workload_preset(wl.preset);
  EffectiveWorkload w;
  w.preset = &p;
  w.users_given = wl.users.has_value();
  if (wl.users && *wl.users > 0 && wl.rate) {
    throw ConfigError(fmt::format("--users={} and --rate={}: choose one workload (--users: closed-loop users, "
                                  "--rate: open-loop arrivals)",
                                  *wl.users, internal::number_text(*wl.rate)));
  }
  // --users decides the loop; otherwise --rate means open loop; otherwise the preset decides.
  if (wl.users) {
    w.closed_loop = *wl.users > 0;
  } else if (wl.rate) {
    w.closed_loop = false;
  } else {
    w.closed_loop = p.closed_loop;
  }
  w.users = w.closed_loop ? wl.users.value_or(p.users) : 0;
  w.rate = wl.rate.value_or(p.rate);
  w.arrivals = wl.arrivals.value_or(p.arrivals);
  w.think_time_s = wl.think_time_s.value_or(p.think_time_s);
  w.turns = wl.turns.value_or(p.turns);
  w.shared_prefix_tokens = wl.shared_prefix_tokens.value_or(p.shared_prefix_tokens);
  w.horizon_s = p.horizon_s;
  // "{traces}" works in a given spec too, so a scenario file can name a shipped trace wherever it is
  // run from (data/scenarios/chat-h100.json does).
  w.prompt_lengths = preset_length_spec(wl.prompt_lengths.empty() ? p.prompt_lengths : wl.prompt_lengths);
  w.output_lengths = preset_length_spec(wl.output_lengths.empty() ? p.output_lengths : wl.output_lengths);
  w.followup_lengths = preset_length_spec(wl.followup_lengths.empty() ? p.followup_lengths : wl.followup_lengths);
  return w;
}

}  // namespace kvplan::plan
