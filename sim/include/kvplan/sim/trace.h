// kvplan/sim/trace.h — replaying recorded request traces.
//
//   auto source = open_trace("data/traces/azure_llm_2023_conv.csv", TraceOptions{});
//   TraceLengths l = read_trace_lengths("data/traces/mooncake_conversation.jsonl");
//
// Formats (detected from the first line):
//  - Azure LLM inference trace 2023 CSV: TIMESTAMP,ContextTokens,GeneratedTokens, wall-clock
//    timestamps "2023-11-16 18:15:46.6805900"; arrival = offset from the first row.
//  - Mooncake JSONL: {"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}, with
//    hash_ids naming 512-token prefix blocks (only whole blocks become prefix_hashes).
//  - kvplan native CSV: header arrival_s,prompt_tokens,output_tokens[,prefix_hashes] with
//    prefix_hashes space-separated, hash_block_tokens given by the optional `# hash_block_tokens=N`
//    first line; native JSONL: {"arrival_s", "prompt_tokens", "output_tokens",
//    "hash_block_tokens"?, "prefix_hashes"?}. See docs/traces.md.
// Bad rows throw ConfigError naming file, line, field, value and rule. Rows must be in arrival
// order. Zero-length outputs (Azure has a few) are read as 1 token, counted in `describe()`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvplan/sim/workload.h"

namespace kvplan::sim {

enum class TraceFormat { kAzureCsv, kMooncakeJsonl, kNativeCsv, kNativeJsonl };
std::string_view trace_format_name(TraceFormat format);
TraceFormat detect_trace_format(const std::string& path);  // throws ConfigError if unreadable

struct TraceOptions {
  double time_scale = 1.0;   // arrival offsets are multiplied by this (0.5: twice the rate)
  int64_t max_requests = 0;  // 0: all rows
  int64_t max_total_tokens = 0;  // > 0: rows whose prompt + output exceed it are skipped (counted)
};

// Streams the file: holds one row at a time.
std::unique_ptr<RequestSource> open_trace(const std::string& path, const TraceOptions& options);

struct TraceLengths {
  std::vector<int64_t> prompt;
  std::vector<int64_t> output;
  std::vector<int64_t> total;  // prompt + output
  double duration_s = 0;       // last arrival offset
};
TraceLengths read_trace_lengths(const std::string& path);

}  // namespace kvplan::sim
