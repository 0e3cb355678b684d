// kvplan/plan/workload_presets.h — the workload presets (`--workload chat|code|rag|agent|batch`):
// each one fills the workload settings a scenario leaves unset, and each says where its numbers
// come from. Defined in one place (workload_presets.cpp); the CLI, the scenario file, the planner
// and Python all reach them through the settings table's `workload` row (workload.preset).
//
//   plan::Scenario s;  s.workload.preset = plan::WorkloadPreset::kRag;  s.workload.users = 32;
//   plan::EffectiveWorkload w = plan::effective_workload(s.workload);   // rag lengths, 32 users
//
// A setting given explicitly (a flag, a file key, a Python keyword) always wins over the preset's
// value, whatever order they were given in: the preset only fills what is unset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/sim/workload.h"

namespace kvplan::plan {

struct WorkloadSettings;

enum class WorkloadPreset { kChat, kCode, kRag, kAgent, kBatch };

// One preset: the values it gives the workload settings that are left unset.
struct WorkloadPresetInfo {
  WorkloadPreset preset = WorkloadPreset::kChat;
  std::string_view name;         // "chat": what --workload takes
  std::string_view description;  // one line, no trailing period
  std::string_view source;       // where the numbers come from (or which are assumptions)
  bool closed_loop = true;       // closed-loop users; false: open-loop arrivals
  // Closed loop.
  int64_t users = 8;             // when neither --users nor --rate is given
  double think_time_s = 10;      // mean of an exponential think time
  int64_t turns = 1;
  int64_t shared_prefix_tokens = 0;  // system prompt shared by every conversation of every user
  double horizon_s = 300;        // simulated time when --duration and --requests-per-user are unset
                                 // (closed loop, also an open-loop preset's with --users N)
  // Open loop (also what --rate or --users 0 uses with a closed-loop preset).
  double rate = 1;               // requests per second
  sim::ArrivalKind arrivals = sim::ArrivalKind::kPoisson;
  // Length specs (settings.h: --prompt-lengths); "{traces}" stands for the shipped traces folder.
  std::string_view prompt_lengths;
  std::string_view output_lengths;
  std::string_view followup_lengths = "fixed:64";
};

// Every preset, chat first (the default).
const std::vector<WorkloadPresetInfo>& workload_presets();
const WorkloadPresetInfo& workload_preset(WorkloadPreset preset);
std::string_view workload_preset_name(WorkloadPreset preset);
// "chat", "code", ...; throws ConfigError "<label>=<text> must be one of chat, code, rag, agent, batch".
WorkloadPreset parse_workload_preset(std::string_view text, std::string_view label = "--workload");
// A preset's length spec with "{traces}" replaced by plan::data_dir() + "/traces".
std::string preset_length_spec(std::string_view spec);

// The workload a simulation runs: the settings given, the preset's values for the rest.
struct EffectiveWorkload {
  const WorkloadPresetInfo* preset = nullptr;
  bool closed_loop = true;  // false: open loop (a trace or the bench client decide elsewhere)
  bool users_given = false; // --users was set (a trace or the bench client then conflict with it)
  int64_t users = 0;        // closed loop: the number of users (> 0)
  double rate = 1;          // open loop
  sim::ArrivalKind arrivals = sim::ArrivalKind::kPoisson;
  double think_time_s = 0;
  int64_t turns = 1;
  int64_t shared_prefix_tokens = 0;
  double horizon_s = 0;     // closed loop without --duration and --requests-per-user
  std::string prompt_lengths, output_lengths, followup_lengths;  // length specs
};

// Throws ConfigError when --users > 0 and --rate are both given (one workload or the other).
EffectiveWorkload effective_workload(const WorkloadSettings& workload);

}  // namespace kvplan::plan
